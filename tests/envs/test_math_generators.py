"""Offline math data: determinism, disjoint splits, answers the checker accepts."""

import re
from collections import Counter

import pytest

from envhub.envs.math import pool
from envhub.envs.math.answers import is_equivalent
from envhub.envs.math.extract import extract_answer
from envhub.envs.math.generators import KINDS, gsm_symbolic_tasks, symbolic_math_tasks


@pytest.fixture(scope="module", autouse=True)
def _stop_workers():
    yield
    pool.shutdown()


@pytest.fixture(scope="module")
def gsm():
    return gsm_symbolic_tasks("train", 60, 0), gsm_symbolic_tasks("test", 30, 0)


@pytest.fixture(scope="module")
def sym():
    return symbolic_math_tasks("train", 120, 0), symbolic_math_tasks("test", 60, 0)


def test_gsm_tasks_are_word_problems_with_integer_answers(gsm):
    train, test = gsm
    assert len(train) == 60 and len(test) == 30
    assert [t.task_id for t in train[:2]] == ["gsm_symbolic/train/0", "gsm_symbolic/train/1"]
    assert test[0].task_id == "gsm_symbolic/test/0"
    for task in train + test:
        assert re.fullmatch(r"-?\d+", task.answer), task.answer
        assert len(task.prompt) > 40
        assert "####" in task.metadata["solution"]


def test_gsm_is_deterministic_and_seeded(gsm):
    train, _ = gsm
    assert gsm_symbolic_tasks("train", 60, 0) == train
    assert [t.prompt for t in gsm_symbolic_tasks("train", 10, 1)] != [t.prompt for t in train[:10]]


def test_gsm_splits_are_disjoint(gsm):
    train, test = gsm
    assert not {t.prompt for t in train} & {t.prompt for t in test}
    assert len({t.prompt for t in train}) == len(train)


def test_gsm_gold_passes_its_own_checker(gsm):
    for task in gsm[0] + gsm[1]:
        found = extract_answer(task.metadata["solution"])
        assert found.method == "hash"
        assert is_equivalent(found.answer, task.answer)


def test_symbolic_tasks_cover_every_kind_and_are_deterministic(sym):
    train, test = sym
    assert len(train) == 120 and len(test) == 60
    assert set(Counter(t.metadata["kind"] for t in train)) == set(KINDS)
    assert symbolic_math_tasks("train", 120, 0) == train
    assert symbolic_math_tasks("train", 30, 7) != train[:30]
    assert not {t.prompt for t in train} & {t.prompt for t in test}
    assert train[0].task_id == "symbolic/train/0"


def test_symbolic_answers_are_latex_the_checker_reads(sym):
    train, test = sym
    pool.warmup()
    for task in train + test:
        assert is_equivalent(task.answer, task.answer, timeout=10), task
        boxed = extract_answer(f"Thus \\boxed{{{task.answer}}}.")
        assert boxed.method == "boxed" and not boxed.hedged
        assert is_equivalent(boxed.answer, task.answer, timeout=10), task
    forms = " ".join(t.answer for t in train)
    for needle in ("\\frac", "\\sqrt", "\\infty", "\\cup", "\\%", ",", "x^2"):
        assert needle in forms


@pytest.mark.parametrize(
    ("kind", "check"),
    [
        ("fraction_sum", lambda t: "\\frac" in t.prompt),
        ("linear_inequality", lambda t: "\\infty" in t.answer),
        ("large_product", lambda t: "," in t.answer),
    ],
)
def test_answers_are_right(sym, kind, check):
    """Spot-check a few generated answers against an independent computation."""
    tasks = [t for t in sym[0] if t.metadata["kind"] == kind]
    assert tasks and all(check(t) for t in tasks)
    if kind == "large_product":
        for t in tasks:
            a, b = map(int, re.findall(r"\d+", t.prompt)[:2])
            assert int(t.answer.replace(",", "")) == a * b


def test_wrong_answers_are_rejected(sym):
    for task in sym[0][:28]:
        assert not is_equivalent(task.answer + "+1", task.answer, timeout=10), task


@pytest.mark.parametrize("fn", [gsm_symbolic_tasks, symbolic_math_tasks])
def test_bad_arguments(fn):
    with pytest.raises(ValueError, match="split"):
        fn("validation", 5, 0)
    with pytest.raises(ValueError, match="size"):
        fn("train", 0, 0)


def test_same_tasks_in_another_process_with_another_hash_seed():
    import os
    import subprocess
    import sys

    code = (
        "import hashlib, json\n"
        "from envhub.envs.math.generators import symbolic_math_tasks\n"
        "tasks = symbolic_math_tasks('test', 40, 3)\n"
        "print(hashlib.sha256(json.dumps([t.model_dump() for t in tasks]).encode()).hexdigest())"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert len(digests) == 1 and len(digests.pop()) == 64
