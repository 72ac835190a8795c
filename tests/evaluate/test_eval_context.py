"""A conversation that outgrows the model's context ends the episode; it is no infra error.

A multi-turn episode grows with what the model writes, so a policy that rambles until its
context is full must not turn a losing game into a dropped sample (``infra_error``): the
episode ends truncated with the environment's final accounting, as the trainer's token
budget ends it. Only an opening prompt that cannot fit at all is the environment's.
"""

from __future__ import annotations

import asyncio

import pytest
from eval_fakes import policy, run_evaluation

import envhub
from envhub.engines.types import Generation, SamplingParams
from envhub.evaluate import EvalConfig, OpenAIEndpoint, RunStore
from envhub.evaluate.backends import BatchingBackend, ContextExhausted
from envhub.evaluate.local import engine_batch_fn
from envhub.evaluate.scripted import ScriptedEndpoint, ScriptedHTTPError
from envhub.types import Message

VLLM_400 = (
    '{"error": {"message": "This model\'s maximum context length is 2048 tokens. However, '
    'your prompt contains 2123 input tokens", "type": "BadRequestError", "code": 400}}'
)


def run(cfg, out):
    model = OpenAIEndpoint(cfg.base_url, None, concurrency=cfg.concurrency, max_retries=1)
    return run_evaluation(cfg, out, model, envhub.make)


def full_after(turns: int):
    """A model whose context is full once it has taken ``turns`` turns."""

    def responder(body):
        if sum(m["role"] == "assistant" for m in body["messages"]) >= turns:
            raise ScriptedHTTPError(400, VLLM_400)
        return policy(body)

    return responder


def test_context_full_mid_episode_is_a_truncated_loss(home, tmp_path):
    with ScriptedEndpoint(full_after(2)) as ep:
        cfg = EvalConfig(envs=["guess"], base_url=ep.base_url, concurrency=3)
        s = run(cfg, tmp_path / "run")["environments"]["guess"]
    # guess/0 (37) needs 7 binary-search turns, guess/2 (5) needs 7: both cut at 2
    assert s["status"].get("infra_error", 0) == 0
    recs = {r.task_id: r for r in RunStore(tmp_path / "run").load_records()}
    cut = recs["guess/0"]
    assert cut.status.value == "ok" and cut.truncated and not cut.terminated
    assert cut.turns == 2 and cut.reward == 0.0 and cut.passed is False


def test_opening_prompt_that_cannot_fit_is_the_environments(home, tmp_path):
    with ScriptedEndpoint(full_after(0)) as ep:
        cfg = EvalConfig(envs=["arith"], base_url=ep.base_url, limit=2)
        s = run(cfg, tmp_path / "run")["environments"]["arith"]
    assert s["status"]["env_error"] == 2 and s["scored"] == 0
    rec = RunStore(tmp_path / "run").load_records()[0]
    assert rec.turns == 0 and "opening prompt does not fit" in rec.error


class FakeEngine:
    """Echoes each prompt's length; its context is ``max_model_len`` tokens."""

    max_model_len = 8

    def __init__(self):
        self.batches: list[list[list[int]]] = []

    def generate(self, prompts, params, seeds=None):
        self.batches.append(prompts)
        return [Generation(text=str(len(p)), token_ids=[1]) for p in prompts]


class WordChat:
    """One token per word of every message."""

    def prompt_ids(self, chat, tools=None):
        return [0 for m in chat for _ in m["content"].split()]


def test_one_chat_too_long_fails_alone_in_its_batch():
    eng = FakeEngine()
    backend = BatchingBackend("fake", engine_batch_fn(eng, WordChat()), max_batch=4)
    short = [Message(role="user", content="two words")]
    long = [Message(role="user", content=" ".join(["w"] * 8))]

    async def main():
        return await asyncio.gather(
            backend.generate(short, tools=None, params=SamplingParams()),
            backend.generate(long, tools=None, params=SamplingParams()),
            return_exceptions=True,
        )

    got, failed = asyncio.run(main())
    assert got.text == "2" and got.prompt_tokens == 2 and got.completion_tokens == 1
    assert isinstance(failed, ContextExhausted) and "8 tokens" in str(failed)
    assert eng.batches == [[[0, 0]]]  # the long chat never reached the engine


@pytest.mark.parametrize(
    "body",
    [VLLM_400, '{"error": {"code": "context_length_exceeded", "message": "too long"}}'],
)
def test_endpoint_context_errors_are_recognised(body):
    with ScriptedEndpoint(lambda b: (_ for _ in ()).throw(ScriptedHTTPError(400, body))) as ep:

        async def main():
            model = OpenAIEndpoint(ep.base_url)
            try:
                chat = [Message(role="user", content="hi")]
                await model.generate(chat, tools=None, params=SamplingParams())
            finally:
                await model.aclose()

        with pytest.raises(ContextExhausted):
            asyncio.run(main())
