"""Overlong handling against hand-computed numbers: DAPO's soft penalty and masking."""

import math

import pytest
from test_dynamic import ep

from envhub.trainer.algo.overlong import OverlongConfig, soft_overlong_penalty
from envhub.trainer.episodes.rollout import RolloutBatch
from envhub.trainer.train import to_samples


@pytest.mark.parametrize(
    ("length", "expected"),
    [(10, 0.0), (15, 0.0), (16, -0.2), (18, -0.6), (20, -1.0), (21, -1.0)],
)
def test_soft_penalty_by_hand(length, expected):
    # L_max 20, buffer 5: free up to 15, then -1/5 per token, -1 at 20 and past it
    assert soft_overlong_penalty(length, 20, 5) == pytest.approx(expected)
    assert soft_overlong_penalty(length, 20, 5, factor=0.5) == pytest.approx(expected / 2)
    assert soft_overlong_penalty(length, 20, 0) == 0.0  # off


def test_penalty_enters_the_advantages():
    a, b = ep(0, 1, tokens=4), ep(0, 1, tokens=8)  # both right; b is 3 tokens into the buffer
    cfg = OverlongConfig(buffer=5, max_length=10)
    notes = {}
    samples = to_samples(RolloutBatch([a, b]), True, overlong=cfg, notes=notes)
    assert notes[b.key].overlong_penalty == pytest.approx(-0.6)
    # rewards 1.0 and 0.4: mean 0.7, unbiased std 0.3 * sqrt(2)
    std = 0.3 * math.sqrt(2)
    assert [s.advantage for s in samples] == pytest.approx([0.3 / std, -0.3 / std], rel=1e-5)
    # off by default: equal rewards, zero advantages
    assert [s.advantage for s in to_samples(RolloutBatch([a, b]), True)] == [0.0, 0.0]


def test_truncated_samples_keep_their_baseline_but_carry_no_loss():
    cut, ok = ep(0, 1), ep(0, 0)
    cut.capped = True  # its last turn hit max_tokens
    notes = {}
    samples = to_samples(
        RolloutBatch([cut, ok]), True, overlong=OverlongConfig(mask_truncated=True), notes=notes
    )
    # rewards 1 and 0: mean 0.5, std 1/sqrt(2); only the complete one is trained on
    assert len(samples) == 1 and samples[0].advantage == pytest.approx(-0.5 * math.sqrt(2), 1e-5)
    assert notes[cut.key].advantage is None
    assert len(to_samples(RolloutBatch([cut, ok]), True)) == 2  # off by default
