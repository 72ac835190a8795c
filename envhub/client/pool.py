"""The input and output that a handle and its forks share: the :class:`Pool`.

Shared by the forks of one :class:`~envhub.client.remote_env.RemoteEnv`: the HTTP connection
pools (one blocking client, one async client per event loop), the server's description
(``/info``), the bound on calls in flight, and the I/O of a plan's steps (:meth:`Pool.perform`
blocking, :meth:`Pool.aperform` awaited). Which wire carries the calls is the handle's choice
(:class:`~envhub.client.remote_env.Wires`), not the pool's.

An HTTP answer is streamed and read within :func:`~envhub.client.reading.reply_limit` and the
call's deadline over the whole body (:mod:`envhub.client.reading`): a server that answers
100 MB, or an endless body, is refused as ``env_error`` with the rest unread, and one still
sending its body at the deadline is a :class:`~envhub.wire.Transient` (``infra_error``).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import time
import weakref
from collections.abc import Iterator
from typing import Any

import httpx

from ..deadline import DeadlineExceeded
from ..errors import EpisodeError, TransportError
from ..spec import EnvSpec
from ..wire import EnvInfo, Transient
from .plan import Call, Http, Op, Pause, WsCall, acall, asleep, call, sleep
from .reading import abody_within, answered, body_within, reply_limit

MAX_QUEUE_S = 60.0
"""The most of a server's stated queue bound (``queue_timeout_s``) a client adds to its deadline."""


class Pool:
    """The connections, description and call bound that forks of one handle share."""

    LIMITS = httpx.Limits(max_connections=512, max_keepalive_connections=128)

    def __init__(self, url: str, timeout: float, max_concurrency: int) -> None:
        """Read the server's ``/info`` at ``url`` (a :class:`TransportError` if it is down)."""
        self.url, self.timeout = url, timeout
        self.client = httpx.Client(base_url=url, timeout=timeout, limits=self.LIMITS)
        self._async: weakref.WeakKeyDictionary[Any, httpx.AsyncClient] = weakref.WeakKeyDictionary()
        self._bound = _Slots(max_concurrency)
        self._abound: weakref.WeakKeyDictionary[Any, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self.max_concurrency = max_concurrency
        try:
            resp = self.fetch(Http("GET", "/info", {}))
            resp.raise_for_status()
        except (httpx.HTTPError, EpisodeError, Transient) as e:
            self.client.close()
            raise TransportError(f"cannot reach envhub server at {url}: {e}") from e
        self.info = EnvInfo.model_validate_json(resp.content)
        self.spec = EnvSpec.model_validate(self.info.spec)
        self.max_body = int(self.info.server.get("max_body_bytes", 0))
        self.queue_s = min(float(self.info.server.get("queue_timeout_s", 0) or 0), MAX_QUEUE_S)
        """The longest a call waits in the server's queue before a worker starts it (then it
        is refused unstarted and sent again, uncounted). Each answer's deadline adds it to
        ``timeout``: queueing behind other episodes is the machinery's time, never the
        model's (a long-running program answered past a 60 s deadline that counted a queue)."""
        self.timeout = timeout + self.queue_s
        self.client.timeout = httpx.Timeout(self.timeout)

    def perform(self, op: Op) -> Any:
        """Do one step of a plan with blocking calls (within a call slot)."""
        if isinstance(op, Pause):
            return sleep(op)
        if isinstance(op, Call):  # not a call to the server: no call slot
            return call(op)
        with self.slot(self.timeout):
            if isinstance(op, WsCall):  # the hot one: a step
                return op.sock.call(op.text, op.timeout)
            if isinstance(op, Http):
                return self.fetch(op)
            from .ws_socket import connect

            return connect(op)

    async def aperform(self, op: Op) -> Any:
        """Async :meth:`perform`: the step awaited on the running loop."""
        if isinstance(op, Pause):
            return await asleep(op)
        if isinstance(op, Call):
            return await acall(op)
        async with self.aslot(self.timeout):
            if isinstance(op, WsCall):
                return await op.sock.call(op.text, op.timeout)
            if isinstance(op, Http):
                return await self.afetch(op)
            from .ws_socket import aconnect

            return await aconnect(op)

    def fetch(self, op: Http) -> httpx.Response:
        """``op`` sent (outside the call slots); its answer, read within the bound and deadline.

        Raises:
            EpisodeError: The answer is over :func:`~envhub.client.reading.reply_limit`.
            Transient: It was still arriving at the deadline (``timeout``).
            httpx.HTTPError: The request failed (the plan decides: sent again or not).
        """
        deadline, limit = time.monotonic() + self.timeout, _limit(op)
        request = self.client.build_request(op.method, op.path, **op.kwargs)
        resp = self.client.send(request, stream=True)
        try:
            return answered(resp, body_within(resp, limit, deadline, self._who(op)))
        except DeadlineExceeded as e:
            raise Transient(f"{e} ({self.timeout:g} s)") from e
        finally:
            resp.close()

    async def afetch(self, op: Http) -> httpx.Response:
        """Async :meth:`fetch`."""
        deadline, limit = time.monotonic() + self.timeout, _limit(op)
        client = self.async_client()
        resp = await client.send(client.build_request(op.method, op.path, **op.kwargs), stream=True)
        try:
            return answered(resp, await abody_within(resp, limit, deadline, self._who(op)))
        except DeadlineExceeded as e:
            raise Transient(f"{e} ({self.timeout:g} s)") from e
        finally:
            await resp.aclose()

    def _who(self, op: Http) -> str:
        return f"the server at {self.url} ({op.method} {op.path})"

    @contextlib.contextmanager
    def slot(self, timeout: float) -> Iterator[None]:
        """Hold one of ``max_concurrency`` call slots (a deadline failure if none frees)."""
        token = self._bound.take(timeout)
        try:
            yield
        finally:
            self._bound.give(token)

    def aslot(self, timeout: float) -> _AsyncSlot:
        """Async :meth:`slot` (one semaphore per event loop)."""
        loop = asyncio.get_running_loop()
        sem = self._abound.get(loop)
        if sem is None:
            sem = self._abound[loop] = asyncio.Semaphore(self.max_concurrency)
        return _AsyncSlot(sem, timeout)

    def async_client(self) -> httpx.AsyncClient:
        """The async client of the running event loop (httpx clients are loop-bound)."""
        loop = asyncio.get_running_loop()
        if loop not in self._async:
            self._async[loop] = httpx.AsyncClient(
                base_url=self.url, timeout=self.timeout, limits=self.LIMITS
            )
        return self._async[loop]

    def close(self) -> None:
        """Close the connection pools."""
        self.client.close()
        for client in self._async.values():
            try:
                asyncio.get_running_loop().create_task(client.aclose())
            except RuntimeError:  # no loop running: let the sockets close with the process
                pass
        self._async.clear()


def _limit(op: Http) -> int:
    """The longest answer read for ``op`` (:func:`~envhub.client.reading.reply_limit`)."""
    return reply_limit(len(op.kwargs.get("content") or b""))


class _Slots:
    """A thread-safe bound on calls in flight: a queue of tokens.

    Not :class:`threading.BoundedSemaphore`, whose Python-level lock a thread can hold while
    it waits for the GIL, so that hundreds of others queue behind it; taking and giving a
    token of a :class:`queue.SimpleQueue` is one C call each.
    """

    def __init__(self, n: int) -> None:
        self._tokens: queue.SimpleQueue[int] = queue.SimpleQueue()
        for i in range(n):
            self._tokens.put(i)

    def take(self, timeout: float) -> int:
        try:
            return self._tokens.get(timeout=timeout)
        except queue.Empty:
            raise Transient(f"no free client slot within {timeout:g} s") from None

    def give(self, token: int) -> None:
        self._tokens.put(token)


class _AsyncSlot:
    """``async with``: hold one call slot; a free slot costs no timer (the common case)."""

    __slots__ = ("sem", "timeout")

    def __init__(self, sem: asyncio.Semaphore, timeout: float) -> None:
        self.sem, self.timeout = sem, timeout

    async def __aenter__(self) -> None:
        if not self.sem.locked():
            await self.sem.acquire()  # returns at once
            return
        try:
            async with asyncio.timeout(self.timeout):
                await self.sem.acquire()
        except TimeoutError:
            raise Transient(f"no free client slot within {self.timeout:g} s") from None

    async def __aexit__(self, *exc: object) -> None:
        self.sem.release()
