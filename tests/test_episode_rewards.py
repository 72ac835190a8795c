"""Reward composition over the whole episode (issue 17, point 10).

Three holes, each written as the attack that used to pay: a ``length`` penalty that saw only
the last message (so earlier turns were free), a truncation that paid more than the worst
terminal outcome (connect4 with a negative ``loss`` weight: stalling with illegal moves beat
losing), and an episode ended from outside (a trainer's budget) whose end-of-episode
components, penalties included, were never paid.
"""

import asyncio
import itertools
import random

import pytest

import envhub
from envhub.core import Feedback, TaskEnv
from envhub.engines.types import Generation, SamplingParams
from envhub.errors import EpisodeStateError
from envhub.evaluate.runner import EpisodeJob, run_episode
from envhub.rewards import Rubric
from envhub.spec import EnvSpec
from envhub.trainer.episodes.rollout import LocalEnvPool, RolloutSettings, collect
from envhub.types import FunctionCall, Message, Status, Task, ToolCall


class TalkEnv(TaskEnv):
    """Talk for a while, then say ``done``: correctness 1. Nothing else is judged."""

    components = frozenset({"correctness"})

    def builtin_tasks(self, split, size, seed):
        return [Task(task_id="talk", prompt="Talk, then say done.")]

    def env_response(self, episode, message):
        if message.content.strip() == "done":
            return Feedback(done=True, components={"correctness": 1.0})
        return Feedback(messages=[Message(role="user", content="go on")])


def talk(**reward):
    spec = EnvSpec(
        name="talk",
        max_turns=4,
        reward={"weights": {"correctness": 1.0, "length": -1.0}, "length_limit": 100, **reward},
    )
    return TalkEnv(spec)


C4_WEIGHTS = {"win": 1.0, "draw": 0.3, "loss": -1.0, "efficiency": 0.1, "format": 0.1}
"""The connect4 docstring's suggestion: a negative weight on ``loss``."""


def connect4(**kw):
    return envhub.make("connect4", reward={"weights": C4_WEIGHTS}, **kw)


# --------------------------------------------------------------------------- length


def test_length_counts_every_turn_not_only_the_last():
    env = talk()
    env.reset()
    env.step("x" * 150)  # 150 characters in an early turn used to be free
    last = env.step("done")
    assert last.terminated and last.info.components["length"] == pytest.approx(0.54)
    assert last.reward == pytest.approx(1.0 - 0.54)


def test_length_counts_tool_call_arguments():
    env = talk()
    env.reset()
    call = ToolCall(id="c", function=FunctionCall(name="note", arguments='{"t": "' + "y" * 200))
    env.step(Message(role="assistant", content="", tool_calls=[call]))
    last = env.step("done")
    assert last.info.components["length"] == 1.0  # > 2 x the limit: capped


def test_length_in_a_real_multi_turn_env():
    """sql-multiturn: a long exploratory query, then a short right answer."""
    env = envhub.make(
        "sql-multiturn", reward={"weights": {"correctness": 1.0, "length": -1.0}}, timeout_s=1.0
    )
    task = env.tasks()[0]
    env.reset(task_id=task.task_id)
    env.step("```sql\nSELECT 1 -- " + "pad " * 1000 + "\n```")
    final = env.step(f"FINAL ANSWER:\n```sql\n{task.answer}\n```")
    assert final.terminated and final.info.components["correctness"] == 1.0
    assert final.info.components["length"] == 1.0  # 4,000 characters, limit 2,000
    assert final.reward == pytest.approx(1.0 + 0.1 - 1.0)  # correctness, format, length


def test_length_is_paid_once_when_several_steps_pay():
    """A step with components pays the growth since the last paid step, never twice."""

    class Paying(TalkEnv):
        def env_response(self, episode, message):
            fb = super().env_response(episode, message)
            fb.components = fb.components or {"correctness": 0.0}
            return fb

    env = Paying(talk().spec)
    env.reset()
    steps = [env.step("x" * 150), env.step("x" * 30), env.step("done")]
    assert [s.info.components["length"] for s in steps] == pytest.approx([0.5, 0.3, 0.04])
    assert sum(s.reward for s in steps) == pytest.approx(1.0 - 0.84)


# --------------------------------------------------------------------------- truncation


def _play_until_done(env, pick):
    env.reset(seed=3)
    total, result = 0.0, None
    while result is None or not result.done:
        result = env.step(pick(env))
        total += result.reward
    return total, result


def test_connect4_stalling_never_beats_losing():
    with connect4() as env:
        stall, last = _play_until_done(env, lambda e: "I would rather not move.")
        assert last.truncated and last.info.components["loss"] == 1.0
        assert last.info.measured["loss"] == 0.0  # what happened: no loss on the board
        # the worst terminal outcome: a loss with no efficiency and every turn illegal
        worst_terminal = C4_WEIGHTS["loss"]
        assert stall <= worst_terminal
        # and a real loss: always the lowest free column
        lose, end = _play_until_done(
            env, lambda e: f"<move>{min(e._episode.state.board.legal()) + 1}</move>"
        )
        assert end.terminated and end.info.outcome in ("loss", "draw", "win")
        assert stall <= lose


@pytest.mark.parametrize("seed", range(20))
def test_truncation_pays_no_more_than_any_terminal_outcome(seed):
    """For any weights, of any sign: truncation <= every outcome with the same counters."""
    rng = random.Random(seed)
    names = ["a", "b", "c", "d"]
    weights = {n: rng.uniform(-2, 2) for n in names + ["calls"]}
    rubric = Rubric(weights, offered=frozenset(names + ["calls"]), counters=frozenset({"calls"}))
    calls = float(rng.randrange(10))
    cut = rubric.total(rubric.truncation({"calls": calls, "a": 1.0}))
    for corner in itertools.product([0.0, 1.0], repeat=len(names)):
        terminal = {**dict(zip(names, corner, strict=True)), "calls": calls}
        assert cut <= rubric.total(terminal) + 1e-12


def test_a_model_failure_pays_like_a_truncation(dummy_registry):
    """An invalid answer cannot dodge the length penalty (it used to be a flat 0)."""
    with envhub.make(
        "echo", reward={"weights": {"correctness": 1.0, "length": -1.0}, "length_limit": 4}
    ) as env:
        score = env.verify("train/0", "invalid")
        assert score.status is Status.INVALID_ACTION
        assert score.components["length"] == pytest.approx(0.75)
        assert score.reward == pytest.approx(-0.75)


# --------------------------------------------------------------------------- finish()


def test_finish_pays_the_end_of_episode_components():
    with connect4() as env:
        env.reset(seed=1)
        env.step("no move")
        env.step("<move>4</move>")
        end = env.finish()
        assert end.truncated and not end.terminated and end.messages == []
        assert end.info.components["loss"] == 1.0 and end.reward == pytest.approx(-1.0)
        with pytest.raises(EpisodeStateError):
            env.step("<move>4</move>")
        with pytest.raises(EpisodeStateError):
            env.finish()


def test_finish_pays_the_length_of_the_whole_episode():
    env = talk()
    env.reset()
    env.step("x" * 200)
    end = env.finish()
    assert end.info.components == {"correctness": 0.0, "length": 1.0}
    assert end.reward == -1.0


def test_finish_before_reset_is_an_error():
    with pytest.raises(EpisodeStateError, match="reset"):
        talk().finish()


def test_finish_over_http(dummy_registry):
    with connect4(runner="http") as env:
        env.reset(seed=1)
        env.step("<move>4</move>")
        end = env.finish()
        assert end.truncated and end.info.components["loss"] == 1.0
        assert end.reward == pytest.approx(-1.0)
        with pytest.raises(EpisodeStateError):
            env.step("<move>4</move>")


class _Chat:
    """Token ids that say nothing; the rollout only needs their lengths."""

    def prompt_ids(self, messages, tools=None):
        return [1, 2, 3]

    def continuation_ids(self, messages, ended_with_eos):
        return [4, 5]


def _moves(prompts, params):
    return [
        Generation("<move>4</move>", "stop", token_ids=[7, 8], logprobs=[-0.1, -0.1])
        for _ in prompts
    ]


def _rollout(**kw):
    settings = dict(
        group_size=2,
        max_turns=2,
        max_seq_len=512,
        timeout_s=30.0,
        params=SamplingParams(max_tokens=4),
    )
    settings.update(kw)
    pool = LocalEnvPool(connect4)
    try:
        return collect(_moves, pool, _Chat(), [5], RolloutSettings(**settings), sample_seed=0)
    finally:
        pool.shutdown()


@pytest.mark.parametrize(
    ("budget", "end"),
    [({"max_turns": 2}, "max_turns"), ({"max_turns": 10, "max_seq_len": 14}, "token_budget")],
)
def test_the_trainer_pays_the_final_accounting_of_episodes_it_ends(budget, end):
    batch = _rollout(**budget)
    for ep in batch.episodes:
        assert ep.end == end and not ep.dropped
        assert ep.components["loss"] == 1.0 and ep.reward == pytest.approx(-1.0)


class _Mover:
    name = "mover"

    async def generate(self, messages, *, tools, params, seed=None):
        return Generation("<move>4</move>")


def test_the_evaluator_pays_the_final_accounting_when_it_stops_an_episode():
    job = EpisodeJob(
        env="connect4",
        env_version=1,
        split=None,
        task_id="connect4-train-0-0000",
        sample=0,
        seed=0,
        primary="win",
        max_turns=2,  # shorter than the env's 30: the loop's guard ends the episode
    )
    with connect4() as env:
        rec = asyncio.run(run_episode(env, _Mover(), job, SamplingParams()))
    assert rec.truncated and rec.turns == 2
    assert rec.components["loss"] == 1.0 and rec.reward == pytest.approx(-1.0)
