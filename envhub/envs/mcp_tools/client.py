"""A synchronous client of one MCP server (streamable HTTP), on a private event-loop thread.

Environment hooks are synchronous and the ``mcp`` SDK is asynchronous, so each
:class:`McpServer` owns one daemon thread running an event loop, and every call is a
coroutine submitted to it with a deadline. One MCP connection (the SDK's ``Client``, entered
by a holder task on that loop) serves every call; a call that fails for the server's reasons
drops it, and the next call opens another, so a restarted server is found again. (Measured
here, demo server on loopback: about 22 ms a call on the held connection against 145 ms when
each call opened its own, most of it building the HTTP client.)

Failures are sorted at this one boundary:

* the server cannot be reached, breaks the connection, answers past ``timeout_s``, answers
  something that is not MCP, or answers a protocol error: :class:`InfraError` (the machinery's,
  never the model's; the episode is dropped, not scored);
* the server refuses the call's arguments as invalid params (JSON-RPC ``-32602``) or does not
  know the tool (``-32601``/unknown tool): :class:`InvalidAction`, since the arguments are the
  model's;
* a tool that ran and failed answers ``isError``; that is a result, returned as such.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import Client, MCPError
from mcp.types import CallToolResult
from mcp.types import Tool as McpTool
from pydantic import ValidationError

from envhub.errors import InfraError, InvalidAction

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
MODEL_CODES = {-32602: "invalid arguments", -32601: "unknown tool"}
"""JSON-RPC error codes that answer the model's call itself."""


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

        async def listing(client: Client) -> list[McpTool]:
            tools, cursor = [], None
            for _ in range(100):
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools
            raise InfraError(f"MCP server {self.url} lists tools over more than 100 pages")

        return self._run("list_tools", listing, model_call=False)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Run one tool call; a tool's own failure comes back with ``is_error`` set."""

        async def call(client: Client) -> CallToolResult:
            return await client.call_tool(name, arguments)

        return self._run(f"tool {name!r}", call, model_call=True)

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
        async def attempt() -> T:
            client = await asyncio.shield(self._connected())
            return await action(client)

        async def bounded() -> T:
            try:
                return await asyncio.wait_for(attempt(), self.timeout_s)
            except MCPError as e:
                if not (model_call and e.code in MODEL_CODES):
                    self._drop()
                raise
            except BaseException:
                self._drop()
                raise

        future = asyncio.run_coroutine_threadsafe(bounded(), self._running_loop())
        try:
            return future.result(self.timeout_s + 5)
        except TimeoutError as e:  # wait_for's own deadline, or the loop itself is wedged
            future.cancel()
            raise InfraError(
                f"MCP server {self.url}: {what} got no answer within {self.timeout_s:g} s "
                "(raise options.mcp.timeout_s if the server is slow)"
            ) from e
        except (*SERVER_FAILURES, BaseExceptionGroup) as e:
            raise sort_failure(self.url, what, e, model_call) from e

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
        except (Exception, BaseExceptionGroup) as e:  # handed to the caller, sorted there
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


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def sort_failure(url: str, what: str, exc: BaseException, model_call: bool) -> Exception:
    """The episode error for a failed call: the model's for a refused call, else infra."""
    leaves = _leaves(exc)
    unknown = [leaf for leaf in leaves if not isinstance(leaf, SERVER_FAILURES)]
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
