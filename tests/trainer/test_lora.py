"""LoRA (``model.lora``) and activation checkpointing on one process, the tiny model."""

import pytest
import torch
from test_fsdp import make_samples

from envhub.trainer.algo.grpo import LossConfig
from envhub.trainer.config import LoraSettings, OptimConfig
from envhub.trainer.workers.lora import merge_state, scaling

pytest.importorskip("peft")

LORA = LoraSettings(rank=4, alpha=8)


def make_policy(path, lora=None, fused=True, checkpointing=False, lr=1e-2):
    from envhub.trainer.workers.policy import Policy

    return Policy(
        str(path),
        optim=OptimConfig(lr=lr),
        loss=LossConfig(),
        total_optim_steps=4,
        temperature=1.0,
        micro_batch_size=3,
        dtype="float32",
        seed=0,
        pack=True,
        fused=fused,
        lora=lora,
        activation_checkpointing=checkpointing,
    )


def test_only_the_adapter_trains_and_the_reference_is_the_base_model(tiny_path):
    base = make_policy(tiny_path)
    policy = make_policy(tiny_path, LORA)
    trainable = [n for n, p in policy.model.named_parameters() if p.requires_grad]
    assert trainable and all(".lora_" in n for n in trainable)
    frozen = {k: v.clone() for k, v in policy.model.named_parameters() if not v.requires_grad}
    samples = make_samples()
    before = base.logprobs(samples)
    policy.train([samples])
    policy.train([samples])
    # the base weights did not move; the adapter did, so the policy's logprobs moved
    for k, v in policy.model.named_parameters():
        if k in frozen:
            torch.testing.assert_close(v, frozen[k], rtol=0, atol=0)
    after = policy.logprobs(samples)
    moved = [
        abs(a - b) for x, y in zip(after, before, strict=True) for a, b in zip(x, y, strict=True)
    ]
    assert max(moved) > 1e-4
    # the reference (adapter disabled) is exactly the untouched base model
    reference = policy.logprobs(samples, reference=True)
    for x, y in zip(reference, before, strict=True):
        assert x == pytest.approx(y, abs=1e-5)


def test_merged_state_is_peft_merge_and_the_base_names(tiny_path):
    policy = make_policy(tiny_path, LORA)
    policy.train([make_samples()])
    policy.train([make_samples()])
    merged = policy.full_state_dict()
    base_names = set(make_policy(tiny_path).full_state_dict())
    assert set(merged) == base_names
    raw = policy.full_state_dict(merged=False)
    want = policy.model.merge_and_unload().state_dict()
    assert scaling(policy.model) == 2.0
    for k, v in want.items():
        torch.testing.assert_close(merged[k], v, rtol=1e-5, atol=1e-6)
    assert any(".lora_B." in k and v.abs().max() > 0 for k, v in raw.items())
    assert merge_state(raw, 2.0).keys() == merged.keys()


def test_fused_mlp_is_not_used_where_down_proj_has_an_adapter(tiny_path):
    samples = make_samples()
    a = make_policy(tiny_path, LORA, fused=True)
    b = make_policy(tiny_path, LORA, fused=False)
    for p in (a, b):  # a non-zero adapter: B starts at 0
        for name, param in p.model.named_parameters():
            if "lora_B" in name:
                torch.nn.init.constant_(param, 0.05)
    for x, y in zip(a.logprobs(samples), b.logprobs(samples), strict=True):
        assert x == pytest.approx(y, abs=1e-5)


def test_checkpoint_holds_the_adapter_and_resumes_exactly(tiny_path, tmp_path):
    samples = make_samples()
    a = make_policy(tiny_path, LORA)
    a.train([samples])
    a.save(tmp_path)
    b = make_policy(tiny_path, LORA)
    b.load(tmp_path)
    sa, sb = a.train([samples]), b.train([samples])
    assert sa["loss"] == sb["loss"] and sa["grad_norm"] == sb["grad_norm"]
    for (k, v), (_, w) in zip(a.model.named_parameters(), b.model.named_parameters(), strict=True):
        torch.testing.assert_close(v, w, rtol=0, atol=0, msg=k)
    from torch.distributed.checkpoint import FileSystemReader

    saved = FileSystemReader(str(tmp_path / "dcp")).read_metadata().state_dict_metadata
    weights = [k for k in saved if k.startswith("model.")]
    assert weights and all(".lora_" in k for k in weights)  # the adapter alone


def test_export_writes_the_adapter_and_a_merged_model(tiny_path, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    policy = make_policy(tiny_path, LORA)
    policy.train([make_samples()])
    raw = policy.full_state_dict(merged=False)
    policy.export_adapter(tmp_path / "final" / "adapter", raw)
    policy.export(tmp_path / "final", merge_state(raw, scaling(policy.model)))
    merged = AutoModelForCausalLM.from_pretrained(tmp_path / "final")
    base = AutoModelForCausalLM.from_pretrained(tiny_path)
    adapted = PeftModel.from_pretrained(base, tmp_path / "final" / "adapter")
    ids = torch.tensor([[5, 17, 99, 3, 42]])
    torch.testing.assert_close(merged(ids).logits, adapted(ids).logits, rtol=1e-4, atol=1e-5)


def test_activation_checkpointing_gives_the_same_update(tiny_path):
    samples = make_samples()
    plain, ckpt = make_policy(tiny_path), make_policy(tiny_path, checkpointing=True)
    assert ckpt.model.is_gradient_checkpointing
    s1, s2 = plain.train([samples]), ckpt.train([samples])
    assert s2["loss"] == pytest.approx(s1["loss"], rel=1e-6)
    assert s2["grad_norm"] == pytest.approx(s1["grad_norm"], rel=1e-5)
    a, b = plain.full_state_dict(), ckpt.full_state_dict()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=1e-5, atol=1e-6)


def test_adapter_files_are_what_peft_loads(tiny_path, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from envhub.trainer.refit.state import write_adapter
    from envhub.trainer.workers.lora import adapter_bytes, adapter_files

    policy = make_policy(tiny_path, LORA)
    policy.train([make_samples()])
    raw = policy.full_state_dict(merged=False)
    files = adapter_files(policy.model, raw)
    assert set(files) == {"adapter_config.json", "adapter_model.safetensors"}
    # the adapter alone travels: its tensors plus a small header, far below the model
    assert adapter_bytes(raw) < len(files["adapter_model.safetensors"]) < adapter_bytes(raw) + 4e4
    folder = write_adapter(files, tmp_path / "v1")
    adapted = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_path), folder)
    merged = AutoModelForCausalLM.from_pretrained(tiny_path)
    merged.load_state_dict(policy.full_state_dict())
    ids = torch.tensor([[5, 17, 99, 3, 42]])
    torch.testing.assert_close(adapted(ids).logits, merged(ids).logits, rtol=1e-4, atol=1e-5)


def test_vllm_lora_rank_is_rounded_up_to_one_vllm_accepts():
    from envhub.trainer.workers.lora import vllm_max_lora_rank

    assert [vllm_max_lora_rank(r) for r in (1, 4, 8, 9, 300)] == [1, 8, 8, 16, 320]
    with pytest.raises(ValueError, match="512"):
        vllm_max_lora_rank(1024)
