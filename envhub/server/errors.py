"""How the server answers and logs errors.

Two kinds, kept apart on purpose:

* a **client error** (unknown task, bad split or limit, a user-role message, malformed JSON, a
  body over the limit) is the caller's: a 4xx in the ``{error, kind}`` shape and one log line
  at WARNING, never a traceback;
* anything else is a **bug** of the server or an environment: a 500 for that request only, and
  uvicorn logs its traceback ("Exception in ASGI application") so it can be fixed.

Handlers are registered per exception class, not on ``Exception``: Starlette re-raises whatever
its catch-all handler saw (that is how a routine 404 used to print 80 lines).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from envhub.errors import ConfigError, EpisodeStateError, NotSupported, TaskNotFound
from envhub.wire import ErrorBody

from .workers import Overloaded, Stalled

log = logging.getLogger("envhub.server")


class TooLarge(Exception):
    """A request body went over the server's limit while it was read."""


CLIENT_ERRORS: dict[type[Exception], tuple[int, str]] = {
    TaskNotFound: (404, "task_not_found"),
    EpisodeStateError: (409, "episode_state"),
    NotSupported: (400, "not_supported"),
    ConfigError: (400, "config"),
    ValueError: (422, "invalid_request"),
    TooLarge: (413, "too_large"),
}
"""Exceptions that are the caller's fault, with the HTTP status and ``kind`` they answer."""

REFUSALS: dict[type[Exception], tuple[int, str, dict[str, str]]] = {
    Overloaded: (503, "overloaded", {"Retry-After": "1"}),
    Stalled: (503, "stalled", {}),
}
"""The worker pool's refusals of a call it never started: ``overloaded`` is sent again by the
client without charging the model; ``stalled`` (a wedged pool) is the server's failure."""

Handler = Callable[[Request, Exception], Awaitable[JSONResponse]]


def error_response(code: int, kind: str, message: str, **headers: str) -> JSONResponse:
    """The ``{error, kind}`` answer with HTTP status ``code``."""
    return JSONResponse(ErrorBody(error=message, kind=kind).model_dump(), code, headers=headers)


def log_client_error(request: Request, code: int, kind: str, message: str) -> None:
    """One WARNING line for a request the caller got wrong."""
    log.warning("%s %s -> %d %s: %s", request.method, request.url.path, code, kind, message[:300])


def _client_handler(code: int, kind: str) -> Handler:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        log_client_error(request, code, kind, str(exc))
        return error_response(code, kind, str(exc))

    return handle


def _json_position(doc: str, pos: int) -> str:
    line = doc.count("\n", 0, pos) + 1
    column = pos - (doc.rfind("\n", 0, pos) + 1) + 1
    return f"line {line} column {column}"


def validation_message(exc: RequestValidationError, examples: dict[str, str], path: str) -> str:
    """What was wrong with a request body, and the shape the endpoint expects."""
    errors = exc.errors()
    bad_json = next((e for e in errors if e.get("type") == "json_invalid"), None)
    if bad_json is not None:
        doc = exc.body if isinstance(exc.body, str) else ""
        pos = bad_json["loc"][-1] if isinstance(bad_json["loc"][-1], int) else 0
        cause = (bad_json.get("ctx") or {}).get("error", bad_json["msg"])
        message = f"send JSON: the body is not valid JSON ({cause} at {_json_position(doc, pos)})"
    else:
        parts = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors[:5]]
        message = "; ".join(parts)
    if path in examples:
        message += f"; expected a body like {examples[path]}"
    return message


def install(app: FastAPI, examples: dict[str, Any], metrics: Counter[str]) -> None:
    """Register the error handlers on ``app``; ``examples`` maps a path to a valid body."""
    shapes = {path: json.dumps(body) for path, body in examples.items()}

    async def on_invalid(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        message = validation_message(exc, shapes, request.url.path)
        log_client_error(request, 422, "invalid_request", message)
        return error_response(422, "invalid_request", message)

    async def on_deadline(request: Request, exc: Exception) -> JSONResponse:
        metrics["deadline_exceeded"] += 1
        limit = app.state.settings.request_timeout_s
        return error_response(504, "deadline", f"over the server deadline of {limit:g} s")

    def on_refusal(code: int, kind: str, headers: dict[str, str]) -> Handler:
        async def handle(request: Request, exc: Exception) -> JSONResponse:
            metrics[f"refused_{kind}"] += 1
            return error_response(code, kind, str(exc), **headers)

        return handle

    async def on_bug(request: Request, exc: Exception) -> JSONResponse:
        metrics["internal_errors"] += 1  # uvicorn logs the traceback: Starlette re-raises
        return error_response(500, "internal", f"{type(exc).__name__}: {exc}")

    app.add_exception_handler(RequestValidationError, on_invalid)
    app.add_exception_handler(TimeoutError, on_deadline)
    for cls, (code, kind, headers) in REFUSALS.items():
        app.add_exception_handler(cls, on_refusal(code, kind, headers))
    for cls, (code, kind) in CLIENT_ERRORS.items():
        app.add_exception_handler(cls, _client_handler(code, kind))
    app.add_exception_handler(Exception, on_bug)
