"""pass@k and the per-environment summary against hand-computed figures."""

from __future__ import annotations

from math import comb

import pytest

from envhub.evaluate.metrics import is_passed, pass_at_k, summarize_env
from envhub.evaluate.store import EpisodeRecord
from envhub.types import Status


def test_pass_at_k_hand_computed():
    # n=5 samples, c=2 correct, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)  # pass@1 is c/n
    assert pass_at_k(4, 0, 3) == 0.0
    assert pass_at_k(3, 2, 2) == 1.0  # every pair holds a correct sample
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - comb(7, 5) / comb(10, 5))
    # exact for large n where the binomials overflow floats
    assert pass_at_k(2000, 1, 1000) == pytest.approx(0.5)


@pytest.mark.parametrize("n,c,k", [(3, 1, 4), (3, 4, 1), (3, -1, 1), (0, 0, 1)])
def test_pass_at_k_rejects_impossible_counts(n, c, k):
    with pytest.raises(ValueError, match="pass@|passed count"):
        pass_at_k(n, c, k)


def rec(task, passed, status=Status.OK, reward=None, **kw):
    return EpisodeRecord(
        env="e",
        task_id=task,
        model="m",
        status=status,
        passed=None if status in (Status.INFRA_ERROR, Status.ENV_ERROR) else passed,
        reward=float(passed) if reward is None else reward,
        components={"correctness": float(bool(passed))},
        **kw,
    )


def test_summary_hand_computed():
    # task A: 1 of 4 passed; task B: 3 of 4; plus one infra error on B that must not count.
    records = [rec("A", i < 1, sample=i) for i in range(4)]
    records += [
        rec("B", i < 3, sample=i, turns=2, prompt_tokens=10, completion_tokens=4) for i in range(4)
    ]
    records.append(rec("B", False, status=Status.INFRA_ERROR, sample=4))
    records.append(rec("A", False, status=Status.TIMEOUT, sample=4))
    s = summarize_env(records, k=2, wall_s=2.0)
    assert s["episodes"] == 10 and s["scored"] == 9
    assert s["status"]["infra_error"] == 1 and s["status"]["timeout"] == 1
    # A: n=5 (timeout counts as a failure), c=1; B: n=4, c=3
    assert s["pass@1"] == pytest.approx((1 / 5 + 3 / 4) / 2)
    pass2_a = 1 - comb(4, 2) / comb(5, 2)
    assert s["pass@2"] == pytest.approx((pass2_a + 1.0) / 2)
    assert s["mean_reward"] == pytest.approx(4 / 9)
    assert s["components"]["correctness"] == pytest.approx(4 / 9)
    assert s["mean_prompt_tokens"] == 10 and s["total_tokens"] == 4 * 14
    assert s["episodes_per_s"] == 5.0


def test_tasks_short_of_k_are_left_out_of_pass_at_k():
    records = [
        rec("A", True, sample=0),
        rec("A", False, sample=1),
        rec("B", True, sample=0),
        rec("B", False, status=Status.INFRA_ERROR, sample=1),
    ]
    s = summarize_env(records, k=2)
    assert s["pass@2"] == 1.0 and s["tasks_short_of_k"] == 1
    assert s["pass@1"] == pytest.approx((0.5 + 1.0) / 2)


def test_passed_criterion():
    assert is_passed(Status.OK, 0.2, {"correctness": 1.0}, "correctness", 1.0) is True
    assert is_passed(Status.OK, 1.1, {"correctness": 0.0, "format": 1}, "correctness", 1.0) is False
    # no primary component: the reward threshold decides
    assert is_passed(Status.OK, 0.8, {"win": 1.0}, "correctness", 0.75) is True
    assert is_passed(Status.INVALID_ACTION, 0.0, {}, "correctness", 1.0) is False
    assert is_passed(Status.INFRA_ERROR, 0.0, {}, "correctness", 1.0) is None
    assert is_passed(Status.ENV_ERROR, 0.0, {}, "correctness", 1.0) is None


def test_empty_summary_has_no_figures():
    s = summarize_env([], k=1)
    assert s["episodes"] == 0 and s["mean_reward"] is None and s["pass@1"] is None


def test_importing_the_evaluator_stays_light():
    import subprocess
    import sys

    code = (
        "import sys, envhub.evaluate, envhub.evaluate.cli; "
        "print(sorted(m for m in ('torch', 'transformers', 'vllm', 'trainer', 'aiohttp', "
        "'uvicorn', 'fastapi') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_bootstrap_interval_by_hand():
    from envhub.evaluate.metrics import bootstrap_ci

    assert bootstrap_ci([1.0, 1.0, 1.0], seed=0) == [1.0, 1.0]
    lo, hi = bootstrap_ci([0.0, 1.0] * 50, seed=0)
    assert 0.38 < lo < 0.5 < hi < 0.62  # about 0.5 +- 1.96 * 0.05
    assert bootstrap_ci([], seed=0) != bootstrap_ci([], seed=0)  # NaNs: no tasks, no interval


def test_a_mean_over_groups_resamples_each_group_on_its_own():
    from envhub.evaluate.metrics import bootstrap_ci, stratified_bootstrap_ci

    # a constant group adds no spread: the interval is the other group's, halved and shifted
    lo, hi = stratified_bootstrap_ci([[1.0] * 10, [0.0, 1.0] * 50], seed=0)
    one_lo, one_hi = bootstrap_ci([0.0, 1.0] * 50, seed=0)
    assert (lo, hi) == pytest.approx(((1 + one_lo) / 2, (1 + one_hi) / 2), abs=0.015)
    # two independent groups of 100: about 0.5 +- 1.96 * 0.05 / sqrt(2)
    lo, hi = stratified_bootstrap_ci([[0.0, 1.0] * 50, [1.0, 0.0] * 50], seed=0)
    assert 0.42 < lo < 0.5 < hi < 0.58
    assert stratified_bootstrap_ci([[1.0], []], seed=0) != [1.0, 1.0]  # an empty group: NaNs
