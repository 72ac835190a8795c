"""Rollout correction (``loss.rollout_correction``) against hand-computed numbers, every mode."""

import math

import pytest
import torch

from envhub.trainer.algo.correction import (
    RolloutCorrectionConfig,
    correction_metrics,
    importance_weights,
)

# two sequences of two policy tokens and one masked position each:
#   row 0: pi_train / pi_engine = 0.5/0.25 = 2, 0.2/0.4 = 0.5 (product 1, geometric mean 1)
#   row 1: 0.3/0.1 = 3, 0.3/0.6 = 0.5 (product 1.5, geometric mean sqrt(1.5) = 1.2247)
OLD = torch.log(torch.tensor([[0.5, 0.2, 0.9], [0.3, 0.3, 0.9]]))
ENGINE = torch.log(torch.tensor([[0.25, 0.4, 0.1], [0.1, 0.6, 0.1]]))
MASK = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]])


def weights(mode, cap=None, **bounds):
    cfg = RolloutCorrectionConfig(mode=mode, **bounds)
    return importance_weights(OLD, ENGINE, MASK, cfg, cap)


@pytest.mark.parametrize(
    "mode, bounds, want, masked_tokens, masked_seqs",
    [
        ("token_tis", {"threshold": 2.0}, [[2, 0.5, 1], [2, 0.5, 1]], 0, 0),  # 3 -> 2
        ("seq_tis", {"threshold": 2.0}, [[1, 1, 1], [1.5, 1.5, 1]], 0, 0),
        ("seq_tis", {"threshold": 1.2}, [[1, 1, 1], [1.2, 1.2, 1]], 0, 0),
        ("token_mask", {"low": 0.4, "high": 2.5}, [[1, 1, 1], [0, 1, 1]], 1, 0),  # 3 > 2.5
        ("seq_mask", {"low": 0.5, "high": 2.0}, [[1, 1, 1], [1, 1, 1]], 0, 0),
        ("seq_mask", {"low": 0.5, "high": 1.2}, [[1, 1, 1], [0, 0, 1]], 2, 1),  # 1.5 > 1.2
        ("geo_mask", {"low": 0.9, "high": 1.1}, [[1, 1, 1], [0, 0, 1]], 2, 1),  # 1.22 > 1.1
        ("geo_mask", {"low": 0.9, "high": 1.3}, [[1, 1, 1], [1, 1, 1]], 0, 0),
    ],
)
def test_every_mode_by_hand(mode, bounds, want, masked_tokens, masked_seqs):
    w, stats = weights(mode, **bounds)
    torch.testing.assert_close(w, torch.tensor(want, dtype=torch.float32))
    assert stats.masked_tokens == masked_tokens and stats.masked_seqs == masked_seqs
    assert stats.n_seqs == 2
    policy = [
        x
        for row, m in zip(want, MASK.tolist(), strict=True)
        for x, k in zip(row, m, strict=True)
        if k
    ]
    assert stats.weight_sum == pytest.approx(sum(policy), rel=1e-6)
    assert stats.weight_max == pytest.approx(max(policy), rel=1e-6)


def test_mismatch_kl_is_k3_of_the_ratio():
    _, stats = weights("none")
    # k3 = rho - 1 - ln(rho) for rho = 2, 0.5, 3, 0.5; the masked position (rho 9) is left out
    want = sum(r - 1 - math.log(r) for r in (2, 0.5, 3, 0.5))
    assert stats.mismatch_kl_sum == pytest.approx(want, rel=1e-5)


def test_off_by_default_and_nothing_to_correct_on_policy():
    assert RolloutCorrectionConfig().mode == "none"
    w, stats = weights("none")
    assert w is None and stats.weight_sum == 4 and stats.weight_max == 1.0


def test_combined_with_the_off_policy_cap_each_weight_computed_once():
    # no rollout correction: the off-policy weight min(rho, cap)
    w, _ = weights("none", cap=1.5)
    torch.testing.assert_close(w, torch.tensor([[1.5, 0.5, 1.0], [1.5, 0.5, 1.0]]))
    # a mask mode multiplies it: row 1's first token (rho 3) is dropped
    w, _ = weights("token_mask", cap=1.5, low=0.4, high=2.5)
    torch.testing.assert_close(w, torch.tensor([[1.5, 0.5, 1.0], [0.0, 0.5, 1.0]]))
    # a TIS mode is that truncation: it replaces the cap rather than truncating twice
    w, _ = weights("token_tis", cap=1.5, threshold=2.5)
    torch.testing.assert_close(w, torch.tensor([[2.0, 0.5, 1.0], [2.5, 0.5, 1.0]]))
    w, _ = weights("seq_tis", cap=1.2, threshold=2.0)
    torch.testing.assert_close(w, torch.tensor([[1.0, 1.0, 1.0], [1.5, 1.5, 1.0]]))


def test_a_bad_range_is_refused():
    with pytest.raises(ValueError, match="low"):
        RolloutCorrectionConfig(mode="token_mask", low=2.0, high=0.5)


def test_metrics_add_ranks_up():
    ranks = []
    for mode_bounds in ({"low": 0.5, "high": 1.2}, {"low": 0.1, "high": 10.0}):
        _, stats = weights("seq_mask", **mode_bounds)
        row = {f"rc/{k}": v for k, v in vars(stats).items()}
        ranks.append(row | {"n_tokens": 4.0})
    m = correction_metrics(ranks)
    assert m["rollout_correction/masked_token_fraction"] == pytest.approx(2 / 8)
    assert m["rollout_correction/masked_seq_fraction"] == pytest.approx(1 / 4)
    assert m["rollout_correction/weight_mean"] == pytest.approx(6 / 8)
    assert m["rollout_correction/weight_max"] == 1.0
    want_kl = sum(r - 1 - math.log(r) for r in (2, 0.5, 3, 0.5)) / 4
    assert m["rollout_correction/mismatch_kl"] == pytest.approx(want_kl, rel=1e-5)
