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

Which episode a call acts on: on a stateful MCP session (``mcp-session-id``, the handshake-era
protocol) the session's latest episode, so one MCP session is one episode at a time. The
2026-07-28 protocol is stateless (no session), so there every call names its episode with the
``episode_id`` argument, which each tool accepts besides its own parameters.

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
    "description": "The episode_id start_episode answered (needed where MCP has no session).",
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

    async def _start(self, ctx: Any, args: dict[str, Any]) -> types.CallToolResult:
        mcp_session = getattr(ctx.session, "session_id", None)
        old = self.sessions.get(mcp_session) if mcp_session else None
        sid, text = await self.episodes.reset(args.get("seed"), args.get("task_id"), old)
        if mcp_session:
            self.sessions[mcp_session] = sid
            while len(self.sessions) > MAX_SESSIONS:
                self.sessions.popitem(last=False)
        body = json.loads(text)
        content = [types.TextContent(type="text", text=_text(body["messages"]))]
        outcome = {"episode_id": sid, "info": body["info"]}
        return types.CallToolResult(content=content, structured_content=outcome)

    async def _step(self, ctx: Any, name: str, args: dict[str, Any]) -> types.CallToolResult:
        mcp_session = getattr(ctx.session, "session_id", None)
        sid = args.pop("episode_id", None) or self.sessions.get(mcp_session or "")
        if sid is None:
            raise ValueError(
                "no episode named: call start_episode first, then pass its episode_id "
                "(an MCP session without ids cannot remember it)"
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


def install(app: FastAPI, episodes: Episodes, host: str = "127.0.0.1") -> Any:
    """Add ``/mcp`` to ``app``; returns the session manager, whose ``run()`` the lifespan holds."""
    handlers = EpisodeTools(episodes)
    server = Server(
        f"envhub-{episodes.env.spec.name}",
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
    )
    sub = server.streamable_http_app(streamable_http_path="/mcp", host=host)
    app.router.routes.extend(sub.routes)
    return server.session_manager
