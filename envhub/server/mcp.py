"""``/mcp``: a tool environment's tools as an MCP server (streamable HTTP, the ``mcp`` SDK).

``envhub serve NAME --mcp`` adds it beside the HTTP and WebSocket routes. Each episode lives
in the same session table as every other episode:

* ``start_episode(seed?, task_id?)`` resets and answers the opening messages (the task) and
  the ``episode_id``;
* each tool of the environment (``env.tools()``, OpenAI function definitions: search's
  ``search``/``open``, sql-multiturn's ``run_query``/``submit_answer``, any env built on
  :mod:`envhub.tools`) is an MCP tool; a call is one assistant step holding that tool call,
  and the tool's answer comes back as text;
* ``final_answer(text)`` sends a plain assistant message (how a search episode ends).

**One MCP session, one episode.** The server runs stateful streamable-HTTP sessions
(``Mcp-Session-Id``): its ``server/discover`` answer names only the handshake-era protocol
versions, so the SDK's ``Client`` (``mode="auto"``) and every handshake client open a session
with ``initialize``. In a session, every call acts on the session's episode (no id to pass);
``start_episode`` again starts the next one (closing the previous); the episode is closed when
the session ends (the client's ``DELETE``, or the session going idle for the server's
``session_ttl_s``).

**Stateless clients** (a client that adopts the 2026-07-28 per-request protocol directly, with
no session) name the episode in every call instead: each tool accepts an ``episode_id``
argument besides its own parameters, the id ``start_episode`` answered.

A call that ends the episode carries ``structuredContent`` with ``reward``, ``status``,
``components`` and ``done``, so an MCP client gets the reward at the end. A status other than
``ok`` (``invalid_action``, ``infra_error``...) is in the same fields, never hidden.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from fastapi import FastAPI
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS

from envhub.errors import EnvhubError
from envhub.types import FunctionCall, Message, ToolCall

from .episodes import Episodes
from .sessions import SessionError

START = types.Tool(
    name="start_episode",
    description="Start an episode; answers the task. Call it first.",
    input_schema={
        "type": "object",
        "properties": {"seed": {"type": "integer"}, "task_id": {"type": "string"}},
    },
)
FINAL = types.Tool(
    name="final_answer",
    description="Give your final answer as text; ends the episode and answers the reward.",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
)


EPISODE_ID = {
    "type": "string",
    "description": "Only for stateless MCP clients (no Mcp-Session-Id): the episode_id "
    "start_episode answered. In an MCP session, leave it out: the session's episode is used.",
}
MAX_SESSIONS = 10_000
"""MCP sessions remembered (oldest forgotten first); their episodes expire with the table."""


def _with_episode_id(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "properties": {**schema.get("properties", {}), "episode_id": EPISODE_ID}}


def _tools(env_tools: list[dict[str, Any]]) -> list[types.Tool]:
    out = [START]
    for tool in env_tools:
        fn = tool["function"]
        schema = fn.get("parameters") or {"type": "object", "properties": {}}
        described = fn.get("description")
        out.append(
            types.Tool(
                name=fn["name"], description=described, input_schema=_with_episode_id(schema)
            )
        )
    final = FINAL.model_copy(update={"input_schema": _with_episode_id(FINAL.input_schema)})
    return [*out, final]


def _text(messages: list[Any]) -> str:
    return "\n\n".join(m.get("content", "") for m in messages if m.get("content"))


def _mcp_session(ctx: Any) -> str | None:
    """The ``Mcp-Session-Id`` of the request (None on a stateless request).

    The low-level context carries the HTTP request, not the session id itself; the SDK's
    session manager has already checked the header names a live session it created.
    """
    request = ctx.request
    return request.headers.get("mcp-session-id") if request is not None else None


class EpisodeTools:
    """The MCP handlers: episodes by MCP session, calls as steps."""

    def __init__(self, episodes: Episodes) -> None:
        """Serve the tools of ``episodes.env``."""
        self.episodes = episodes
        self.tools = _tools(episodes.env.tools() if hasattr(episodes.env, "tools") else [])
        self.names = {t.name for t in self.tools}
        self.sessions: OrderedDict[str, str] = OrderedDict()
        """Episode (session-table id) of each stateful MCP session."""
        self.calls = 0

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        """The environment's tools, plus ``start_episode`` and ``final_answer``."""
        return types.ListToolsResult(tools=self.tools)

    async def call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """Start an episode or take one step with a tool call or the final answer."""
        args = dict(params.arguments or {})
        try:
            if params.name not in self.names:
                raise ValueError(f"unknown tool {params.name!r}; call list_tools")
            if params.name == "start_episode":
                return await self._start(ctx, args)
            return await self._step(ctx, params.name, args)
        except (EnvhubError, ValueError, SessionError) as e:  # the caller's: unknown, over...
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=str(e))], is_error=True
            )
        except TimeoutError:  # the server's deadline: the machinery's failure, not the model's
            text = "over the server deadline; the episode is over"
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)],
                structured_content={"reward": 0.0, "done": True, "status": "infra_error"},
                is_error=True,
            )

    def end_session(self, mcp_session: str) -> bool:
        """Close the episode of an MCP session that ended; False if it had none."""
        sid = self.sessions.pop(mcp_session, None)
        return sid is not None and self.episodes.close(sid)

    async def _start(self, ctx: Any, args: dict[str, Any]) -> types.CallToolResult:
        mcp_session = _mcp_session(ctx)
        old = self.sessions.get(mcp_session) if mcp_session else None
        sid, text = await self.episodes.reset(args.get("seed"), args.get("task_id"), old)
        if mcp_session:
            self.sessions[mcp_session] = sid
            self.sessions.move_to_end(mcp_session)
            while len(self.sessions) > MAX_SESSIONS:
                self.sessions.popitem(last=False)
        body = json.loads(text)
        content = [types.TextContent(type="text", text=_text(body["messages"]))]
        outcome = {"episode_id": sid, "info": body["info"]}
        return types.CallToolResult(content=content, structured_content=outcome)

    async def _step(self, ctx: Any, name: str, args: dict[str, Any]) -> types.CallToolResult:
        mcp_session = _mcp_session(ctx)
        sid = args.pop("episode_id", None) or self.sessions.get(mcp_session or "")
        if sid is None:
            raise ValueError(
                "no episode: call start_episode first (without an MCP session, "
                "also pass the episode_id it answered to every call)"
            )
        if name == "final_answer":
            message = Message(role="assistant", content=str(args.get("text", "")))
        else:
            self.calls += 1
            call = ToolCall(
                id=f"mcp-{self.calls}",
                function=FunctionCall(name=name, arguments=json.dumps(args)),
            )
            message = Message(role="assistant", tool_calls=[call])
        result = json.loads(await self.episodes.step(sid, message))
        done = result["terminated"] or result["truncated"]
        info = result["info"]
        outcome = {
            "reward": result["reward"],
            "done": done,
            "status": info["status"],
            "components": info.get("components", {}),
        }
        text = _text(result["messages"]) or (
            f"episode over: reward {result['reward']}" if done else ""
        )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content=outcome
        )


class _EndEpisodeOnDelete:
    """The SDK's ``/mcp`` app; a ``DELETE`` that ends an MCP session also ends its episode."""

    def __init__(self, inner: StreamableHTTPASGIApp, handlers: EpisodeTools) -> None:
        self.inner, self.handlers = inner, handlers

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("method") != "DELETE":
            await self.inner(scope, receive, send)
            return
        mcp_session = dict(scope["headers"]).get(b"mcp-session-id", b"").decode("latin-1")
        status = [500]

        async def watch(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        await self.inner(scope, receive, watch)
        if status[0] < 400 and mcp_session:
            self.handlers.end_session(mcp_session)


def _handshake_discover(server: Server) -> Any:
    """A ``server/discover`` answer naming the handshake-era versions only.

    The SDK's client then opens a stateful session with ``initialize`` (see
    ``mcp/client/_probe.py``: a discover result without a modern version is a legacy
    advertisement), which is what gives each MCP session its own episode.
    """

    async def discover(ctx: Any, params: Any) -> types.DiscoverResult:
        return types.DiscoverResult(
            supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
            capabilities=server.get_capabilities(protocol_version=ctx.protocol_version),
            instructions=server.instructions,
        )

    return discover


def install(app: FastAPI, episodes: Episodes, idle_s: float = 600.0) -> Any:
    """Add ``/mcp`` to ``app``; returns the session manager, whose ``run()`` the lifespan holds.

    ``idle_s``: an MCP session with no request for this long ends (with its episode). The
    Host and Origin check is the app's own, on every route (:mod:`envhub.server.origin`): the
    SDK's copy is off, so ``serve --allow-host`` admits a proxy to ``/mcp`` as to the rest.
    """
    handlers = EpisodeTools(episodes)
    server = Server(
        f"envhub-{episodes.env.spec.name}",
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
    )
    server.add_request_handler("server/discover", types.RequestParams, _handshake_discover(server))
    app_wide = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    server.streamable_http_app(
        streamable_http_path="/mcp", transport_security=app_wide, session_idle_timeout=idle_s
    )
    manager = server.session_manager
    endpoint = _EndEpisodeOnDelete(StreamableHTTPASGIApp(manager), handlers)
    app.add_route("/mcp", endpoint)  # an ASGI app: every method goes to the SDK
    return manager
