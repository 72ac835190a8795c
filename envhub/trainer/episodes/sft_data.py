"""Supervised fine-tuning data: conversations to token ids with a loss on assistant tokens only.

Three kinds of source, mixed by weight like ``env.mix`` (:class:`SFTSource`):

- ``reference``: an environment's reference solutions. Each task of the split is played with
  the environment's own :meth:`~envhub.core.TaskEnv.reference_action` (the move its
  self-check ``envhub check`` proves scores full marks), so the gold is rendered in that
  environment's answer format by its own code; multi-turn environments give multi-turn
  conversations. An episode whose reference does not score full marks with status ``ok`` is
  skipped and counted (never trained on).
- ``episodes``: recorded episodes, ``envhub eval``'s ``episodes.jsonl`` (chat transcripts) or
  the trainer's rollout logs ``rollouts/step_*.jsonl.gz`` (the decoded prompt and turns),
  filtered by reward and status: rejection-sampling fine-tuning.
- ``messages``: a JSONL file or a Hugging Face dataset (a local folder or a name, loaded
  with ``datasets``) whose rows hold a list of chat messages (and optionally ``tools``).

Masking (:func:`tokenize_chat`). Where the chat template marks assistant text with
``{% generation %}``, transformers' own mask is used (``return_assistant_tokens_mask``).
Otherwise the conversation is rendered once and each assistant turn's span is found by
rendering its prefixes: the text up to the turn with the generation prompt, and up to the
turn's end; the turn's tokens run from there through the template's end-of-turn token (the
EOS the model must learn to emit), never the newline the template writes after it. A
template that re-renders earlier turns (so a prefix is not a prefix) is refused, naming it.
Structured tool calls become the ``<tool_call>{...}</tool_call>`` text that the engines
sample and :mod:`envhub.tools` reads, so what is trained on is what the model writes.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from envhub.datasets import read_jsonl
from envhub.errors import ConfigError


class SFTDataError(ConfigError):
    """An SFT source cannot be read or holds nothing to train on; the message names it."""


class SFTSource(BaseModel):
    """One source of ``sft.data``: what it reads and its weight in the mix."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    kind: Literal["reference", "episodes", "messages"]
    """``reference``: an environment's reference solutions; ``episodes``: recorded episodes
    (``envhub eval`` output, rollout logs); ``messages``: chat messages (JSONL or HF dataset)."""
    weight: float = Field(default=1.0, gt=0)
    """Share of each step's sequences drawn from this source (normalised over the sources)."""
    name: str | None = None
    """Label in metrics (``sft/<name>/...``); the env name or the file's stem when unset."""
    env: str | None = None
    """``reference``: the catalog entry (``envhub list``). ``episodes``: keep only this env's."""
    split: str | None = None
    """``reference``: the split whose tasks are rendered (the entry's own when unset)."""
    overrides: dict[str, Any] = Field(default_factory=dict)
    """``reference``: passed to ``envhub.make`` (documented knobs, e.g. a difficulty)."""
    limit: int | None = Field(default=None, ge=1)
    """At most this many conversations from the source (the first ones)."""
    path: str | None = None
    """``episodes``: an ``episodes.jsonl``, a rollout log, or a folder searched for both.
    ``messages``: a ``.jsonl``/``.jsonl.gz`` file, a ``save_to_disk`` folder, or a folder of
    data files that ``datasets.load_dataset`` reads (``dataset_split`` picks the split)."""
    dataset: str | None = None
    """``messages``: a Hugging Face dataset name (offline: it must be in the local cache)."""
    dataset_split: str = "train"
    """``messages`` from a Hugging Face dataset: the split read."""
    field: str = "messages"
    """``messages``: the column holding each row's list of messages."""
    min_reward: float | None = None
    """``episodes``: keep episodes whose reward is at least this."""
    statuses: list[str] = Field(default_factory=lambda: ["ok"])
    """``episodes``: keep episodes with one of these statuses."""
    passed_only: bool = False
    """``episodes``: keep only episodes ``envhub eval`` counted as passed."""

    @model_validator(mode="after")
    def _check(self) -> SFTSource:
        needs = {
            "reference": ("env", self.env),
            "episodes": ("path", self.path),
        }
        if self.kind in needs and not needs[self.kind][1]:
            key = needs[self.kind][0]
            raise ValueError(f"an sft.data source of kind {self.kind!r} needs {key!r}")
        if self.kind == "messages" and not (self.path or self.dataset):
            raise ValueError("an sft.data source of kind 'messages' needs 'path' or 'dataset'")
        if self.kind == "messages" and self.path and self.dataset:
            raise ValueError("give 'path' or 'dataset' for a 'messages' source, not both")
        return self

    @property
    def label(self) -> str:
        """The source's name in metrics."""
        if self.name:
            return self.name
        if self.env:
            return self.env
        where = self.path or self.dataset or self.kind
        return Path(where).name.split(".")[0] or self.kind


# ---------------------------------------------------------------------------- examples


@dataclass
class Conversation:
    """One training conversation: chat messages, or decoded text segments."""

    source: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] | None = None
    segments: list[tuple[str, bool]] | None = None
    """Rollout logs: ``(text, trained)`` pieces already in the template's text."""
    env: str | None = None
    task_id: str | None = None


@dataclass
class Tokenized:
    """A conversation's ids and its loss mask (1 on assistant tokens)."""

    ids: list[int]
    mask: list[int]
    source: str

    @property
    def n_trained(self) -> int:
        """Tokens that carry loss (the first token never does: nothing predicts it)."""
        return sum(self.mask[1:])


def tool_calls_as_text(message: Mapping[str, Any]) -> dict[str, Any]:
    """An assistant message with structured ``tool_calls`` as the text the model writes.

    Engines sample text and :mod:`envhub.tools` reads ``<tool_call>`` blocks from it, so the
    calls are appended to the content as such blocks; other messages pass unchanged (the
    ``tool`` role's answers are the environment's, rendered by the template).
    """
    m = {k: v for k, v in dict(message).items() if v is not None}
    calls = m.pop("tool_calls", None)
    if m.get("role") != "assistant" or not calls:
        return m
    blocks = []
    for c in calls:
        fn = c.get("function", c)
        args = fn.get("arguments", {})
        if isinstance(args, str):
            args = json.loads(args) if args.strip() else {}
        blocks.append(
            "<tool_call>" + json.dumps({"name": fn["name"], "arguments": args}) + "</tool_call>"
        )
    text = m.get("content") or ""
    m["content"] = (text + "\n" if text else "") + "\n".join(blocks)
    return m


def has_generation_tags(tokenizer: Any) -> bool:
    """True when the chat template marks assistant text with ``{% generation %}``."""
    template = getattr(tokenizer, "chat_template", None) or ""
    return "{% generation %}" in template or "{%- generation %}" in template


def tokenize_chat(tokenizer: Any, conv: Conversation, *, native: bool | None = None) -> Tokenized:
    """Ids of ``conv`` under the tokenizer's chat template, with a mask on assistant tokens.

    ``native`` forces transformers' ``{% generation %}`` mask (True) or the prefix rendering
    (False); by default the first where the template supports it.

    Raises:
        SFTDataError: no assistant turn, a template that re-renders earlier turns, or
            ``native`` asked of a template without generation tags.
    """
    if conv.segments is not None:
        return _tokenize_segments(tokenizer, conv)
    messages = [tool_calls_as_text(m) for m in conv.messages]
    if not any(m.get("role") == "assistant" for m in messages):
        raise SFTDataError(f"{conv.source}: a conversation has no assistant turn to train on")
    use_native = has_generation_tags(tokenizer) if native is None else native
    if use_native:
        if not has_generation_tags(tokenizer):
            raise SFTDataError("the chat template has no {% generation %} tags")
        out = tokenizer.apply_chat_template(
            messages,
            tools=conv.tools,
            tokenize=True,
            return_dict=True,
            return_assistant_tokens_mask=True,
        )
        return Tokenized(list(out["input_ids"]), list(out["assistant_masks"]), conv.source)
    return _tokenize_by_prefixes(tokenizer, messages, conv)


def _render(tokenizer: Any, messages: list[dict[str, Any]], tools: Any, gen: bool) -> str:
    kwargs: dict[str, Any] = {"tools": tools} if tools else {}
    return tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=gen, **kwargs
    )


def assistant_spans(
    tokenizer: Any, messages: list[dict[str, Any]], tools: Any = None
) -> tuple[str, list[tuple[int, int]]]:
    """The rendered conversation and the character span of each assistant turn.

    A turn runs from the end of the generation prompt before it to the end of its
    end-of-turn token (the EOS) when the template writes one, else to the end of the turn.
    """
    full = _render(tokenizer, messages, tools, gen=False)
    eos = tokenizer.eos_token or ""
    spans = []
    for i, m in enumerate(messages):
        if m.get("role") != "assistant":
            continue
        before = _render(tokenizer, messages[:i], tools, gen=True)
        through = _render(tokenizer, messages[: i + 1], tools, gen=False)
        if not (full.startswith(before) and full.startswith(through)):
            raise SFTDataError(
                "the chat template renders earlier turns differently once later ones follow "
                "(e.g. it drops past reasoning), so assistant turns cannot be located by "
                "prefixes: use a template with {% generation %} tags"
            )
        start, end = len(before), len(through)
        if eos:
            cut = full.find(eos, start, end)
            if cut >= 0:
                end = cut + len(eos)
        spans.append((start, end))
    return full, spans


def _tokenize_by_prefixes(
    tokenizer: Any, messages: list[dict[str, Any]], conv: Conversation
) -> Tokenized:
    text, spans = assistant_spans(tokenizer, messages, conv.tools)
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    mask = [int(any(a <= s < b for a, b in spans)) for s, _ in enc["offset_mapping"]]
    return Tokenized(list(enc["input_ids"]), mask, conv.source)


def _tokenize_segments(tokenizer: Any, conv: Conversation) -> Tokenized:
    ids: list[int] = []
    mask: list[int] = []
    for text, trained in conv.segments or []:
        piece = tokenizer(text, add_special_tokens=False)["input_ids"]
        ids += piece
        mask += [int(trained)] * len(piece)
    if not any(mask):
        raise SFTDataError(f"{conv.source}: a recorded episode has no assistant turn")
    return Tokenized(ids, mask, conv.source)


# ---------------------------------------------------------------------------- sources


def reference_conversations(source: SFTSource) -> tuple[list[Conversation], int]:
    """Every task of the split played with the environment's reference action.

    Returns:
        The conversations, and how many episodes were skipped (no reference, or a reference
        that did not earn full marks with status ``ok``).

    Raises:
        SFTDataError: no task gave a reference episode that scores full marks.
    """
    import envhub

    env = envhub.make(source.env, **source.overrides)
    try:
        tasks = list(env.tasks(source.split))[: source.limit]
        out, skipped = [], 0
        for task in tasks:
            conv = _play_reference(env, task.task_id, source)
            if conv is None:
                skipped += 1
                continue
            out.append(conv)
        if not out:
            raise SFTDataError(
                f"{source.env}: no task of split {source.split or env.spec.split!r} has a "
                "reference solution that scores full marks (reference_action() returned "
                "None, or its episodes failed): use another source kind"
            )
        return out, skipped
    finally:
        env.close()


def _play_reference(env: Any, task_id: str, source: SFTSource) -> Conversation | None:
    """One episode with reference actions; None unless it ends ``ok`` with full marks."""
    from envhub.types import Status

    res = env.reset(task_id=task_id)
    episode = env._episode
    messages = [m.model_dump(exclude_none=True) for m in res.messages]
    tools = res.info.tools or None
    result = None
    while result is None or not result.done:
        action = env.reference_action(episode)
        if action is None:
            return None
        result = env.step(action)
        messages.append(action.model_dump(exclude_none=True))
        messages += [m.model_dump(exclude_none=True) for m in result.messages]
    primary = result.info.components.get(env.primary_component)
    if result.info.status is not Status.OK or primary != 1.0:
        return None
    while messages and messages[-1]["role"] != "assistant":
        messages.pop()  # the environment's closing words are not trained on
    return Conversation(source.label, messages, tools, env=source.env, task_id=task_id)


def _episode_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise SFTDataError(f"sft.data episodes path {path} does not exist")
    found = sorted(path.rglob("episodes.jsonl")) + sorted(path.rglob("step_*.jsonl.gz"))
    if not found:
        raise SFTDataError(
            f"{path} holds no episodes.jsonl (envhub eval) or rollouts/step_*.jsonl.gz "
            "(training rollout logs)"
        )
    return found


def _keep(row: Mapping[str, Any], source: SFTSource) -> bool:
    if source.env and row.get("env") != source.env:
        return False
    if str(row.get("status", "ok")) not in source.statuses:
        return False
    if source.min_reward is not None and float(row.get("reward", 0.0)) < source.min_reward:
        return False
    return not (source.passed_only and row.get("passed") is not True)


def episode_conversations(source: SFTSource) -> list[Conversation]:
    """Recorded episodes kept by the source's filters (eval records or rollout logs)."""
    out = []
    for path in _episode_files(Path(source.path or "")):
        for row in read_jsonl(path):
            if not _keep(row, source):
                continue
            if "prompt" in row and "response_tokens" in row:  # a training rollout log line
                segments = [(row["prompt"], False)] + [
                    (m["content"], m["role"] == "assistant") for m in row["messages"]
                ]
                conv = Conversation(source.label, segments=segments, env=row.get("env"))
            else:
                conv = Conversation(
                    source.label, list(row.get("messages") or []), env=row.get("env")
                )
                conv.task_id = row.get("task_id")
            out.append(conv)
            if source.limit and len(out) >= source.limit:
                return out
    if not out:
        raise SFTDataError(
            f"no recorded episode under {source.path} passes the filters (env={source.env}, "
            f"statuses={source.statuses}, min_reward={source.min_reward}, "
            f"passed_only={source.passed_only})"
        )
    return out


def message_conversations(source: SFTSource) -> list[Conversation]:
    """Rows of chat messages from a JSONL file or a Hugging Face dataset."""
    rows = _message_rows(source)
    out = []
    for i, row in enumerate(rows):
        msgs = row.get(source.field)
        where = f"{source.path or source.dataset} row {i + 1}"
        if not isinstance(msgs, list) or not all(isinstance(m, dict) for m in msgs):
            raise SFTDataError(
                f"{where}: field {source.field!r} must be a list of messages "
                "({'role': ..., 'content': ...}); set 'field' to the column that holds them"
            )
        for m in msgs:
            if m.get("role") not in ("system", "user", "assistant", "tool"):
                raise SFTDataError(f"{where}: a message has role {m.get('role')!r}")
        tools = row.get("tools") or None
        if isinstance(tools, str):
            tools = json.loads(tools)
        out.append(Conversation(source.label, msgs, tools))
        if source.limit and len(out) >= source.limit:
            break
    if not out:
        raise SFTDataError(f"{source.path or source.dataset}: no rows")
    return out


def _message_rows(source: SFTSource) -> Sequence[Mapping[str, Any]]:
    if source.path and Path(source.path).is_file():
        return read_jsonl(Path(source.path))
    where = source.path or source.dataset
    if source.path and not Path(source.path).exists():
        raise SFTDataError(f"sft.data messages path {source.path} does not exist")
    try:
        import datasets
    except ImportError:
        from envhub.errors import missing

        raise missing("datasets", "data") from None
    try:
        saved = source.path and any(
            (Path(source.path) / f).exists() for f in ("state.json", "dataset_dict.json")
        )
        if saved:  # a folder written by save_to_disk
            ds = datasets.load_from_disk(source.path)
            if isinstance(ds, datasets.DatasetDict):
                ds = ds[source.dataset_split]
        elif source.path:  # a folder of data files (json, parquet, csv) that load_dataset reads
            ds = datasets.load_dataset(source.path, split=source.dataset_split)
        else:
            ds = datasets.load_dataset(source.dataset, split=source.dataset_split)
    except Exception as e:
        raise SFTDataError(f"cannot load the dataset {where!r}: {e}") from e
    return ds  # type: ignore[return-value]


LOADERS = {
    "episodes": episode_conversations,
    "messages": message_conversations,
}


def load_source(source: SFTSource) -> tuple[list[Conversation], dict[str, float]]:
    """A source's conversations and what loading them counted (``skipped`` references)."""
    if source.kind == "reference":
        convs, skipped = reference_conversations(source)
        return convs, {"skipped": float(skipped)}
    return LOADERS[source.kind](source), {}


# ---------------------------------------------------------------------------- the mix


def weighted_order(weights: Sequence[float], n: int) -> list[int]:
    """The source of each of the first ``n`` draws: smooth weighted round-robin.

    Every prefix of the order holds each source within one draw of its exact share, so
    even a batch smaller than the number of sources gives each its turn over a few steps.
    """
    total = sum(weights)
    current = [0.0] * len(weights)
    out = []
    for _ in range(n):
        current = [c + w for c, w in zip(current, weights, strict=True)]
        best = max(range(len(weights)), key=lambda i: (current[i], -i))
        current[best] -= total
        out.append(best)
    return out


class SFTMix:
    """Tokenized examples of every source, drawn by weight, deterministic in (seed, step).

    Draws are dealt to the sources by :func:`weighted_order`; each source is walked in its
    own shuffled order (reshuffled per epoch of that source), so a step's batch depends on
    the seed and the step alone: a resumed run draws exactly what the uninterrupted one drew.
    """

    def __init__(
        self, data: dict[str, list[Tokenized]], weights: dict[str, float], seed: int
    ) -> None:
        """``data`` and ``weights`` by source label."""
        empty = [k for k, v in data.items() if not v]
        if empty:
            raise SFTDataError(f"sft.data sources {empty} hold no sequence to train on")
        self.data, self.weights, self.seed = data, weights, seed
        self.names = list(data)

    def _drawn(self, n: int) -> list[tuple[str, int]]:
        """``(source, index within the source)`` of the first ``n`` draws."""
        seen = dict.fromkeys(self.names, 0)
        out = []
        for i in weighted_order([self.weights[k] for k in self.names], n):
            name = self.names[i]
            out.append((name, seen[name]))
            seen[name] += 1
        return out

    def batch(self, step: int, size: int) -> list[Tokenized]:
        """The ``size`` examples of step ``step`` (1-based), by weight."""
        drawn = self._drawn(step * size)[(step - 1) * size :]
        return [self._at(name, i) for name, i in drawn]

    def _at(self, name: str, i: int) -> Tokenized:
        items = self.data[name]
        epoch, pos = divmod(i, len(items))
        order = list(range(len(items)))
        random.Random(f"{self.seed}/{name}/{epoch}").shuffle(order)
        return items[order[pos]]

    def epochs(self, step: int, size: int) -> dict[str, float]:
        """How many passes over each source the first ``step`` steps of ``size`` made."""
        counts = dict.fromkeys(self.names, 0)
        for name, _ in self._drawn(step * size):
            counts[name] += 1
        return {n: counts[n] / len(self.data[n]) for n in self.names}


def iter_user_texts(convs: Sequence[Conversation]) -> Iterator[tuple[str | None, str]]:
    """``(env, text)`` of every user message and prompt segment (for the overlap check)."""
    for c in convs:
        if c.segments is not None:
            yield c.env, c.segments[0][0]
        for m in c.messages:
            if m.get("role") == "user":
                yield c.env, str(m.get("content", ""))
