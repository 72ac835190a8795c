"""What the judge's requests share in one process, blocking or awaited: the cap and the client.

* :class:`Gate`: the per-process cap on requests in flight to one endpoint and model
  (``max_concurrency``), one count for threads and event loops alike. A thread waits for a
  slot on an event; a coroutine on a future of its own loop, holding no thread (a waiting
  judged step must not hold one, :attr:`envhub.core.Env.async_steps`). A freed slot goes to
  the longest waiter, whichever kind it is.
* :func:`async_client`: the running loop's ``httpx.AsyncClient``. A client belongs to the
  loop that made it, and making one costs tens of milliseconds (its TLS context), so each
  loop keeps one for every judge, closed at the loop's end.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncGenerator, Callable

import httpx


class Gate:
    """A counting semaphore that threads (``with``) and coroutines (``async with``) share."""

    def __init__(self, size: int) -> None:
        """``size`` slots, all free."""
        self._free = size
        self._lock = threading.Lock()
        self._waiters: deque[Callable[[], None]] = deque()
        """Each waiter's wake-up, oldest first: called with a slot handed to it."""

    def __enter__(self) -> None:
        with self._lock:
            if self._free:
                self._free -= 1
                return
            handed = threading.Event()
            self._waiters.append(handed.set)
        handed.wait()

    def __exit__(self, *_: object) -> None:
        self.release()

    async def __aenter__(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._free:
                self._free -= 1
                return
            handed: asyncio.Future[None] = loop.create_future()

            def wake() -> None:
                try:
                    loop.call_soon_threadsafe(_settle, handed)
                except RuntimeError:  # its loop closed meanwhile: the slot goes on
                    self.release()

            self._waiters.append(wake)
        try:
            await handed
        except BaseException:  # cancelled (the step's deadline): no slot wanted any more
            with self._lock:
                waiting = wake in self._waiters
                if waiting:
                    self._waiters.remove(wake)
            if not waiting:  # a slot was handed over already: pass it on
                self.release()
            raise

    async def __aexit__(self, *_: object) -> None:
        self.release()

    def release(self) -> None:
        """Free a slot: to the longest waiter, if any."""
        with self._lock:
            if not self._waiters:
                self._free += 1
                return
            wake = self._waiters.popleft()
        wake()


def _settle(handed: asyncio.Future[None]) -> None:
    if not handed.done():
        handed.set_result(None)


_CLIENTS: dict[asyncio.AbstractEventLoop, tuple[httpx.AsyncClient, AsyncGenerator[None, None]]] = {}
_CLIENTS_LOCK = threading.Lock()


async def async_client() -> httpx.AsyncClient:
    """The running loop's client of every judge endpoint (made on first use).

    Connections are not capped here: :class:`Gate` caps each endpoint. The client is closed
    when its loop finishes its async generators (the end of ``asyncio.run``).
    """
    loop = asyncio.get_running_loop()
    with _CLIENTS_LOCK:
        for gone in [other for other in _CLIENTS if other.is_closed()]:
            del _CLIENTS[gone]
        held = _CLIENTS.get(loop)
        if held is not None:
            return held[0]
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
        client = httpx.AsyncClient(limits=limits)
        keeper = _keep(client)
        _CLIENTS[loop] = (client, keeper)
    await keeper.asend(None)  # started: the loop finalizes it, and so closes the client
    return client


async def _keep(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        await client.aclose()
