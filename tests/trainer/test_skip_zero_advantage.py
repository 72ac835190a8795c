"""``train.skip_zero_advantage``: samples whose loss is exactly 0 are left out of the update,
and the update is the same (same gradient, same AdamW step, an emptied minibatch included)."""

import copy

import pytest
import torch

from envhub.trainer.algo.batch import Sample, assign_weights, carries_gradient
from envhub.trainer.algo.grpo import LossConfig, group_advantages
from envhub.trainer.config import OptimConfig
from envhub.trainer.metrics import train_metrics


def test_a_group_of_equal_rewards_has_advantage_exactly_zero():
    # 0.2 eight times sums to 1.6000000000000003: r - mean is -5.6e-17, not 0, and divided
    # by std + eps it was -5.6e-11; a group of one keeps advantage 0 too
    rewards = torch.tensor([0.2] * 8 + [0.1, 0.2, 0.3] + [7.0], dtype=torch.float64)
    groups = [0] * 8 + [1] * 3 + [2]
    for normalize_std in (True, False):
        adv = group_advantages(rewards, groups, normalize_std=normalize_std).tolist()
        assert adv[:8] == [0.0] * 8 and adv[11] == 0.0
        assert adv[8] < 0 < adv[10] and abs(adv[9]) < 1e-6


def sample(advantage, n=4, **kw):
    return Sample([1, 2, *range(10, 10 + n)], [0, 0] + [1] * n, [0.0] * (n + 2), advantage, **kw)


def test_which_samples_carry_a_gradient():
    plain = LossConfig()
    assert not carries_gradient(sample(0.0), plain)
    assert carries_gradient(sample(-0.5), plain)
    # the KL term, a distillation advantage per token, or a loss not known to vanish at A = 0
    assert carries_gradient(sample(0.0), LossConfig(kl_beta=0.01))
    assert carries_gradient(sample(0.0, token_advantages_targets=[0.0] * 5), plain)
    assert carries_gradient(sample(0.0), plain.model_copy(update={"policy_loss": "custom"}))


def test_a_step_that_trained_no_token_reports_no_per_token_means():
    rank = {
        **dict.fromkeys(["loss", "n_tokens", "kl_sum", "entropy_sum", "clipped_sum"], 0.0),
        **dict.fromkeys(["ratio_sum", "mult_err_sum", "is_weight_sum"], 0.0),
        "grad_norm": 0.0,
        "lr": 1e-3,
    }
    m = train_metrics([rank])
    assert m["train_tokens"] == 0.0 and m["grad_norm"] == 0.0
    assert not {"kl", "entropy", "clip_fraction", "ratio_mean", "token_mult_prob_error"} & set(m)


@pytest.fixture(scope="module")
def make_policy():
    from envhub.engines.weights import tiny_llama_path
    from envhub.trainer.workers.policy import Policy

    def make():
        return Policy(
            str(tiny_llama_path()),
            optim=OptimConfig(lr=1e-2),
            loss=LossConfig(),
            total_optim_steps=4,
            temperature=1.0,
            micro_batch_size=4,
            dtype="float32",
            seed=0,
            pack=True,
            fused=True,
        )

    return make


def batch(seed):
    g = torch.Generator().manual_seed(seed)
    prompt = torch.randint(5, 900, (6,), generator=g).tolist()
    out = []
    for n, adv in ((3, 1.2), (5, 0.0), (4, -0.8), (6, 0.0), (2, 0.0), (7, 0.4)):
        response = torch.randint(5, 900, (n,), generator=g).tolist()
        out.append(Sample([*prompt, *response], [0] * 6 + [1] * n, [0.0] * (6 + n), adv))
    assign_weights(out, "token_mean", norm_len=8)
    return out


def recording_grads(policy):
    """Record each optimizer step's gradients (after clipping's norm is taken)."""
    steps, clip = [], policy._clip_grad

    def record():
        steps.append({n: p.grad.detach().clone() for n, p in policy.model.named_parameters()})
        return clip()

    policy._clip_grad = record
    return steps


def test_leaving_zero_advantage_samples_out_gives_the_same_gradients(make_policy):
    full, lean = make_policy(), make_policy()
    full_grads, lean_grads = recording_grads(full), recording_grads(lean)
    mixed = batch(0)
    silent = [s for s in batch(1) if s.advantage == 0.0]  # a minibatch with nothing to learn
    full.train([copy.deepcopy(mixed), copy.deepcopy(silent)])
    kept = [s for s in copy.deepcopy(mixed) if carries_gradient(s, LossConfig())]
    assert len(kept) == 3
    before = {n: p.detach().clone() for n, p in lean.model.named_parameters()}
    stats = lean.train([kept, []])  # the emptied minibatch still takes its optimizer step
    assert stats["n_tokens"] == 3 + 4 + 7
    for a, b in zip(full_grads, lean_grads, strict=True):
        for name, g in a.items():
            torch.testing.assert_close(b[name], g, atol=1e-7, rtol=1e-5, msg=name)
    assert all(not g.any() for g in lean_grads[1].values())  # step 2: zero, not absent
    # and AdamW moved on it (its momentum): the same parameters as the full update, to the
    # rounding that Adam's normalisation magnifies in near-zero gradient entries
    for (name, p), q in zip(full.model.named_parameters(), lean.model.parameters(), strict=True):
        torch.testing.assert_close(p, q, atol=1e-4, rtol=0, msg=name)
        assert not torch.equal(q, before[name]) or not full_grads[0][name].any(), name
