"""``options.attempts``: the math environments as a retry game (multi-turn).

A wrong, missing or hedged answer with attempts left is answered "try again"; the episode ends
at the first correct answer or after the last attempt, and pays that response's components.
"""

from __future__ import annotations

import pytest

import envhub
from envhub.errors import ConfigError
from envhub.types import Status


def _game(attempts: int = 3, **kw):
    env = envhub.make("gsm8k", max_turns=attempts, attempts=attempts, **kw)
    task = env.tasks()[0]
    env.reset(task_id=task.task_id)
    return env, task.answer


def test_a_wrong_answer_with_attempts_left_is_told_to_try_again_and_pays_nothing():
    env, gold = _game()
    step = env.step("#### 1" if gold != "1" else "#### 2")
    assert not step.terminated and not step.truncated and step.reward == 0.0
    assert step.info.status == Status.OK and step.info.components == {}
    assert (
        "not correct" in step.messages[0].content and "2 attempts left" in step.messages[0].content
    )


def test_the_first_correct_answer_ends_the_game_with_full_marks():
    env, gold = _game()
    env.step("I do not know")
    step = env.step(f"#### {gold}")
    assert step.terminated and step.info.components == {"correctness": 1.0, "format": 1.0}
    assert step.info.turn == 2


def test_the_last_wrong_attempt_ends_the_game_with_no_correctness():
    env, gold = _game(attempts=2)
    wrong = "#### 1" if gold != "1" else "#### 2"
    env.step(wrong)
    step = env.step(wrong)
    assert step.terminated and not step.truncated
    assert step.info.components["correctness"] == 0.0 and step.messages == []


def test_the_feedback_never_depends_on_the_gold():
    """A policy could search on feedback that says "higher" or "close": it only says "wrong"."""
    env, gold = _game(attempts=3)
    near, far = str(int(gold) + 1), str(int(gold) + 10**6)
    first = env.step(f"#### {near}").messages[0].content
    env2, _ = _game(attempts=3)
    assert env2.step(f"#### {far}").messages[0].content == first
    assert gold not in first


def test_a_hedge_in_an_attempt_is_still_no_answer():
    env, gold = _game(attempts=2)
    other = str(int(gold) + 1)
    step = env.step(f"#### {gold} or #### {other}")
    assert not step.terminated and step.reward == 0.0


def test_one_attempt_is_the_single_turn_environment():
    env = envhub.make("gsm8k")
    env.reset(seed=0)
    assert env.step("#### -1").terminated


@pytest.mark.parametrize(
    ("attempts", "max_turns", "match"),
    [(3, 1, "set max_turns: 3"), (0, 1, "whole number >= 1"), ("2", 2, "whole number >= 1")],
)
def test_bad_attempts_are_refused_with_the_fix(attempts, max_turns, match):
    with pytest.raises(ConfigError, match=match):
        envhub.make("gsm8k", max_turns=max_turns, attempts=attempts)


def test_the_reference_answer_solves_it_on_the_first_attempt():
    env = envhub.make("math", max_turns=2, attempts=2)
    env.reset(seed=3)
    step = env.step(env.reference_action(env._episode))
    assert step.terminated and step.info.components["correctness"] == 1.0
