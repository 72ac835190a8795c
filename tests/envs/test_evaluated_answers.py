"""No answer runs as code in a verifier, and none hands the task to sympy (issue 33, item 4).

reasoning-gym's scorers ``eval`` answers (``string_insertion``, ``spiral_matrix``,
``binary_matrix``, ``n_queens``) or give them to sympy's ``parse_expr`` (``simple_integration``,
``countdown``); :mod:`envhub.envs.reasoning_gym.evaluated` lets only literals and plain math
through. The sweep probes every catalog entry with answers that create a marker file if
anything evaluates them, in any process (the scorers run in worker processes), so a scorer
that starts evaluating text in a later reasoning-gym is caught even before it is added to
``EVALUATES``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

import envhub
from envhub.envs.reasoning_gym import catalog, evaluated
from envhub.types import Status

RG_IDS = sorted(i for i in envhub.catalog().ids() if i.startswith(catalog.PREFIX))
ALWAYS = {f"rg-{name}-v1" for name in evaluated.EVALUATES}


def probes(marker: Path) -> list[str]:
    """Answers that create ``marker`` if anything evaluates them (Python or sympy)."""
    code = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    chars = "+".join(f"chr({ord(c)})" for c in code)
    return [
        code,
        f"[{code}]",
        f"{code}!",  # sympy's factorial notation makes this a call
        f"eval({chars})",  # no quote, no underscore
        f"x + exec({chars})",
        "+".join(["x"] * 1500),  # a tree deeper than Python's recursion limit
    ]


@pytest.fixture
def marker(tmp_path):
    """A file that an evaluated probe creates (:func:`probes`); absent before the test."""
    path = tmp_path / "evaluated"
    yield path
    path.unlink(missing_ok=True)


def test_the_probes_leave_their_mark_when_evaluated(marker):
    """The probes are live: Python's ``eval`` of each (but the sympy-only one and the deep
    tree) creates the marker."""
    live = probes(marker)
    for probe in [*live[:2], *live[3:5]]:
        with contextlib.suppress(TypeError):  # x + None, after exec has run
            eval(probe, {"x": 0})  # the test's own probe, to show it leaves its mark
        assert marker.exists(), probe
        marker.unlink()


def _env(env_id: str, size: int = 3):
    spec = envhub.catalog().spec(env_id)
    return envhub.make(env_id, dataset={**spec.dataset.model_dump(), "size": size})


def _play(env, task, answer: str):
    env.reset(task_id=task.task_id)
    return env.step(f"<answer>{answer}</answer>")


@pytest.mark.parametrize(
    "env_id", [i if i in ALWAYS else pytest.param(i, marks=pytest.mark.slow) for i in RG_IDS]
)
def test_no_answer_is_evaluated_as_code(env_id, marker):
    env = _env(env_id, size=2)
    task = env.tasks()[0]
    for probe in probes(marker):
        result = _play(env, task, probe)
        assert result.info.status in (Status.OK, Status.INVALID_ACTION), (probe, result.info)
        assert result.info.components.get("correctness", 0.0) == 0.0, probe
    assert not marker.exists(), f"{env_id}'s scorer evaluated an answer as code"


def test_a_composite_guards_the_evaluating_generators_it_mixes(marker):
    """A composite's scorer hands each task to its own generator's scorer: the guard follows
    the task's generator (it once followed the entry's name, ``composite``, and guarded none)."""
    mix = [{"name": name, "weight": 1.0, "config": {}} for name in ("countdown", "n_queens")]
    env = envhub.make("rg-composite", dataset={"size": 8, "options": {"datasets": mix}})
    tasks = env.tasks()
    assert {t.metadata["rg"]["source_dataset"] for t in tasks} == {"countdown", "n_queens"}
    for task in tasks:
        for probe in probes(marker)[:2]:
            result = _play(env, task, probe)
            assert result.info.components["correctness"] == 0.0, probe
            assert "UnsafeAnswer" in result.info.why, result.info.why
    assert not marker.exists(), "a composite's scorer evaluated an answer as code"


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
