"""No answer runs as code in a verifier, and none hands the task to sympy (issue 33, item 4).

reasoning-gym's scorers ``eval`` answers (``string_insertion``, ``spiral_matrix``,
``binary_matrix``, ``n_queens``) or give them to sympy's ``parse_expr`` (``simple_integration``,
``countdown``); :mod:`envhub.envs.reasoning_gym.evaluated` lets only literals and plain math
through. The sweep probes every catalog entry with answers that import a sentinel module if
anything evaluates them, so a scorer that starts evaluating text in a later reasoning-gym is
caught even before it is added to ``EVALUATES``.
"""

from __future__ import annotations

import importlib.abc
import sys

import pytest

import envhub
from envhub.envs.reasoning_gym import catalog, evaluated
from envhub.types import Status

SENTINEL = "envhub_evaluated_probe"
_CHARS = "+".join(f"chr({ord(c)})" for c in f"__import__('{SENTINEL}')")
PROBES = [
    f"__import__('{SENTINEL}')",
    f"[__import__('{SENTINEL}')]",
    f"__import__('{SENTINEL}')!",  # sympy's factorial notation makes this a call
    f"eval({_CHARS})",  # no quote, no underscore
    f"x + exec({_CHARS})",
    "+".join(["x"] * 1500),  # a tree deeper than Python's recursion limit
]
RG_IDS = sorted(i for i in envhub.catalog().ids() if i.startswith(catalog.PREFIX))
ALWAYS = {f"rg-{name}-v1" for name in evaluated.EVALUATES}


class _Recorder(importlib.abc.MetaPathFinder):
    """Records any attempt to import :data:`SENTINEL` (and lets it fail)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def find_spec(self, name, path=None, target=None):
        if name == SENTINEL:
            self.seen.append(name)
        return None


@pytest.fixture
def recorder():
    finder = _Recorder()
    sys.meta_path.insert(0, finder)
    yield finder
    sys.meta_path.remove(finder)


def _env(env_id: str, size: int = 3):
    spec = envhub.catalog().spec(env_id)
    return envhub.make(env_id, dataset={**spec.dataset.model_dump(), "size": size})


def _play(env, task, answer: str):
    env.reset(task_id=task.task_id)
    return env.step(f"<answer>{answer}</answer>")


@pytest.mark.parametrize(
    "env_id", [i if i in ALWAYS else pytest.param(i, marks=pytest.mark.slow) for i in RG_IDS]
)
def test_no_answer_is_evaluated_as_code(env_id, recorder):
    env = _env(env_id, size=2)
    task = env.tasks()[0]
    for probe in PROBES:
        result = _play(env, task, probe)
        assert result.info.status in (Status.OK, Status.INVALID_ACTION), (probe, result.info)
        assert result.info.components.get("correctness", 0.0) == 0.0, probe
    assert recorder.seen == [], f"{env_id}'s scorer evaluated an answer as code"


def _integrand(task) -> tuple[str, str]:
    meta = task.metadata["rg"]
    return meta["integrand"], meta["variable"]


@pytest.mark.parametrize(
    "template",
    [
        "integrate({f}, {x}) + C",
        "Integral({f}, {x}).doit() + C",
        "Integral({f}, {x}) + C",
        "integrate({f}, ({x}, 0, {x})) + C",
        "diff({x}**9999, {x}, 9999)",
    ],
)
def test_sympy_does_not_do_the_integral_for_the_model(template):
    env = _env("rg-simple_integration-v1")
    for task in env.tasks():
        f, x = _integrand(task)
        result = _play(env, task, template.format(f=f, x=x))
        assert result.info.status is Status.OK
        assert result.info.components["correctness"] == 0.0, template


def test_plain_answers_still_score_on_evaluating_entries():
    """The golds, in the forms the scorers expect, and the elementary functions still pass."""
    for name in evaluated.EVALUATES:
        env = _env(f"rg-{name}-v1")
        for task in env.tasks():
            assert _play(env, task, task.answer).info.components["correctness"] == 1.0, name
    env = _env("rg-simple_integration-v1")
    task = env.tasks()[0]
    same = task.answer.replace(" ", "").replace("+C", "") + "+C"  # not the gold's text
    assert same != task.answer
    assert _play(env, task, same).info.components["correctness"] == 1.0


def test_every_valid_queens_board_is_a_gold():
    env = _env("rg-n_queens-v1")
    task = next(t for t in env.tasks() if len(t.metadata["rg"]["valid_answers"]) > 1)
    for board in task.metadata["rg"]["valid_answers"]:
        assert _play(env, task, board).info.components["correctness"] == 1.0


@pytest.mark.parametrize(
    ("answer", "kind", "refused"),
    [
        ("-5*X**9 + 4*sin(X) + C", evaluated.EXPRESSION, False),
        ("sqrt(2)*exp(-x)/3", evaluated.EXPRESSION, False),
        ("(25 + 3) * 4 - 7", evaluated.EXPRESSION, False),
        ("integrate(x, x)", evaluated.EXPRESSION, True),
        ("x.diff(x)", evaluated.EXPRESSION, True),
        ("exp(x=1)", evaluated.EXPRESSION, True),
        ("'a'", evaluated.EXPRESSION, True),
        ("_x", evaluated.EXPRESSION, True),
        ("5!", evaluated.EXPRESSION, True),
        ("['a', 'b']", evaluated.LITERAL, False),
        ("[[1, 0], [0, -1]]", evaluated.LITERAL, False),
        ("[x for x in 'ab']", evaluated.LITERAL, True),
        ("list('ab')", evaluated.LITERAL, True),
        ("['a'] * 10**9", evaluated.LITERAL, True),
    ],
)
def test_hazard(answer, kind, refused):
    assert (evaluated.hazard(answer, kind) is not None) is refused
