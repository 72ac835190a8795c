"""Packed micro-batches (envhub.trainer.workers.packing): one row, shared prompt once, same numbers."""

import copy

import pytest
import torch

from envhub.trainer.algo.batch import Sample, assign_weights, micro_batches
from envhub.trainer.algo.grpo import LossConfig
from envhub.trainer.config import OptimConfig
from envhub.trainer.workers.packing import common_prefix, pack
from envhub.trainer.workers.segments import Segments, segment_attention

OPTIM = OptimConfig(lr=1e-3)


def sample(prompt, response, advantage=1.0):
    tokens = [*prompt, *response]
    mask = [0] * len(prompt) + [1] * len(response)
    lp = [-1.0 if m else 0.0 for m in mask]
    return Sample(tokens, mask, lp, advantage)


def groups(seed=0):
    """Two prompts (one a prefix-sharing cousin of the other), uneven responses, a dummy."""
    g = torch.Generator().manual_seed(seed)

    def rand(n):
        return torch.randint(5, 900, (n,), generator=g).tolist()

    p1 = rand(9)
    p2 = p1[:4] + rand(6)
    out = [sample(p1, rand(n), a) for n, a in ((3, 1.0), (7, -1.0), (5, 0.5), (1, -0.5))]
    out += [sample(p2, rand(n), a) for n, a in ((6, 1.0), (2, -1.0), (8, 0.0))]
    out.append(Sample.dummy(0))
    assign_weights(out, "token_mean", norm_len=8)
    return out


def test_pack_layout():
    batch = [sample([1, 2, 3, 4], [5, 6]), sample([1, 2, 3, 4], [7, 8, 9])]
    assert common_prefix(batch) == 4
    packed = pack(batch, start=3, width=7)
    assert packed.input_ids.tolist() == [[1, 2, 3, 4, 5, 6, 7, 8, 9]]
    assert packed.position_ids.tolist() == [[0, 1, 2, 3, 4, 5, 4, 5, 6]]
    assert packed.segments == Segments(4, ((4, 6), (6, 9)))
    first, second = packed.segments.masks(torch.device("cpu"))
    assert second.tolist() == [[1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 0], [1] * 7]
    assert first.shape == (2, 6)
    # column 3 predicts token 4 (5 / 7) from the shared position 3 in both rows
    kept = packed.keep[packed.index]
    assert kept.tolist() == [[3, 4, 3], [3, 6, 7]]  # row 0's last column is padding


def test_groups_stay_together_in_micro_batches():
    batch = groups()
    mbs = micro_batches(batch, 4, by_prompt=True)
    prompts = [
        {tuple(s.tokens[: s.loss_mask.index(1)]) for s in mb if 1 in s.loss_mask} for mb in mbs
    ]
    assert [len(p) for p in prompts] == [1, 1] + [len(p) for p in prompts[2:]]


@pytest.fixture(scope="module")
def policies():
    from envhub.engines.weights import tiny_llama_path
    from envhub.trainer.workers.policy import Policy

    def make(pack):
        return Policy(
            str(tiny_llama_path()),
            optim=OPTIM,
            loss=LossConfig(kl_beta=0.0),
            total_optim_steps=4,
            temperature=0.7,
            micro_batch_size=4,
            dtype="float32",
            seed=0,
            pack=pack,
            fused=True,
        )

    return make(True), make(False)


def test_packed_and_padded_give_the_same_logprobs_and_update(policies):
    packed, padded = policies
    batch = groups()
    a = packed.logprobs(batch)
    b = padded.logprobs(batch)
    for s, x, y in zip(batch, a, b, strict=True):
        policy = [j for j, m in enumerate(s.loss_mask[1:]) if m]  # only these are defined
        assert [x[j] for j in policy] == pytest.approx([y[j] for j in policy], abs=2e-5)
    sa = packed.train([copy.deepcopy(batch)])
    sb = padded.train([copy.deepcopy(batch)])
    assert sa["loss"] == pytest.approx(sb["loss"], abs=1e-5)
    assert sa["grad_norm"] == pytest.approx(sb["grad_norm"], rel=1e-4)
    assert sa["n_tokens"] == sb["n_tokens"]
    assert sa["entropy_sum"] == pytest.approx(sb["entropy_sum"], rel=1e-5)
    assert sa["entropy_sum"] > 0
    for (name, p), q in zip(
        packed.model.named_parameters(), padded.model.parameters(), strict=True
    ):
        assert torch.allclose(p, q, atol=1e-5), name


def dense_attention(q, k, v, prefix, bounds):
    """The masked SDPA over the whole row that :func:`segment_attention` must equal."""
    n = q.shape[2]
    owner = torch.full((n,), -1)
    for b, (start, end) in enumerate(bounds):
        owner[start:end] = b
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    seen = (owner[None, :] == -1) | (owner[None, :] == owner[:, None])
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=causal & seen)


@pytest.mark.parametrize("prefix", [0, 1, 5])
def test_segment_attention_equals_the_masked_row_forward_and_backward(prefix):
    """Block by block, with grouped key/value heads and an empty segment: the same numbers."""
    g = torch.Generator().manual_seed(prefix)
    sizes = [3, 0, 7, 1]
    bounds, at = [], prefix
    for size in sizes:
        bounds.append((at, at + size))
        at += size
    q = torch.randn(1, 4, at, 8, generator=g, requires_grad=True)
    kv = torch.randn(2, 1, 2, at, 8, generator=g)
    k, v = kv[0].requires_grad_(), kv[1].requires_grad_()
    module = torch.nn.Module()
    module.num_key_value_groups = 2
    got, _ = segment_attention(
        module, q, k, v, None, envhub_segments=Segments(prefix, tuple(bounds))
    )
    want = dense_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), prefix, bounds)
    assert torch.allclose(got, want.transpose(1, 2), atol=1e-6)
    upstream = torch.randn(got.shape, generator=g)
    grads = torch.autograd.grad((got * upstream).sum(), (q, k, v))
    wants = torch.autograd.grad((want.transpose(1, 2) * upstream).sum(), (q, k, v))
    for a, b in zip(grads, wants, strict=True):
        assert torch.allclose(a, b, atol=1e-5)


def test_without_segments_the_attention_is_transformers_sdpa():
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, 5, 4, generator=g) for _ in range(3))
    module = torch.nn.Module()
    module.num_key_value_groups, module.is_causal = 1, True
    got, _ = segment_attention(module, q, k, v, None)
    want, _ = sdpa_attention_forward(module, q, k, v, None)
    assert torch.equal(got, want)


@pytest.mark.parametrize("which", ["packed", "padded"])
def test_micro_step_gradient_equals_plain_autograd(policies, which):
    """The chunked logprobs' hand-written backward against autograd of the plain formulas."""
    from collections import defaultdict

    from envhub.trainer.algo.batch import collate
    from envhub.trainer.algo.grpo import policy_loss, token_logprobs

    policy = policies[0] if which == "packed" else policies[1]
    batch = groups()
    policy.model.zero_grad(set_to_none=True)
    stats = defaultdict(float)
    for mb in micro_batches(batch, 4, by_prompt=policy.pack):
        policy._micro_step(collate(mb, policy.pad_id), mb, stats)
    got = {n: p.grad.clone() for n, p in policy.model.named_parameters()}

    policy.model.zero_grad(set_to_none=True)
    total = 0.0
    for s in batch:
        if not s.n_policy_tokens:
            continue
        logits = policy.model(torch.tensor([s.tokens])).logits[0, :-1].float() / 0.7
        lp = token_logprobs(logits, torch.tensor(s.tokens[1:]))[None]
        mask = torch.tensor(s.loss_mask[1:], dtype=torch.float32)[None]
        weights = torch.tensor(s.weights_targets)[None]
        adv = torch.tensor([s.advantage])
        total = total + policy_loss(lp, lp.detach(), adv, mask, weights, policy.loss_cfg).loss
    total.backward()
    assert stats["loss"] == pytest.approx(float(total.detach()), abs=1e-6)
    for name, p in policy.model.named_parameters():
        assert torch.allclose(got[name], p.grad, atol=1e-6, rtol=1e-4), name
    policy.model.zero_grad(set_to_none=True)


def test_a_micro_batch_of_padding_alone_carries_the_reference_kl_needs():
    """A rank's share of a small batch can be padding only; with KL on, the loss needs ref."""
    from envhub.trainer.algo.batch import collate

    pads = [Sample.dummy(0), Sample.dummy(0)]
    out = collate(pads, pad_id=0)
    assert "ref_logprobs" in out and float(out["ref_logprobs"].abs().sum()) == 0.0
    real = sample([1, 2], [3, 4])
    assert "ref_logprobs" not in collate([real, Sample.dummy(0)], pad_id=0)
    real.ref_logprobs_targets = [0.0, -1.0, -1.0]
    assert "ref_logprobs" in collate([real, Sample.dummy(0)], pad_id=0)
