"""The evaluator records the machinery's failures as statuses and lets bugs raise.

A remote environment that cannot be reached, an OS error on its socket, an engine that dies:
each is an episode's ``infra_error`` and the run goes on. A ``KeyError`` or ``TypeError`` is a
bug (the evaluator's, or an environment's outside its episode boundary): hidden as excluded
``env_error`` episodes it would shrink the denominator silently, so it stops the run.
"""

from __future__ import annotations

import asyncio

import pytest

import envhub
from envhub.core import Env
from envhub.engines.types import Generation, SamplingParams
from envhub.errors import TransportError
from envhub.evaluate.backends import BatchingBackend, ModelError
from envhub.evaluate.rescore import _replay
from envhub.evaluate.runner import EpisodeJob, run_episode
from envhub.evaluate.store import EpisodeRecord
from envhub.types import Message, Status


class Failing(Env):
    """``arith`` whose ``reset`` or ``step`` raises what it is given (a remote env's view)."""

    def __init__(self, *, on_reset: Exception | None = None, on_step: Exception | None = None):
        self.inner = envhub.make("arith")
        self.spec = self.inner.spec
        self.on_reset, self.on_step = on_reset, on_step

    def reset(self, *, seed=None, task_id=None):
        if self.on_reset is not None:
            raise self.on_reset
        return self.inner.reset(seed=seed, task_id=task_id)

    def step(self, action):
        if self.on_step is not None:
            raise self.on_step
        return self.inner.step(action)


class Answers:
    """A model backend that answers ``ANSWER: 5``."""

    name = "fixed"

    async def generate(self, messages, *, tools, params, seed=None):
        return Generation(text="ANSWER: 5")


JOB = EpisodeJob("arith", 1, None, "arith/0", 0, 7, "correctness", 1)


def episode(env: Env) -> EpisodeRecord:
    return asyncio.run(run_episode(env, Answers(), JOB, SamplingParams()))


@pytest.mark.parametrize(
    "failure",
    [
        {"on_reset": TransportError("server gone")},
        {"on_step": TransportError("server gone")},
        {"on_step": ConnectionResetError("reset by peer")},
        {"on_reset": TimeoutError("no answer")},
    ],
)
def test_a_transport_or_os_error_is_an_infra_error_episode(home, failure):
    rec = episode(Failing(**failure))
    assert rec.status is Status.INFRA_ERROR and rec.truncated and rec.passed is None


@pytest.mark.parametrize(
    "failure",
    [{"on_reset": KeyError("task_id")}, {"on_step": TypeError("step() got an extra argument")}],
)
def test_a_bug_in_an_environment_call_raises(home, failure):
    bug = next(iter(failure.values()))
    with pytest.raises(type(bug)):
        episode(Failing(**failure))


def test_a_bug_in_the_model_backend_raises(home):
    class Broken(Answers):
        async def generate(self, messages, *, tools, params, seed=None):
            return {}["choices"]  # the evaluator's own KeyError

    with pytest.raises(KeyError, match="choices"):
        asyncio.run(run_episode(envhub.make("arith"), Broken(), JOB, SamplingParams()))


def engine_generate(batch_fn):
    backend = BatchingBackend("local", batch_fn)

    async def main():
        try:
            chat = [Message(role="user", content="hi")]
            return await backend.generate(chat, tools=None, params=SamplingParams())
        finally:
            await backend.aclose()

    return asyncio.run(main())


def test_an_engine_failure_is_a_model_error_and_an_engine_bug_raises_as_it_is():
    def dead(chats, tools, params, seeds):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    def buggy(chats, tools, params, seeds):
        return [Generation(text=chats[0][5]["content"])]  # IndexError: our own bug

    with pytest.raises(ModelError, match="RuntimeError: CUDA error"):
        engine_generate(dead)
    with pytest.raises(IndexError):
        engine_generate(buggy)


def recorded() -> EpisodeRecord:
    return EpisodeRecord(
        env="arith",
        env_version=1,
        split=None,
        task_id="arith/0",
        sample=0,
        seed=7,
        model="fixed",
        messages=[Message(role="assistant", content="ANSWER: 5")],
    )


def test_rescore_replay_records_transport_errors_and_raises_bugs(home):
    new = _replay(Failing(on_step=TransportError("server gone")), recorded(), "correctness", 1.0)
    assert new.status is Status.INFRA_ERROR and "server gone" in new.error
    with pytest.raises(TypeError):
        _replay(Failing(on_step=TypeError("a bug")), recorded(), "correctness", 1.0)


def test_a_model_that_writes_unicode_line_breaks_keeps_its_record(tmp_path):
    """U+2028, U+2029 and U+0085 stay raw in JSON; reading the file must not break lines there."""
    from envhub.evaluate.store import RunStore

    store = RunStore(tmp_path / "run")
    texts = ["a\u2028b", "c\u2029d", "e\x85f", "plain"]
    for i, text in enumerate(texts):
        rec = recorded().model_copy(update={"sample": i})
        rec.messages = [Message(role="assistant", content=text)]
        store.append(rec)
    store.close()
    got = RunStore(tmp_path / "run").load_records()
    assert [r.messages[0].content for r in got] == texts
