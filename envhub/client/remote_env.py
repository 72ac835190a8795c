"""The remote environment: an :class:`~envhub.core.Env` that talks to ``envhub serve``.

It behaves exactly like the in-process environment: the same types come back, and failures of
the server or the network become ``infra_error`` results of the step or the verification
(never a silent reward of 0). An answer the server should not have given (over the reply
bound of :mod:`envhub.client.reading`, or not the body asked for) is the environment's
``env_error`` (a reset raises the :class:`~envhub.errors.EpisodeError` that says so). Client
mistakes (unknown task, step after the episode ended) are raised as the same exceptions the
in-process environment raises. A call a saturated server
refused unstarted (``overloaded``) is sent again, within ``admission_wait`` and uncounted:
waiting for a turn is never the model's (see :class:`envhub.wire.Backoff`). A step over the
server's body limit is sent as its size alone and answered as the model's ``invalid_action``.

One :class:`RemoteEnv` runs one episode at a time, like any Env. For many concurrent episodes
call :meth:`RemoteEnv.fork`: forks share the server's description, the connection pools and the
bound on concurrent calls (:class:`~envhub.client.pool.Pool`, input and output only), and the
choice of wire (:class:`Wires`).

The calls travel on a *wire* (:class:`~envhub.client.transport.Wire`), picked once per handle
by ``transport=``: ``ws``, the episode over one persistent WebSocket
(:class:`~envhub.client.ws_wire.WsWire`: a step is one frame each way, a dropped connection is
resumed by session id), or ``http``, the JSON routes
(:class:`~envhub.client.http_wire.HttpWire`). ``auto`` (the default) takes the WebSocket and
falls back to HTTP for good when the server or a proxy refuses the handshake (or the
``websockets`` package is missing). The wire owns the handle's session (id, secret, step
count: :class:`~envhub.client.transport.Session`); this class only maps the wire's failures
to the contract's statuses and exceptions.

Every call is written once, as a plan (:mod:`envhub.client.plan`): :meth:`reset` and
:meth:`areset` (and each such pair) only pick the driver, blocking or awaited. A subclass
changes a call, for both forms at once, by overriding its plan (``_reset``, ``_step``,
``_finish``, ``_verify``). The step's message is serialised once, here, the same text for
either wire.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal, Protocol

from ..core import Env, valid_unicode
from ..deadline import ADMISSION_WAIT_S
from ..errors import ConfigError, EpisodeError, EpisodeStateError, TransportError
from ..types import Info, Message, ResetResult, Score, Status, StepResult, Task
from ..wire import Transient
from .http_wire import HttpWire
from .plan import Plan, adrive, drive
from .pool import Pool
from .transport import Items, Limits, Session, Wire, WsRefused

Transport = Literal["auto", "ws", "http"]
TRANSPORTS = ("auto", "ws", "http")


class Wires:
    """The wire factory of a handle and its forks: which wire the server takes, decided once.

    ``auto`` takes the WebSocket until a handshake is refused (or the ``websockets`` package is
    missing), then HTTP for good, for every fork; ``ws`` makes a refusal an error; ``http``
    never tries the WebSocket.
    """

    def __init__(self, transport: str) -> None:
        """A :class:`ConfigError` for a ``transport`` other than ``auto``, ``ws``, ``http``."""
        if transport not in TRANSPORTS:
            raise ConfigError(f"unknown transport {transport!r}; choose one of {TRANSPORTS}")
        self.transport = transport
        self.use_ws = transport != "http" and _have_websockets(transport)

    def new(self, pool: Pool, limits: Limits) -> Wire:
        """A new handle's wire, with a session of its own: WebSocket where taken, else HTTP."""
        http = HttpWire(pool, limits, Session())
        if not self.use_ws:
            return http
        from .ws_wire import WsWire

        return WsWire(http)

    def refused(self, wire: Wire, url: str, error: Exception) -> Wire:
        """``wire``'s WebSocket handshake was refused: HTTP from now on, for every fork.

        The HTTP wire under ``wire`` takes over its session. With ``transport="ws"`` the
        refusal is an error that says what to use instead.
        """
        if self.transport == "ws":
            raise TransportError(f"{url}: {error}; use transport='http'") from error
        self.use_ws = False
        return wire.http


def _have_websockets(transport: str) -> bool:
    try:
        import envhub.client.ws_wire  # noqa: F401
    except ImportError as e:
        if transport == "ws":
            raise ConfigError(f"transport='ws' needs the websockets package: {e}") from e
        return False
    return True


class Closeable(Protocol):
    """Something the client owns and stops on close (a server process, a container)."""

    def close(self) -> None:
        """Stop it."""


class RemoteEnv(Env):
    """An environment served by ``envhub serve`` at ``url``."""

    async_steps: ClassVar[bool] = True
    """Its :meth:`areset` and :meth:`astep` await the server's answer: a server that serves a
    remote environment (an entry that lives in a venv of its own, a verifiers environment
    served from its venv) awaits them on its event loop, holding no thread while they wait."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 60.0,
        retries: int = 3,
        admission_wait: float = ADMISSION_WAIT_S,
        transport: Transport = "auto",
        max_concurrency: int = 1024,
        owner: Closeable | None = None,
        _shared: tuple[Pool, Wires] | None = None,
    ) -> None:
        """Connect to a server (``owner``, if given, is closed with this env).

        Args:
            url: The server, ``http://host:port``.
            timeout: Deadline of every call's work, in seconds; each answer may also take the
                server's queue bound (its `queue_timeout_s`), which is no one's fault.
            retries: Tries after a dropped connection or a refused call.
            admission_wait: Seconds a call is sent again while a saturated server refuses it
                unstarted (``overloaded``); never charged to the model (see
                :data:`envhub.deadline.ADMISSION_WAIT_S`).
            transport: ``auto`` (WebSocket, HTTP where refused), ``ws`` or ``http``.
            max_concurrency: Calls in flight at once over this handle and its forks.
            owner: A server process or container to stop on :meth:`close`.
        """
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.admission_wait = admission_wait
        self._owner = owner
        self._is_fork = _shared is not None
        if _shared is None:
            wires = Wires(transport)  # the transport is checked before the server is called
            _shared = (Pool(self.url, timeout, max_concurrency), wires)
        self._pool, self._wires = _shared
        self.spec = self._pool.spec
        limits = Limits(self._pool.timeout, retries, admission_wait, self._pool.max_body)
        self._wire: Wire = self._wires.new(self._pool, limits)

    @property
    def transport(self) -> str:
        """``ws`` or ``http``: what carries the episodes of this handle and its forks now."""
        return "ws" if self._wires.use_ws else "http"

    def fork(self) -> RemoteEnv:
        """A second handle on the same server, with its own episode and a shared pool."""
        return RemoteEnv(
            self.url,
            timeout=self.timeout,
            retries=self.retries,
            admission_wait=self.admission_wait,
            _shared=(self._pool, self._wires),
        )

    # ------------------------------------------------------------------ the episode

    def _reset(self, aio: bool, seed: int | None, task_id: str | None) -> Plan[ResetResult]:
        try:
            try:
                return (yield from self._wire.reset(seed, task_id, aio))
            except WsRefused as e:
                self._wire = self._wires.refused(self._wire, self.url, e)
            return (yield from self._wire.reset(seed, task_id, aio))
        except Transient as e:
            raise TransportError(f"reset failed at {self.url}: {e}") from e

    def reset(self, *, seed: int | None = None, task_id: str | None = None) -> ResetResult:
        """Start an episode on the server (the previous one, if any, is closed)."""
        return drive(self._reset(False, seed, task_id), self._pool.perform)

    async def areset(self, *, seed: int | None = None, task_id: str | None = None) -> ResetResult:
        """Async :meth:`reset`."""
        return await adrive(self._reset(True, seed, task_id), self._pool.aperform)

    def _step(self, aio: bool, action: Message | str) -> Plan[StepResult]:
        message = self._message_json(action)
        try:
            return (yield from self._wire.step(message, aio))
        except (Transient, WsRefused) as e:  # a refused reconnect mid-episode is the machinery's
            return self._lost_step(e)
        except EpisodeError as e:  # an answer over the bound, or not a step's: the server's
            return self._lost_step(e, e.status)

    def step(self, action: Message | str) -> StepResult:
        """Send one assistant message; server failures come back as ``infra_error``."""
        return drive(self._step(False, action), self._pool.perform)

    async def astep(self, action: Message | str) -> StepResult:
        """Async :meth:`step`."""
        return await adrive(self._step(True, action), self._pool.aperform)

    def _message_json(self, action: Message | str) -> str:
        """The message as JSON, serialised once for either wire."""
        if not self._wire.session.live:
            raise EpisodeStateError("call reset() before step()")
        if isinstance(action, str) and action.isascii():  # the common case, without a copy
            return json.dumps(action)
        return valid_unicode(Message.coerce(action)).model_dump_json(exclude_none=True)

    def _lost_step(self, error: Exception, status: Status = Status.INFRA_ERROR) -> StepResult:
        """The episode ended by a failure that is not the model's (``status``)."""
        self._wire.session.end()
        info = Info(task_id="", status=status, error=str(error))
        return StepResult(messages=[], reward=0.0, terminated=False, truncated=True, info=info)

    def _finish(self, aio: bool) -> Plan[StepResult]:
        if not self._wire.session.live:
            raise EpisodeStateError("call reset() before finish()")
        try:
            return (yield from self._wire.finish(aio))
        except Transient as e:
            return self._lost_step(e)
        except EpisodeError as e:
            return self._lost_step(e, e.status)

    def finish(self) -> StepResult:
        """End the episode from outside (on the episode's wire); see :meth:`Env.finish`."""
        return drive(self._finish(False), self._pool.perform)

    async def afinish(self) -> StepResult:
        """Async :meth:`finish`."""
        return await adrive(self._finish(True), self._pool.aperform)

    # ------------------------------------------------------------------ beside the episode

    def _verify(self, items: Items) -> Plan[list[Score]]:
        try:
            return (yield from self._wire.verify(items))
        except Transient as e:
            return [Score(reward=0.0, status=Status.INFRA_ERROR, error=str(e))] * len(items)
        except EpisodeError as e:  # an answer over the bound, or not the scores: the server's
            return [Score(reward=0.0, status=e.status, error=str(e))] * len(items)

    def verify_batch(self, items: Items) -> list[Score]:
        """Verify many pairs in one request."""
        return drive(self._verify(items), self._pool.perform)

    def verify(self, task: Task | str, response: Message | str) -> Score:
        """Verify one response on the server."""
        return self.verify_batch([(task, response)])[0]

    async def averify(self, task: Task | str, response: Message | str) -> Score:
        """Async :meth:`verify`."""
        return (await adrive(self._verify([(task, response)]), self._pool.aperform))[0]

    def _tasks(self, split: str | None) -> Plan[list[Task]]:
        try:
            return (yield from self._wire.tasks(split))
        except Transient as e:
            raise TransportError(str(e)) from e

    def tasks(self, split: str | None = None) -> list[Task]:
        """All tasks of ``split``, fetched page by page."""
        return drive(self._tasks(split), self._pool.perform)

    def task_from_gold(self, gold: str) -> Task:
        """An ad-hoc task whose gold answer is ``gold``."""
        return Task(task_id="adhoc", prompt="", answer=gold)

    def info(self) -> dict[str, Any]:
        """The server's ``/info``."""
        return self._wire.info.model_dump()

    @property
    def primary_component(self) -> str:  # type: ignore[override]
        """The served environment's primary component (from ``/info``)."""
        return self._wire.info.primary_component

    def tools(self) -> list[dict[str, Any]]:
        """The served environment's tools (from ``/info``)."""
        return list(self._wire.info.tools)

    def close(self) -> None:
        """Close the episode; the owner (server, container) and pool too unless a fork."""
        self._wire.close()
        if not self._is_fork:
            self._pool.close()
            if self._owner is not None:
                self._owner.close()
                self._owner = None
