"""Dynamic sampling: zero-variance groups by the raw outcome, backfill and its limits."""

from envhub.trainer.episodes.dynamic import collect_filtered, zero_variance
from envhub.trainer.episodes.rollout import RolloutBatch, TrainingEpisode
from envhub.types import Status


def ep(group, correct, reward=None, env="e", tokens=3, status=Status.OK):
    e = TrainingEpisode(group=group, key=f"{env}|{group}-{correct}-{reward}", env=env)
    e.components = {"correctness": float(correct)}
    e.reward = float(correct) if reward is None else reward
    e.loss_mask = [0] + [1] * tokens
    e.tokens = [0] * (tokens + 1)
    e.status = status
    return e


def test_variance_is_of_the_raw_outcome_not_the_shaped_reward():
    # all wrong, but a length penalty makes the rewards differ: still nothing to learn
    shaped = [ep(0, 0, reward=-0.1), ep(0, 0, reward=-0.3)]
    assert zero_variance(shaped, "correctness")
    assert not zero_variance([ep(0, 1), ep(0, 0)], "correctness")
    # the same rewards, but the outcome differs: kept
    assert not zero_variance([ep(0, 1, reward=0.5), ep(0, 0, reward=0.5)], "correctness")
    # an env without the component: its reward is the outcome
    assert not zero_variance([ep(0, 1), ep(0, 0)], "solved")
    # one kept episode left (the other dropped): nothing to compare
    assert zero_variance([ep(0, 1), ep(0, 0, status=Status.INFRA_ERROR)], "correctness")


class Rounds:
    """Each round: groups whose outcomes follow the given script (True: mixed outcomes)."""

    def __init__(self, *script):
        self.script, self.calls = list(script), []

    def __call__(self, round_, n):
        self.calls.append((round_, n))
        mixed = self.script[round_]
        eps = []
        for g in range(n):
            m = mixed[g] if g < len(mixed) else False
            eps += [ep(g, 1), ep(g, 0)] if m else [ep(g, 0), ep(g, 0)]
        return RolloutBatch(eps, generation_time=1.0)


def test_filtered_groups_are_backfilled_until_the_batch_is_full():
    rounds = Rounds([True, False, True, False], [False, True], [True])
    out = collect_filtered(rounds, 4, lambda s: "correctness", enabled=True, max_rounds=5)
    assert rounds.calls == [(0, 4), (1, 2), (2, 1)]  # only the missing groups each round
    assert len({e.group for e in out.batch.episodes}) == 4
    assert len({e.group for e in out.generated.episodes}) == 7  # renumbered, never reused
    m = out.metrics
    assert m["filter/groups_zero_variance"] == 3 and m["filter/e/zero_variance"] == 3
    assert m["filter/backfill_rounds"] == 2 and m["filter/groups_short"] == 0
    assert m["filter/groups_generated"] == 7
    assert m["filter/extra_episodes"] == 6 and m["filter/extra_tokens"] == 18
    assert out.generated.generation_time == 3.0


def test_backfill_stops_at_its_round_limit_and_trains_on_what_it_has():
    rounds = Rounds([True, False], [False, False], [False, False], [True, True])
    out = collect_filtered(rounds, 2, lambda s: "correctness", enabled=True, max_rounds=1)
    assert len(rounds.calls) == 2
    assert out.metrics["filter/groups_short"] == 1
    assert len({e.group for e in out.batch.episodes}) == 1


def test_filter_off_keeps_every_group_in_one_round():
    rounds = Rounds([False, False])
    out = collect_filtered(rounds, 2, lambda s: "correctness", enabled=False, max_rounds=3)
    assert rounds.calls == [(0, 2)]
    assert len(out.batch.episodes) == 4 and out.metrics["filter/groups_zero_variance"] == 0
