"""The curriculum: favours tasks solved sometimes, deterministic per seed, resumable."""

import json
from collections import Counter

import pytest

from envhub.trainer.episodes.curriculum import Curriculum, CurriculumConfig
from envhub.trainer.episodes.mix import MixSampler, MixSource

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


# ---------------------------------------------------------------- asynchronous runs


def async_mix(age: int):
    from envhub.trainer.config import Config
    from envhub.trainer.episodes.draws import Draws

    config = Config.model_validate(
        {
            "env": {"name": "m"},
            "cluster": {"placement": "split"},
            "generation": {"max_trajectory_age_steps": age},
        }
    )
    mix = Draws(config.sources(), config.seed, config.max_trajectory_age)
    mix.sampler.curriculum = Curriculum(CurriculumConfig(enabled=True), TASKS)
    return mix


def async_run(mix, age, first, last, total=7):
    """train.py's order of an asynchronous run of ``total`` steps, from ``first`` to
    ``last``: take, count, launch N steps ahead (past ``last``, as a run cut there did).

    Returns each step's tasks. Task tN is solved when N + step is even, so every step
    changes the counts that later draws use.
    """
    launched, queued_to, tasks = {}, 0, {}
    for step in range(first, last + 1):
        jobs = launched.pop(step, None) or mix.sampler.draw(step, 3, 0, mix.snapshot(step))
        tasks[step] = [j.task_id for j in jobs]
        mix.count(step, [("m", t, (int(t[1:]) + step) % 2 == 0) for t in tasks[step]])
        for k in range(max(queued_to, step + 1), min(step + age, total) + 1):
            launched[k] = mix.sampler.draw(k, 3, 0, mix.snapshot(k))
        queued_to = max(queued_to, min(step + age, total) + 1)
    return tasks


@pytest.mark.parametrize("age", [1, 2, 3])
def test_a_resumed_asynchronous_run_draws_what_the_uninterrupted_run_drew(age):
    uninterrupted = async_mix(age)
    whole = async_run(uninterrupted, age, 1, 7)
    for cut in (1, 2, 4):  # the first run stops at `cut`, its checkpoint is resumed
        first = async_mix(age)
        head = async_run(first, age, 1, cut)  # steps cut+1 .. cut+N drawn, never trained
        saved = json.loads(json.dumps(first.state_dict(cut)))  # trainer_state.json's sampler
        resumed = async_mix(age)
        resumed.resume(saved)  # the checkpoint's sampler entry
        assert head | async_run(resumed, age, cut + 1, 7) == whole, (age, cut)
        # the steps in flight at the cut are drawn again, and counted once
        assert resumed.sampler.drawn == uninterrupted.sampler.drawn == {"m": 3 * 7}, (age, cut)


def test_an_asynchronous_draw_uses_the_counts_as_of_its_launch():
    mix = async_mix(2)
    async_run(mix, 2, 1, 3)
    assert sorted(mix.launch_states) == [2, 3]  # the last N steps' counts, no more
    live = mix.sampler.curriculum.state_dict()
    assert mix.snapshot(5).state_dict() == mix.launch_states[3] == live
    assert mix.snapshot(4).state_dict() == mix.launch_states[2] != live
    assert async_mix(0).snapshot(5) is None  # synchronous: the live counts
