"""The trainer tests need torch and transformers; their fixtures (``tiny_path``, ``engine``:
a tiny random Llama with its own small tokenizer) are in ``tests/conftest.py``, shared with
``tests/engines``."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
