"""A client of one MCP server (streamable HTTP), on a private event-loop thread.

Each :class:`McpServer` owns one daemon thread running an event loop, and every call is a
coroutine submitted to it with a deadline: a sync hook waits for it (:meth:`McpServer.call_tool`),
an async one awaits it from its own loop (:meth:`McpServer.acall_tool`: a server's loop, where a
step waiting on a tool holds no thread). One MCP connection (the SDK's ``Client``, entered
by a holder task on that loop) serves every call; a call that fails for the server's reasons
drops it, and the next call opens another, so a restarted server is found again. (Measured
here, demo server on loopback: about 22 ms a call on the held connection against 145 ms when
each call opened its own, most of it building the HTTP client.)

Failures are sorted at this one boundary, and a failed call of the model's is sorted only
after a **probe** (its tool listing, uncached, within :data:`PROBE_S`): a server that still
answers has proven the machinery sound, so what went wrong belongs to the call, which the
model chose.

* the server cannot be reached, breaks the connection, answers past ``timeout_s``, answers
  something that is not MCP, or answers a protocol error, **and then fails the probe too** (or
  the call was not the model's, like the tool listing): :class:`InfraError` (the machinery's;
  the episode is dropped, not scored), and the connection is dropped;
* the server refuses the call's arguments as invalid params (JSON-RPC ``-32602``) or does not
  know the tool (``-32601``/unknown tool): :class:`InvalidAction`, since the arguments are the
  model's;
* the call ran past ``timeout_s`` and the server answers the probe: the model's
  :class:`VerifierTimeout` (a slow call it chose, as a slow query in ``sql``);
* any other failure of the call while the server answers the probe (a JSON-RPC error, an
  answer breaking the tool's output schema or the protocol): a tool error, returned as a result
  with ``is_error`` set, like a tool that ran and failed (``isError``).

Only a failed probe drops the shared connection, so one episode's bad call never fails the
calls other episodes have in flight on it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import Client, MCPError
from mcp.types import CallToolResult, TextContent
from mcp.types import Tool as McpTool
from pydantic import ValidationError

from envhub.errors import InfraError, InvalidAction, VerifierTimeout

if sys.version_info >= (3, 11):
    from builtins import BaseExceptionGroup
else:  # Python 3.10: the backport, a dependency of anyio there
    from exceptiongroup import BaseExceptionGroup

T = TypeVar("T")

SERVER_FAILURES: tuple[type[BaseException], ...] = (
    MCPError,
    httpx2.HTTPError,
    OSError,
    TimeoutError,
    ValidationError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
)
"""What the SDK raises when the server, not the caller, failed (alone or in a task group)."""
CALL_FAILURES: tuple[type[BaseException], ...] = (*SERVER_FAILURES, RuntimeError)
"""What a failed tool call can raise: also the SDK's ``RuntimeError`` for an answer that
breaks the tool's output schema, or input requests past the client's rounds limit."""
MODEL_CODES = {-32602: "invalid arguments", -32601: "unknown tool"}
"""JSON-RPC error codes that answer the model's call itself."""
PROBE_S = 2.0
"""Seconds the probe (a fresh tool listing) after a failed call of the model's may take."""


class _CallFailed(Exception):
    """A call of the model's failed while the server answers the probe: the call's failure."""


class McpServer:
    """One MCP server at ``url``; calls are synchronous and each has ``timeout_s``."""

    def __init__(self, url: str, timeout_s: float) -> None:
        """Remember the server; the loop thread starts on the first call."""
        self.url, self.timeout_s = url, timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._holder: asyncio.Task[None] | None = None
        """The task holding the connection open (lives on the loop; touched only there)."""
        self._client: asyncio.Future[Client] | None = None

    def list_tools(self) -> list[McpTool]:
        """Every tool the server lists (all pages)."""
        return self._run("list_tools", self._listing, model_call=False)

    async def alist_tools(self) -> list[McpTool]:
        """Async :meth:`list_tools`."""
        return await self._arun("list_tools", self._listing, model_call=False)

    async def _listing(self, client: Client) -> list[McpTool]:
        tools, cursor = [], None
        for _ in range(100):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools
        raise InfraError(f"MCP server {self.url} lists tools over more than 100 pages")

    def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Run one tool call; a tool's own failure comes back with ``is_error`` set.

        Raises:
            InvalidAction: The server refused the arguments or does not know the tool.
            VerifierTimeout: No answer within ``timeout_s``, while the server answers a probe.
            InfraError: The call failed and so did the probe.
        """
        try:
            return self._run(f"tool {name!r}", _caller(name, arguments), model_call=True)
        except _CallFailed as failed:
            return self._failed(name, failed)

    async def acall_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Async :meth:`call_tool`: awaited from the caller's loop, holding no thread."""
        try:
            return await self._arun(f"tool {name!r}", _caller(name, arguments), model_call=True)
        except _CallFailed as failed:
            return self._failed(name, failed)

    def _failed(self, name: str, failed: _CallFailed) -> CallToolResult:
        """A call of the model's that failed while the server answers: its timeout or result."""
        cause = failed.__cause__
        if isinstance(cause, TimeoutError):
            raise VerifierTimeout(
                f"tool {name!r} gave no answer within {self.timeout_s:g} s (the server "
                "answers others: this call is slow); ask for less"
            ) from None
        text = f"the server failed this call ({type(cause).__name__}: {str(cause)[:300]})"
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)

    def close(self) -> None:
        """Close the connection and stop the loop thread (a later call starts both again)."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is None:
            return

        async def shut() -> None:
            holder = self._drop()
            if holder is not None:
                await asyncio.wait([holder], timeout=2)
            loop.stop()

        asyncio.run_coroutine_threadsafe(shut(), loop)

    # ------------------------------------------------------------------ plumbing

    def _run(self, what: str, action: Callable[[Client], Awaitable[T]], *, model_call: bool) -> T:
        """``action`` on the held connection, waited for on this thread (see the module doc)."""
        future = self._submit(action, model_call)
        with self._sorted(what, future, model_call):
            return future.result(self.timeout_s + PROBE_S + 5)

    async def _arun(
        self, what: str, action: Callable[[Client], Awaitable[T]], *, model_call: bool
    ) -> T:
        """:meth:`_run` awaited from the caller's loop.

        A caller cancelled (its step's deadline) abandons the call as a sync caller past its
        deadline does: the call runs on, so the connection other episodes share is not dropped.
        """
        future = self._submit(action, model_call)
        with self._sorted(what, future, model_call):
            waited = asyncio.wrap_future(future)
            waited.add_done_callback(_retrieved)
            return await asyncio.wait_for(asyncio.shield(waited), self.timeout_s + PROBE_S + 5)

    def _submit(
        self, action: Callable[[Client], Awaitable[T]], model_call: bool
    ) -> concurrent.futures.Future[T]:
        """``action`` under ``timeout_s`` on the client's loop; a failure probed if the model's."""

        async def attempt() -> T:
            client = await asyncio.shield(self._connected())
            return await action(client)

        async def bounded() -> T:
            try:
                return await asyncio.wait_for(attempt(), self.timeout_s)
            except MCPError as e:
                if model_call and e.code in MODEL_CODES:
                    raise
                failure: BaseException = e
            except (*CALL_FAILURES, BaseExceptionGroup) as e:
                failure = e
            except BaseException:
                self._drop()
                raise
            if model_call and await self._answers():
                raise _CallFailed() from failure
            self._drop()
            raise failure

        return asyncio.run_coroutine_threadsafe(bounded(), self._running_loop())

    @contextlib.contextmanager
    def _sorted(
        self, what: str, future: concurrent.futures.Future[Any], model_call: bool
    ) -> Iterator[None]:
        """The episode errors of a call's failures, waited for or awaited."""
        try:
            yield
        except _CallFailed:
            raise
        except (TimeoutError, asyncio.TimeoutError, concurrent.futures.TimeoutError) as e:
            future.cancel()  # wait_for's own deadline, or the loop itself is wedged
            raise InfraError(
                f"MCP server {self.url}: {what} got no answer within {self.timeout_s:g} s "
                "(raise options.mcp.timeout_s if the server is slow)"
            ) from e
        except (*CALL_FAILURES, BaseExceptionGroup) as e:
            raise sort_failure(self.url, what, e, model_call) from e

    async def _answers(self) -> bool:
        """Whether the server answers a probe within :data:`PROBE_S` (on the loop)."""

        async def probe() -> None:  # ping is gone from the 2026-07-28 protocol; a listing is not
            client = await asyncio.shield(self._connected())
            await client.list_tools(cache_mode="bypass")

        try:
            await asyncio.wait_for(probe(), PROBE_S)
        except (*SERVER_FAILURES, BaseExceptionGroup):
            return False
        return True

    def _connected(self) -> asyncio.Future[Client]:
        """The held connection, opening it first if there is none (on the loop)."""
        if self._client is None or self._holder is None or self._holder.done():
            self._client = asyncio.get_running_loop().create_future()
            self._holder = asyncio.create_task(self._hold(self._client))
        return self._client

    async def _hold(self, ready: asyncio.Future[Client]) -> None:
        """Enter a ``Client``, hand it over, and keep it open until cancelled."""
        try:
            async with Client(self.url, read_timeout_seconds=self.timeout_s) as client:
                ready.set_result(client)
                await asyncio.get_running_loop().create_future()  # until _drop cancels us
        except (Exception, BaseExceptionGroup) as e:  # noqa: BLE001 (handed to the caller, sorted there)
            if not ready.done():
                ready.set_exception(e)
            # once handed over, a broken connection fails the calls made on it instead

    def _drop(self) -> asyncio.Task[None] | None:
        """Forget the connection and cancel its holder (on the loop); the holder, if any."""
        holder, self._holder, self._client = self._holder, None, None
        if holder is not None and not holder.done():
            holder.cancel()
        return holder

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                name = f"mcp-client {self.url}"
                threading.Thread(target=loop.run_forever, name=name, daemon=True).start()
                self._loop = loop
            return self._loop


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Read an abandoned call's outcome, so that its failure is not logged as unread."""
    if not future.cancelled():
        future.exception()


def _caller(name: str, arguments: dict[str, Any]) -> Callable[[Client], Awaitable[CallToolResult]]:
    """The action that calls tool ``name`` with ``arguments`` on a client."""

    async def call(client: Client) -> CallToolResult:
        return await client.call_tool(name, arguments)

    return call


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def sort_failure(url: str, what: str, exc: BaseException, model_call: bool) -> Exception:
    """The episode error for a failed call: the model's for a refused call, else infra."""
    leaves = _leaves(exc)
    known = CALL_FAILURES if model_call else SERVER_FAILURES
    unknown = [leaf for leaf in leaves if not isinstance(leaf, known)]
    if unknown:  # not a failure of the server: a bug here, reported as such
        raise unknown[0]
    for leaf in leaves:
        if model_call and isinstance(leaf, MCPError) and leaf.code in MODEL_CODES:
            return InvalidAction(f"{what}: {MODEL_CODES[leaf.code]}: {str(leaf)[:300]}")
    first = leaves[0]
    return InfraError(
        f"MCP server {url}: {what} failed ({type(first).__name__}: {str(first)[:200]}); "
        "check that the server is running at that URL"
    )
