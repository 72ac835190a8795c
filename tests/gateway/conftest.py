"""Shared fixtures: the tiny engine behind a gateway on a loopback port, with a spy on the engine."""

import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("fastapi")

AGENTS = Path(__file__).parent / "agents"


class SpyEngine:
    """The engine, with every (prompt ids, sampled ids, logprobs) it produced kept in order."""

    def __init__(self, engine):
        self.engine = engine
        self.max_model_len = engine.max_model_len
        self.samples = []
        self.fail = False
        self._lock = threading.Lock()

    @property
    def tokenizer(self):
        return self.engine.tokenizer

    def generate(self, prompts, params, seeds=None):
        if self.fail:
            raise RuntimeError("the engine died")
        gens = self.engine.generate(prompts, params, seeds)
        with self._lock:
            for p, g in zip(prompts, gens, strict=True):
                self.samples.append((list(p), list(g.token_ids), list(g.logprobs)))
        return gens


@pytest.fixture(scope="module")
def spy(engine):
    return SpyEngine(engine)


@pytest.fixture(scope="module")
def served(spy):
    """(gateway, server) over the tiny engine; calls default to 8 tokens."""
    from envhub.gateway.backends import EngineBackend
    from envhub.gateway.server import GatewayServer
    from envhub.gateway.service import Gateway

    gateway = Gateway(EngineBackend(spy, "tiny"), default_max_tokens=8)
    with GatewayServer(gateway) as server:
        yield gateway, server


def agent_cmd(mode):
    return [sys.executable, str(AGENTS / "stdlib_agent.py"), mode]
