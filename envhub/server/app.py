"""The FastAPI server that serves any envhub environment.

``create_app(env, settings)`` builds it; ``envhub serve NAME`` runs it with uvicorn. One JSON
schema for every environment, derived from :mod:`envhub.types` (see ``/docs``).

Protection, in the order a request meets it:

0. a request whose ``Host`` or ``Origin`` is foreign (a web page, DNS rebinding) is refused,
   on every route and the WebSocket (:mod:`envhub.server.origin`); without ``--answers``, every
   route that hands out gold answers or grades a guess (:data:`ORACLES`, and a dialect's) is
   refused, 403;
1. a request not read whole (headers and body) within ``read_timeout_s`` gets 408 and its
   connection is closed (:mod:`envhub.server.reading`, uvicorn's protocol: pass
   :func:`envhub.server.reading.protocol` as ``uvicorn.Config(http=...)``, as ``envhub serve``
   does); bodies over ``max_body_bytes`` get 413 before they are read in full;
2. beyond ``max_inflight`` concurrent work requests, each counted once its body is read, the
   server answers 503 with ``Retry-After`` instead of queueing without bound;
3. malformed bodies get 422 naming the field and showing the expected shape; a body that is
   not JSON gets "send JSON" and the line and column where parsing stopped;
4. environment work runs in a bounded thread pool, never on the event loop, so ``/health``
   stays fast while verification saturates the CPU; each call has a server-side deadline,
   because a client's time-out does not stop server work, counted from when a worker starts
   it (a call that finds no free worker soon is refused unstarted, 503 ``overloaded``, and
   sent again by the client: see :mod:`envhub.server.workers`);
5. a failure inside one episode is that episode's status; a request the caller got wrong (an
   unknown task, a bad split) is a 4xx and one log line; an unexpected exception is a 500 for
   that request only, with its traceback in the log (see :mod:`envhub.server.errors`).

``/docs`` works offline: Swagger UI's files are served from the installed ``fastapi-offline``
package, never from a CDN.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import time
from collections import Counter
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, ConfigDict, Field

from envhub.core import Env
from envhub.errors import EnvhubError, GoldAnswerError, NotSupported
from envhub.types import Score, Status, StepResult, Task
from envhub.wire import (
    CloseRequest,
    EnvInfo,
    FinishRequest,
    ResetRequest,
    ResetResponse,
    StepRequest,
    TaskPage,
    VerifyItem,
    VerifyRequest,
    VerifyResponse,
)

from . import dialects, errors, ws
from .calls import Calls
from .episodes import Episodes, too_large
from .errors import error_response
from .middleware import Admission, AnswersOff, BodyLimit
from .origin import Guard, HostCheck
from .sessions import SessionError, SessionTable
from .workers import Workers

T = TypeVar("T")


class ServerSettings(BaseModel):
    """Limits of one server; every one has a finite default."""

    model_config = ConfigDict(extra="forbid")

    max_sessions: int = Field(1024, ge=1)
    session_ttl_s: float = Field(600.0, gt=0)
    """Idle seconds after which a session expires."""
    max_inflight: int = Field(256, ge=1)
    """Concurrent reset/step/verify requests before answering 503. Unless set, an environment
    whose steps await on the event loop (:attr:`~envhub.core.Env.async_steps`: a waiting step
    holds no thread) gets ``2 x max_sessions``: a step in flight per session, and a reset or a
    resend beside it."""
    threads: int = Field(default_factory=lambda: min(32, 4 * (os.cpu_count() or 1)), ge=1)
    """Worker threads for environment code."""
    max_body_bytes: int = Field(4_000_000, ge=1024)
    read_timeout_s: float = Field(30.0, gt=0)
    """Deadline on reading one request, its headers and its body, from the connection's
    opening (or the next request's first byte): past it, 408 and the connection closed. Kept
    by the HTTP protocol (:mod:`envhub.server.reading`) that ``envhub serve`` runs."""
    max_batch: int = Field(1024, ge=1)
    request_timeout_s: float = Field(120.0, gt=0)
    """Server-side deadline of one environment call, counted from when a worker starts it."""
    inline_budget_ms: float = Field(10.0, gt=0)
    """Longest call of an environment that runs its steps on the event loop
    (:attr:`~envhub.core.Env.inline_steps`); past it three times, its calls go to the worker
    threads (:mod:`envhub.server.calls`)."""
    queue_timeout_s: float = Field(5.0, gt=0)
    """Longest wait of a call for a free worker; then 503 ``overloaded`` with ``Retry-After``
    (the call never ran, the client sends it again). Small beside the client's deadline, which
    must cover this wait plus the step itself."""
    allowed_hosts: list[str] = Field(default_factory=list)
    """``Host`` names served besides loopback ones (``name``, ``name:port``; ``*``: any), for a
    proxy or another name in front (DNS rebinding protection, :mod:`envhub.server.origin`)."""
    allowed_origins: list[str] = Field(default_factory=list)
    """Browser ``Origin`` values admitted besides loopback ones (``*``: any)."""
    answers: bool = False
    """Serve the tasks (with their gold answers) at ``/tasks`` and grade any guess at
    ``/verify``. Off (the default, for ``envhub serve`` and ``create_app`` alike), both answer
    403: the port an agent's harness reaches hands out no gold and is no free oracle outside
    an episode. ``envhub serve --answers`` or ``ServerSettings(answers=True)`` turns it on, for
    a port only the trainer or the evaluator reaches; envhub's own runners
    (``make(runner="http" | "docker")``) start their servers so."""


# ---------------------------------------------------------------------------- the app

EXAMPLES: dict[str, dict[str, Any]] = {
    "/reset": {"seed": 0},
    "/step": {"session_id": "SESSION", "session_secret": "SECRET", "message": "42"},
    "/finish": {"session_id": "SESSION", "session_secret": "SECRET"},
    "/close": {"session_id": "SESSION", "session_secret": "SECRET"},
    "/verify": {"items": [{"task_id": "TASK", "response": "The answer is 42."}]},
}
"""A valid body per path, shown in every 422 so the caller sees the expected shape."""


class Server:
    """One environment's serving state (sessions, the worker pool, counters) and its routes.

    Each route is a small method; :data:`ROUTES` lists them and :func:`create_app` mounts them.
    """

    def __init__(self, env: Env, settings: ServerSettings) -> None:
        """Make the session table, the worker pool and the counters for ``env``."""
        self.env = env
        if env.async_steps and "max_inflight" not in settings.model_fields_set:
            settings = settings.model_copy(update={"max_inflight": 2 * settings.max_sessions})
        self.settings = settings
        self.sessions = SessionTable(settings.max_sessions, settings.session_ttl_s)
        self.pool = Workers(settings.threads)
        self.metrics: Counter[str] = Counter()
        self.started = time.time()
        self.calls = Calls(
            env, self.pool, self.metrics, queue_s=settings.queue_timeout_s,
            run_s=settings.request_timeout_s, inline_budget_s=settings.inline_budget_ms / 1000,
        )  # fmt: skip
        self.episodes = Episodes(env, self.sessions, self.calls, self.metrics)
        self.mcp_manager: Any = None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the worker pool, under the server's deadline (TimeoutError past it).

        Lean worker threads (:mod:`envhub.server.workers`), not anyio.to_thread nor an
        executor: their per-call locks and bookkeeping were the event loop's largest cost per
        WebSocket step. The deadline counts from when a worker starts the call; a call that
        finds no free worker within ``queue_timeout_s`` is refused unstarted (``Overloaded``).
        At the deadline the call is abandoned (its thread finishes on its own). Resets and
        steps go through :class:`~envhub.server.calls.Calls`, which may run them on the loop.
        """
        return await self.calls.blocking(fn, *args)

    @asynccontextmanager
    async def lifespan(self, _: FastAPI):
        """Expire idle sessions while serving; close everything at shutdown.

        At the first start in a process, everything loaded so far (modules, the env's tasks)
        is moved out of the garbage collector's reach (``gc.freeze``): a full collection
        walked all of it, a 50-100 ms pause of every episode in flight every few hundred
        episodes.
        """
        _freeze_loaded()
        async with anyio.create_task_group() as tg, contextlib.AsyncExitStack() as stack:
            if self.mcp_manager is not None:
                await stack.enter_async_context(self.mcp_manager.run())
            tg.start_soon(self._reap)
            yield
            tg.cancel_scope.cancel()
        self.sessions.close_all()
        self.pool.shutdown()
        self.env.close()

    async def _reap(self) -> None:
        while True:
            await anyio.sleep(min(30.0, self.settings.session_ttl_s / 2))
            self.metrics["sessions_expired"] += self.sessions.reap()

    # ------------------------------------------------------------------ routes

    async def health(self) -> dict[str, str]:
        """Liveness: answers at once, whatever the load."""
        return {"status": "ok"}

    async def info(self) -> EnvInfo:
        """The environment, its spec and the server's limits."""
        return EnvInfo(
            **{
                **self.env.info(),
                "spec": self.env.spec.model_dump(mode="json", exclude={"source"}),
                "server": self.settings.model_dump(),
            }
        )

    async def get_metrics(self) -> dict[str, Any]:
        """Counters since start."""
        uptime = round(time.time() - self.started, 1)
        return {
            **self.metrics,
            "sessions": len(self.sessions),
            "uptime_s": uptime,
            "calls": self.calls.mode,
        }

    async def tasks(self, split: str | None = None, offset: int = 0, limit: int = 100) -> TaskPage:
        """A page of the tasks of ``split`` (gold answers included: behind ``--answers``)."""
        if offset < 0 or not 1 <= limit <= 10_000:
            raise ValueError("offset must be >= 0 and limit in 1..10000")
        all_tasks = await self.run(self.env.tasks, split)
        return TaskPage(tasks=list(all_tasks[offset : offset + limit]), total=len(all_tasks))

    async def reset(self, body: ResetRequest) -> Response:
        """Start an episode in a new session (closing ``close_session``, if its secret fits)."""
        if body.close_session:
            self.sessions.authorize(body.close_session, body.close_secret)
        _, text = await self.episodes.reset(body.seed, body.task_id, body.close_session)
        return Response(text, media_type="application/json")

    async def step(self, body: StepRequest) -> Response:
        """One assistant message; the episode's failures come back as its status."""
        self.sessions.authorize(body.session_id, body.session_secret)
        if body.oversized is not None:
            limit = self.settings.max_body_bytes
            text = await self.episodes.refuse(body.session_id, body.oversized, limit, body.seq)
        else:
            text = await self.episodes.step(body.session_id, body.message, body.seq)
        return Response(text, media_type="application/json")

    async def finish(self, body: FinishRequest) -> Response:
        """End the episode from outside (a trainer's budget): its final accounting."""
        self.sessions.authorize(body.session_id, body.session_secret)
        text = await self.episodes.finish(body.session_id)
        return Response(text, media_type="application/json")

    async def close(self, body: CloseRequest) -> dict[str, bool]:
        """End a session early."""
        self.sessions.authorize(body.session_id, body.session_secret)
        return {"closed": self.episodes.close(body.session_id)}

    async def verify(self, body: VerifyRequest) -> VerifyResponse:
        """Verify a batch: a bad response is its item's status, a bad request a 4xx.

        Behind ``--answers`` (:data:`ORACLES`), as ``/tasks``.
        """
        if len(body.items) > self.settings.max_batch:
            limit = self.settings.max_batch
            raise ValueError(f"batch of {len(body.items)} items; the limit is {limit}")
        scores = await self.run(_verify_items, self.env, body.items, self.settings.max_body_bytes)
        for s in scores:
            self.metrics[f"verify_{s.status.value}"] += 1
        return VerifyResponse(scores=scores)


ROUTES: tuple[tuple[str, str, str, type[BaseModel] | None], ...] = (
    ("GET", "/health", "health", None),
    ("GET", "/info", "info", EnvInfo),
    ("GET", "/metrics", "get_metrics", None),
    ("GET", "/tasks", "tasks", TaskPage),
    ("POST", "/reset", "reset", ResetResponse),
    ("POST", "/step", "step", StepResult),
    ("POST", "/finish", "finish", StepResult),
    ("POST", "/close", "close", None),
    ("POST", "/verify", "verify", VerifyResponse),
)
"""The HTTP routes: method, path, :class:`Server` method, documented response model."""

ORACLES = frozenset({"/tasks", "/verify"})
"""Routes that hand out gold answers or grade a guess outside an episode: refused (403) unless
the server serves answers (``ServerSettings.answers``, ``--answers``)."""


def create_app(
    env: Env,
    settings: ServerSettings | None = None,
    *,
    mcp: bool = False,
    dialect: str | None = None,
) -> FastAPI:
    """A FastAPI app serving ``env``: sessions for episodes, batch verification, listings.

    With ``mcp``, the environment's tools are also an MCP server at ``/mcp`` for the agent, and
    its episodes one at ``/mcp/control`` for the harness (envhub.server.mcp). With ``dialect``
    (``openenv``, ``nemo-gym``) another ecosystem's protocol takes the paths it names
    (envhub.server.dialects).
    """
    server = Server(env, settings or ServerSettings())
    app = FastAPIOffline(
        title=f"envhub: {env.spec.id}",
        description=env.spec.description or "An envhub environment server.",
        lifespan=server.lifespan,
    )
    app.state.settings = server.settings
    app.state.sessions = server.sessions
    errors.install(app, EXAMPLES, server.metrics)
    app.add_exception_handler(SessionError, _on_session)  # type: ignore[arg-type]
    owned = dialects.install(app, server, dialect)
    for method, path, name, model in ROUTES:
        if path not in owned:
            app.add_api_route(path, getattr(server, name), methods=[method], response_model=model)
    if mcp:
        from . import mcp as mcp_server

        server.mcp_manager = mcp_server.install(
            app, server.episodes, idle_s=server.settings.session_ttl_s
        )
    if "/ws" not in owned:
        ws.install(app, server.episodes, server.metrics)
    app.add_middleware(Admission, limit=server.settings.max_inflight, metrics=server.metrics)
    app.add_middleware(BodyLimit, limit=server.settings.max_body_bytes)
    s = server.settings
    if not s.answers:
        app.add_middleware(AnswersOff, paths=ORACLES | dialects.oracles(dialect))
    app.add_middleware(Guard, check=HostCheck(s.allowed_hosts, s.allowed_origins))  # outermost
    return app


@functools.cache
def _freeze_loaded() -> None:
    """``gc.freeze()`` once per process (a process that starts many apps, tests, freezes once)."""
    gc.freeze()


async def _on_session(request: Request, exc: SessionError) -> JSONResponse:
    headers = {"Retry-After": "1"} if exc.code == 503 else {}
    return error_response(exc.code, exc.kind, str(exc), **headers)


def _task_of(env: Env, item: VerifyItem) -> Task | str:
    if item.task is not None:
        return item.task
    if item.gold is not None:
        try:
            return env.task_from_gold(item.gold)
        except GoldAnswerError as e:  # the request's gold, not the environment's data
            raise ValueError(f"gold {item.gold[:80]!r}: {e}") from e
    try:
        return env.get_task(str(item.task_id))
    except NotSupported:  # an env that does not list its tasks looks the id up in verify
        return str(item.task_id)


def _verify_items(env: Env, items: list[VerifyItem], limit: int) -> list[Score]:
    """Scores in order.

    A request error (unknown task id, a gold the env cannot take, a game that does not verify)
    is the caller's: the whole request fails with a 4xx naming the item, never a reward of 0
    with the model's ``invalid_action``. A response the client could not send (``oversized``:
    over the body ``limit``) is the model's ``invalid_action``.
    """
    tasks: list[Task | str] = []
    for i, item in enumerate(items):
        try:
            tasks.append(_task_of(env, item))
        except (EnvhubError, ValueError) as e:
            raise type(e)(f"items[{i}]: {e}") from e
    return [
        env.verify(task, item.response)
        if item.response is not None
        else Score(reward=0.0, status=Status.INVALID_ACTION, error=too_large(item.oversized, limit))
        for task, item in zip(tasks, items, strict=True)
    ]
