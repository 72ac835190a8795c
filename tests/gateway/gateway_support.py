"""Helpers of the gateway tests (a module of its own: ``conftest`` is a name every test folder
has, so importing it from a test breaks when folders are collected together)."""

import sys
import threading
from pathlib import Path

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


def agent_cmd(mode):
    return [sys.executable, str(AGENTS / "stdlib_agent.py"), mode]
