"""The FastAPI server that serves any envhub environment.

``create_app(env, settings)`` builds it; ``envhub serve NAME`` runs it with uvicorn. One JSON
schema for every environment, derived from :mod:`envhub.types` (see ``/docs``).

Protection, in the order a request meets it:

1. bodies over ``max_body_bytes`` get 413 before they are read in full;
2. beyond ``max_inflight`` concurrent work requests the server answers 503 with
   ``Retry-After`` instead of queueing without bound;
3. malformed bodies get 422 naming the field and showing the expected shape; a body that is
   not JSON gets "send JSON" and the line and column where parsing stopped;
4. environment work runs in a bounded thread pool, never on the event loop, so ``/health``
   stays fast while verification saturates the CPU; each call has a server-side deadline,
   because a client's time-out does not stop server work;
5. a failure inside one episode is that episode's status; a request the caller got wrong (an
   unknown task, a bad split) is a 4xx and one log line; an unexpected exception is a 500 for
   that request only, with its traceback in the log (see :mod:`servers.errors`).

``/docs`` works offline: Swagger UI's files are served from the installed ``fastapi-offline``
package, never from a CDN.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, ConfigDict, Field

from envhub.core import Env
from envhub.errors import EnvhubError
from envhub.types import Score, StepResult, Task
from envhub.wire import (
    CloseRequest,
    FinishRequest,
    ResetRequest,
    ResetResponse,
    StepRequest,
    TaskPage,
    VerifyItem,
    VerifyRequest,
    VerifyResponse,
)

from . import errors, ws
from .episodes import Episodes
from .errors import error_response
from .middleware import Admission, BodyLimit
from .sessions import SessionError, SessionTable

T = TypeVar("T")


class ServerSettings(BaseModel):
    """Limits of one server; every one has a finite default."""

    model_config = ConfigDict(extra="forbid")

    max_sessions: int = Field(1024, ge=1)
    session_ttl_s: float = Field(600.0, gt=0)
    """Idle seconds after which a session expires."""
    max_inflight: int = Field(256, ge=1)
    """Concurrent reset/step/verify requests before answering 503."""
    threads: int = Field(default_factory=lambda: min(32, 4 * (os.cpu_count() or 1)), ge=1)
    """Worker threads for environment code."""
    max_body_bytes: int = Field(4_000_000, ge=1024)
    max_batch: int = Field(1024, ge=1)
    request_timeout_s: float = Field(120.0, gt=0)
    """Server-side deadline of one environment call."""


# ---------------------------------------------------------------------------- the app

EXAMPLES: dict[str, dict[str, Any]] = {
    "/reset": {"seed": 0},
    "/step": {"session_id": "SESSION", "message": "The answer is 42."},
    "/finish": {"session_id": "SESSION"},
    "/close": {"session_id": "SESSION"},
    "/verify": {"items": [{"task_id": "TASK", "response": "The answer is 42."}]},
}
"""A valid body per path, shown in every 422 so the caller sees the expected shape."""


def create_app(env: Env, settings: ServerSettings | None = None, *, mcp: bool = False) -> FastAPI:
    """A FastAPI app serving ``env``: sessions for episodes, batch verification, listings.

    With ``mcp``, the environment's tools are also an MCP server at ``/mcp`` (servers.mcp).
    """
    settings = settings or ServerSettings()
    sessions = SessionTable(settings.max_sessions, settings.session_ttl_s)
    pool = ThreadPoolExecutor(settings.threads, thread_name_prefix="envhub-env")
    metrics: Counter[str] = Counter()
    started = time.time()

    async def run(fn: Callable[..., T], *args: Any) -> T:
        # A plain executor, not anyio.to_thread: anyio's per-call bookkeeping was over half of
        # the event loop's CPU per WebSocket step. At the deadline the call is abandoned (its
        # thread finishes on its own) and the caller gets TimeoutError.
        async with asyncio.timeout(settings.request_timeout_s):
            return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)

    async def reaper() -> None:
        while True:
            await anyio.sleep(min(30.0, settings.session_ttl_s / 2))
            metrics["sessions_expired"] += sessions.reap()

    @asynccontextmanager
    async def lifespan(_: FastAPI):  # noqa: ANN202
        async with anyio.create_task_group() as tg, contextlib.AsyncExitStack() as stack:
            if mcp_manager is not None:
                await stack.enter_async_context(mcp_manager.run())
            tg.start_soon(reaper)
            yield
            tg.cancel_scope.cancel()
        sessions.close_all()
        pool.shutdown(wait=False, cancel_futures=True)
        env.close()

    app = FastAPIOffline(
        title=f"envhub: {env.spec.id}",
        description=env.spec.description or "An envhub environment server.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    errors.install(app, EXAMPLES, metrics)

    @app.exception_handler(SessionError)
    async def on_session(request: Request, exc: SessionError) -> JSONResponse:
        headers = {"Retry-After": "1"} if exc.code == 503 else {}
        return error_response(exc.code, exc.kind, str(exc), **headers)

    @app.get("/health")
    async def health() -> dict[str, str]:
        """Liveness: answers at once, whatever the load."""
        return {"status": "ok"}

    @app.get("/info")
    async def info() -> dict[str, Any]:
        """The environment, its spec and the server's limits."""
        return {
            **env.info(),
            "spec": env.spec.model_dump(mode="json", exclude={"source"}),
            "server": settings.model_dump(),
        }

    @app.get("/metrics")
    async def get_metrics() -> dict[str, Any]:
        """Counters since start."""
        return {
            **metrics,
            "sessions": len(sessions),
            "uptime_s": round(time.time() - started, 1),
        }

    @app.get("/tasks", response_model=TaskPage)
    async def tasks(split: str | None = None, offset: int = 0, limit: int = 100) -> TaskPage:
        """A page of the tasks of ``split``."""
        if offset < 0 or not 1 <= limit <= 10_000:
            raise ValueError("offset must be >= 0 and limit in 1..10000")
        all_tasks = await run(env.tasks, split)
        return TaskPage(tasks=list(all_tasks[offset : offset + limit]), total=len(all_tasks))

    episodes = Episodes(env, sessions, run, metrics)
    mcp_manager = None
    if mcp:
        from . import mcp as mcp_server

        mcp_manager = mcp_server.install(app, episodes)

    @app.post("/reset", response_model=ResetResponse)
    async def reset(body: ResetRequest) -> Response:
        """Start an episode in a new session."""
        _, text = await episodes.reset(body.seed, body.task_id, body.close_session)
        return Response(text, media_type="application/json")

    @app.post("/step", response_model=StepResult)
    async def step(body: StepRequest) -> Response:
        """One assistant message; the episode's failures come back as its status."""
        text = await episodes.step(body.session_id, body.message, body.seq)
        return Response(text, media_type="application/json")

    @app.post("/finish", response_model=StepResult)
    async def finish(body: FinishRequest) -> Response:
        """End the episode from outside (a trainer's budget): its final accounting."""
        return Response(await episodes.finish(body.session_id), media_type="application/json")

    @app.post("/close")
    async def close(body: CloseRequest) -> dict[str, bool]:
        """End a session early."""
        return {"closed": episodes.close(body.session_id)}

    @app.post("/verify", response_model=VerifyResponse)
    async def verify(body: VerifyRequest) -> VerifyResponse:
        """Verify a batch: a bad response is its item's status, a bad request a 4xx."""
        if len(body.items) > settings.max_batch:
            raise ValueError(f"batch of {len(body.items)} items; the limit is {settings.max_batch}")
        scores = await run(_verify_items, env, body.items)
        for s in scores:
            metrics[f"verify_{s.status.value}"] += 1
        return VerifyResponse(scores=scores)

    ws.install(app, episodes, metrics)
    app.state.sessions = sessions
    app.add_middleware(Admission, limit=settings.max_inflight, metrics=metrics)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    return app


def _task_of(env: Env, item: VerifyItem) -> Task | str:
    if item.task is not None:
        return item.task
    if item.gold is not None:
        return env.task_from_gold(item.gold)
    get_task = getattr(env, "get_task", None)  # TaskEnv; any other Env looks it up in verify
    return get_task(item.task_id) if get_task else str(item.task_id)


def _verify_items(env: Env, items: list[VerifyItem]) -> list[Score]:
    """Scores in order.

    A request error (unknown task id, a gold the env cannot take, a game that does not verify)
    is the caller's: the whole request fails with a 4xx naming the item, never a reward of 0
    with the model's ``invalid_action``.
    """
    tasks: list[Task | str] = []
    for i, item in enumerate(items):
        try:
            tasks.append(_task_of(env, item))
        except EnvhubError as e:
            raise type(e)(f"items[{i}]: {e}") from e
    return [env.verify(task, item.response) for task, item in zip(tasks, items, strict=True)]
