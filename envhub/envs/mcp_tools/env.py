"""Tools from an existing MCP server: the ``mcp_tools`` environment family.

The environment's YAML names an MCP server (streamable HTTP); its tool listing becomes the
environment's tools (``tools()``, and the system prompt), each tool call of the model is
checked against the tool's schema and forwarded to the server's ``tools/call``, and the
answer (a message without a tool call, ideally ``<answer>...</answer>``) is graded against
the task's gold by :mod:`.grading`. The server is listed on first use and called once per
tool call, each call under ``options.mcp.timeout_s``.

Who is at fault (see :mod:`.client`; a failed call is the machinery's only when the server
then fails a probe too, since what a model sends can steer what a server answers):

* the server unreachable, dead mid-episode, or failing a call and then the probe (silent,
  answering something that is not MCP): the step's status is ``infra_error`` (the episode is
  dropped, never scored 0);
* a tool that ran and failed (``isError``), or any other failure of one call while the server
  answers the probe (a JSON-RPC error, an answer breaking the tool's output schema): its
  message is the call's result, shown to the model, and the episode goes on (``tool_errors``
  counts them);
* a call that got no answer within ``timeout_s`` while the server answers the probe: the
  model's slow call, status ``timeout``; the message's later calls are not sent, the episode
  goes on (``invalid_calls`` counts it);
* the model's bad call (unknown tool, arguments that do not fit the schema, nested deeper
  than ``max_argument_depth`` or longer than ``max_argument_chars``, or refused by the server
  as invalid params): the step's status is ``invalid_action`` and the model sees the error in
  place of a result, as in every tool environment (``invalid_calls`` counts them).

Reward components: ``correctness`` (primary; :func:`.grading.matches`), ``format`` (the answer
came in an ``<answer>`` block), and the counters ``tool_calls``, ``invalid_calls``,
``tool_errors`` (give them negative weights to make calls cost).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, cast

from pydantic import BaseModel, ConfigDict, Field, field_validator

from envhub.core import Episode
from envhub.datasets import read_jsonl
from envhub.errors import ConfigError, InvalidAction
from envhub.spec import EnvSpec
from envhub.tools import ParsedCall, ToolCounts, ToolEnv, ToolSet
from envhub.types import Message, ResetResult, Task

from .client import PROBE_S, McpServer
from .grading import extract_answer, matches
from .results import render_result
from .schema import to_tool

DEFAULT_SYSTEM_PROMPT = (
    "Answer the user's question using the tools. When you know the answer, reply without a "
    "tool call as <answer>ANSWER</answer>, where ANSWER is only the value asked for."
)
SAMPLE = Path(__file__).parent / "data" / "sample.jsonl"


class McpOptions(BaseModel):
    """``options.mcp``: which server, its deadline, and which of its tools to offer."""

    model_config = ConfigDict(extra="forbid")
    url: str = Field(description="The server's streamable-HTTP endpoint, e.g. .../mcp")
    timeout_s: float = Field(default=10.0, gt=0, le=60)
    tools: list[str] | None = Field(default=None, description="Offer only these tools")

    @field_validator("url")
    @classmethod
    def _http(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError(f"must be an http(s) URL of a streamable-HTTP MCP server, got {v!r}")
        return v


@dataclass
class McpState(ToolCounts):
    """Per-episode tallies, with the tools' own failures."""

    tool_errors: int = 0

    def components(self) -> dict[str, float]:
        """The tool-loop tallies and ``tool_errors``."""
        return {**super().components(), "tool_errors": float(self.tool_errors)}


class McpToolEnv(ToolEnv):
    """Multi-turn question answering with the tools of an MCP server."""

    components: ClassVar[frozenset[str]] = frozenset(
        {"correctness", "format", "tool_calls", "invalid_calls", "tool_errors"}
    )
    counters: ClassVar[frozenset[str]] = frozenset({"tool_calls", "invalid_calls", "tool_errors"})
    primary_component: ClassVar[str] = "correctness"
    default_system_prompt: ClassVar[str | None] = DEFAULT_SYSTEM_PROMPT
    sync_hooks: ClassVar[bool] = True
    """Its steps are async (:meth:`acall_tool`: a server awaits the tools, a step waiting on one
    holds no thread); the sync API calls the sync hooks (:meth:`call_tool`), as before."""

    def __init__(
        self,
        spec: EnvSpec,
        mcp: dict[str, Any] | None = None,
        max_calls_per_turn: int = 4,
        result_chars: int = 4000,
        max_argument_chars: int = 8000,
        max_argument_depth: int = 16,
        tools_in_prompt: bool = True,
        **options: Any,
    ) -> None:
        """Configure the server; nothing is contacted until the tools are first needed.

        Args:
            spec: The catalog entry.
            mcp: :class:`McpOptions` fields: ``url`` (required), ``timeout_s``, ``tools``.
            max_calls_per_turn: Calls run from one message; further ones get an error.
            result_chars: Characters of a tool result shown to the model (the rest is cut).
            max_argument_chars: Longest JSON of one call's arguments sent to the server.
            max_argument_depth: Deepest nesting of one call's arguments sent to the server.
            tools_in_prompt: Describe the tools in the system prompt (for models without
                native tool calling).
            **options: Unknown options are an error.
        """
        if options:
            raise ConfigError(f"mcp_tools: unknown option(s) {sorted(options)}")
        if mcp is None:
            raise ConfigError(
                "mcp_tools: options.mcp is required, e.g. mcp: {url: http://127.0.0.1:8765/mcp}"
            )
        try:
            self.mcp = McpOptions.model_validate(mcp)
        except ValueError as e:
            raise ConfigError(f"mcp_tools: options.mcp: {e}") from None
        super().__init__(spec)
        budget = self.step_timeout_s
        if budget is not None and max_calls_per_turn * self.mcp.timeout_s + PROBE_S >= budget:
            raise ConfigError(
                f"mcp_tools: {max_calls_per_turn} calls per turn x timeout_s "
                f"{self.mcp.timeout_s:g} s, plus {PROBE_S:g} s to probe the server after a "
                f"failed call, must stay under the step deadline of {budget:g} s; lower one of them"
            )
        self.max_calls_per_turn, self.result_chars = max_calls_per_turn, result_chars
        self.max_argument_chars, self.max_argument_depth = max_argument_chars, max_argument_depth
        self.tools_in_prompt = tools_in_prompt
        self.server = McpServer(self.mcp.url, self.mcp.timeout_s)
        self._owns_server = True
        """Forks share the connection; only the environment that made it closes it."""
        self._toolset: ToolSet | None = None

    # ------------------------------------------------------------------ tools

    @property
    def toolset(self) -> ToolSet:
        """The server's tools (the allow-list's, if given), listed on first use."""
        if self._toolset is None:
            self._toolset = self._offered(self.server.list_tools())
        return self._toolset

    def _offered(self, listing: list[Any]) -> ToolSet:
        """The tools offered, of the server's ``listing`` (the allow-list's, if given)."""
        listed = {t.name: t for t in listing}
        wanted = self.mcp.tools if self.mcp.tools is not None else list(listed)
        missing = sorted(set(wanted) - set(listed))
        if missing:
            raise ConfigError(
                f"mcp_tools: options.mcp.tools names {missing}, which the server at "
                f"{self.mcp.url} does not offer; it offers {sorted(listed)}"
            )
        tools = [to_tool(n, listed[n].description, listed[n].input_schema) for n in wanted]
        return ToolSet(tools, max_calls=self.max_calls_per_turn)

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        """The sample questions for the demo server (``envhub/envs/mcp_tools/demo_server.py``)."""
        rows = read_jsonl(SAMPLE, size)
        return [
            self.row_to_task({k: v for k, v in r.items() if k != "env"}, i, split)
            for i, r in enumerate(rows)
        ]

    # ------------------------------------------------------------------ episode

    def init_state(self, episode: Episode) -> McpState:
        """Fresh counters; the tools are listed before the first step."""
        _ = self.toolset
        return McpState()

    async def areset(self, *, seed: int | None = None, task_id: str | None = None) -> ResetResult:
        """:meth:`reset`, the first listing awaited (the opening shows the tools)."""
        if self._toolset is None:
            self._toolset = self._offered(await self.server.alist_tools())
        return await super().areset(seed=seed, task_id=task_id)

    def score(self, task: Task, response: Message) -> tuple[dict[str, float], dict[str, Any]]:
        """Correctness and format of a final answer."""
        answer, well_formed = extract_answer(response.content)
        correct = matches(answer, task.answer)
        return {"correctness": float(correct), "format": float(well_formed)}, {"answer": answer}

    def reference_action(self, episode: Episode) -> Message:
        """The gold answer, given at once."""
        return Message(role="assistant", content=f"<answer>{episode.task.answer}</answer>")

    def info(self) -> dict[str, Any]:
        """The base description plus the server in use."""
        return {**super().info(), "mcp": self.mcp.model_dump()}

    def fork(self) -> McpToolEnv:
        """A fork on the same connection; closing it (an episode's end) leaves the connection."""
        clone = cast(McpToolEnv, super().fork())
        clone._owns_server = False
        return clone

    def close(self) -> None:
        """Stop the client's loop thread (the environment's own; a fork's close keeps it)."""
        if self._owns_server:
            self.server.close()

    # ------------------------------------------------------------------ calls

    def call_tool(self, episode: Episode, call: ParsedCall) -> str:
        """One checked call sent to the server; its result (or tool error) as text."""
        self._check_size(call)
        return self._rendered(episode, self.server.call_tool(call.name or "", call.arguments))

    async def acall_tool(self, episode: Episode, call: ParsedCall) -> str:
        """:meth:`call_tool`, the server's answer awaited."""
        self._check_size(call)
        result = await self.server.acall_tool(call.name or "", call.arguments)
        return self._rendered(episode, result)

    def _rendered(self, episode: Episode, result: Any) -> str:
        if result.is_error:
            episode.state.tool_errors += 1
        return render_result(result, self.result_chars)

    def _check_size(self, call: ParsedCall) -> None:
        if _depth(call.arguments) > self.max_argument_depth:
            raise InvalidAction(
                f"the arguments of {call.name!r} are nested deeper than "
                f"{self.max_argument_depth} levels; send flat values"
            )
        size = len(json.dumps(call.arguments, ensure_ascii=False))
        if size > self.max_argument_chars:
            raise InvalidAction(
                f"the arguments of {call.name!r} are {size} characters of JSON; at most "
                f"{self.max_argument_chars} are sent to the tool"
            )


def _depth(value: Any) -> int:
    """How deeply lists and dicts nest in ``value`` (iterative: no recursion to exhaust)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level + 1)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest
