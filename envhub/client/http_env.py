"""The HTTP client: an :class:`~envhub.core.Env` that talks to ``envhub serve``.

It behaves exactly like the in-process environment: the same types come back, and failures of
the server or the network become ``infra_error`` results of the step or the verification
(never a silent reward of 0). Client mistakes (unknown task, step after the episode ended) are
raised as the same exceptions the in-process environment raises. A call a saturated server
refused unstarted (``overloaded``) is sent again, within ``admission_wait`` and uncounted:
waiting for a turn is never the model's (see :class:`envhub.wire.Backoff`). A step over the
server's body limit is sent as its size alone and answered as the model's ``invalid_action``.

One :class:`HTTPEnv` runs one episode at a time, like any Env. For many concurrent episodes
call :meth:`HTTPEnv.fork`: forks share the server's description, the HTTP connection pool and
the bound on concurrent calls.

Two transports carry the episodes (``transport=``): ``ws``, one persistent WebSocket per
handle (:mod:`envhub.client.ws_channel`: a step is one frame each way, a dropped connection is
resumed by session id), and ``http``, the JSON routes. ``auto`` (the default) takes the WebSocket
and
falls back to HTTP for good when the server or a proxy refuses the handshake (or the
``websockets`` package is missing). Verification, listings and ``/info`` always go over HTTP.

Every call is written once, as a plan (:mod:`envhub.client.plan`): ``_reset``, ``_step``,
``_finish``, ``_verify`` build the body, yield their I/O and read the answer; :meth:`reset` and
:meth:`areset` (and each such pair) only pick the driver, blocking or awaited. The step's
message is serialised once, the same text for either wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import weakref
from collections.abc import Iterator, Sequence
from typing import Any, Literal, Protocol

import httpx

from ..core import Env, valid_unicode
from ..deadline import ADMISSION_WAIT_S
from ..errors import ConfigError, EpisodeStateError, TransportError
from ..spec import EnvSpec
from ..types import Info, Message, ResetResult, Score, Status, StepResult, Task
from ..wire import (
    OVERLOADED,
    RETRY_CODES,
    Backoff,
    EnvInfo,
    FinishRequest,
    ResetRequest,
    ResetResponse,
    TaskPage,
    Transient,
    VerifyItem,
    VerifyRequest,
    VerifyResponse,
    raise_for_error,
)
from .plan import Http, Op, Pause, Plan, WsCall, adrive, asleep, drive, sleep

Transport = Literal["auto", "ws", "http"]
TRANSPORTS = ("auto", "ws", "http")


class Closeable(Protocol):
    """Something the client owns and stops on close (a server process, a container)."""

    def close(self) -> None:
        """Stop it."""


_Transient = Transient


def _raise_for(resp: httpx.Response) -> None:
    if resp.status_code < 400:
        return
    try:
        body = resp.json()
    except ValueError:
        body = {"error": resp.text[:300]}
    if not isinstance(body, dict):
        body = {"error": str(body)[:300]}
    kind, message = body.get("kind", ""), body.get("error") or str(body)[:300]
    raise_for_error(resp.status_code, kind, message)


class HTTPEnv(Env):
    """An environment served by ``envhub serve`` at ``url``."""

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
        _pool: _Pool | None = None,
    ) -> None:
        """Connect to a server (``owner``, if given, is closed with this env).

        Args:
            url: The server, ``http://host:port``.
            timeout: Deadline of every call, in seconds.
            retries: Tries after a dropped connection or a refused call.
            admission_wait: Seconds a call is sent again while a saturated server refuses it
                unstarted (``overloaded``); never charged to the model (see
                :data:`envhub.deadline.ADMISSION_WAIT_S`).
            transport: ``auto`` (WebSocket, HTTP where refused), ``ws`` or ``http``.
            max_concurrency: Calls in flight at once over this handle and its forks.
            owner: A server process or container to stop on :meth:`close`.
        """
        if transport not in TRANSPORTS:
            raise ConfigError(f"unknown transport {transport!r}; choose one of {TRANSPORTS}")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.admission_wait = admission_wait
        self._owner = owner
        self._session: str | None = None
        self._secret = ""
        self._steps = 0
        self._is_fork = _pool is not None
        self._pool = _pool or _Pool(self.url, timeout, transport, max_concurrency)
        self.spec = self._pool.spec
        self._channel: Any = None
        self._achannel: Any = None

    @property
    def _client(self) -> httpx.Client:
        return self._pool.client

    @property
    def transport(self) -> str:
        """``ws`` or ``http``: what carries this handle's episodes now."""
        return "ws" if self._pool.use_ws else "http"

    def fork(self) -> HTTPEnv:
        """A second handle on the same server, with its own episode and a shared pool."""
        return HTTPEnv(
            self.url,
            timeout=self.timeout,
            retries=self.retries,
            admission_wait=self.admission_wait,
            _pool=self._pool,
        )

    # ------------------------------------------------------------------ the drivers

    def _perform(self, op: Op) -> Any:
        """Do one step of a plan with blocking calls (within a call slot)."""
        if isinstance(op, Pause):
            return sleep(op)
        with self._pool.slot(self.timeout):
            if isinstance(op, WsCall):  # the hot one: a step
                return op.sock.call(op.text, op.timeout)
            if isinstance(op, Http):
                return self._client.request(op.method, op.path, **op.kwargs)
            from .ws_channel import connect

            return connect(op)

    async def _aperform(self, op: Op) -> Any:
        """Async :meth:`_perform`: the step awaited on the running loop."""
        if isinstance(op, Pause):
            return await asleep(op)
        async with self._pool.aslot(self.timeout):
            if isinstance(op, WsCall):
                return await op.sock.call(op.text, op.timeout)
            if isinstance(op, Http):
                client = self._pool.async_client()
                return await client.request(op.method, op.path, **op.kwargs)
            from .ws_channel import aconnect

            return await aconnect(op)

    # ------------------------------------------------------------------ HTTP transport

    def _http(self, method: str, path: str, **kwargs: Any) -> Plan[httpx.Response]:
        """One request, sent again past refusals and drops (see :meth:`_again`)."""
        backoff: Backoff | None = None
        while True:
            try:
                resp = yield Http(method, path, kwargs)
            except httpx.TransportError as e:
                resp = e
            backoff, pause = self._again(resp, backoff)
            if pause is None:
                return resp
            yield Pause(pause)

    def _post(self, path: str, body: dict[str, Any] | bytes) -> Plan[httpx.Response]:
        return self._http("POST", path, **_body(body))

    def _again(
        self, resp: httpx.Response | httpx.TransportError, backoff: Backoff | None
    ) -> tuple[Backoff | None, float | None]:
        """The pause before sending again (``None``: ``resp`` is the answer); raises past it.

        See :class:`envhub.wire.Backoff`: an ``overloaded`` refusal is sent again within the
        admission budget, uncounted; a dropped connection or another 429/503 within ``retries``.
        """
        if isinstance(resp, httpx.Response) and resp.status_code not in RETRY_CODES:
            _raise_for(resp)
            return backoff, None
        backoff = backoff or Backoff(self.retries, self.admission_wait)
        if isinstance(resp, httpx.Response):
            pause = backoff.pause(_kind(resp) == OVERLOADED, _retry_after(resp))
            if pause is None:
                _raise_for(resp)
            return backoff, pause
        pause = backoff.pause(False)
        if pause is None:
            raise _Transient(f"{type(resp).__name__}: {resp}") from resp
        return backoff, pause

    # ------------------------------------------------------------------ WebSocket transport

    def _ws(self, name: str = "_channel") -> Any:
        """The channel of the blocking calls (``_channel``) or of the awaited ones (``_achannel``).

        ``None`` over HTTP. Two, because an asyncio connection belongs to its event loop.
        """
        if getattr(self, name) is None:
            setattr(self, name, self._new_channel())
        return getattr(self, name)

    def _new_channel(self) -> Any:
        if not self._pool.use_ws:
            return None
        from .ws_channel import Channel, Limits

        limits = Limits(self.timeout, self.retries, self.admission_wait, self._pool.max_body)
        return Channel(self.url, limits)

    def _refused(self, error: Exception) -> None:
        """The handshake was refused: this pool speaks HTTP from now on."""
        if self._pool.transport == "ws":
            raise TransportError(f"{self.url}: {error}; use transport='http'") from error
        self._pool.use_ws = False
        self._channel = self._achannel = None

    # ------------------------------------------------------------------ the contract

    def _reset_body(self, seed: int | None, task_id: str | None) -> dict[str, Any]:
        close = self._session
        body = ResetRequest(
            seed=seed, task_id=task_id, close_session=close, close_secret=close and self._secret
        )
        return body.model_dump(exclude_none=True)

    def _after_reset(self, data: ResetResponse) -> ResetResult:
        self._session, self._secret, self._steps = data.session_id, data.session_secret, 0
        return ResetResult.model_construct(messages=data.messages, info=data.info)

    def _reset(self, channel: Any, seed: int | None, task_id: str | None) -> Plan[ResetResult]:
        try:
            if channel is not None:
                try:
                    return self._after_reset((yield from channel.reset(seed, task_id)))
                except _ws_refused() as e:
                    self._refused(e)
            resp = yield from self._post("/reset", self._reset_body(seed, task_id))
            return self._after_reset(ResetResponse.model_validate_json(resp.content))
        except _Transient as e:
            raise TransportError(f"reset failed at {self.url}: {e}") from e

    def reset(self, *, seed: int | None = None, task_id: str | None = None) -> ResetResult:
        """Start an episode on the server (the previous one, if any, is closed)."""
        return drive(self._reset(self._ws(), seed, task_id), self._perform)

    async def areset(self, *, seed: int | None = None, task_id: str | None = None) -> ResetResult:
        """Async :meth:`reset`."""
        return await adrive(self._reset(self._ws("_achannel"), seed, task_id), self._aperform)

    def _message_json(self, action: Message | str) -> str:
        if self._session is None:
            raise EpisodeStateError("call reset() before step()")
        if isinstance(action, str) and action.isascii():  # the common case, without a copy
            return _json_string(action)
        return valid_unicode(Message.coerce(action)).model_dump_json(exclude_none=True)

    def _step_body(self, action: Message | str) -> bytes:
        """The ``/step`` body as JSON; over the server's limit, the stand-in that gives its size.

        The message is serialised once (:meth:`_message_json`, as on the WebSocket).
        """
        message = self._message_json(action)
        seq = self._steps + 1  # a step sent again after a lost answer is not applied twice
        head = f'{{"session_id":{json.dumps(self._session)},"session_secret":'
        head += f'{json.dumps(self._secret)},"seq":{seq},'
        content = f'{head}"message":{message}}}'.encode()
        if self._pool.max_body and len(content) > self._pool.max_body:
            content = f'{head}"oversized":{len(content)}}}'.encode()
        return content

    def _infra_step(self, error: Exception) -> StepResult:
        self._session = None
        for channel in (self._channel, self._achannel):
            if channel is not None:
                channel.forget()
        info = Info(task_id="", status=Status.INFRA_ERROR, error=str(error))
        return StepResult(messages=[], reward=0.0, terminated=False, truncated=True, info=info)

    def _stepped(self, result: StepResult) -> StepResult:
        self._steps += 1
        if result.terminated or result.truncated:
            self._session = None
        return result

    def _step(self, channel: Any, action: Message | str) -> Plan[StepResult]:
        try:
            if channel is not None and channel.sid == self._session:
                message = self._message_json(action)
                return self._stepped((yield from channel.step(message)))
            resp = yield from self._post("/step", self._step_body(action))
            return self._stepped(StepResult.model_validate_json(resp.content))
        except _Transient as e:
            return self._infra_step(e)

    def step(self, action: Message | str) -> StepResult:
        """Send one assistant message; server failures come back as ``infra_error``."""
        return drive(self._step(self._channel, action), self._perform)

    async def astep(self, action: Message | str) -> StepResult:
        """Async :meth:`step`."""
        return await adrive(self._step(self._achannel, action), self._aperform)

    def _finish(self) -> Plan[StepResult]:
        if self._session is None:
            raise EpisodeStateError("call reset() before finish()")
        body = FinishRequest(session_id=self._session, session_secret=self._secret)
        try:
            resp = yield from self._post("/finish", body.model_dump_json().encode())
            return self._stepped(StepResult.model_validate_json(resp.content))
        except _Transient as e:
            return self._infra_step(e)

    def finish(self) -> StepResult:
        """End the episode from outside (``POST /finish``); see :meth:`Env.finish`."""
        return drive(self._finish(), self._perform)

    async def afinish(self) -> StepResult:
        """Async :meth:`finish`."""
        return await adrive(self._finish(), self._aperform)

    @staticmethod
    def _item(task: Task | str, response: Message | str) -> VerifyItem:
        message = valid_unicode(Message.coerce(response))
        if isinstance(task, str):
            return VerifyItem(task_id=task, response=message)
        return VerifyItem(task=task, response=message)

    def _verify_body(self, items: Sequence[tuple[Task | str, Message | str]]) -> bytes:
        """The ``/verify`` body as JSON; an item over the server's limit goes as its size."""
        body = VerifyRequest(items=[self._item(t, r) for t, r in items])
        content = body.model_dump_json(exclude_none=True).encode()
        limit = self._pool.max_body
        if not limit or len(content) <= limit:
            return content
        stand_ins = [_stand_in(item, limit) for item in body.items]
        return VerifyRequest(items=stand_ins).model_dump_json(exclude_none=True).encode()

    def _verify(self, items: Sequence[tuple[Task | str, Message | str]]) -> Plan[list[Score]]:
        try:
            resp = yield from self._post("/verify", self._verify_body(items))
        except _Transient as e:
            return [Score(reward=0.0, status=Status.INFRA_ERROR, error=str(e))] * len(items)
        return VerifyResponse.model_validate_json(resp.content).scores

    def verify_batch(self, items: Sequence[tuple[Task | str, Message | str]]) -> list[Score]:
        """Verify many pairs in one request."""
        return drive(self._verify(items), self._perform)

    def verify(self, task: Task | str, response: Message | str) -> Score:
        """Verify one response on the server."""
        return self.verify_batch([(task, response)])[0]

    async def averify(self, task: Task | str, response: Message | str) -> Score:
        """Async :meth:`verify`."""
        return (await adrive(self._verify([(task, response)]), self._aperform))[0]

    def tasks(self, split: str | None = None) -> list[Task]:
        """All tasks of ``split``, fetched page by page."""
        return drive(self._tasks(split), self._perform)

    def _tasks(self, split: str | None) -> Plan[list[Task]]:
        out: list[Task] = []
        while True:
            params: dict[str, Any] = {"offset": len(out), "limit": 1000}
            if split:
                params["split"] = split
            try:
                resp = yield from self._http("GET", "/tasks", params=params)
            except _Transient as e:
                raise TransportError(str(e)) from e
            page = TaskPage.model_validate_json(resp.content)
            out.extend(page.tasks)
            if len(out) >= page.total or not page.tasks:
                return out

    def task_from_gold(self, gold: str) -> Task:
        """An ad-hoc task whose gold answer is ``gold``."""
        return Task(task_id="adhoc", prompt="", answer=gold)

    def info(self) -> dict[str, Any]:
        """The server's ``/info``."""
        return self._pool.info.model_dump()

    @property
    def primary_component(self) -> str:  # type: ignore[override]
        """The served environment's primary component (from ``/info``)."""
        return self._pool.info.primary_component

    def tools(self) -> list[dict[str, Any]]:
        """The served environment's tools (from ``/info``)."""
        return list(self._pool.info.tools)

    def close(self) -> None:
        """Close the episode; the owner (server, container) and pool too unless a fork."""
        if self._channel is not None:
            if self._channel.sid == self._session:
                self._session = None
            self._channel.close_session()
            self._channel.close_socket()
            self._channel = None
        if self._achannel is not None:
            self._achannel.close_socket()  # its session expires on the server
            self._achannel = None
        if self._session is not None:
            try:
                body = {"session_id": self._session, "session_secret": self._secret}
                self._client.post("/close", json=body)
            except httpx.HTTPError:
                pass
            self._session = None
        if not self._is_fork:
            self._pool.close()
            if self._owner is not None:
                self._owner.close()
                self._owner = None


def _ws_refused() -> tuple[type[Exception], ...]:
    from .ws_channel import WsRefused

    return (WsRefused,)


def _stand_in(item: VerifyItem, limit: int) -> VerifyItem:
    """``item``, or if it alone is over the body ``limit``, the item that gives its size."""
    size = len(item.model_dump_json(exclude_none=True).encode())
    if size <= limit:
        return item
    return item.model_copy(update={"response": None, "oversized": size})


def _body(body: dict[str, Any] | bytes) -> dict[str, Any]:
    """The arguments of ``httpx`` for a body: a dict to serialise, or JSON serialised."""
    if isinstance(body, bytes):
        return {"content": body, "headers": {"content-type": "application/json"}}
    return {"json": body}


def _json_string(text: str) -> str:
    return json.dumps(text)


class _Pool:
    """What forks of one HTTPEnv share.

    The HTTP connection pools, the server's description, the bound on concurrent calls and
    the transport the server accepts.
    """

    LIMITS = httpx.Limits(max_connections=512, max_keepalive_connections=128)

    def __init__(self, url: str, timeout: float, transport: str, max_concurrency: int) -> None:
        self.url, self.timeout, self.transport = url, timeout, transport
        self.client = httpx.Client(base_url=url, timeout=timeout, limits=self.LIMITS)
        self._async: weakref.WeakKeyDictionary[Any, httpx.AsyncClient] = weakref.WeakKeyDictionary()
        self._bound = _Slots(max_concurrency)
        self._abound: weakref.WeakKeyDictionary[Any, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self.max_concurrency = max_concurrency
        try:
            resp = self.client.get("/info")
            resp.raise_for_status()
        except httpx.HTTPError as e:
            self.client.close()
            raise TransportError(f"cannot reach envhub server at {url}: {e}") from e
        self.info = EnvInfo.model_validate_json(resp.content)
        self.spec = EnvSpec.model_validate(self.info.spec)
        self.max_body = int(self.info.server.get("max_body_bytes", 0))
        self.use_ws = transport != "http" and _have_websockets(transport)

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
        self.client.close()
        for client in self._async.values():
            try:
                asyncio.get_running_loop().create_task(client.aclose())
            except RuntimeError:  # no loop running: let the sockets close with the process
                pass
        self._async.clear()


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
            raise _Transient(f"no free client slot within {timeout:g} s") from None

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
            raise _Transient(f"no free client slot within {self.timeout:g} s") from None

    async def __aexit__(self, *exc: object) -> None:
        self.sem.release()


def _have_websockets(transport: str) -> bool:
    try:
        import envhub.client.ws_channel  # noqa: F401
    except ImportError as e:
        if transport == "ws":
            raise ConfigError(f"transport='ws' needs the websockets package: {e}") from e
        return False
    return True


def _retry_after(resp: httpx.Response) -> float | None:
    try:
        return min(float(resp.headers.get("Retry-After", "")), 5.0)
    except ValueError:
        return None


def _kind(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return ""
    return body.get("kind", "") if isinstance(body, dict) else ""
