"""Asynchronous GRPO with bounded staleness: the age filter, the corrected loss, a real run."""

import math

import pytest
from test_split import SPLIT, TINY
from train_support import envhub_train

from envhub.trainer.algo.batch import assign_weights
from envhub.trainer.algo.grpo import LossConfig
from envhub.trainer.config import Config, OptimConfig, load_config
from envhub.trainer.episodes.rollout import RolloutBatch, TrainingEpisode
from envhub.trainer.episodes.staleness import filter_by_age
from envhub.trainer.train import to_samples
from envhub.trainer.workers.policy import Policy

PROMPT = [1, 5, 9, 20]


def _episode(group, i, versions, reward, response, behaviour=None):
    e = TrainingEpisode(group=group, key=f"{group}-{i}", seed=group)
    e.append(PROMPT, model=False)
    e.append(response, model=True, logprobs=behaviour or [0.0] * len(response))
    e.versions, e.reward, e.done = list(versions), reward, True
    return e


def test_groups_older_than_the_bound_are_discarded():
    batch = RolloutBatch(
        [
            _episode(0, 0, [5], 1.0, [33]),
            _episode(0, 1, [5], 0.0, [34]),
            _episode(1, 0, [4, 5], 1.0, [35]),  # a turn under version 4: age 2
            _episode(1, 1, [5], 0.0, [36]),
            _episode(2, 0, [2, 3], 1.0, [37]),  # age 4 > 2
            _episode(2, 1, [3], 0.0, [38]),
        ]
    )
    aged = filter_by_age(batch, current=6, max_age=2)
    assert {e.group for e in aged.batch.episodes} == {0, 1}
    assert aged.metrics() == {
        "groups_trained": 2.0,
        "groups_discarded_age": 1.0,
        "trajectory_age_mean": 1.5,
        "trajectory_age_max": 2.0,
    }
    assert filter_by_age(batch, current=6, max_age=4).discarded == 0


def test_the_old_key_is_age_one_and_the_bound_needs_split():
    assert Config().max_trajectory_age == 0
    split = {"cluster": {"placement": "split"}}
    one = Config.model_validate({**split, "generation": {"one_step_off_policy": True}})
    assert one.max_trajectory_age == 1
    two = Config.model_validate({**split, "generation": {"max_trajectory_age_steps": 2}})
    assert two.max_trajectory_age == 2
    with pytest.raises(ValueError, match="needs cluster.placement=split"):
        Config.model_validate({"generation": {"max_trajectory_age_steps": 2}})
    with pytest.raises(ValueError, match="in_flight_updates needs"):
        Config.model_validate({**split, "generation": {"in_flight_updates": True}})
    assert load_config(TINY, ["cluster.placement=split", "generation.max_trajectory_age_steps=3"])


def test_loss_on_a_hand_made_buffer_is_the_importance_corrected_surrogate(tiny_path):
    cap = 2.0
    optim = OptimConfig(lr=1e-9, max_grad_norm=1e9)
    policy = Policy(
        str(tiny_path),
        optim=optim,
        loss=LossConfig(),
        total_optim_steps=1,
        temperature=1.0,
        micro_batch_size=8,
        dtype="float32",
        seed=0,
        pack=True,
        fused=True,
        off_policy_cap=cap,
    )
    responses = [[33, 7, 41], [40, 2, 17], [8, 8, 9], [11, 12, 13]]
    # the current policy's logprobs of each response token
    probe = [_episode(0, i, [1], 0.0, r) for i, r in enumerate(responses)]
    current = [lp[len(PROMPT) - 1 :] for lp in policy.logprobs(_as_samples(probe))]
    # behaviour logprobs: the engine's, off by delta (pi / pi_behaviour = e^delta, capped at 2)
    delta = [0.5, -0.2, 1.5]
    rewards = [1.0, 0.0, 1.0, 0.0]
    versions = [[9], [9], [6], [6]]  # group 1 is 3 versions old at version 9: never trained
    eps = [
        _episode(
            i // 2, i, versions[i], rewards[i], r, [c - d for c, d in zip(cur, delta, strict=True)]
        )
        for i, (r, cur) in enumerate(zip(responses, current, strict=True))
    ]
    aged = filter_by_age(RolloutBatch(eps), current=9, max_age=2)
    samples = to_samples(aged.batch, normalize_std=True)
    assert [s.tokens[len(PROMPT) :] for s in samples] == responses[:2]
    assign_weights(samples, "token_mean", norm_len=3)
    stats = policy.train([samples])
    # by hand: ratio 1 (one minibatch), so each token's term is -A * min(e^delta, cap) / N
    # with N = 6 policy tokens; e^1.5 = 4.48 is capped at 2
    w = [math.exp(0.5), math.exp(-0.2), cap]
    want = sum(-s.advantage * wj / 6 for s in samples for wj in w)
    assert samples[0].advantage == -samples[1].advantage > 0
    assert stats["loss"] == pytest.approx(want, rel=1e-4, abs=1e-6)
    assert stats["is_weight_sum"] == pytest.approx(2 * sum(w), rel=1e-5)


def _as_samples(episodes):
    from envhub.trainer.algo.batch import Sample

    return [Sample(e.tokens, e.loss_mask, e.engine_logprobs, 0.0) for e in episodes]


@pytest.mark.slow
@pytest.mark.parametrize("in_flight", [False, True])
def test_two_step_staleness_run_never_trains_older_groups(tmp_path, in_flight):
    rows = envhub_train(
        TINY,
        tmp_path / "age2",
        "train.steps=4",
        *SPLIT,
        "generation.max_trajectory_age_steps=2",
        f"generation.in_flight_updates={str(in_flight).lower()}",
    )
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    for r in rows:
        assert r["trajectory_age_max"] <= 2 and r["groups_discarded_age"] == 0
        assert r["groups_trained"] == 4 and "is_weight_mean" in r
    assert rows[0]["trajectory_age_max"] == 0  # the first batch: sampled by the weights trained
    assert max(r["trajectory_age_max"] for r in rows) >= 1  # later ones ran ahead
    assert sum(r["groups_generated"] for r in rows) == 16
