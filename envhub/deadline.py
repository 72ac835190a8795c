"""Run a call under a wall-clock deadline, on reusable worker threads.

Python cannot interrupt a thread, so a deadline on in-process work means running it on another
thread and waiting at most so long: :func:`call_within` returns the call's result, re-raises
its exception, or raises :class:`DeadlineExceeded` when the deadline passes first. A call that
overruns is abandoned: it goes on in the background and its thread ends after it; the caller
must treat whatever that call touches as lost (the step's episode ends).

Workers are kept and reused, because starting a thread per call costs more than a cheap step
(0.1-0.3 ms against 0.02 ms for a math answer); handing a call to an idle worker costs tens
of microseconds. A worker never waits for a busy one: when none is idle a new one starts, so
abandoned calls can never starve the others.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

ADMISSION_WAIT_S = 300.0
"""Longest time a client keeps sending again a call that a saturated server refused unstarted
(``overloaded``: every worker busy with other episodes' work; see
:mod:`envhub.server.workers`).

Waiting for a turn is nobody's fault and never the model's: within this budget a refused call
is sent again, uncounted; past it the call is the machinery's ``infra_error``. A caller that
bounds environment calls itself (the trainer) adds it to its own deadline.
"""

MAX_IDLE = 64
"""Idle workers kept for reuse; more than this end when they finish."""


class DeadlineExceeded(TimeoutError):
    """The call ran past its deadline and was abandoned."""


class _Worker:
    """One thread that runs the calls handed to it, one at a time."""

    def __init__(self) -> None:
        self.inbox: queue.SimpleQueue[Callable[[], Any] | None] = queue.SimpleQueue()
        self.finished = threading.Event()
        self.lock = threading.Lock()
        self.abandoned = False
        self.outcome: tuple[bool, Any] = (False, None)
        threading.Thread(target=self._loop, name="envhub-deadline", daemon=True).start()

    def _loop(self) -> None:
        while (fn := self.inbox.get()) is not None:
            try:
                outcome: tuple[bool, Any] = (True, fn())
            except BaseException as exc:  # noqa: BLE001 (handed to the caller, which raises it)
                outcome = (False, exc)
            with self.lock:
                self.outcome = outcome
                self.finished.set()
                if self.abandoned:
                    return

    def run(self, fn: Callable[[], T], timeout: float) -> tuple[bool, Any]:
        """``(True, result)``, ``(False, exception)``; raises ``DeadlineExceeded`` on expiry."""
        self.finished.clear()
        self.inbox.put(fn)
        self.finished.wait(timeout)
        with self.lock:
            if not self.finished.is_set():
                self.abandoned = True
                raise DeadlineExceeded(f"the call ran past its {timeout:g} s deadline")
            outcome, self.outcome = self.outcome, (False, None)
            return outcome


_idle: list[_Worker] = []
_idle_lock = threading.Lock()


def call_within(fn: Callable[[], T], timeout: float) -> T:
    """``fn()`` run on a worker thread, waiting at most ``timeout`` seconds.

    It runs in a copy of the caller's context (its context variables), as
    ``asyncio.to_thread`` runs a function.

    Raises:
        DeadlineExceeded: ``fn`` did not return in time (it goes on in the background).
        BaseException: Whatever ``fn`` raised.
    """
    with _idle_lock:
        worker = _idle.pop() if _idle else None
    worker = worker or _Worker()
    context = contextvars.copy_context()
    ok, value = worker.run(lambda: context.run(fn), timeout)
    with _idle_lock:
        keep = len(_idle) < MAX_IDLE
        if keep:
            _idle.append(worker)
    if not keep:
        worker.inbox.put(None)
    if not ok:
        raise value
    return value


async def await_within(awaitable: Awaitable[T], timeout: float) -> T:
    """``await awaitable``, at most ``timeout`` seconds; then it is cancelled.

    Only this deadline raises :class:`DeadlineExceeded`: a ``TimeoutError`` the awaitable
    raises itself (its own wait ran out) comes through as it is, so whose wait ran out is never
    confused.

    Raises:
        DeadlineExceeded: The awaitable did not finish in time (it is cancelled).
        BaseException: Whatever the awaitable raised.
    """
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait((task,), timeout=timeout)
    except BaseException:  # the caller was cancelled: the work goes with it
        task.cancel()
        raise
    if not done:
        task.cancel()
        raise DeadlineExceeded(f"the call ran past its {timeout:g} s deadline")
    return task.result()
