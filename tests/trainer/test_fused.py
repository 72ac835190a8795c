"""Fused MLP/RMSNorm (envhub.trainer.workers.fused): the plain modules' numbers, fewer bytes saved for backward."""

import copy

import pytest
import torch


@pytest.fixture(scope="module")
def tiny():
    from transformers import AutoModelForCausalLM

    from envhub.engines.weights import tiny_llama_path

    return AutoModelForCausalLM.from_pretrained(str(tiny_llama_path()), dtype=torch.float32)


def saved_bytes(fn):
    """Bytes of the distinct storages autograd keeps for backward while ``fn`` runs."""
    seen = {}

    def pack(t):
        seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return out, sum(seen.values())


def test_fused_model_equals_the_plain_one_with_less_saved(tiny):
    from envhub.trainer.workers.fused import fuse

    plain, fused = copy.deepcopy(tiny), copy.deepcopy(tiny)
    n_layers = len(plain.model.layers)
    assert fuse(fused) == 3 * n_layers + 1  # MLP and two norms per layer, the final norm
    ids = torch.randint(5, 900, (2, 24), generator=torch.Generator().manual_seed(0))
    weights = torch.randn(2, 24, plain.config.vocab_size)
    outs = {}
    for name, model in (("plain", plain), ("fused", fused)):
        logits, nbytes = saved_bytes(lambda m=model: m(input_ids=ids).logits)
        (logits * weights).sum().backward()
        outs[name] = (logits.detach(), nbytes)
    assert torch.allclose(outs["fused"][0], outs["plain"][0], atol=1e-5)
    for (name, p), q in zip(plain.named_parameters(), fused.parameters(), strict=True):
        scale = float(p.grad.abs().max())  # float rounding, relative to the gradient's size
        assert float((q.grad - p.grad).abs().max()) <= 1e-5 * scale, name
    # per layer: two [tokens, intermediate] and two [tokens, hidden] tensors fewer
    h, inter = plain.config.hidden_size, plain.config.intermediate_size
    fewer = 2 * 24 * 4 * (2 * inter + 2 * h) * n_layers
    assert outs["plain"][1] - outs["fused"][1] >= fewer


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fused_norm_and_mlp_equal_the_plain_modules(tiny, dtype):
    from envhub.trainer.workers.fused import fuse

    layer = tiny.model.layers[0]
    for module in (layer.input_layernorm, layer.mlp):
        plain = copy.deepcopy(module).to(dtype)
        fused = copy.deepcopy(plain)
        assert fuse(fused) == 1
        x = torch.randn(3, 5, tiny.config.hidden_size, dtype=dtype)
        g = torch.randn(3, 5, tiny.config.hidden_size, dtype=dtype)
        xs = [x.clone().requires_grad_() for _ in range(2)]
        ys = [m(xi) for m, xi in zip((plain, fused), xs, strict=True)]
        for y in ys:
            (y.float() * g.float()).sum().backward()
        tol = 1e-5 if dtype == torch.float32 else 2e-2
        assert ys[1].dtype == ys[0].dtype
        assert torch.allclose(ys[1].float(), ys[0].float(), atol=tol)
        assert torch.allclose(xs[1].grad.float(), xs[0].grad.float(), atol=tol, rtol=tol)
        for p, q in zip(plain.parameters(), fused.parameters(), strict=True):
            assert torch.allclose(q.grad.float(), p.grad.float(), atol=tol, rtol=tol)


@pytest.mark.parametrize("fused", [True, False])
def test_the_policy_fuses_unless_train_fused_is_off(fused):
    from envhub.engines.weights import tiny_llama_path
    from envhub.trainer.algo.grpo import LossConfig
    from envhub.trainer.config import OptimConfig
    from envhub.trainer.workers.policy import Policy

    optim = OptimConfig(lr=1e-3)
    policy = Policy(str(tiny_llama_path()), optim=optim, loss=LossConfig(), total_optim_steps=1,
                    temperature=1.0, micro_batch_size=2, dtype="float32", seed=0, pack=True,
                    fused=fused)  # fmt: skip
    swapped = [m for m in policy.model.modules() if "forward" in vars(m)]
    assert bool(swapped) is fused
