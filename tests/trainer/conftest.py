"""Shared fixtures of the trainer tests: a tiny random Llama with its own small tokenizer."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.fixture(scope="session")
def tiny_path():
    from trainer.models import tiny_llama_path

    return tiny_llama_path()


@pytest.fixture(scope="session")
def engine(tiny_path):
    from trainer.engine import TransformersEngine

    return TransformersEngine.from_pretrained(tiny_path)
