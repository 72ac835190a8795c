"""The HTTP client: an :class:`~envhub.core.Env` that talks to ``envhub serve``.

It behaves exactly like the in-process environment: the same types come back, and failures of
the server or the network become ``infra_error`` results of the step or the verification
(never a silent reward of 0). Client mistakes (unknown task, step after the episode ended) are
raised as the same exceptions the in-process environment raises.

One :class:`HTTPEnv` runs one episode at a time, like any Env. For many concurrent episodes
call :meth:`HTTPEnv.fork`: forks share one connection pool.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Sequence
from typing import Any, Protocol

import httpx

from .core import Env, valid_unicode
from .errors import (
    ConfigError,
    EpisodeStateError,
    NotSupported,
    TaskNotFound,
    TransportError,
)
from .spec import EnvSpec
from .types import Info, Message, ResetResult, Score, Status, StepResult, Task

RETRY_STATUSES = (429, 503)
_ERRORS: dict[str, type[Exception]] = {
    "task_not_found": TaskNotFound,
    "episode_state": EpisodeStateError,
    "not_supported": NotSupported,
    "config": ConfigError,
    "invalid_request": ValueError,
}


class Closeable(Protocol):
    """Something the client owns and stops on close (a server process, a container)."""

    def close(self) -> None:
        """Stop it."""


class _Transient(Exception):
    """A failure worth reporting as ``infra_error`` (network, 5xx, overload)."""


def _raise_for(resp: httpx.Response) -> None:
    if resp.status_code < 400:
        return
    if resp.status_code in RETRY_STATUSES or resp.status_code >= 500:
        raise _Transient(f"server answered {resp.status_code}: {resp.text[:300]}")
    try:
        body = resp.json()
    except ValueError:
        body = {"error": resp.text[:300]}
    kind, message = body.get("kind", ""), body.get("error") or str(body)[:300]
    raise _ERRORS.get(kind, TransportError)(message)


class HTTPEnv(Env):
    """An environment served by ``envhub serve`` at ``url``."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 60.0,
        retries: int = 3,
        owner: Closeable | None = None,
        _pool: _Pool | None = None,
    ) -> None:
        """Connect to a server (``owner``, if given, is closed with this env)."""
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self._owner = owner
        self._session: str | None = None
        self._is_fork = _pool is not None
        self._pool = _pool or _Pool(self.url, timeout)
        self.spec = self._pool.spec

    @property
    def _client(self) -> httpx.Client:
        return self._pool.client

    def fork(self) -> HTTPEnv:
        """A second handle on the same server, with its own episode and a shared pool."""
        return HTTPEnv(self.url, timeout=self.timeout, retries=self.retries, _pool=self._pool)

    # ------------------------------------------------------------------ transport

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        for attempt in range(self.retries + 1):
            try:
                resp = self._client.post(path, json=body)
                if resp.status_code in RETRY_STATUSES and attempt < self.retries:
                    time.sleep(_retry_after(resp, attempt))
                    continue
                _raise_for(resp)
                return resp.json()
            except httpx.TransportError as e:
                if attempt >= self.retries:
                    raise _Transient(f"{type(e).__name__}: {e}") from e
                time.sleep(0.1 * 2**attempt)
        raise AssertionError("unreachable")

    def _aclient(self) -> httpx.AsyncClient:
        return self._pool.async_client()

    async def _apost(self, path: str, body: dict[str, Any]) -> Any:
        client = self._aclient()
        for attempt in range(self.retries + 1):
            try:
                resp = await client.post(path, json=body)
                if resp.status_code in RETRY_STATUSES and attempt < self.retries:
                    await asyncio.sleep(_retry_after(resp, attempt))
                    continue
                _raise_for(resp)
                return resp.json()
            except httpx.TransportError as e:
                if attempt >= self.retries:
                    raise _Transient(f"{type(e).__name__}: {e}") from e
                await asyncio.sleep(0.1 * 2**attempt)
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ the contract

    def _reset_body(self, seed: int | None, task_id: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {"seed": seed, "task_id": task_id}
        if self._session:
            body["close_session"] = self._session
        return body

    def _after_reset(self, data: dict[str, Any]) -> ResetResult:
        self._session = data["session_id"]
        return ResetResult(messages=data["messages"], info=data["info"])

    def reset(self, *, seed: int | None = None, task_id: str | None = None) -> ResetResult:
        """Start an episode on the server (the previous one, if any, is closed)."""
        try:
            return self._after_reset(self._post("/reset", self._reset_body(seed, task_id)))
        except _Transient as e:
            raise TransportError(f"reset failed at {self.url}: {e}") from e

    async def areset(self, *, seed: int | None = None, task_id: str | None = None) -> ResetResult:
        """Async :meth:`reset`."""
        try:
            data = await self._apost("/reset", self._reset_body(seed, task_id))
        except _Transient as e:
            raise TransportError(f"reset failed at {self.url}: {e}") from e
        return self._after_reset(data)

    def _step_body(self, action: Message | str) -> dict[str, Any]:
        if self._session is None:
            raise EpisodeStateError("call reset() before step()")
        message = valid_unicode(Message.coerce(action)).model_dump(exclude_none=True)
        return {"session_id": self._session, "message": message}

    def _infra_step(self, error: Exception) -> StepResult:
        self._session = None
        info = Info(task_id="", status=Status.INFRA_ERROR, error=str(error))
        return StepResult(messages=[], reward=0.0, terminated=False, truncated=True, info=info)

    def step(self, action: Message | str) -> StepResult:
        """Send one assistant message; server failures come back as ``infra_error``."""
        body = self._step_body(action)
        try:
            return StepResult.model_validate(self._post("/step", body))
        except _Transient as e:
            return self._infra_step(e)

    async def astep(self, action: Message | str) -> StepResult:
        """Async :meth:`step`."""
        body = self._step_body(action)
        try:
            return StepResult.model_validate(await self._apost("/step", body))
        except _Transient as e:
            return self._infra_step(e)

    def _finish_body(self) -> dict[str, Any]:
        if self._session is None:
            raise EpisodeStateError("call reset() before finish()")
        return {"session_id": self._session}

    def finish(self) -> StepResult:
        """End the episode from outside (``POST /finish``); see :meth:`Env.finish`."""
        body = self._finish_body()
        try:
            return StepResult.model_validate(self._post("/finish", body))
        except _Transient as e:
            return self._infra_step(e)

    async def afinish(self) -> StepResult:
        """Async :meth:`finish`."""
        body = self._finish_body()
        try:
            return StepResult.model_validate(await self._apost("/finish", body))
        except _Transient as e:
            return self._infra_step(e)

    @staticmethod
    def _item(task: Task | str, response: Message | str) -> dict[str, Any]:
        response = valid_unicode(Message.coerce(response))
        item: dict[str, Any] = {"response": response.model_dump(exclude_none=True)}
        if isinstance(task, str):
            item["task_id"] = task
        else:
            item["task"] = task.model_dump()
        return item

    def verify_batch(self, items: Sequence[tuple[Task | str, Message | str]]) -> list[Score]:
        """Verify many pairs in one request."""
        body = {"items": [self._item(t, r) for t, r in items]}
        try:
            data = self._post("/verify", body)
        except _Transient as e:
            return [Score(reward=0.0, status=Status.INFRA_ERROR, error=str(e))] * len(items)
        return [Score.model_validate(s) for s in data["scores"]]

    def verify(self, task: Task | str, response: Message | str) -> Score:
        """Verify one response on the server."""
        return self.verify_batch([(task, response)])[0]

    async def averify(self, task: Task | str, response: Message | str) -> Score:
        """Async :meth:`verify`."""
        try:
            data = await self._apost("/verify", {"items": [self._item(task, response)]})
        except _Transient as e:
            return Score(reward=0.0, status=Status.INFRA_ERROR, error=str(e))
        return Score.model_validate(data["scores"][0])

    def tasks(self, split: str | None = None) -> list[Task]:
        """All tasks of ``split``, fetched page by page."""
        out: list[Task] = []
        while True:
            params: dict[str, Any] = {"offset": len(out), "limit": 1000}
            if split:
                params["split"] = split
            resp = self._client.get("/tasks", params=params)
            try:
                _raise_for(resp)
            except _Transient as e:
                raise TransportError(str(e)) from e
            data = resp.json()
            out.extend(Task.model_validate(t) for t in data["tasks"])
            if len(out) >= data["total"] or not data["tasks"]:
                return out

    def task_from_gold(self, gold: str) -> Task:
        """An ad-hoc task whose gold answer is ``gold``."""
        return Task(task_id="adhoc", prompt="", answer=gold)

    def info(self) -> dict[str, Any]:
        """The server's ``/info``."""
        return dict(self._pool.info)

    def close(self) -> None:
        """Close the episode; the owner (server, container) and pool too unless a fork."""
        if self._session is not None:
            try:
                self._client.post("/close", json={"session_id": self._session})
            except httpx.HTTPError:
                pass
            self._session = None
        if not self._is_fork:
            self._pool.close()
            if self._owner is not None:
                self._owner.close()
                self._owner = None


class _Pool:
    """What forks of one HTTPEnv share: connection pools and the server's description."""

    LIMITS = httpx.Limits(max_connections=512, max_keepalive_connections=128)

    def __init__(self, url: str, timeout: float) -> None:
        self.url, self.timeout = url, timeout
        self.client = httpx.Client(base_url=url, timeout=timeout, limits=self.LIMITS)
        self._async: weakref.WeakKeyDictionary[Any, httpx.AsyncClient] = weakref.WeakKeyDictionary()
        try:
            resp = self.client.get("/info")
            resp.raise_for_status()
        except httpx.HTTPError as e:
            self.client.close()
            raise TransportError(f"cannot reach envhub server at {url}: {e}") from e
        self.info: dict[str, Any] = resp.json()
        self.spec = EnvSpec.model_validate(self.info["spec"])

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


def _retry_after(resp: httpx.Response, attempt: int) -> float:
    try:
        return min(float(resp.headers.get("Retry-After", "")), 5.0)
    except ValueError:
        return 0.05 * 2**attempt


# ---------------------------------------------------------------------------- local servers


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class ServerProcess:
    """An ``envhub serve`` child process on a loopback port, stopped on :meth:`close`."""

    def __init__(self, spec: EnvSpec, *, host: str = "127.0.0.1", startup_timeout: float = 180):
        """Start the server and wait until ``/health`` answers.

        The free port is picked before the child binds it, so another process may take it in
        between: then the start is retried on a new port (three tries).
        """
        self._log = tempfile.NamedTemporaryFile(prefix="envhub-serve-", suffix=".log", delete=False)
        for attempt in range(3):
            self.port = free_port(host)
            self.url = f"http://{host}:{self.port}"
            cmd = [
                sys.executable, "-m", "envhub.cli", "serve", spec.name,
                "--host", host, "--port", str(self.port),
                "--spec-json", spec.model_dump_json(),
            ]  # fmt: skip
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            self._log.truncate(0)
            self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env)
            if self._wait(startup_timeout):
                return
            tail = self._tail()
            if "address already in use" not in tail.lower() or attempt == 2:
                self.close()
                raise TransportError(f"envhub serve did not become healthy at {self.url}:\n{tail}")

    def _wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if httpx.get(self.url + "/health", timeout=1.0).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        return False

    def _tail(self) -> str:
        with open(self._log.name, errors="replace") as f:
            return f.read()[-2000:]

    def close(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        try:
            os.unlink(self._log.name)
        except OSError:
            pass


def spawn_server(spec: EnvSpec) -> ServerProcess:
    """Start ``envhub serve`` for ``spec`` (overrides included) on a free loopback port."""
    return ServerProcess(spec)
