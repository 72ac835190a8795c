"""Test-wide settings: offline hub access, private homes, no stray state."""

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# Must be set before anything imports datasets/transformers: loads of hub names otherwise
# retry for tens of seconds on a machine with no hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
_home = tempfile.mkdtemp(prefix="envhub-test-home-")
atexit.register(shutil.rmtree, _home, ignore_errors=True)  # gone with the test process
os.environ.setdefault("HF_HOME", os.path.join(_home, "hf"))
# User registrations made by tests land in a private folder, never the developer's.
os.environ["ENVHUB_HOME"] = os.path.join(_home, "envhub")

SUPPORT = Path(__file__).parent / "support"
sys.path.insert(0, str(SUPPORT))
# Servers spawned by tests must import the test doubles too.
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(SUPPORT), os.environ.get("PYTHONPATH", "")) if p
)


@pytest.fixture
def dummy_registry():
    """A registry holding the built-in catalog plus the test doubles (echo, count)."""
    import envhub.registry.catalog as reg

    loaded = reg.Registry.load([reg.BUILTIN_REGISTRY, SUPPORT / "dummy.yaml"])
    saved = reg._registry
    reg._registry = loaded
    yield loaded
    reg._registry = saved


@pytest.fixture(scope="session")
def tiny_path():
    """A tiny random Llama with the SmolLM2 tokenizer (built once, cached on disk)."""
    pytest.importorskip("transformers")
    from envhub.engines.weights import tiny_llama_path

    return tiny_llama_path()


@pytest.fixture(scope="session")
def engine(tiny_path):
    """A :class:`TransformersEngine` over the tiny model (engine and trainer tests)."""
    pytest.importorskip("torch")
    from envhub.engines.transformers_engine import TransformersEngine

    return TransformersEngine.from_pretrained(tiny_path)


@pytest.fixture
def clean_user_registry():
    """No user registrations before or after the test (in the test session's ENVHUB_HOME)."""
    import envhub
    from envhub.registry.catalog import user_registry_dir

    def clear() -> None:
        folder = user_registry_dir()
        for f in folder.glob("*.yaml") if folder.exists() else []:
            f.unlink()
        envhub.reset_registry()

    clear()
    yield
    clear()
