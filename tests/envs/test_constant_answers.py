"""No constant answer scores, and no hedge does, on any catalog entry (issue 33, items 2-3).

Two sweeps over every catalog entry (a sample on every run, the rest marked slow like
``test_reasoning_gym.py``'s sweep):

* constants (``nan``, ``0``, ``1``, ``-1``, ``inf``, empty, ``true``, ``yes``, ...), bare and in
  each entry's answer formats, earn no correctness on a task whose gold they are not;
* hedges (``gold or wrong``, ``wrong, gold``, ``maybe gold``, the two on separate lines, and
  the gold inside a ``<think>`` that never closes) earn no correctness anywhere.
"""

from __future__ import annotations

import time

import pytest

import envhub
from envhub.envs.reasoning_gym import catalog, scoring
from envhub.types import Status

IDS = envhub.catalog().ids()
ALWAYS = {
    "gsm8k-v1",
    "math-v1",
    "search-v1",
    *(f"rg-{n}-v1" for n in ("complex_arithmetic", "coin_flip", "time_intervals")),
    *(f"rg-{n}-v1" for n in ("basic_arithmetic", "manipulate_matrix", "rectangle_count")),
}
"""Entries swept on every run: each paid a constant or a hedge before issue 33."""
CONSTANTS = [
    "nan", "NaN", "0", "1", "-1", "inf", "-inf", "", " ", "true", "True", "false", "yes",
    "no", "None", "null", "[]", "{}", "0.0", "00", "-0", "2", "3", "10", "0.5", "1e309",
    "nan+nanj", "0/0", "1/2", "A", "a", "x",
]  # fmt: skip
"""More than the guard's own set (:data:`scoring.CONSTANTS`): ``3``, ``NaN``, ``nan+nanj``."""
TASKS = 3
VALID = (Status.OK, Status.INVALID_ACTION)
SINGLE_TURN_FREE_TEXT = {i for i in IDS if i.startswith(catalog.PREFIX)} | {
    "gsm8k-v1",
    "math-v1",
    "search-v1",
}
"""Entries whose answer is free text in one message (the hedging rule's domain)."""


def _sweep(ids) -> list:
    return [i if i in ALWAYS else pytest.param(i, marks=pytest.mark.slow) for i in sorted(ids)]


def _env(env_id: str):
    spec = envhub.catalog().spec(env_id)
    if env_id.startswith(catalog.PREFIX):
        return envhub.make(env_id, dataset={**spec.dataset.model_dump(), "size": TASKS + 1})
    return envhub.make(env_id)


def _is_gold(constant: str, gold: str | None) -> bool:
    return gold is not None and scoring._is_gold(constant, gold)


def _forms(text: str) -> list[str]:
    return [text, f"<answer>{text}</answer>", f"#### {text}", rf"\boxed{{{text}}}"]


def _correctness(env, task, message: str) -> float:
    env.reset(task_id=task.task_id)
    result = env.step(message)
    assert result.info.status in VALID, (message, result.info)
    return result.info.components.get("correctness", 0.0)


@pytest.mark.parametrize("env_id", _sweep(SINGLE_TURN_FREE_TEXT))
def test_no_constant_answer_scores(env_id):
    env = _env(env_id)
    paid = []
    for task in env.tasks()[:TASKS]:
        for constant in CONSTANTS:
            if _is_gold(constant, task.answer):
                continue
            for message in _forms(constant):
                if _correctness(env, task, message) > 0:
                    paid.append((task.answer, message))
    env.close()
    assert paid == []


MATH_FORMAT = {"gsm8k-v1", "math-v1"}
"""Entries read by the math checker (``####``, ``\\boxed``, "the answer is", the last
number): their hedges are written in those forms; the others answer in ``<answer>`` tags."""


def _hedges(env_id: str, gold: str, wrong: str) -> list[str]:
    inside = [f"{gold} or {wrong}", f"{wrong} or {gold}", f"{wrong}, {gold}", f"maybe {gold}"]
    if env_id in MATH_FORMAT:
        tagged = [f"The result: {h}" for h in inside] + [f"#### {h}" for h in inside]
    else:
        tagged = [f"<answer>{h}</answer>" for h in inside] + [
            f"<answer>{wrong}\n{gold}</answer>",
            f"<think>let me see <answer>{gold}</answer>",
        ]
    return [
        *tagged,
        f"#### {gold}\n{wrong} is also possible.",
        rf"\boxed{{{gold}}}. Another valid answer would be \boxed{{{wrong}}}.",
        rf"The answer is {gold}. {wrong} would also be acceptable.",
    ]


@pytest.mark.parametrize("env_id", _sweep(SINGLE_TURN_FREE_TEXT))
def test_no_hedge_scores(env_id):
    env = _env(env_id)
    tasks = env.tasks()[: TASKS + 1]
    golds = [str(t.answer) for t in tasks]
    paid = []
    for task in tasks[:TASKS]:
        gold = str(task.answer)
        wrong = next((g for g in golds if not scoring._is_gold(g, gold)), gold + "9")
        for message in _hedges(env_id, gold, wrong):
            if _correctness(env, task, message) > 0:
                paid.append(message)
    env.close()
    assert paid == []


def _step(env_id: str, message, pick=lambda t: True):
    """Play ``message`` (text, or a function of the gold) on the first task ``pick`` accepts."""
    env = _env(env_id)
    task = next(t for t in env.tasks() if pick(t))
    env.reset(task_id=task.task_id)
    result = env.step(message(task.answer) if callable(message) else message)
    env.close()
    return result.info


@pytest.mark.parametrize(
    ("env_id", "answer", "why"),
    [
        ("rg-complex_arithmetic-v1", "nan", "a non-finite value (nan, inf) that the gold is not"),
        (
            "rg-complex_arithmetic-v1",
            "nan+nanj",
            "a non-finite value (nan, inf) that the gold is not",
        ),
        ("rg-coin_flip-v1", "0", "the constant '0' is not the gold"),
        ("rg-time_intervals-v1", "0", "the constant '0' is not the gold"),
    ],
)
def test_the_constants_of_the_issue_earn_nothing_and_say_why(env_id, answer, why):
    info = _step(env_id, f"<answer>{answer}</answer>")
    assert (info.status, info.components["correctness"], info.why) == (Status.OK, 0.0, why)


def test_a_prefix_of_the_gold_and_a_near_value_earn_nothing():
    prefix = _step(
        "rg-coin_flip-v1", lambda g: f"<answer>{g[:3]}</answer>", lambda t: len(t.answer) > 4
    )
    assert prefix.components["correctness"] == 0.0
    near = _step(
        "rg-time_intervals-v1",
        lambda g: f"<answer>{int(g.split()[0]) + 1} days</answer>",
        lambda t: t.answer.endswith(" days"),
    )
    assert near.components["correctness"] == 0.0
    assert near.why.startswith("scored 0.9")


def test_an_answer_inside_an_unclosed_think_is_not_read():
    info = _step("rg-basic_arithmetic-v1", "<think>hmm <answer>3</answer>")
    assert (info.components, info.extracted) == ({"correctness": 0.0, "format": 0.0}, None)


@pytest.mark.parametrize("tower", ["9**9**9", "9^9^9", "(9**9999)**9999", "2**99999"])
def test_a_power_tower_is_refused_before_sympy_evaluates_it(tower):
    started = time.monotonic()
    info = _step("rg-simple_integration-v1", f"<answer>{tower}</answer>")
    assert time.monotonic() - started < 5.0
    assert (info.status, info.components["correctness"]) == (Status.OK, 0.0)
    assert info.why.startswith("a power too large to evaluate")
