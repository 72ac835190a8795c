"""Multi-turn code feedback never reveals the tests that grade (issue 17, point 9).

``humaneval-multiturn`` used to show the first failing assert and the program's output from a
run of every test, and graded the final attempt on those same tests: a policy that hard-codes
what it was shown (``tests/support/feedback_attack.py``) lifted mean reward from 0.009 to 0.20
over the 164 tasks. Now feedback runs the shown tests only and the held tests grade.
"""

import json
import statistics

import pytest
from bwrap import needs_bwrap
from feedback_attack import play, program

import envhub
from envhub.envs.code.env import CodeEnv
from envhub.envs.code.tasks import load_humaneval, split_cases, split_suite, suite_for
from envhub.sandbox import FunctionSuite, Step
from envhub.spec import EnvSpec
from envhub.types import Status

ATTACK_TASKS = [f"HumanEval/{i}" for i in range(0, 164, 5)]
"""Every fifth task (33): the attack earned 0.33 mean reward on such a sample before."""


@pytest.fixture(scope="module")
def env():
    e = envhub.make("humaneval-multiturn")
    yield e
    e.close()


def test_split_rule_is_positional():
    steps = [Step("import math", False, "setup")]
    steps += [Step(f"assert f({i}) == {i}", True, f"t{i}") for i in range(5)]
    steps.insert(3, Step("x = f(99)", False, "calls the function"))
    split = split_suite(FunctionSuite(("f",), tuple(steps)))
    assert [s.label for s in split.shown.tests] == ["t1", "t3"]
    assert [s.label for s in split.held.tests] == ["t0", "t2", "t4"]
    assert "import math" in [s.code for s in split.shown.steps]
    # a setup step that calls the function would print its inputs in the shown run
    assert "x = f(99)" not in [s.code for s in split.shown.steps]
    assert "x = f(99)" in [s.code for s in split.held.steps]
    single = split_suite(FunctionSuite(("f",), (Step("assert f(1) == 1", True, "t"),)))
    assert single.shown is None and len(single.held.tests) == 1
    cases = [("1", "a"), ("2", "b"), ("3", "c")]
    assert split_cases(cases).shown == [("2", "b")]
    assert split_cases(cases).held == [("1", "a"), ("3", "c")]
    assert split_cases(cases[:1]).shown is None


def test_every_humaneval_task_keeps_held_tests():
    for task in load_humaneval():
        split = split_suite(suite_for(task))
        total = len(suite_for(task).tests)
        assert len(split.held.tests) == (total + 1) // 2
        assert len(split.shown.tests if split.shown else []) == total // 2


@needs_bwrap
def test_feedback_never_shows_a_held_test_or_its_inputs(env):
    """The program prints every argument it gets; no held test's text reaches the model."""
    for task_id in ("HumanEval/0", "HumanEval/2", "HumanEval/13", "HumanEval/55"):
        task = env.get_task(task_id)
        held = [s.code for s in split_suite(suite_for(task)).held.tests]
        env.reset(task_id=task_id)
        result = env.step(program(task.metadata["entry_point"], {}))
        assert not result.done, task_id
        feedback = result.messages[0].content
        assert "called with" in feedback  # the program's output is shown...
        for code in held:  # ...but it never ran a held test
            assert code not in feedback, (task_id, code)
        assert result.info.tests == "shown"


@needs_bwrap
def test_hard_coding_what_feedback_reveals_earns_nothing(env):
    rewards, solved = [], 0
    for task_id in ATTACK_TASKS:
        task = env.get_task(task_id)
        last = play(env, task_id, task.metadata["entry_point"])
        assert last.info.status is Status.OK, last.info.error
        rewards.append(last.reward)
        solved += last.info.components["correctness"] == 1.0
    assert solved == 0
    assert statistics.mean(rewards) < 0.03, statistics.mean(rewards)


@pytest.mark.slow
@needs_bwrap
def test_hard_coding_earns_nothing_over_all_164_tasks(env):
    """The issue's measurement: 0.203 mean reward (4 solved) before the split, 0.006 after."""
    rewards = [
        play(env, task.task_id, task.metadata["entry_point"]).reward for task in load_humaneval()
    ]
    assert statistics.mean(rewards) < 0.02, statistics.mean(rewards)


@needs_bwrap
def test_gold_scores_full_marks_graded_on_held_tests(env):
    for task in load_humaneval():
        env.reset(task_id=task.task_id)
        result = env.step(f"```python\n{task.answer}\n```")
        assert result.terminated and result.info.status is Status.OK, task.task_id
        assert result.info.components["correctness"] == 1.0, task.task_id
        assert result.info.tests == "held"


@needs_bwrap
def test_passing_the_shown_tests_only_ends_the_episode_with_the_held_grade(env):
    """HumanEval/2: 3.5 -> 0.5 and 123.456 -> 0.456 are held; 1.33 -> 0.33 is shown."""
    env.reset(task_id="HumanEval/2")
    fits_shown = "```python\ndef truncate_number(number):\n    return 0.33\n```"
    result = env.step(fits_shown)
    assert result.terminated and result.info.tests == "held"
    assert result.info.components["correctness"] == 0.0
    assert result.info.components["pass_fraction"] == 0.0


@needs_bwrap
def test_io_tasks_split_too(tmp_path):
    row = {
        "task_id": "mine/double",
        "prompt": "Read an integer, print twice it.",
        "io_tests": [{"input": f"{i}\n", "output": f"{2 * i}\n"} for i in (11, 22, 33)],
        "solution": "print(2 * int(input()))\n",
    }
    data = tmp_path / "tasks.jsonl"
    data.write_text(json.dumps(row) + "\n")
    spec = EnvSpec(
        name="my-code",
        entry_point="envhub.envs.code.env:CodeEnv",
        dataset={"kind": "jsonl", "path": str(data)},
        reward={"weights": {"correctness": 1.0, "pass_fraction": 0.5}},
        max_turns=3,
    )
    env = CodeEnv(spec)
    env.reset(task_id="mine/double")
    # hard-codes the one shown case (22 -> 44): ends the episode, fails both held cases
    result = env.step("```python\nprint(44)\n```")
    assert result.terminated and result.info.components["correctness"] == 0.0
    assert result.info.components["pass_fraction"] == 0.0
    env.reset(task_id="mine/double")
    first = env.step("```python\nprint(0)\n```")
    assert not first.done and "11" not in first.messages[0].content
    assert "33" not in first.messages[0].content
    final = env.step(f"```python\n{row['solution']}```")
    assert final.terminated and final.info.components["correctness"] == 1.0
