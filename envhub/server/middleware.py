"""ASGI middleware of the server: the answers gate, the body limit and admission control.

Plain ASGI rather than ``@app.middleware("http")``: that wrapper costs about a millisecond of
CPU per request, as much as the rest of the server together.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from fastapi.responses import JSONResponse

from .errors import ErrorBody, TooLarge, error_response

WORK_PATHS = ("/reset", "/step", "/finish", "/verify")
"""Paths that run environment code and count against ``max_inflight``."""


HEAD = 4096
"""Bytes of an over-limit body kept to find its session (the envhub clients put it first)."""
DRAIN = 16
"""An over-limit step body is read to its end (to answer it) up to this many times the limit."""
_FIELDS = re.compile(r'"(op|session_id|session_secret|seq)"\s*:\s*(?:"([^"\\]{0,256})"|(\d{1,9}))')


def head_fields(head: str) -> dict[str, str]:
    """The first ``op``, ``session_id``, ``session_secret`` and ``seq`` in a body's head.

    A key is matched only as a key: inside a JSON string every quote is escaped.
    """
    found: dict[str, str] = {}
    for m in _FIELDS.finditer(head):
        found.setdefault(m[1], m[2] if m[2] is not None else m[3])
    return found


class BodyLimit:
    """ASGI middleware: 413 for bodies over ``limit`` bytes, declared or streamed.

    Except a ``/step``: its message is the model's, and a message the server cannot read is
    the model's ``invalid_action``, not the caller's 413. The body is read to its end and
    replaced by its compact form (``session_id``, ``session_secret`` and ``seq`` from its head,
    ``oversized``: its size), which the route answers (see :class:`envhub.wire.StepRequest`).
    """

    def __init__(self, app: Any, limit: int) -> None:
        """Wrap ``app``."""
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        """Reject oversized bodies, pass everything else through."""
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit():
            if int(declared) <= self.limit:  # the HTTP layer holds the body to its length
                return await self.app(scope, receive, send)
            if scope["path"] != "/step":
                return await _too_large(self.limit, send)
        if scope["path"] == "/step":
            return await self._step(scope, receive, send)
        seen, over = 0, False

        async def counting_receive() -> dict:
            nonlocal seen, over
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                over = True
                raise TooLarge
            return message

        async def guarded_send(message: dict) -> None:
            if not over:  # the app's answer to a cut-off body (FastAPI: a bare 400) is dropped
                await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except TooLarge:
            pass
        if over:
            await _too_large(self.limit, send)

    async def _step(self, scope: dict, receive: Callable, send: Callable) -> None:
        """A ``/step`` body not declared within the limit: read it, compact it if over."""
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size <= self.limit or sum(map(len, chunks)) < HEAD:
                chunks.append(chunk)
            if size > DRAIN * self.limit:
                return await _too_large(self.limit, send)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if size > self.limit:
            fields = head_fields(body[:HEAD].decode("utf-8", "replace"))
            if "session_id" not in fields:
                return await _too_large(self.limit, send)
            body = _compact(fields, size)
        await self.app(scope, replay(body, receive), send)


def replay(body: bytes, receive: Callable) -> Callable:
    """A ``receive`` that gives ``body`` whole, once, then defers to ``receive``."""
    replayed = False

    async def again() -> dict:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again


async def read_body(receive: Callable) -> bytes | None:
    """The request's whole body; ``None`` if the client left first.

    A client that stops sending is cut off by the read deadline of the server's protocol
    (:mod:`envhub.server.reading`: 408, connection closed), which this then sees as leaving.
    """
    message = await receive()
    if message["type"] == "http.disconnect":
        return None
    if not message.get("more_body", False):  # the usual case: the body in one message
        return message.get("body", b"")
    chunks = [message.get("body", b"")]
    while message.get("more_body", False):
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
    return b"".join(chunks)


def _compact(fields: dict[str, str], size: int) -> bytes:
    """The ``/step`` body that stands for an over-limit one of ``size`` bytes."""
    body: dict[str, Any] = {
        "session_id": fields["session_id"],
        "session_secret": fields.get("session_secret", ""),
        "oversized": size,
    }
    if "seq" in fields and fields["seq"].isdigit():
        body["seq"] = int(fields["seq"])
    return json.dumps(body).encode()


async def _too_large(limit: int, send: Callable) -> None:
    body = ErrorBody(error=f"request body over {limit} bytes", kind="too_large")
    resp = JSONResponse(body.model_dump(), status_code=413)
    await resp({"type": "http"}, None, send)  # type: ignore[arg-type]


class Admission:
    """ASGI middleware: beyond ``limit`` concurrent work requests, answer 503 at once.

    A request counts from when its body has been read whole, not from its headers: one
    whose body trickles in holds no place among those in flight (four connections that sent
    their headers and one byte of body used to fill ``--max-inflight 2``); the server's read
    deadline (:mod:`envhub.server.reading`) bounds how long it may trickle.

    Plain ASGI rather than ``@app.middleware("http")``: that wrapper costs about a
    millisecond of CPU per request, as much as the rest of the server together.
    """

    def __init__(self, app: Any, limit: int, metrics: Counter[str]) -> None:
        """Wrap ``app``; the number in flight is kept in ``metrics["inflight"]``."""
        self.app, self.limit, self.metrics = app, limit, metrics

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        """Read a work request's body, then count it in flight; refuse beyond the limit."""
        if scope["type"] != "http" or scope["path"] not in WORK_PATHS:
            return await self.app(scope, receive, send)
        body = await read_body(receive)
        if body is None:  # the client left, or the read deadline answered 408 and closed
            return
        if self.metrics["inflight"] >= self.limit:
            self.metrics["rejected_overload"] += 1
            resp = error_response(503, "overloaded", "server at its concurrency limit; retry later",
                          **{"Retry-After": "1"})  # fmt: skip
            return await resp(scope, receive, send)
        self.metrics["inflight"] += 1
        self.metrics["requests"] += 1
        try:
            await self.app(scope, replay(body, receive), send)
        finally:
            self.metrics["inflight"] -= 1


def answers_off(path: str) -> str:
    """Why ``path`` is refused on a server without ``--answers``, and what to do."""
    return (
        f"{path} serves gold answers or grades guesses, so this server does not serve it: add "
        "--answers to `envhub serve` (beside --openenv or --nemo-gym, if any) on a port the "
        "agent cannot reach (envhub's own runners do)"
    )


class AnswersOff:
    """ASGI middleware: 403 on every route that hands out gold answers or grades a guess.

    Installed unless the server serves answers (``--answers``): ``paths`` are envhub's own
    ``/tasks`` and ``/verify`` and each dialect's oracles (NeMo Gym's ``/verify``). One gate
    for all of them, met before the body is read: a guess graded outside an episode is a free
    oracle to an agent that reaches the port.
    """

    def __init__(self, app: Any, paths: frozenset[str]) -> None:
        """Wrap ``app``; refuse ``paths``."""
        self.app, self.paths = app, paths

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        """Refuse the oracles, pass everything else through."""
        if scope["type"] == "http" and scope["path"] in self.paths:
            resp = error_response(403, "answers_off", answers_off(scope["path"]))
            return await resp(scope, receive, send)
        return await self.app(scope, receive, send)
