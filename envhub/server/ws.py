"""The WebSocket endpoint ``/ws``: a session's calls over one persistent connection.

Each text frame from the client is an :class:`envhub.wire.WsRequest` (a binary frame is
answered with ``bad_input`` and the connection kept); each answer is one frame, the call's body
or a :class:`envhub.wire.WsError` (``code`` is the HTTP status the same error gets on the HTTP
routes). The limits of HTTP hold here too: a frame over ``max_body_bytes`` is ``too_large``,
but a step's is the model's ``invalid_action`` (as on HTTP); beyond ``max_inflight`` calls in
flight (HTTP and WebSocket together) the answer is ``overloaded`` (503) at once; every call
has the server's deadline.

A connection holds no state the server would lose with it: the session lives in the session
table, so after a drop the client reconnects and sends ``resume`` with its session id.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from pydantic import ValidationError

from envhub.errors import EpisodeStateError
from envhub.wire import WsRequest, error_frame

from .episodes import Episodes
from .errors import CLIENT_ERRORS, REFUSALS
from .middleware import HEAD, head_fields
from .sessions import SessionError

log = logging.getLogger("envhub.server")

BINARY = (
    "a binary frame is not read: send each request as a text frame holding JSON "
    '(e.g. {"op": "step", "message": "..."}); the session is kept'
)


class _Connection:
    """The calls of one connection; ``sid`` is the session it currently drives."""

    def __init__(self, episodes: Episodes, limit: int) -> None:
        self.episodes, self.limit = episodes, limit
        self.sid: str | None = None
        self.ops: dict[str, Callable[[WsRequest], Awaitable[str]]] = {
            "reset": self.reset,
            "step": self.step,
            "finish": self.finish,
            "close": self.close,
            "state": self.state,
            "resume": self.resume,
        }

    def _session(self) -> str:
        if self.sid is None:
            raise EpisodeStateError("no session on this connection: send reset (or resume) first")
        return self.sid

    async def reset(self, req: WsRequest) -> str:
        self.sid, text = await self.episodes.reset(req.seed, req.task_id, self.sid)
        return text

    async def step(self, req: WsRequest) -> str:
        if req.oversized is not None:
            return await self.episodes.refuse(self._session(), req.oversized, self.limit, req.seq)
        if req.message is None:
            raise ValueError("step needs a message: the assistant's text or a message object")
        return await self.episodes.step(self._session(), req.message, req.seq)

    async def finish(self, req: WsRequest) -> str:
        return await self.episodes.finish(self._session())

    async def close(self, req: WsRequest) -> str:
        closed = self.episodes.close(self._session()) if self.sid else False
        self.sid = None
        return '{"closed":true}' if closed else '{"closed":false}'

    async def oversized(self, text: str) -> str | dict[str, Any]:
        """A frame over the limit: a step's is the model's ``invalid_action``, others 413."""
        fields = head_fields(text[:HEAD])
        if fields.get("op") != "step":
            return error_frame(413, "too_large", f"frame over {self.limit} bytes")
        seq = int(fields["seq"]) if "seq" in fields else None
        return await self.step(WsRequest(op="step", seq=seq, oversized=len(text.encode())))

    async def state(self, req: WsRequest) -> str:
        return self.episodes.state(self._session()).model_dump_json()

    async def resume(self, req: WsRequest) -> str:
        if not req.session_id:
            raise ValueError("resume needs session_id: the id reset answered")
        self.episodes.sessions.authorize(req.session_id, req.session_secret)
        state = self.episodes.state(req.session_id)
        self.sid = req.session_id
        return state.model_dump_json()


def _error(exc: Exception, deadline_s: float, metrics: Counter[str]) -> dict[str, Any]:
    """The frame answering ``exc``, counted as the HTTP routes count it; a bug re-raises."""
    if isinstance(exc, SessionError):
        return error_frame(exc.code, exc.kind, str(exc))
    for cls, (code, kind, _) in REFUSALS.items():
        if isinstance(exc, cls):
            metrics[f"refused_{kind}"] += 1
            return error_frame(code, kind, str(exc))
    if isinstance(exc, TimeoutError):
        metrics["deadline_exceeded"] += 1
        return error_frame(504, "deadline", f"over the server deadline of {deadline_s:g} s")
    if isinstance(exc, ValidationError):
        parts = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5]]
        return error_frame(422, "invalid_request", "; ".join(parts))
    for cls, (code, kind) in CLIENT_ERRORS.items():
        if isinstance(exc, cls):
            return error_frame(code, kind, str(exc))
    raise exc


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _request(text: str) -> WsRequest:
    r"""The call a text frame holds.

    A lone surrogate escaped in it (``"\ud800"``, which a model's text may hold) is refused by
    pydantic's JSON parser but not by Python's: read so, it is U+FFFD by the time the step
    applies (``envhub.core.valid_unicode``), as on the HTTP routes, where such a step was
    scored while ``/ws`` answered it ``invalid_request``.
    """
    try:
        return WsRequest.model_validate_json(text)
    except ValidationError as e:
        if e.errors()[0]["type"] != "json_invalid" or not _SURROGATE_ESCAPE.search(text):
            raise
        try:
            fields = json.loads(text)
        except (ValueError, RecursionError):
            raise e from None  # no JSON to Python either: pydantic's answer stands
        return WsRequest.model_validate(fields)


def install(app: FastAPI, episodes: Episodes, metrics: Counter[str]) -> None:
    """Add ``/ws`` to ``app``; limits come from ``app.state.settings``."""
    settings = app.state.settings

    async def call(conn: _Connection, text: str) -> str | dict[str, Any]:
        if metrics["inflight"] >= settings.max_inflight:
            metrics["rejected_overload"] += 1
            return error_frame(503, "overloaded", "server at its concurrency limit; retry later")
        metrics["inflight"] += 1
        metrics["requests"] += 1
        metrics["ws_calls"] += 1
        try:
            if len(text) > conn.limit:
                return await conn.oversized(text)
            req = _request(text)
            return await conn.ops[req.op](req)
        except Exception as e:  # noqa: BLE001 - client errors answered; a bug is re-raised below
            try:
                return _error(e, settings.request_timeout_s, metrics)
            except Exception:
                metrics["internal_errors"] += 1
                log.exception("bug in /ws %s", text[:200])
                return error_frame(500, "internal", f"{type(e).__name__}: {e}")
        finally:
            metrics["inflight"] -= 1

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        """One session's reset/step/finish/close/state over one connection (see envhub.wire)."""
        await websocket.accept()
        metrics["ws_connections"] += 1
        conn = _Connection(episodes, settings.max_body_bytes)
        try:
            while True:
                message = await websocket.receive()
                text = message.get("text")
                if text is not None:
                    answer = await call(conn, text)
                elif message["type"] == "websocket.disconnect":
                    return
                else:  # a binary frame: answered, and the session stays
                    answer = error_frame(400, "bad_input", BINARY)
                if isinstance(answer, str):
                    await websocket.send_text(answer)
                else:
                    await websocket.send_json(answer)
        except WebSocketDisconnect:
            pass
