"""The engine tests need torch and transformers; ``tiny_path`` and ``engine`` are shared
fixtures of ``tests/conftest.py``."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
