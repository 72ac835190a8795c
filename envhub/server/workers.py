"""The worker threads that run environment code off the event loop, with a lean hand-off.

Why not ``loop.run_in_executor`` with a :class:`~concurrent.futures.ThreadPoolExecutor`: its
``submit`` takes Python-level locks that the worker threads also take (the idle semaphore's
condition). When a worker holds one while waiting for the GIL, the event loop blocks on it for
up to a GIL switch interval (5 ms), and every episode in flight waits. Profiled under 32
sessions, ``submit`` was the event loop's largest cost per step.

Here the loop puts ``(future, fn, args)`` on a :class:`queue.SimpleQueue` (C, no Python lock)
and a worker hands the result back with ``loop.call_soon_threadsafe``: no lock is shared
between the loop and the workers.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_STOP = None


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if future.cancelled():  # abandoned at the deadline: nobody waits for it
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


class Workers:
    """``threads`` daemon threads taking calls from one queue."""

    def __init__(self, threads: int, name: str = "envhub-env") -> None:
        """Start nothing yet: the threads start with the first call."""
        self.size, self.name = threads, name
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def _start(self) -> None:
        for i in range(self.size):
            thread = threading.Thread(target=self._work, name=f"{self.name}-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _work(self) -> None:
        while (item := self._queue.get()) is not _STOP:
            loop, future, fn, args = item
            if future.cancelled():
                continue
            try:
                ok, value = True, fn(*args)
            except BaseException as e:  # noqa: BLE001 - handed to the caller, which raises it
                ok, value = False, e
            try:
                loop.call_soon_threadsafe(_settle, future, ok, value)
            except RuntimeError:  # the loop closed while this call ran
                pass

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """``fn(*args)`` on a worker thread; the future belongs to the running loop."""
        if self._closed:
            raise RuntimeError("the server's workers are shut down")
        if not self._threads:
            self._start()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put((loop, future, fn, args))
        return future

    def shutdown(self) -> None:
        """Stop the threads once the calls queued so far are done (without waiting)."""
        self._closed = True
        for _ in self._threads:
            self._queue.put(_STOP)
