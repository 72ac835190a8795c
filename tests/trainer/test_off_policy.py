"""Off-policy correction (asynchronous GRPO) against hand-computed numbers."""

import math

import torch

from envhub.trainer.algo.correction import RolloutCorrectionConfig, importance_weights
from envhub.trainer.algo.grpo import LossConfig, policy_loss

OFF = RolloutCorrectionConfig()  # no rollout correction: the off-policy cap alone


def off_policy_weights(old, behaviour, mask, cap):
    return importance_weights(old, behaviour, mask, OFF, cap)[0]


def test_off_policy_weights_by_hand():
    old = torch.tensor([[math.log(0.5), math.log(0.2), math.log(0.9)]])
    behaviour = torch.tensor([[math.log(0.25), math.log(0.4), math.log(0.1)]])
    mask = torch.tensor([[1, 1, 0]])
    w = off_policy_weights(old, behaviour, mask, cap=2.0)
    # 0.5/0.25 = 2 (at the cap), 0.2/0.4 = 0.5, masked -> 1 (0.9/0.1 = 9 would be capped)
    torch.testing.assert_close(w, torch.tensor([[2.0, 0.5, 1.0]]))
    w_low_cap = off_policy_weights(old, behaviour, mask, cap=1.5)
    torch.testing.assert_close(w_low_cap, torch.tensor([[1.5, 0.5, 1.0]]))


def test_weights_scale_the_surrogate_not_the_ratio():
    # logp == old: ratio 1, so per-token loss = -A * w; A = 2, token_mean weights 1/2
    logp = torch.tensor([[math.log(0.5), math.log(0.2)]], requires_grad=True)
    behaviour = torch.tensor([[math.log(0.25), math.log(0.4)]])
    mask = torch.ones(1, 2)
    w = off_policy_weights(logp, behaviour, mask, cap=4.0)  # [2, 0.5]
    terms = policy_loss(
        logp, logp.detach(), torch.tensor([2.0]), mask, mask / 2, LossConfig(), is_weights=w
    )
    # loss = -(2*2 + 2*0.5)/2 = -2.5; d loss / d logp = -A * w * ratio / 2 = [-2, -0.5]
    assert math.isclose(float(terms.loss), -2.5, rel_tol=1e-6)
    assert math.isclose(terms.is_weight_sum, 2.5, rel_tol=1e-6)
    terms.loss.backward()
    torch.testing.assert_close(logp.grad, torch.tensor([[-2.0, -0.5]]))


def test_on_policy_weights_are_one():
    lp = torch.log(torch.tensor([[0.3, 0.6]]))
    w = off_policy_weights(lp, lp.clone(), torch.ones(1, 2), cap=2.0)
    torch.testing.assert_close(w, torch.ones(1, 2))
