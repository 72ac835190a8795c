"""GRPO math against numbers worked out by hand."""

import math

import pytest
import torch

from envhub.trainer.algo.grpo import (
    LossConfig,
    entropy_from_logits,
    group_advantages,
    logprobs_and_entropy,
    loss_weights,
    policy_loss,
    token_logprobs,
    token_mult_prob_error,
)
from envhub.trainer.algo.kl import k3_kl


def test_advantages_std_normalised_by_hand():
    rewards = torch.tensor([1.0, 0.0, 1.0, 0.0, 2.0, 2.0, 3.0])
    groups = [0, 0, 0, 0, 1, 1, 2]
    adv = group_advantages(rewards, groups, normalize_std=True, eps=0.0)
    # group 0: mean 0.5, unbiased std sqrt(4 * 0.25 / 3) = 0.57735 -> +-0.5 / 0.57735
    expected = 0.5 / math.sqrt(1 / 3)
    assert adv[:4].tolist() == pytest.approx([expected, -expected, expected, -expected], rel=1e-5)
    # equal rewards give 0, not NaN; a group of one has nothing to compare with
    assert adv[4:].tolist() == [0.0, 0.0, 0.0]


def test_advantages_without_std_are_centered_rewards():
    rewards = torch.tensor([3.0, 1.0, 0.5, 0.5, 2.0])
    adv = group_advantages(rewards, [7, 7, 7, 7, 9], normalize_std=False)
    # group 7: mean 1.25
    assert adv.tolist() == pytest.approx([1.75, -0.25, -0.75, -0.75, 0.0])


def test_clipped_surrogate_by_hand():
    cfg = LossConfig(clip_low=0.2, clip_high=0.2)
    old = torch.zeros(2, 2)
    logp = torch.log(torch.tensor([[1.5, 0.9], [1.5, 0.7]]))
    adv = torch.tensor([1.0, -1.0])
    mask = torch.ones(2, 2)
    w = loss_weights(mask, "token_mean", n_seqs=2, n_tokens=4, max_len=2)
    terms = policy_loss(logp, old, adv, mask, w, cfg)
    # A=+1: min(1.5, 1.2) = 1.2 (clipped), min(0.9, 0.9) = 0.9
    # A=-1: min(-1.5, -1.2) = -1.5, min(-0.7, -0.8) = -0.8 (clipped)
    expected = (-1.2 - 0.9 + 1.5 + 0.8) / 4
    assert terms.loss.item() == pytest.approx(expected, rel=1e-5)
    assert terms.clipped_sum == 2.0 and terms.n_tokens == 4.0
    assert terms.ratio_sum == pytest.approx(1.5 + 0.9 + 1.5 + 0.7, rel=1e-5)


def test_gradient_of_unclipped_token_is_minus_advantage_times_ratio():
    logp = torch.log(torch.tensor([[0.9]])).requires_grad_()
    terms = policy_loss(
        logp,
        torch.zeros(1, 1),
        torch.tensor([2.0]),
        torch.ones(1, 1),
        torch.ones(1, 1),
        LossConfig(),
    )
    terms.loss.backward()
    # d/dlogp of -ratio*A = -A*ratio = -2 * 0.9
    assert logp.grad.item() == pytest.approx(-1.8, rel=1e-5)


def test_k3_kl_by_hand_and_in_the_loss():
    logp = torch.log(torch.tensor([[0.5]]))
    ref = torch.log(torch.tensor([[0.25]]))
    # d = ref - logp = log(0.5): exp(d) - d - 1 = 0.5 + 0.693147 - 1
    assert k3_kl(logp, ref).item() == pytest.approx(0.5 + math.log(2) - 1, rel=1e-5)
    assert k3_kl(logp, logp).item() == 0.0
    cfg = LossConfig(kl_beta=0.1)
    terms = policy_loss(
        logp, logp, torch.tensor([0.0]), torch.ones(1, 1), torch.ones(1, 1), cfg, ref
    )
    assert terms.loss.item() == pytest.approx(0.1 * (0.5 + math.log(2) - 1), rel=1e-5)
    with pytest.raises(ValueError, match="ref_logp"):
        policy_loss(logp, logp, torch.tensor([0.0]), torch.ones(1, 1), torch.ones(1, 1), cfg)


def test_aggregation_weights_by_hand():
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    tok = loss_weights(mask, "token_mean", n_seqs=2, n_tokens=4, max_len=4)
    seq = loss_weights(mask, "seq_mean_token_mean", n_seqs=2, n_tokens=4, max_len=4)
    dr = loss_weights(mask, "seq_mean_token_sum_norm", n_seqs=2, n_tokens=4, max_len=4)
    assert tok.tolist() == [[0.25, 0.25, 0.25, 0.0], [0.25, 0.0, 0.0, 0.0]]
    assert seq[0, 0].item() == pytest.approx(1 / 6) and seq[1, 0].item() == pytest.approx(0.5)
    assert dr[0, :3].tolist() == [0.125] * 3 and dr[1, 0].item() == 0.125
    with pytest.raises(ValueError, match="token_mean"):
        loss_weights(mask, "bogus", n_seqs=2, n_tokens=4, max_len=4)


@pytest.mark.parametrize("mode", ["token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm"])
def test_micro_batches_sum_to_the_full_batch_loss(mode):
    torch.manual_seed(0)
    logp = torch.randn(4, 5) * 0.1 - 1
    old = logp + torch.randn(4, 5) * 0.1
    adv = torch.randn(4)
    mask = (torch.rand(4, 5) > 0.3).float()
    n_tokens = int(mask.sum())
    w = loss_weights(mask, mode, n_seqs=4, n_tokens=n_tokens, max_len=5)
    full = policy_loss(logp, old, adv, mask, w, LossConfig()).loss
    halves = sum(
        policy_loss(logp[s], old[s], adv[s], mask[s], w[s], LossConfig()).loss
        for s in (slice(0, 2), slice(2, 4))
    )
    assert halves.item() == pytest.approx(full.item(), rel=1e-6)


def test_token_mult_prob_error():
    a = torch.tensor([[-1.0, -2.0, -3.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    assert token_mult_prob_error(a, a, mask).item() == 1.0
    b = a + torch.tensor([[0.1, -0.2, 5.0]])
    expected = (math.exp(0.1) + math.exp(0.2)) / 2
    assert token_mult_prob_error(a, b, mask).item() == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("chunk_rows", [2, 3, None])
def test_chunked_logprobs_equal_the_plain_formulas_and_their_gradient(dtype, chunk_rows):
    """Shared rows (a packed prompt's last position), an unused row, slices that split rows."""
    torch.manual_seed(0)
    base = (torch.randn(7, 11) * 3).to(dtype)
    rows = torch.tensor([[0, 1, 2, 2], [0, 4, 5, 6]])  # row 0 twice, row 3 never
    targets = torch.tensor([[3, 1, 4, 1], [5, 9, 2, 6]])
    g = torch.randn(2, 4)

    plain = base.clone().requires_grad_()
    scaled = plain[rows].float() / 0.7
    ref_lp = token_logprobs(scaled, targets)
    ref_ent = entropy_from_logits(scaled.detach())
    (ref_lp * g).sum().backward()

    leaf = base.clone().requires_grad_()
    lp, ent = logprobs_and_entropy(leaf * 1, rows, targets, 0.7, chunk_rows)
    assert lp.dtype == ent.dtype == torch.float32 and not ent.requires_grad
    (lp * g).sum().backward()

    assert torch.allclose(lp, ref_lp, atol=1e-6) and torch.allclose(ent, ref_ent, atol=1e-6)
    tol = 1e-6 if dtype == torch.float32 else 1e-2  # bf16: the gradient is rounded to bf16
    assert torch.allclose(leaf.grad.float(), plain.grad.float(), atol=tol)
    assert leaf.grad[3].abs().sum() == 0  # nobody read row 3


def test_chunked_logprobs_refuse_a_second_backward():
    logits = torch.randn(3, 5, requires_grad=True)
    lp, _ = logprobs_and_entropy(logits * 1, torch.tensor([0, 1, 2]), torch.tensor([1, 2, 3]))
    lp.sum().backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="backward ran twice"):
        lp.sum().backward()


def test_chunked_logprobs_leave_a_leaf_tensor_as_it_was():
    torch.manual_seed(0)
    logits = torch.randn(4, 6, requires_grad=True)
    before = logits.detach().clone()
    rows, targets = torch.tensor([0, 1, 3]), torch.tensor([2, 5, 0])
    lp, _ = logprobs_and_entropy(logits, rows, targets, 0.5)
    lp.sum().backward()
    assert torch.equal(logits.detach(), before)
    plain = before.clone().requires_grad_()
    token_logprobs(plain[rows] / 0.5, targets).sum().backward()
    assert torch.allclose(logits.grad, plain.grad, atol=1e-6)


def test_gspo_sequence_ratio_and_its_clip_by_hand():
    cfg = LossConfig(ratio_level="sequence", seq_clip_low=0.1, seq_clip_high=0.1)
    logp = torch.log(torch.tensor([[1.5, 0.9, 0.3], [1.5, 0.7, 0.3]])).requires_grad_()
    old = torch.zeros(2, 3)
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]])  # the third position is not policy
    adv = torch.tensor([1.0, -1.0])
    w = loss_weights(mask, "seq_mean_token_mean", n_seqs=2, n_tokens=4, max_len=3)
    terms = policy_loss(logp, old, adv, mask, w, cfg)
    # s = exp(mean log ratio): row 0 sqrt(1.5 * 0.9) = 1.1619, row 1 sqrt(1.05) = 1.0247
    s0, s1 = math.sqrt(1.35), math.sqrt(1.05)
    # A=+1: min(1.1619, clip -> 1.1) = 1.1 (clipped); A=-1: min(-1.0247, -1.0247) (inside)
    # each sequence's term on each of its 2 tokens, weight 1/2/2
    assert terms.loss.item() == pytest.approx(0.25 * 2 * (-1.1) + 0.25 * 2 * s1, rel=1e-5)
    assert terms.clipped_sum == 2.0  # row 0's two tokens
    assert terms.ratio_sum == pytest.approx(2 * s0 + 2 * s1, rel=1e-5)
    terms.loss.backward()
    # the clipped row has no gradient; row 1: d(0.5 s1)/d logp_t = 0.5 * s1 / 2 per token
    want = torch.tensor([[0.0, 0.0, 0.0], [0.25 * s1, 0.25 * s1, 0.0]])
    torch.testing.assert_close(logp.grad, want, rtol=1e-5, atol=1e-7)


def test_gspo_default_clip_range_is_the_papers():
    cfg = LossConfig(ratio_level="sequence")
    assert (cfg.seq_clip_low, cfg.seq_clip_high) == (3e-4, 4e-4)
    with pytest.raises(ValueError):
        LossConfig(ratio_level="sentence")


def test_a_new_loss_is_one_function_and_one_line():
    """The registry is the extension point (verl's register_policy_loss): a REINFORCE-style
    loss, unclipped, added here and trained through ``loss.policy_loss`` by name."""
    from envhub.trainer.algo import grpo

    @grpo.register_policy_loss("unclipped")
    def unclipped(ratio, adv, low, high):
        return -ratio * adv, torch.zeros_like(ratio)

    try:
        cfg = grpo.LossConfig(policy_loss="unclipped")
        logp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
        old, adv, ones = logp.detach() - 1.0, torch.tensor([2.0]), torch.ones(1, 2)
        terms = grpo.policy_loss(logp, old, adv, ones, ones, cfg)
        assert terms.loss.item() == pytest.approx(-2 * math.e * 2)  # ratio e, no clip
        assert terms.clipped_sum == 0.0
        terms.loss.backward()
        assert logp.grad is not None
        with pytest.raises(ValueError, match="registered already"):
            grpo.register_policy_loss("unclipped")(unclipped)
    finally:
        grpo.POLICY_LOSSES.pop("unclipped")
    with pytest.raises(ValueError, match="must be one of"):
        grpo.LossConfig(policy_loss="unclipped")
