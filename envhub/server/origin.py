"""DNS rebinding protection: one Host and Origin check in front of every route.

A web page the user visits can make the browser send requests to ``127.0.0.1``: directly
(its ``Origin`` header names the page), or through DNS rebinding (a name of the page's that
now resolves to ``127.0.0.1``; its ``Host`` header is that name). Either way, without this
check a page could drive episodes over ``/ws``, or read ``/tasks`` with the gold answers.

:class:`HostCheck` admits a request when

* its ``Host`` is a loopback name (``127.0.0.1``, ``localhost``, ``[::1]``, any port) or one
  of ``allowed_hosts`` (``name`` for any port, ``name:port`` for one, ``*`` for any host);
* its ``Origin`` is absent (not a browser: the envhub clients, curl), or a loopback origin,
  or one of ``allowed_origins`` (``scheme://name[:port]``, ``*`` for any).

Everything else is refused before the app sees it: 421 for a Host, 403 for an Origin, with
the flag that admits it (``envhub serve --allow-host/--allow-origin``, for a server behind a
proxy or reached by another name). A WebSocket handshake is refused the same way (close code
1008, policy violation). ``/health`` alone is open to any Host (see :data:`OPEN`). The check
runs once per HTTP request and once per WebSocket connection, never per frame. The same check
guards ``/mcp`` (the app-wide middleware); the
MCP SDK's own copy is switched off there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from .errors import error_response

OPEN = "/health"
"""The one route served to any Host: it says only "ok", and a probe (Kubernetes, a load
balancer) names the server by an address it cannot know in advance."""
LOOPBACK = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
"""Host names a loopback server answers to without being told."""


def _split(host: str) -> tuple[str, str]:
    """``name:port`` -> (name, port); ``[::1]:80`` -> (``[::1]``, ``80``); no port -> ''."""
    if host.startswith("["):
        name, _, rest = host.partition("]")
        return name + "]", rest.removeprefix(":")
    name, _, port = host.partition(":")
    return name, port


class HostCheck:
    """Which ``Host`` and ``Origin`` headers this server answers (see the module docstring)."""

    def __init__(self, hosts: Iterable[str] = (), origins: Iterable[str] = ()) -> None:
        """Admit loopback plus ``hosts`` and ``origins`` (``*``: any)."""
        self.hosts = frozenset(h.lower() for h in hosts)
        self.origins = frozenset(o.lower().rstrip("/") for o in origins)

    def host_ok(self, host: str) -> bool:
        """Whether a request with this ``Host`` header is served."""
        host = host.lower()
        name, _ = _split(host)
        return name in LOOPBACK or "*" in self.hosts or host in self.hosts or name in self.hosts

    def origin_ok(self, origin: str | None) -> bool:
        """Whether a request with this ``Origin`` header (None: none sent) is served."""
        if origin is None:
            return True
        origin = origin.lower().rstrip("/")
        if "*" in self.origins or origin in self.origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and _split(parts.netloc)[0] in LOOPBACK

    def refusal(self, headers: Iterable[tuple[bytes, bytes]]) -> tuple[int, str, str] | None:
        """``(code, kind, message)`` refusing a request with ``headers``, or None to serve it."""
        host = origin = None
        for key, value in headers:
            if key == b"host":
                host = value.decode("latin-1")
            elif key == b"origin":
                origin = value.decode("latin-1")
        if host is None or not self.host_ok(host):
            return (
                421,
                "bad_host",
                (
                    f"Host {host!r} is not served (DNS rebinding protection); reach the server "
                    "as 127.0.0.1 or localhost, or start it with --allow-host NAME "
                    "(ENVHUB_ALLOW_HOST) when a proxy or another name is in front of it"
                ),
            )
        if not self.origin_ok(origin):
            return (
                403,
                "bad_origin",
                (
                    f"Origin {origin!r} may not use this server (a web page cannot drive "
                    "episodes); start it with --allow-origin ORIGIN (ENVHUB_ALLOW_ORIGIN) to let "
                    "that page in"
                ),
            )
        return None


class Guard:
    """ASGI middleware: :class:`HostCheck` on every HTTP request and WebSocket handshake."""

    def __init__(self, app: Any, check: HostCheck) -> None:
        """Wrap ``app``."""
        self.app, self.check = app, check

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        """Refuse a foreign Host or Origin; pass everything else through."""
        if scope["type"] == "websocket" or (scope["type"] == "http" and scope["path"] != OPEN):
            refused = self.check.refusal(scope.get("headers") or [])
            if refused is not None:
                return await _refuse(scope, receive, send, *refused)
        return await self.app(scope, receive, send)


async def _refuse(
    scope: dict, receive: Callable, send: Callable, code: int, kind: str, message: str
) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
        return
    await error_response(code, kind, message)(scope, receive, send)
