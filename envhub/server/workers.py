"""The worker threads that run environment code off the event loop, with a lean hand-off.

Why not ``loop.run_in_executor`` with a :class:`~concurrent.futures.ThreadPoolExecutor`: its
``submit`` takes Python-level locks that the worker threads also take (the idle semaphore's
condition). When a worker holds one while waiting for the GIL, the event loop blocks on it for
up to a GIL switch interval (5 ms), and every episode in flight waits. Profiled under 32
sessions, ``submit`` was the event loop's largest cost per step.

Here the loop puts a :class:`Call` on a :class:`queue.SimpleQueue` (C, no Python lock) and a
worker hands the result back with ``loop.call_soon_threadsafe``: no lock is shared between
the loop and the workers.

**Deadlines count work, not queueing.** A call's deadline (``run_s``) starts when a worker
takes it, so a step that waits behind other episodes' slow steps is never charged for the
wait. While queued, a call waits at most ``queue_s``; then it is refused with
:class:`Overloaded` (never started, nothing applied: the client may send it again, see
:mod:`envhub.client.remote_env`). A pool whose workers have taken no call for ``run_s`` is wedged
(every thread is past its deadline): queued calls are refused with :class:`Stalled`, the server's
failure, so even a wedged server answers in finite time.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_STOP = None


class Overloaded(Exception):
    """A call waited its whole queue bound for a worker: refused unstarted, to send again."""


class Stalled(Exception):
    """No worker took a call for a whole deadline: the pool is wedged (the server's failure)."""


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if future.done():  # abandoned at the deadline or refused: nobody waits for it
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


class Call(Generic[T]):
    """One queued call: its future, and the claim that the loop and a worker race for.

    Exactly one side pops ``claim``: a worker that starts the call, or the loop that refuses
    it unstarted. A one-item ``list.pop`` is atomic, so no lock is shared.
    """

    __slots__ = ("args", "claim", "fn", "future", "loop", "started", "timer")

    def __init__(self, loop: asyncio.AbstractEventLoop, fn: Callable[..., T], args: Any) -> None:
        self.loop, self.fn, self.args = loop, fn, args
        self.future: asyncio.Future[T] = loop.create_future()
        self.claim = [True]
        self.started: float | None = None
        self.timer: asyncio.TimerHandle | None = None

    def take(self) -> bool:
        """Claim the call; False if the other side did first."""
        try:
            return self.claim.pop()
        except IndexError:
            return False


class Workers:
    """``threads`` daemon threads taking calls from one queue."""

    def __init__(self, threads: int, name: str = "envhub-env") -> None:
        """Start nothing yet: the threads start with the first call."""
        self.size, self.name = threads, name
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self.last_take = time.monotonic()
        """When a worker last took a call (the pool's sign of progress)."""

    def _start(self) -> None:
        for i in range(self.size):
            thread = threading.Thread(target=self._work, name=f"{self.name}-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _work(self) -> None:
        while (call := self._queue.get()) is not _STOP:
            self.last_take = now = time.monotonic()
            if not call.take() or call.future.cancelled():  # refused, or its caller left
                continue
            call.started = now
            try:
                ok, value = True, call.fn(*call.args)
            except BaseException as e:  # noqa: BLE001 - handed to the caller, which raises it
                ok, value = False, e
            try:
                call.loop.call_soon_threadsafe(_settle, call.future, ok, value)
            except RuntimeError:  # the loop closed while this call ran
                pass

    def _put(self, call: Call[T]) -> Call[T]:
        if self._closed:
            raise RuntimeError("the server's workers are shut down")
        if not self._threads:
            self._start()
        self._queue.put(call)
        return call

    async def run(self, fn: Callable[..., T], *args: Any, queue_s: float, run_s: float) -> T:
        """``fn(*args)``: at most ``queue_s`` queued, then at most ``run_s`` from its start.

        Raises:
            Overloaded: No worker took the call within ``queue_s`` (it never ran).
            Stalled: No worker took any call for ``run_s`` (the pool is wedged).
            TimeoutError: The call ran past ``run_s`` (abandoned: its thread finishes alone).
        """
        call = self._put(Call(asyncio.get_running_loop(), fn, args))
        end = time.monotonic() + queue_s
        call.timer = call.loop.call_later(min(queue_s, run_s), self._expire, call, end, run_s)
        try:
            return await call.future
        finally:
            call.timer.cancel()

    def _expire(self, call: Call[Any], queue_end: float, run_s: float) -> None:
        """The call's timer: refuse it unstarted, fail it past its deadline, or wait on.

        It fires at least every ``run_s`` while the call is queued, so a call taken meanwhile
        gets its deadline counted from its start (the loop's clock is ``time.monotonic``).
        """
        if call.future.done():
            return
        now = time.monotonic()
        if call.started is not None and now >= call.started + run_s:
            call.future.set_exception(TimeoutError(f"the call ran past its {run_s:g} s deadline"))
            return
        if call.started is None and now >= queue_end and call.take():
            idle = now - self.last_take
            call.future.set_exception(_refusal(idle >= run_s, idle))
            return
        at = call.started + run_s if call.started is not None else min(queue_end, now + run_s)
        call.timer = call.loop.call_at(at, self._expire, call, queue_end, run_s)

    def shutdown(self) -> None:
        """Stop the threads once the calls queued so far are done (without waiting)."""
        self._closed = True
        for _ in self._threads:
            self._queue.put(_STOP)


def _refusal(stalled: bool, idle: float) -> Exception:
    if stalled:
        return Stalled(f"no worker took a call for {idle:.0f} s: the server's workers are wedged")
    return Overloaded("every worker is busy with other episodes; send the call again")
