"""VLLMEngine against the transformers reference on a tiny random Llama (one engine per module).

vLLM's CPU attention needs a head size >= 32, so these tests use the tiny Llama with two heads
of 32 (hidden 64) rather than the default four heads of 16.
"""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip(
    "vllm", reason="vLLM is not installed (pip install -e .[vllm]; see envhub/engines/VLLM.md)"
)

import torch

from envhub.engines.chat import ChatFormatter
from envhub.engines.transformers_engine import TransformersEngine
from envhub.engines.types import SamplingParams

TOL = 2e-4


@pytest.fixture(scope="module")
def tiny_vllm_path():
    from envhub.engines.weights import tiny_llama_path

    return tiny_llama_path(hidden_size=64, heads=2)


SEPARATE = (
    "vLLM 0.32's kernel dispatcher crashes when llvmlite (numba) is already loaded in the "
    "process; .ci/run runs the vLLM tests in a pytest process of their own"
)


@pytest.fixture(scope="module")
def vengine(tiny_vllm_path):
    if "llvmlite" in sys.modules:
        pytest.skip(SEPARATE)
    from envhub.engines.vllm_engine import VLLMEngine

    engine = VLLMEngine(tiny_vllm_path, kv_cache_gib=0.25, max_model_len=512, max_num_seqs=16)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def hf(tiny_vllm_path):
    return TransformersEngine.from_pretrained(tiny_vllm_path)


@pytest.fixture(scope="module")
def prompts(hf):
    chat = ChatFormatter(hf.tokenizer)
    questions = ["What is 2+3?", "Name a colour.", "Say hi", "Count to five, please."]
    return [chat.prompt_ids([{"role": "user", "content": q}]) for q in questions]


def teacher_logprobs(model, prompt, completion, temperature=1.0):
    """log_softmax(logits / T) of ``completion`` after ``prompt`` under a transformers model."""
    ids = torch.tensor([prompt + completion])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
    t = temperature if temperature > 0 else 1.0
    logp = torch.log_softmax(logits / t, dim=-1)
    return logp.gather(-1, torch.tensor(completion)[:, None]).squeeze(-1).tolist()


def assert_close(a, b, tol=TOL):
    assert len(a) == len(b)
    worst = max((abs(x - y) for x, y in zip(a, b, strict=True)), default=0.0)
    assert worst < tol, f"logprobs differ by {worst:.2e}"


def test_is_a_generation_engine(vengine):
    from envhub.engines.types import GenerationEngine

    assert isinstance(vengine, GenerationEngine)
    assert vengine.tokenizer.eos_token == "<|im_end|>"


def test_greedy_tokens_and_logprobs_equal_transformers(vengine, hf, prompts):
    params = SamplingParams(max_tokens=12, temperature=0)
    ours = vengine.generate(prompts, params)
    ref = hf.generate(prompts, params)
    for g, r in zip(ours, ref, strict=True):
        assert g.token_ids == r.token_ids
        assert_close(g.logprobs, r.logprobs)
        assert g.text == r.text
        assert g.finish_reason == r.finish_reason


@pytest.mark.parametrize(("temperature", "top_k", "top_p"), [(1.0, 0, 1.0), (0.7, 20, 0.9)])
def test_sampled_logprobs_follow_the_trainers_definition(
    vengine, hf, prompts, temperature, top_k, top_p
):
    # log_softmax(logits / T) of the sampled token, before top-k/top-p: the quantity the
    # trainer computes, even with truncation on (vLLM's processed_logprobs would renormalise).
    params = SamplingParams(
        max_tokens=10, temperature=temperature, top_k=top_k, top_p=top_p, seed=3
    )
    for prompt, g in zip(prompts, vengine.generate(prompts, params), strict=True):
        assert len(g.token_ids) == len(g.logprobs) == 10
        ref = teacher_logprobs(hf.model, prompt, g.token_ids, temperature)
        assert_close(g.logprobs, ref)
        if top_k:  # every sampled token lies in the top-k of the reference distribution
            assert all(lp > -30 for lp in g.logprobs)


def test_score_matches_generate(vengine, prompts):
    params = SamplingParams(max_tokens=8, temperature=0.8, seed=5)
    gens = vengine.generate(prompts, params)
    scored = vengine.score(
        [p + g.token_ids for p, g in zip(prompts, gens, strict=True)],
        [len(p) for p in prompts],
        temperature=0.8,
    )
    for g, s in zip(gens, scored, strict=True):
        assert_close(g.logprobs, s)


def test_max_tokens_and_stop_strings(vengine, prompts):
    [g] = vengine.generate(prompts[:1], SamplingParams(max_tokens=5, temperature=0))
    assert len(g.token_ids) == 5 and g.finish_reason == "length" and g.stop_reason is None
    [long] = vengine.generate(prompts[:1], SamplingParams(max_tokens=24, temperature=0))
    text = long.text
    assert len(text) > 6, text
    stop = text[3:5]
    cut = text.index(stop)
    [kept] = vengine.generate(
        prompts[:1], SamplingParams(max_tokens=24, temperature=0, stop=(stop,))
    )
    assert kept.finish_reason == "stop" and kept.stop_reason == stop
    assert kept.text == text[: cut + len(stop)]
    assert len(kept.token_ids) < len(long.token_ids)
    assert kept.token_ids == long.token_ids[: len(kept.token_ids)]
    [dropped] = vengine.generate(
        prompts[:1],
        SamplingParams(
            max_tokens=24, temperature=0, stop=(stop,), include_stop_str_in_output=False
        ),
    )
    assert dropped.text == text[:cut]


def test_seeded_sampling_is_reproducible(vengine, prompts):
    group = [prompts[0]] * 4
    params = SamplingParams(max_tokens=8, temperature=1.0, seed=11)
    first = [g.token_ids for g in vengine.generate(group, params)]
    again = [g.token_ids for g in vengine.generate(group, params)]
    other = [g.token_ids for g in vengine.generate(group, SamplingParams(max_tokens=8, seed=12))]
    assert first == again
    assert first != other
    assert len({tuple(t) for t in first}) > 1, "a group of equal prompts got equal samples"


def test_a_prompts_own_seed_gives_it_the_same_sample_in_any_batch(vengine, prompts):
    """Per-prompt seeds go to vLLM's per-request seed: a completion does not depend on the
    prompts batched with it (validation batches whatever episodes are waiting)."""
    params = SamplingParams(max_tokens=8, temperature=1.0, seed=11)  # seeds take precedence
    [alone] = vengine.generate(prompts[:1], params, seeds=[5])
    batch = vengine.generate([prompts[2], prompts[0], prompts[0]], params, seeds=[1, 5, 6])
    assert batch[1].token_ids == alone.token_ids
    assert batch[2].token_ids != alone.token_ids  # the same prompt with its own seed


def test_seeded_batch_past_the_token_budget_samples_as_alone(vengine):
    """vLLM on CPU crashed ("CPU Generator does not use offset") when a seeded batch's prompt
    tokens passed ``max_num_batched_tokens`` (a prompt prefilled in chunks), then spun for
    ever; the engine now takes prompts whole, and each samples as it does alone."""
    from envhub.engines.vllm_engine import DEFAULT_BATCHED_TOKENS

    prompts = [[(7 * i + j) % 200 + 5 for j in range(150)] for i in range(40)]
    assert sum(map(len, prompts)) > DEFAULT_BATCHED_TOKENS  # past one step's budget
    params = SamplingParams(max_tokens=6, temperature=1.0)
    seeds = list(range(40))
    batch = vengine.generate(prompts, params, seeds=seeds)
    assert all(len(g.token_ids) >= 1 for g in batch)
    for i in (0, 17, 39):
        [alone] = vengine.generate([prompts[i]], params, seeds=[seeds[i]])
        assert batch[i].token_ids == alone.token_ids


def test_chunked_prefill_is_off_on_cpu_with_room_for_the_longest_prompt():
    from envhub.engines.vllm_engine import whole_prefills_on_cpu

    opts = whole_prefills_on_cpu({"max_num_batched_tokens": 256}, max_model_len=1024)
    assert opts == {"enable_chunked_prefill": False, "max_num_batched_tokens": 1024}
    assert whole_prefills_on_cpu({}, 512)["max_num_batched_tokens"] == 4096


def perturbed(state, scale, seed):
    """New weights; the LM head stays tied to the embeddings, as in the model's own state dict."""
    gen = torch.Generator().manual_seed(seed)
    out = {k: v + scale * torch.randn(v.shape, generator=gen) for k, v in state.items()}
    out["lm_head.weight"] = out["model.embed_tokens.weight"]
    return out


def test_refit_matches_the_trainer_in_both_directions(vengine, hf, prompts, tiny_vllm_path):
    from transformers import AutoModelForCausalLM

    trainer_model = AutoModelForCausalLM.from_pretrained(tiny_vllm_path, dtype=torch.float32)
    weights_a = {k: v.clone() for k, v in trainer_model.state_dict().items()}
    weights_b = perturbed(weights_a, 0.05, seed=1)
    params = SamplingParams(max_tokens=8, temperature=0.9, seed=7)
    seen = []
    try:
        for name, weights in [
            ("B", weights_b),
            ("A", weights_a),
            ("B", weights_b),
            ("A", weights_a),
        ]:
            vengine.load_state_dict(weights)
            assert vengine.last_refit_seconds is not None
            trainer_model.load_state_dict(weights)
            gens = vengine.generate(prompts, params)
            for prompt, g in zip(prompts, gens, strict=True):
                ref = teacher_logprobs(trainer_model, prompt, g.token_ids, 0.9)
                assert_close(g.logprobs, ref)
            seen.append((name, [g.logprobs for g in gens]))
    finally:
        vengine.load_state_dict(weights_a)
    # the refits really changed the engine: A and B give different logprobs, A twice the same
    assert seen[0][1] != seen[1][1]
    assert seen[1][1] == seen[3][1]
    assert seen[0][1] == seen[2][1]


def test_refit_refuses_a_partial_state_dict(vengine, tiny_vllm_path):
    from transformers import AutoModelForCausalLM

    full = AutoModelForCausalLM.from_pretrained(tiny_vllm_path, dtype=torch.float32).state_dict()
    partial = {k: v for k, v in full.items() if ".layers.1." not in k}
    try:
        with pytest.raises(ValueError, match="without new values"):
            vengine.load_state_dict(partial)
    finally:
        vengine.load_state_dict(full)


def test_refit_refuses_a_merged_layer_without_all_its_shards(vengine, tiny_vllm_path):
    from transformers import AutoModelForCausalLM

    full = AutoModelForCausalLM.from_pretrained(tiny_vllm_path, dtype=torch.float32).state_dict()
    partial = {k: v for k, v in full.items() if k != "model.layers.0.self_attn.k_proj.weight"}
    try:
        with pytest.raises(ValueError, match=r"layers\.0\.self_attn\.qkv_proj.*missing \[1\]"):
            vengine.load_state_dict(partial)
    finally:
        vengine.load_state_dict(full)


def flat_views(state):
    """A copy of ``state`` as the gloo/nccl transports deliver it (so q/k/v and gate/up lie
    back to back), and its float32 buffer."""
    from envhub.trainer.refit.collective import flat_state, plan_layout

    out, flats = flat_state(plan_layout(state, 2**40))
    for name, tensor in state.items():
        out[name].copy_(tensor)
    return out, flats["float32"]


def test_refit_from_flat_buffers_matches_and_keeps_no_reference_to_them(
    vengine, hf, prompts, tiny_vllm_path
):
    from transformers import AutoModelForCausalLM

    trainer_model = AutoModelForCausalLM.from_pretrained(tiny_vllm_path, dtype=torch.float32)
    weights_a = {k: v.clone() for k, v in trainer_model.state_dict().items()}
    weights_b, flat = flat_views(perturbed(weights_a, 0.05, seed=3))
    params = SamplingParams(max_tokens=8, temperature=0)
    try:
        vengine.load_state_dict(weights_b)
        trainer_model.load_state_dict(weights_b)
        flat.zero_()  # the sender reuses its buffer: the engine must have its own copy
        for prompt, g in zip(prompts, vengine.generate(prompts, params), strict=True):
            assert_close(g.logprobs, teacher_logprobs(trainer_model, prompt, g.token_ids))
    finally:
        vengine.load_state_dict(weights_a)


def test_refit_in_another_dtype_goes_through_the_layers_own_loaders(
    vengine, hf, prompts, tiny_vllm_path
):
    # bfloat16 weights into the float32 engine: not the fast path (the pack would see the
    # wrong dtype), so each layer's own loader converts them, twice to use the kept weight
    from transformers import AutoModelForCausalLM

    trainer_model = AutoModelForCausalLM.from_pretrained(tiny_vllm_path, dtype=torch.float32)
    weights_a = {k: v.clone() for k, v in trainer_model.state_dict().items()}
    params = SamplingParams(max_tokens=8, temperature=0)
    try:
        for seed in (4, 5):
            half = {k: v.bfloat16() for k, v in perturbed(weights_a, 0.05, seed=seed).items()}
            half["lm_head.weight"] = half["model.embed_tokens.weight"]
            vengine.load_state_dict(half)
            trainer_model.load_state_dict({k: v.float() for k, v in half.items()})
            for prompt, g in zip(prompts, vengine.generate(prompts, params), strict=True):
                assert_close(g.logprobs, teacher_logprobs(trainer_model, prompt, g.token_ids))
    finally:
        vengine.load_state_dict(weights_a)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_worker_process_engine_refits_through_shared_memory(tiny_vllm_path, hf, prompts):
    # vLLM's own worker processes (as with tensor parallelism): weights cross the process
    # boundary as a safetensors file in /dev/shm. A second engine start: ~30-60 s here.
    from envhub.engines.vllm_engine import VLLMEngine

    engine = VLLMEngine(
        tiny_vllm_path, kv_cache_gib=0.25, max_model_len=512, max_num_seqs=16, in_process=False
    )
    try:
        weights_a = {k: v.clone() for k, v in hf.model.state_dict().items()}
        weights_b = perturbed(weights_a, 0.05, seed=2)
        params = SamplingParams(max_tokens=6, temperature=0)
        for weights in (weights_b, weights_a):
            engine.load_state_dict(weights)
            hf.load_state_dict(weights)
            for prompt, g in zip(prompts, engine.generate(prompts, params), strict=True):
                assert_close(g.logprobs, teacher_logprobs(hf.model, prompt, g.token_ids))
    finally:
        hf.load_state_dict(weights_a)
        engine.close()
