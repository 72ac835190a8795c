"""One episode's model calls, recorded token-exact: :class:`Recorder` and :class:`CallRecord`.

An agent resends its whole conversation on every call. Re-tokenising it would drift from what
the engine sampled (a reply's text does not always encode back to the ids that produced it),
so the gateway builds each prompt from ids it already holds:

* a call whose messages are an earlier call's messages, then that call's reply (as the
  gateway returned it), then anything after (tool results, a new user turn) *extends* that
  call: its prompt is the earlier prompt ids + the sampled ids + the ids of the new messages
  (:meth:`envhub.engines.chat.ChatFormatter.continuation_ids`). Only the last call of a
  segment can be extended, so a segment is one growing token sequence;
* any other call (the agent edited, dropped or reordered its history, or forked from an
  older call) starts a new *segment*, its prompt rendered from the messages: counted as
  ``gateway/retokenized`` (from the second call on) and ``gateway/segments``.

A segment's training sequence is its last call's prompt + sampled ids; the loss mask is 1
exactly on the ids each of its calls sampled. Assistant messages the agent wrote itself (a
fabricated turn, an edited reply) are prompt ids of a later call: context, never trained.

Torch-free: it only needs the engine's chat formatter (None for an upstream backend, which
records messages and text but no ids).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from envhub.engines.chat import ChatFormatter
from envhub.engines.types import Generation


def _text(content: Any) -> str:
    """A message's content as text (OpenAI content parts are joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return str(content)


def _arguments(value: Any) -> Any:
    """Tool-call arguments compared by value: a JSON string and its object are the same."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):  # the model's text, nested past the parser too
            return value
    return value


def normalized(message: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a chat message that reach the prompt, in one comparable form."""
    out: dict[str, Any] = {"role": message.get("role"), "content": _text(message.get("content"))}
    calls = message.get("tool_calls") or []
    if calls:
        out["tool_calls"] = [
            (
                (c.get("function") or {}).get("name"),
                _arguments((c.get("function") or {}).get("arguments")),
            )
            for c in calls
        ]
    for key in ("tool_call_id", "name"):
        if message.get(key):
            out[key] = message[key]
    return out


def template_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A wire message in the form chat templates render (text content, known keys only)."""
    out: dict[str, Any] = {"role": message["role"], "content": _text(message.get("content"))}
    for key in ("tool_calls", "tool_call_id", "name"):
        if message.get(key):
            out[key] = message[key]
    return out


@dataclass
class Prompt:
    """The prompt ids of one call and how they were obtained."""

    ids: list[int]
    segment: int
    reused: int
    """Leading ids taken from the recorded call this one extends (0 for a new segment)."""
    retokenized: bool
    """Rendered from the messages although the episode already had calls (a history edit)."""


@dataclass
class CallRecord:
    """One chat completion as the gateway served it (a line of the trace)."""

    call: int
    """0 for the episode's first call."""
    segment: int
    messages: list[dict[str, Any]]
    """The request's messages, as the agent sent them."""
    tools: list[dict[str, Any]] | None
    prompt_ids: list[int]
    reused_prefix: int
    retokenized: bool
    sampled_ids: list[int]
    logprobs: list[float]
    weights_version: int | None
    finish_reason: str | None
    reply: dict[str, Any]
    """The assistant message returned to the agent (OpenAI form)."""
    started: float = field(default_factory=time.time)
    latency_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The trace line's fields (see :mod:`envhub.gateway.trace`)."""
        return asdict(self)


class Recorder:
    """The calls of one episode, with the prefix reuse described in the module docstring."""

    def __init__(self, chat: ChatFormatter | None) -> None:
        """``chat``: the engine's formatter; ``None`` records messages only (upstream)."""
        self.chat = chat
        self.calls: list[CallRecord] = []
        self.segments = 0
        self.retokenized = 0
        self._tips: dict[int, CallRecord] = {}
        """The last call of each segment: the only calls a later call may extend."""

    def prompt(self, messages: Sequence[Mapping[str, Any]], tools: list | None) -> Prompt:
        """The prompt ids of a call with ``messages`` (not yet recorded)."""
        wanted = [normalized(m) for m in messages]
        for tip in sorted(self._tips.values(), key=lambda c: -c.call):
            n = len(tip.messages)
            if tip.tools != tools or len(wanted) <= n:
                continue
            if [normalized(m) for m in tip.messages] != wanted[:n]:
                continue
            if normalized(tip.reply) != wanted[n]:
                continue
            tail = [template_message(m) for m in messages[n + 1 :]]
            ids = list(tip.prompt_ids) + list(tip.sampled_ids)
            if self.chat is not None:
                eos = bool(tip.sampled_ids) and tip.sampled_ids[-1] == self.chat.eos_id
                ids += self.chat.continuation_ids(tail, ended_with_eos=eos)
            return Prompt(ids, tip.segment, len(tip.prompt_ids) + len(tip.sampled_ids), False)
        ids = []
        if self.chat is not None:
            ids = self.chat.prompt_ids([template_message(m) for m in messages], tools=tools)
        return Prompt(ids, self.segments, 0, bool(self.calls))

    def record(
        self,
        prompt: Prompt,
        messages: Sequence[Mapping[str, Any]],
        tools: list | None,
        gen: Generation,
        reply: dict[str, Any],
        latency_s: float,
    ) -> CallRecord:
        """Keep one served call; returns its record."""
        if prompt.segment == self.segments:
            self.segments += 1
        self.retokenized += prompt.retokenized
        rec = CallRecord(
            call=len(self.calls),
            segment=prompt.segment,
            messages=[dict(m) for m in messages],
            tools=tools,
            prompt_ids=prompt.ids,
            reused_prefix=prompt.reused,
            retokenized=prompt.retokenized,
            sampled_ids=list(gen.token_ids),
            logprobs=list(gen.logprobs),
            weights_version=gen.weight_version,
            finish_reason=gen.finish_reason,
            reply=reply,
            latency_s=round(latency_s, 6),
        )
        self.calls.append(rec)
        self._tips[prompt.segment] = rec
        return rec

    @property
    def last_reply(self) -> dict[str, Any] | None:
        """The assistant message of the latest call (what a single-turn env scores)."""
        return self.calls[-1].reply if self.calls else None

    @property
    def sampled_tokens(self) -> int:
        """Ids the model sampled over the whole episode."""
        return sum(len(c.sampled_ids) for c in self.calls)


@dataclass
class TrainingSequence:
    """One segment as a training sequence."""

    tokens: list[int]
    loss_mask: list[int]
    """1 on the ids a call of the segment sampled, 0 on prompt context."""
    logprobs: list[float]
    """The engine's logprob on sampled ids, 0.0 elsewhere."""
    versions: list[int | None]


def training_sequences(calls: Sequence[CallRecord]) -> list[TrainingSequence]:
    """Each segment's tokens, loss mask and engine logprobs (see the module docstring).

    Raises:
        ValueError: a segment's calls do not extend each other (a corrupted trace).
    """
    by_segment: dict[int, list[CallRecord]] = {}
    for c in calls:
        by_segment.setdefault(c.segment, []).append(c)
    out = []
    for seg in sorted(by_segment):
        members = by_segment[seg]
        last = members[-1]
        tokens = list(last.prompt_ids) + list(last.sampled_ids)
        mask = [0] * len(tokens)
        logprobs = [0.0] * len(tokens)
        for c in members:
            start = len(c.prompt_ids)
            if tokens[start : start + len(c.sampled_ids)] != c.sampled_ids:
                raise ValueError(f"segment {seg}: call {c.call} is not a prefix of the last call")
            for i, lp in enumerate(c.logprobs):
                mask[start + i], logprobs[start + i] = 1, lp
        out.append(TrainingSequence(tokens, mask, logprobs, [c.weights_version for c in members]))
    return out
