"""ASGI middleware of the server: the body limit and admission control.

Plain ASGI rather than ``@app.middleware("http")``: that wrapper costs about a millisecond of
CPU per request, as much as the rest of the server together.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from fastapi.responses import JSONResponse

from .errors import ErrorBody, TooLarge, error_response

WORK_PATHS = ("/reset", "/step", "/finish", "/verify")
"""Paths that run environment code and count against ``max_inflight``."""


class BodyLimit:
    """ASGI middleware: 413 for bodies over ``limit`` bytes, declared or streamed."""

    def __init__(self, app: Any, limit: int) -> None:
        """Wrap ``app``."""
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        """Reject oversized bodies, pass everything else through."""
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            return await _too_large(self.limit, send)
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


async def _too_large(limit: int, send: Callable) -> None:
    body = ErrorBody(error=f"request body over {limit} bytes", kind="too_large")
    resp = JSONResponse(body.model_dump(), status_code=413)
    await resp({"type": "http"}, None, send)  # type: ignore[arg-type]


class Admission:
    """ASGI middleware: beyond ``limit`` concurrent work requests, answer 503 at once.

    Plain ASGI rather than ``@app.middleware("http")``: that wrapper costs about a
    millisecond of CPU per request, as much as the rest of the server together.
    """

    def __init__(self, app: Any, limit: int, metrics: Counter[str]) -> None:
        """Wrap ``app``; the number in flight is kept in ``metrics["inflight"]``."""
        self.app, self.limit, self.metrics = app, limit, metrics

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        """Count work requests in flight; refuse beyond the limit."""
        if scope["type"] != "http" or scope["path"] not in WORK_PATHS:
            return await self.app(scope, receive, send)
        if self.metrics["inflight"] >= self.limit:
            self.metrics["rejected_overload"] += 1
            resp = error_response(503, "overloaded", "server at its concurrency limit; retry later",
                          **{"Retry-After": "1"})  # fmt: skip
            return await resp(scope, receive, send)
        self.metrics["inflight"] += 1
        self.metrics["requests"] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.metrics["inflight"] -= 1
