"""The curriculum: favours tasks solved sometimes, deterministic per seed, resumable."""

from collections import Counter

import pytest

from envhub.trainer.curriculum import Curriculum, CurriculumConfig
from envhub.trainer.mix import MixSampler, MixSource

TASKS = {"m": [(f"t{i}", i % 3) for i in range(9)]}


def run(sampler, steps, start=1):
    """Draw and feed back: task tN is solved when N is even, in rounds of 2 groups."""
    drawn = []
    for step in range(start, start + steps):
        jobs = sampler.draw(step, 2)
        drawn += [(j.task_id, j.seed) for j in jobs]
        results = [("m", j.task_id, int(j.task_id[1:]) % 2 == 0 or step % 2 == 0) for j in jobs]
        sampler.curriculum.update(results)
    return drawn


def make(seed=0, **cfg):
    cur = Curriculum(CurriculumConfig(enabled=True, **cfg), TASKS)
    return MixSampler([MixSource(name="m")], seed, cur)


def test_weights_favour_tasks_solved_sometimes():
    cur = Curriculum(CurriculumConfig(enabled=True), TASKS)
    cur.update([("m", "t0", True)] * 8 + [("m", "t1", False)] * 8)
    cur.update([("m", "t2", True), ("m", "t2", False)] * 4)
    easy, hard, medium = (cur.weight("m", k) for k in ("t0", "t1", "t2"))
    assert medium == 0.25 and easy == pytest.approx(hard) == pytest.approx(0.09)
    assert cur.weight("m", "never") == 0.1
    import random

    picks = Counter(t for i in range(300) for t in cur.pick("m", 1, random.Random(i)))
    assert picks["t2"] > picks["t0"] and picks["t2"] > picks["t1"]
    assert cur.metrics()["curriculum/m/medium"] == 1 / 3


def test_draws_are_deterministic_per_seed():
    assert run(make(0), 6) == run(make(0), 6)
    assert run(make(0), 6) != run(make(1), 6)


def test_a_resumed_curriculum_continues_the_same_sequence():
    whole = run(make(0), 8)
    first = make(0)
    head = run(first, 4)
    state = first.state_dict()  # what the checkpoint keeps
    resumed = make(0)
    resumed.load_state_dict(state)
    assert head + run(resumed, 4, start=5) == whole


def test_difficulty_buckets_share_their_counts():
    cur = Curriculum(CurriculumConfig(enabled=True, by="difficulty"), TASKS)
    cur.update([("m", "t0", True), ("m", "t3", False)])  # both difficulty 0
    assert cur.stats["m"] == {"0": [1, 2]}
