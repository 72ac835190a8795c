"""A rule-based agent that answers the generated multi-hop questions through the tools.

It plays the role of a model: it reads only the question and the conversation (tool results
as the environment returned them), never the world or the gold answer. It recognises the
question's form, then for each hop searches the current entity's name, takes the hit whose
title is exactly that name, reads the needed fact from the snippet or, when the snippet is too
short, opens the document. It knows the sentence forms of the facts (:data:`world.FACTS`), as a
reader of the corpus would.

Its next move is a pure function of the conversation, so it serves as the environment's
``reference_action`` (the shared checker plays it to prove the verifier pays 1.0) and as the
scripted policy of the tests, in structured or text tool-call form.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from envhub.tools import ParsedCall, ToolSet
from envhub.types import FunctionCall, Message, ToolCall

from .results import parse_open, parse_search
from .world import FACTS, TEMPLATES, Template

_RESPONSE_RE = re.compile(r"<tool_response>\n?(.*?)\n?</tool_response>", re.DOTALL)
GIVE_UP = "unknown"


def match_question(question: str) -> tuple[Template, str] | None:
    """The template and anchor of a generated question, or ``None`` for another question."""
    for t in TEMPLATES:
        head, tail = t.text.split("{a}")
        m = re.search(re.escape(head) + r"(.+?)" + re.escape(tail), question)
        if m:
            return t, m.group(1)
    return None


def read_fact(kind: str, relation: str, subject: str, text: str) -> str | None:
    """The object of ``relation`` for ``subject`` in ``text``, if the fact is stated there."""
    form = FACTS[(kind, relation)]
    head, tail = form.split("{o}")
    pattern = re.escape(head.format(s=subject)) + r"([^.…]+?)" + re.escape(tail)
    m = re.search(r"(?:^|(?<=\. ))" + pattern, text)
    return m.group(1) if m else None


@dataclass
class _Progress:
    hop: int
    entity: str
    next_call: tuple[str, dict]
    misses: int = 0
    failed: bool = False


class ScriptedAgent:
    """Solves one generated question by searching and reading, one tool call per turn."""

    def __init__(self, question: str, tools: ToolSet, structured: bool = True) -> None:
        """Answer ``question``; ``structured`` picks ``tool_calls`` over text ``<tool_call>``."""
        self.plan = match_question(question)
        self.tools = tools
        self.structured = structured

    def act(self, messages: list[Message]) -> Message:
        """The next assistant message, given the conversation so far."""
        if self.plan is None:
            return Message(role="assistant", content=f"<answer>{GIVE_UP}</answer>")
        template, anchor = self.plan
        p = _Progress(hop=0, entity=anchor, next_call=("search", {"query": anchor}))
        for call, result in self._exchanges(messages):
            self._advance(p, template, call, result)
            if p.failed:
                break
        if p.failed or p.hop == len(template.chain):
            answer = GIVE_UP if p.failed else p.entity
            return Message(role="assistant", content=f"<answer>{answer}</answer>")
        return self._call(*p.next_call, turn=len(messages))

    def _advance(self, p: _Progress, template: Template, call: ParsedCall, result: str) -> None:
        kind, relation = template.chain[p.hop]
        if call.name == "search":
            hit = next((h for h in parse_search(result) if h.title == p.entity), None)
            if hit is None:
                p.misses += 1
                p.failed = p.misses > 1
                p.next_call = ("search", {"query": p.entity, "k": 10})
                return
            value = read_fact(kind, relation, p.entity, hit.snippet)
            if value is None:
                p.next_call = ("open", {"doc_id": hit.doc_id})
                return
        elif call.name == "open":
            opened = parse_open(result)
            value = read_fact(kind, relation, p.entity, opened[2]) if opened else None
            if value is None:
                p.failed = True
                return
        else:
            p.failed = True
            return
        p.hop, p.entity, p.misses = p.hop + 1, value, 0
        p.next_call = ("search", {"query": value})

    def _exchanges(self, messages: list[Message]) -> list[tuple[ParsedCall, str]]:
        """Each tool call the assistant made, paired with the text of its result."""
        out: list[tuple[ParsedCall, str]] = []
        for i, msg in enumerate(messages):
            if msg.role != "assistant":
                continue
            calls = self.tools.parse(msg)
            replies = []
            for later in messages[i + 1 :]:
                if later.role == "assistant":
                    break
                replies.append(later)
            by_id = {m.tool_call_id: m.content for m in replies if m.role == "tool"}
            texts = [
                t for m in replies if m.role == "user" for t in _RESPONSE_RE.findall(m.content)
            ]
            for call in calls:
                if call.structured:
                    out.append((call, by_id.get(call.id, "")))
                else:
                    out.append((call, texts.pop(0) if texts else ""))
        return out

    def _call(self, name: str, arguments: dict, turn: int) -> Message:
        if self.structured:
            call = ToolCall(
                id=f"call_{turn}",
                function=FunctionCall(name=name, arguments=json.dumps(arguments)),
            )
            return Message(role="assistant", content="", tool_calls=[call])
        body = json.dumps({"name": name, "arguments": arguments})
        return Message(role="assistant", content=f"<tool_call>{body}</tool_call>")
