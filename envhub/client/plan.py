"""The client's logic written once, as plans; two small drivers do the I/O, sync or async.

A *plan* is a generator that yields what it needs done (an :class:`Http` request, a
:class:`WsOpen` or :class:`WsCall` on a WebSocket, a :class:`Pause`, a blocking :class:`Call`
such as replacing a dead container) and is sent the outcome:
the answer, or the exception thrown into it at the ``yield``. Retries, admission waits, request
bodies and the reading of answers live in the plans (the wires, ``envhub.client.http_wire``
and ``envhub.client.ws_wire``; ``envhub.client.remote_env`` maps their failures);
:func:`drive` performs the steps with blocking calls on the caller's thread, :func:`adrive`
awaits them on the running event loop (the steps' I/O is ``envhub.client.pool.Pool``'s).

Why plans and not the sync form running the async one on a private event loop: a loop per
thread costs a loop iteration, a future and a selector wake-up per call, where the sync
WebSocket client is one ``send`` and one blocking ``recv`` with a kernel deadline (see
:class:`envhub.client.ws_socket._SyncSocket`). A generator step costs well under a microsecond,
so both forms keep their own I/O and share every decision (the sans-I/O pattern of ``h11`` and
``websockets``, one level up).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(slots=True)
class Http:
    """One HTTP request; the outcome is the ``httpx.Response`` (or its transport error)."""

    method: str
    path: str
    kwargs: dict[str, Any]


@dataclass(slots=True)
class WsOpen:
    """Open a WebSocket to ``url`` (handshake within ``timeout``); the outcome is the socket.

    A message longer than ``max_size`` bytes is refused (``env_error``), the rest unread.
    """

    url: str
    timeout: float
    max_size: int


@dataclass(slots=True)
class WsCall:
    """Send ``text`` on ``sock`` and read the answer's text within ``timeout``."""

    sock: Any
    text: str
    timeout: float


@dataclass(slots=True)
class Pause:
    """Wait ``seconds`` before the next try; the outcome is ``None``."""

    seconds: float


@dataclass(slots=True)
class Call:
    """Call ``fn(*args)``: blocking work that is not a request to the server.

    Replacing a dead container, say. The outcome is what it returns (or raises); :func:`call`
    runs it on the caller's thread, :func:`acall` in a worker thread, so the loop runs on.
    """

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()


Op = Http | WsOpen | WsCall | Pause | Call
Plan = Generator[Op, Any, T]
"""A generator of :data:`Op`, returning ``T``."""


class _Run:
    """A plan under way: the step it waits on (``op``), or its result once ``done``."""

    __slots__ = ("done", "op", "plan", "value")

    def __init__(self, plan: Plan[Any]) -> None:
        self.plan, self.done, self.value = plan, False, None
        self.op: Op | None = None
        self._advance(plan.send, None)  # a plan may end here, with no I/O at all

    def _advance(self, resume: Callable[[Any], Op], outcome: Any) -> None:
        try:
            self.op = resume(outcome)
        except StopIteration as stop:
            self.done, self.value = True, stop.value

    def send(self, outcome: Any) -> None:
        """The step's outcome."""
        self._advance(self.plan.send, outcome)

    def throw(self, error: Exception) -> None:
        """The step failed with ``error``: raised in the plan at its ``yield``."""
        self._advance(self.plan.throw, error)


def drive(plan: Plan[T], perform: Callable[[Op], Any]) -> T:
    """Run ``plan``, each step done by ``perform`` (blocking); its result."""
    run = _Run(plan)
    while not run.done:
        try:
            outcome = perform(run.op)
        except Exception as e:  # noqa: BLE001 - thrown into the plan, which decides
            run.throw(e)
        else:
            run.send(outcome)
    return run.value


async def adrive(plan: Plan[T], perform: Callable[[Op], Awaitable[Any]]) -> T:
    """Async :func:`drive`: each step awaited on the running loop."""
    run = _Run(plan)
    while not run.done:
        try:
            outcome = await perform(run.op)
        except Exception as e:  # noqa: BLE001 - thrown into the plan, which decides
            run.throw(e)
        else:
            run.send(outcome)
    return run.value


def sleep(op: Pause) -> None:
    """Perform a :class:`Pause` on this thread."""
    time.sleep(op.seconds)


async def asleep(op: Pause) -> None:
    """Perform a :class:`Pause` on the running loop."""
    await asyncio.sleep(op.seconds)


def call(op: Call) -> Any:
    """Perform a :class:`Call` on this thread."""
    return op.fn(*op.args)


async def acall(op: Call) -> Any:
    """Perform a :class:`Call` in a worker thread, off the running loop."""
    return await asyncio.to_thread(op.fn, *op.args)
