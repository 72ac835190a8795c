"""``/mcp`` and ``/mcp/control``: the env's tools for the agent, its episodes for the harness.

``envhub serve NAME --mcp`` adds two MCP servers (streamable HTTP, the ``mcp`` SDK) beside
the HTTP and WebSocket routes, on the same session table as every other episode:

* **``/mcp``, the agent's tools** (what the policy sees): each tool of the environment
  (``env.tools()``, OpenAI function definitions: search's ``search``/``open``, sql-multiturn's
  ``run_query``/``submit_answer``, any env built on :mod:`envhub.tools`) is an MCP tool; a call
  is one assistant step holding that tool call, and its answer comes back as text;
  ``final_answer(text)`` sends a plain assistant message (how a search episode ends). There is
  no tool that starts, restarts or picks an episode: the agent plays the episode the harness
  gave it, named in its URL, ``/mcp?episode=ID&secret=S``, and no other (:mod:`.mcp_claims`).
* **``/mcp/control``, the harness's** (never given to the policy):
  ``start_episode(seed?, task_id?)`` answers the opening messages and the ``episode_id``;
  ``finish_episode()`` ends the episode early and answers its accounting, as a truncation
  (``Env.finish``). A stateful control session holds one episode at a time: starting another
  while one is in progress is a **restart**, paid as a truncation (the old episode's
  accounting comes back as ``previous`` and ``/metrics`` counts ``mcp_restarts``), never a
  silent wipe; ending the control session (its ``DELETE``) finishes its episode the same way.
  Stateless control calls (no ``Mcp-Session-Id``) pass the ``episode_id`` to
  ``finish_episode``. One client address may hold half the session table's episodes, and an
  eighth started without a session, so one client cannot starve the others. A harness
  that speaks HTTP can start the episode with ``POST /reset`` instead and give its
  ``session_id`` to the agent's URL.

Both servers run stateful streamable-HTTP sessions: their ``server/discover`` answer names
only the handshake-era protocol versions, so the SDK's ``Client`` (``mode="auto"``) opens a
session with ``initialize``.

A call that ends the episode carries ``structuredContent`` with ``reward``, ``status``,
``components``, ``done`` and ``truncated``, so an MCP client gets the reward at the end. A
status other than ``ok`` (``invalid_action``, ``infra_error``...) is in the same fields.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import FastAPI
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS

from envhub.errors import EnvhubError, NotSupported
from envhub.types import FunctionCall, Message, ToolCall

from .episodes import Episodes
from .mcp_claims import AgentClaims, ControlClaims
from .sessions import SessionError

FINAL = types.Tool(
    name="final_answer",
    description="Give your final answer as text; ends the episode and answers the reward.",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
)
START = types.Tool(
    name="start_episode",
    description="Start an episode (this control session's next one); answers the task, the "
    "episode_id and the agent_url the agent's MCP client connects to: "
    "/mcp?episode=<episode_id>&secret=<session_secret>.",
    input_schema={
        "type": "object",
        "properties": {"seed": {"type": "integer"}, "task_id": {"type": "string"}},
    },
)
FINISH = types.Tool(
    name="finish_episode",
    description="End the episode now; answers its accounting as a truncation.",
    input_schema={
        "type": "object",
        "properties": {
            "episode_id": {
                "type": "string",
                "description": "Only without an MCP session: the episode_id start_episode "
                "answered. In a session, the session's episode is ended.",
            }
        },
    },
)


def _agent_tools(env_tools: list[dict[str, Any]]) -> list[types.Tool]:
    out = []
    for tool in env_tools:
        fn = tool["function"]
        schema = fn.get("parameters") or {"type": "object", "properties": {}}
        out.append(
            types.Tool(name=fn["name"], description=fn.get("description"), input_schema=schema)
        )
    return [*out, FINAL]


def _text(messages: list[Any]) -> str:
    return "\n\n".join(m.get("content", "") for m in messages if m.get("content"))


def _answer(text: str, structured: dict[str, Any] | None = None) -> types.CallToolResult:
    content = [types.TextContent(type="text", text=text)]
    return types.CallToolResult(content=content, structured_content=structured)


def _outcome(result: dict[str, Any]) -> dict[str, Any]:
    """The structured content of a step or finish answer: reward, status and whether done."""
    info = result["info"]
    return {
        "reward": result["reward"],
        "done": result["terminated"] or result["truncated"],
        "truncated": result["truncated"],
        "status": info["status"],
        "components": info.get("components", {}),
    }


def _mcp_session(ctx: Any) -> str | None:
    """The ``Mcp-Session-Id`` of the request (None on a stateless request).

    The low-level context carries the HTTP request, not the session id itself; the SDK's
    session manager has already checked the header names a live session it created.
    """
    request = ctx.request
    return request.headers.get("mcp-session-id") if request is not None else None


def _client_address(ctx: Any) -> str:
    request = ctx.request
    client = request.client if request is not None else None
    return client.host if client is not None else "unknown"


async def _guarded(call: Awaitable[types.CallToolResult]) -> types.CallToolResult:
    """A handler's answer; the caller's mistakes and the server's deadline as tool errors."""
    try:
        return await call
    except (EnvhubError, ValueError, SessionError) as e:  # the caller's: unknown, over...
        result = _answer(str(e))
    except TimeoutError:  # the server's deadline: the machinery's failure, not the model's
        done = {"reward": 0.0, "done": True, "status": "infra_error"}
        result = _answer("over the server deadline; the episode is over", done)
    return result.model_copy(update={"is_error": True})


class AgentTools:
    """The ``/mcp`` handlers: the environment's tools, each call a step of the bound episode."""

    def __init__(self, episodes: Episodes) -> None:
        """Serve the tools of ``episodes.env``."""
        self.episodes = episodes
        env_tools = episodes.env.tools()
        self.tools = _agent_tools(env_tools)
        self.names = {t.name for t in self.tools}
        self.claims = AgentClaims()
        self.calls = 0

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        """The environment's tools, plus ``final_answer``."""
        return types.ListToolsResult(tools=self.tools)

    async def call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """One step of the session's episode with a tool call or the final answer."""
        return await _guarded(self._step(ctx, params.name, dict(params.arguments or {})))

    async def end_session(self, mcp_session: str) -> None:
        """An agent session ended: its episode stays the harness's to end."""
        self.claims.release(mcp_session)

    async def _step(self, ctx: Any, name: str, args: dict[str, Any]) -> types.CallToolResult:
        if name not in self.names:
            raise ValueError(
                f"unknown tool {name!r}; call list_tools (episodes are started by the "
                "harness, not by a tool of the agent)"
            )
        query = ctx.request.query_params if ctx.request else {}
        named = args.pop("episode_id", None)
        sid = self.claims.episode(
            _mcp_session(ctx), query.get("episode"), None if named is None else str(named)
        )
        # the id alone is no credential, here as on HTTP and /ws: the URL carries the secret
        self.episodes.sessions.authorize(sid, query.get("secret"))
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
        outcome = _outcome(result)
        text = _text(result["messages"]) or (
            f"episode over: reward {result['reward']}" if outcome["done"] else ""
        )
        return _answer(text, outcome)


class ControlTools:
    """The ``/mcp/control`` handlers: the harness starts and ends episodes."""

    def __init__(self, episodes: Episodes, per_client: int, stateless: int) -> None:
        """Episodes of ``episodes``; quotas of live episodes per address (see ControlClaims)."""
        self.episodes = episodes
        self.claims = ControlClaims(per_client, stateless, episodes.sessions.live)

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        """``start_episode`` and ``finish_episode``."""
        return types.ListToolsResult(tools=[START, FINISH])

    async def call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """Start or finish an episode."""
        args = dict(params.arguments or {})
        handler = {"start_episode": self._start, "finish_episode": self._finish}.get(params.name)
        if handler is None:
            text = f"unknown tool {params.name!r}; this server has start_episode, finish_episode"
            return _answer(text).model_copy(update={"is_error": True})
        return await _guarded(handler(ctx, args))

    async def end_session(self, mcp_session: str) -> None:
        """A control session ended: its episode in progress ends as a truncation."""
        held = self.claims.held.pop(mcp_session, None)
        if held is not None:
            await self._truncate(held)

    async def _start(self, ctx: Any, args: dict[str, Any]) -> types.CallToolResult:
        session, address = _mcp_session(ctx), _client_address(ctx)
        slot = self.claims.reserve(address, stateless=not session)
        try:
            sid, text = await self.episodes.reset(args.get("seed"), args.get("task_id"))
        except BaseException:
            self.claims.record(slot, address, session, None)
            raise
        old = self.claims.held.get(session) if session else None
        self.claims.record(slot, address, session, sid)
        previous = None
        if old is not None:  # a restart: the old episode, if still running, is paid
            previous = await self._truncate(old)
            if previous is not None:
                self.episodes.metrics["mcp_restarts"] += 1
        body = json.loads(text)
        secret = body["session_secret"]
        outcome = {
            "episode_id": sid,
            "session_secret": secret,
            "agent_url": f"/mcp?episode={sid}&secret={secret}",
            "info": body["info"],
            "previous": previous,
        }
        return _answer(_text(body["messages"]), outcome)

    async def _finish(self, ctx: Any, args: dict[str, Any]) -> types.CallToolResult:
        named = args.get("episode_id")
        sid = self.claims.owned(
            _mcp_session(ctx), _client_address(ctx), None if named is None else str(named)
        )
        outcome = _outcome(json.loads(await self.episodes.finish(sid)))
        return _answer(f"episode over (truncated): reward {outcome['reward']}", outcome)

    async def _truncate(self, sid: str) -> dict[str, Any] | None:
        """End ``sid`` if it is still in progress; its accounting (None if it had ended)."""
        try:
            return _outcome(json.loads(await self.episodes.finish(sid)))
        except SessionError:  # over, expired or never seen: nothing left to pay
            return None
        except NotSupported:  # an env that cannot end early: the episode is dropped
            self.episodes.close(sid)
            return None


class _EndOnDelete:
    """An SDK ``/mcp`` app; a ``DELETE`` that ends an MCP session also tells the handlers."""

    def __init__(self, inner: StreamableHTTPASGIApp, on_end: Callable[[str], Awaitable[None]]):
        self.inner, self.on_end = inner, on_end

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
            await self.on_end(mcp_session)


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


def _serve(
    app: FastAPI,
    path: str,
    name: str,
    handlers: AgentTools | ControlTools,
    idle_s: float,
) -> Any:
    """Mount one MCP server at ``path``; its session manager.

    The Host and Origin check is the app's own, on every route (:mod:`envhub.server.origin`):
    the SDK's copy is off, so ``serve --allow-host`` admits a proxy to ``/mcp`` as to the rest.
    """
    server = Server(name, on_list_tools=handlers.list_tools, on_call_tool=handlers.call_tool)
    server.add_request_handler("server/discover", types.RequestParams, _handshake_discover(server))
    app_wide = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    server.streamable_http_app(
        streamable_http_path=path, transport_security=app_wide, session_idle_timeout=idle_s
    )
    manager = server.session_manager
    app.add_route(path, _EndOnDelete(StreamableHTTPASGIApp(manager), handlers.end_session))
    return manager


class Managers:
    """The two servers' session managers; ``run()`` holds both (the app's lifespan enters it)."""

    def __init__(self, *managers: Any) -> None:
        """Run ``managers`` together."""
        self.managers = managers

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Each manager's ``run()``, entered in order."""
        async with contextlib.AsyncExitStack() as stack:
            for manager in self.managers:
                await stack.enter_async_context(manager.run())
            yield


def install(app: FastAPI, episodes: Episodes, idle_s: float = 600.0) -> Managers:
    """Add ``/mcp`` and ``/mcp/control`` to ``app``; returns what the app's lifespan runs.

    ``idle_s``: an MCP session with no request for this long ends. One client address may
    hold half the session table's episodes through ``/mcp/control``, and an eighth without an
    MCP session (at least 1 each).
    """
    name = f"envhub-{episodes.env.spec.name}"
    table = episodes.sessions.max_sessions
    control = ControlTools(episodes, max(1, table // 2), max(1, table // 8))
    agent = _serve(app, "/mcp", name, AgentTools(episodes), idle_s)
    return Managers(agent, _serve(app, "/mcp/control", f"{name}-control", control, idle_s))
