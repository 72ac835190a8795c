"""Training and ``envhub eval`` score the same text the same way (issue 22).

The trainer's rollout once read tool calls with a parser of its own: deep JSON in a call
raised ``RecursionError`` (the episode dropped as ``infra_error``), its lazy regular
expression was quadratic, and malformed calls beside a well-formed one vanished, so a policy
shed their penalty in training that ``envhub eval`` charged. Now both paths send the
completion's text as it is (:attr:`Generation.message`) and the environment parses it
(:mod:`envhub.tools` over :mod:`envhub.tags`). Here the pathological corpus goes through both:
the trainer's :func:`collect` with an engine that emits the text, and eval's
:func:`run_episode` with a model that answers it; episode by episode, the status, reward and
components must be equal, and never ``infra_error`` or ``env_error``.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from hostile_corpus import MODEL_OWNED, beside_a_good_call, corpus

import envhub
from envhub.engines.chat import ChatFormatter
from envhub.engines.types import Generation, SamplingParams
from envhub.evaluate.runner import EpisodeJob, run_episode
from envhub.evaluate.store import EpisodeRecord
from envhub.tools import ToolSet
from envhub.trainer.episodes.rollout import LocalEnvPool, RolloutSettings, TrainingEpisode, collect
from envhub.types import Message

ENVS = ("search-v1", "sql-multiturn-v1", "gsm8k-v1", "wordle-v1")
"""The text tool-call environments, one single-turn and one game."""
SEED = 3
PARAMS = SamplingParams(max_tokens=8)
SETTINGS = RolloutSettings(
    group_size=1, max_turns=1, max_seq_len=4096, timeout_s=120.0, params=PARAMS
)
"""One turn, then each path's final accounting (``finish``), as eval's one-turn guard does."""


class TextEngine:
    """A generation engine whose every completion is ``text`` (one token id, then EOS)."""

    def __init__(self, text: str, eos: int) -> None:
        self.text, self.eos = text, eos

    def generate(self, prompts, params):
        ids = [7, self.eos]
        return [
            Generation(self.text, "stop", token_ids=ids, logprobs=[-0.1, -0.2], stop_reason="<eos>")
            for _ in prompts
        ]


class TextModel:
    """An ``envhub eval`` model backend whose every answer is ``text``."""

    name = "corpus"

    def __init__(self, text: str) -> None:
        self.text = text

    async def generate(self, messages, *, tools, params, seed=None) -> Generation:
        return Generation(self.text, "stop")

    async def aclose(self) -> None:
        pass


def train_episode(pool, chat, text: str) -> TrainingEpisode:
    """One training episode of ``text`` through the trainer's rollout."""
    eos = chat.tokenizer.eos_token_id
    batch = collect(TextEngine(text, eos).generate, pool, chat, [SEED], SETTINGS, sample_seed=0)
    return batch.episodes[0]


def eval_episode(env, env_id: str, task_id: str, text: str) -> EpisodeRecord:
    """The same episode through ``envhub eval``'s episode loop."""
    job = EpisodeJob(
        env=env_id, env_version=1, split=None, task_id=task_id, sample=0, seed=SEED,
        primary="correctness", max_turns=1,
    )  # fmt: skip
    return asyncio.run(run_episode(env, TextModel(text), job, PARAMS))


def _texts(env) -> list[tuple[str, str]]:
    tools = [t["function"]["name"] for t in env.info().get("tools", [])]
    return [(name, m) for name, m in corpus(tools) if isinstance(m, str)]


@pytest.fixture(scope="module")
def chat(engine):
    return ChatFormatter(engine.tokenizer)


@pytest.mark.parametrize("env_id", ENVS)
def test_train_and_eval_give_the_same_episode_for_hostile_text(chat, env_id):
    pool = LocalEnvPool(lambda: envhub.make(env_id))
    env = envhub.make(env_id)
    differ, owned = [], []
    try:
        for name, text in _texts(env):
            ep = train_episode(pool, chat, text)
            rec = eval_episode(env, env_id, ep.task_id, text)
            train = (ep.status, round(ep.reward, 9), ep.components)
            evaluated = (rec.status, round(rec.reward, 9), rec.components)
            if train != evaluated:
                differ.append((name, train, evaluated))
            if not {ep.status, rec.status} <= MODEL_OWNED:
                owned.append((name, ep.status, ep.error, rec.status, rec.error))
    finally:
        pool.shutdown()
        env.close()
    assert owned == []
    assert differ == []


@pytest.mark.parametrize(
    "text",
    [
        beside_a_good_call("search"),
        '<tool_call>{"name": "search", "arguments": ' + "[" * 50_000 + "]" * 50_000 + "}"
        "</tool_call>",
    ],
    ids=["bad calls beside a good one", "deep json"],
)
def test_every_malformed_call_costs_its_penalty_in_training(chat, text):
    pool = LocalEnvPool(lambda: envhub.make("search-v1"))
    try:
        ep = train_episode(pool, chat, text)
    finally:
        pool.shutdown()
    assert not ep.dropped and ep.status in MODEL_OWNED, ep.error
    with envhub.make("search-v1") as env:
        env.reset(seed=SEED)
        invalid = sum(not c.ok for c in env.toolset.parse(Message.coerce(text)))
    assert invalid >= 1 and ep.components["invalid_calls"] == invalid


class RecordingPool(LocalEnvPool):
    """Keeps every message the rollout steps with."""

    def __init__(self, factory):
        super().__init__(factory)
        self.sent: list[Message] = []

    def step(self, key, message):
        self.sent.append(message)
        return super().step(key, message)


def test_the_rollout_sends_the_text_as_sampled_and_parses_nothing(chat):
    text = 'ok <tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>'
    pool = RecordingPool(lambda: envhub.make("search-v1"))
    try:
        train_episode(pool, chat, text)
    finally:
        pool.shutdown()
    assert pool.sent == [Generation(text).message]
    assert pool.sent[0].tool_calls is None  # the environment reads the call from the text


def test_unclosed_tool_calls_are_read_in_linear_time():
    """300,000 characters of unclosed ``<tool_call>{`` (the trainer's lazy regular
    expression took tens of seconds on this, holding the GIL); the bound is generous."""
    text = "<tool_call>{" * 25_000
    toolset = ToolSet([])
    start = time.perf_counter()
    calls = toolset.parse(Message.coerce(text))
    assert time.perf_counter() - start < 5.0
    assert [c.ok for c in calls] == [False] and "not closed" in calls[0].error
