"""Text-to-SQL with exploration: the multi-turn environment ``sql-multiturn``.

The model may run exploratory queries before it answers. Two conventions are understood, so
both plain chat models and tool-calling models can play:

- **Text.** A message with a ```` ```sql ```` block (or that is a bare ``SELECT``) runs that
  query (the last block); the environment answers, as a user message, with the first
  ``explore_rows`` rows (20 by default) as a text table. A message containing
  ``FINAL ANSWER`` gives the answer: the last ```` ```sql ```` block after the marker is
  judged (without one, the message's last block or the text after the marker, with
  ``format`` 0).
- **Tool calls** (tools listed in ``info["tools"]``), in OpenAI's structured form or as
  ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` text (see
  :mod:`envhub.tools`): ``run_query`` with ``{"query": ...}`` runs a query, answered by a
  ``tool`` message (a ``<tool_response>`` block for text calls); ``submit_answer`` with
  ``{"query": ...}`` gives the answer. Calls after a ``submit_answer`` are not run.

The turn budget is ``max_turns`` from the YAML entry. On the last turn a message with a query
but no marker is judged as the answer (with ``format`` 0); running out of turns without an
answer ends the episode truncated, with every component 0. A message that neither runs a
query nor answers (or a malformed tool call) gets a reminder of the conventions, with status
``invalid_action``, and the episode goes on. Exploration errors and time-outs are reported to
the model as text; only the final answer's time-out makes the step's status ``timeout``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from envhub.core import Episode, Feedback
from envhub.errors import InfraError
from envhub.spec import EnvSpec
from envhub.tools import Param, ParsedCall, Tool, ToolCounts, ToolEnv, ToolSet
from envhub.types import Message, Status

from . import sqltext
from .env import SqlEnv
from .executor import (
    ALLOWED_LEADING,
    DatabaseUnavailable,
    QueryFailed,
    format_table,
)

FINAL_RE = re.compile(r"final\s+answer\s*:?", re.IGNORECASE)
RUN_TOOL = "run_query"
SUBMIT_TOOL = "submit_answer"
CONVENTIONS = (
    "Run a query by sending it in a ```sql block; give your answer as FINAL ANSWER: followed "
    f"by a ```sql block (or call the {RUN_TOOL} / {SUBMIT_TOOL} tools)."
)


_QUERY = Param("query", "string", "One SQLite query.", min_length=1)
TOOLS = ToolSet(
    [
        Tool(
            RUN_TOOL,
            "Run a read-only SQLite query and see the first rows of its result.",
            (_QUERY,),
        ),
        Tool(
            SUBMIT_TOOL,
            "Submit your final SQLite query; it is judged and the episode ends.",
            (_QUERY,),
        ),
    ]
)


@dataclass
class Exploration(ToolCounts):
    """The tool loop's tallies and the queries run to explore (in either convention)."""

    explored: int = 0


class SqlMultiTurnEnv(ToolEnv, SqlEnv):
    """Text-to-SQL where the model may explore the database before answering."""

    extra_options = ("explore_rows",)
    toolset = TOOLS

    def __init__(self, spec: EnvSpec, *, explore_rows: int = 20, **options: Any) -> None:
        """Like :class:`SqlEnv`, plus ``explore_rows``: rows shown per exploratory query."""
        super().__init__(spec, **options)
        self.explore_rows = max(1, int(explore_rows))
        self.options["explore_rows"] = self.explore_rows

    def init_state(self, episode: Episode) -> Exploration:
        """No query explored yet."""
        return Exploration()

    def explore(self, episode: Episode, sql: str) -> str:
        """Run one exploratory query and describe its result (or error) as text."""
        episode.state.explored += 1
        try:
            result = self.run(self.db_path(episode.task), sql, max_rows=self.explore_rows)
        except QueryFailed as e:
            return f"Error ({e.kind}): {e}"
        except DatabaseUnavailable as e:  # the database, not the model: infra_error
            raise InfraError(str(e)) from e
        return format_table(result)

    def _remaining(self, episode: Episode) -> str:
        left = self.spec.max_turns - episode.turn
        if left <= 1:
            return "\nYour next message must be your final answer."
        return f"\n({left} turns left.)"

    def _final(self, episode: Episode, sql: str, in_format: bool) -> Feedback:
        components, details = self.judge(episode.task, sql, in_format)
        details["explored"] = episode.state.explored
        return Feedback(done=True, components=components, info=details)

    def call_tool(self, episode: Episode, call: ParsedCall) -> str | Feedback:
        """``run_query`` explores (errors shown as text); ``submit_answer`` ends the episode."""
        if call.name == SUBMIT_TOOL:
            return self._final(episode, sqltext.extract_sql(call.arguments["query"]).sql, True)
        return self.explore(episode, call.arguments["query"]) + self._remaining(episode)

    def answer(self, episode: Episode, message: Message) -> Feedback:
        """A message without tool calls: a query to run, or the final answer, in text."""
        text = message.content
        markers = list(FINAL_RE.finditer(text))
        if markers:
            after = sqltext.extract_sql(text[markers[-1].end() :])
            if after.fenced:
                return self._final(episode, after.sql, True)
            whole = sqltext.extract_sql(text)  # "```sql ...``` FINAL ANSWER: the query above"
            from_block = whole.fenced or whole.sql != text.strip()
            return self._final(episode, whole.sql if from_block else after.sql, False)
        found = sqltext.extract_sql(text)
        from_block = found.fenced or found.sql != text.strip()
        has_query = from_block or sqltext.leading_keyword(found.sql) in ALLOWED_LEADING
        if has_query and episode.turn >= self.spec.max_turns:
            return self._final(episode, found.sql, False)
        if not has_query:
            return Feedback(
                messages=[Message(role="user", content=f"No query found. {CONVENTIONS}")],
                status=Status.INVALID_ACTION,
                error="message neither runs a query nor gives a final answer",
            )
        reply = self.explore(episode, found.sql) + self._remaining(episode)
        return Feedback(messages=[Message(role="user", content=reply)])

    def reference_action(self, episode: Episode) -> Message:
        """The gold query as a final answer."""
        return Message(
            role="assistant", content=f"FINAL ANSWER:\n```sql\n{episode.task.answer}\n```"
        )
