import pytest
import torch

from envhub.engines.chat import ChatFormatter
from envhub.engines.types import GenerationEngine, SamplingParams
from envhub.types import Message


def _prompt(engine, text="What is 2+3?"):
    return ChatFormatter(engine.tokenizer).prompt_ids([Message(role="user", content=text)])


def test_engine_satisfies_protocol(engine):
    assert isinstance(engine, GenerationEngine)


def test_seeded_sampling_is_reproducible_and_lengths_match(engine):
    prompts = [_prompt(engine), _prompt(engine, "hi")]
    params = SamplingParams(max_tokens=12, seed=7)
    a = engine.generate(prompts, params)
    b = engine.generate(prompts, params)
    assert [g.token_ids for g in a] == [g.token_ids for g in b]
    for g in a:
        assert len(g.token_ids) == len(g.logprobs) >= 1
        assert g.finish_reason in ("stop", "length")
        if g.finish_reason == "length":
            assert len(g.token_ids) == 12


def test_a_prompts_own_seed_gives_it_the_same_sample_in_any_batch(engine):
    """Per-prompt seeds (validation's requests): a completion depends on its prompt and seed,
    not on the prompts batched with it, their order or their number."""
    a, b = _prompt(engine), _prompt(engine, "hi")
    long = _prompt(engine, "a much longer question about numbers")
    params = SamplingParams(max_tokens=12, temperature=1.0)
    [alone] = engine.generate([a], params, seeds=[5])
    batch = engine.generate([long, a, b, a], params, seeds=[1, 5, 2, 6])
    assert batch[1].token_ids == alone.token_ids and batch[1].logprobs == pytest.approx(
        alone.logprobs, abs=1e-4
    )
    assert batch[3].token_ids != alone.token_ids  # the same prompt with its own seed
    with pytest.raises(ValueError, match="2 seeds for 1 prompts"):
        engine.generate([a], params, seeds=[1, 2])


def test_seeded_batch_past_the_engines_batch_size_samples_as_alone(engine):
    """The engine's token budget is its batch size: a seeded call of more prompts than that
    runs in several sub-batches, and each prompt still samples as it does alone."""
    from envhub.engines.transformers_engine import TransformersEngine

    small = TransformersEngine(engine.model, engine.tokenizer, batch_size=3)
    prompts = [_prompt(engine, f"question number {i} " + "x " * (3 * i)) for i in range(8)]
    params = SamplingParams(max_tokens=6, temperature=1.0)
    seeds = list(range(100, 108))
    batch = small.generate(prompts, params, seeds=seeds)
    for p, seed, got in zip(prompts, seeds, batch, strict=True):
        [alone] = small.generate([p], params, seeds=[seed])
        assert got.token_ids == alone.token_ids


def test_logprobs_match_a_full_forward_even_when_left_padded(engine):
    prompts = [_prompt(engine, "a much longer question about numbers"), _prompt(engine, "hi")]
    gens = engine.generate(prompts, SamplingParams(max_tokens=10, seed=3, temperature=0.7))
    for prompt, g in zip(prompts, gens, strict=True):
        seq = torch.tensor([prompt + g.token_ids])
        with torch.no_grad():
            logits = engine.model(seq).logits[0, len(prompt) - 1 : -1] / 0.7
        ref = torch.log_softmax(logits, -1).gather(-1, torch.tensor(g.token_ids)[:, None])
        assert torch.allclose(ref.squeeze(-1), torch.tensor(g.logprobs), atol=1e-4)


def test_greedy_is_argmax(engine):
    prompt = _prompt(engine)
    [g] = engine.generate([prompt], SamplingParams(max_tokens=5, temperature=0))
    with torch.no_grad():
        first = engine.model(torch.tensor([prompt])).logits[0, -1].argmax().item()
    assert g.token_ids[0] == first


def test_stop_string_cuts_text_and_reports_reason(engine):
    prompt = _prompt(engine)
    [free] = engine.generate([prompt], SamplingParams(max_tokens=30, seed=11))
    stop = free.text.strip()[:1]  # a character the model will produce
    [g] = engine.generate([prompt], SamplingParams(max_tokens=30, seed=11, stop=(stop,)))
    assert g.finish_reason == "stop" and g.stop_reason == stop
    assert g.text.endswith(stop) and g.text.count(stop) == 1
    assert g.token_ids == free.token_ids[: len(g.token_ids)]


def test_continuation_closes_turn_and_opens_next(engine):
    chat = ChatFormatter(engine.tokenizer)
    eos = engine.tokenizer.eos_token_id
    env = [Message(role="user", content="Wrong, try again.")]
    after_eos = chat.continuation_ids(env, ended_with_eos=True)
    cut_off = chat.continuation_ids(env, ended_with_eos=False)
    assert cut_off == [eos] + after_eos
    text = engine.tokenizer.decode(after_eos)
    assert text == "\n<|im_start|>user\nWrong, try again.<|im_end|>\n<|im_start|>assistant\n"


def test_load_state_dict_changes_outputs(engine, tiny_path):
    from transformers import AutoModelForCausalLM

    prompt = _prompt(engine)
    params = SamplingParams(max_tokens=4, temperature=0)
    before = engine.generate([prompt], params)[0]
    original = {k: v.clone() for k, v in engine.model.state_dict().items()}
    shifted = {k: v + 0.05 * torch.randn_like(v) for k, v in original.items()}
    engine.load_state_dict(shifted)
    try:
        after = engine.generate([prompt], params)[0]
        assert after.logprobs != before.logprobs
    finally:
        engine.load_state_dict(original)
    assert engine.generate([prompt], params)[0].logprobs == before.logprobs
    assert AutoModelForCausalLM.from_pretrained(tiny_path) is not None
