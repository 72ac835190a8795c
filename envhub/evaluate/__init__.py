"""``envhub eval``: run models against environments and report rewards and pass@k.

Layout: :mod:`.runner` (the episode loop and the run), :mod:`.models` (endpoint and batching
backends), :mod:`.local` (local models through :mod:`envhub.engines`), :mod:`.metrics`
(pass@k, summaries), :mod:`.store` (run directory files), :mod:`.rescore`, :mod:`.report`
(terminal output), :mod:`.scripted` (a scripted OpenAI-compatible endpoint for tests and
benchmarks) and :mod:`.cli` (the command). Importing this package loads no heavy library.
"""

from ..engines.types import Generation, SamplingParams
from .backends import ModelBackend, ModelError, OpenAIEndpoint
from .metrics import pass_at_k, summarize
from .runner import Evaluation, run_episode
from .store import EpisodeRecord, EvalConfig, RunStore

__all__ = [
    "EpisodeRecord",
    "EvalConfig",
    "Evaluation",
    "Generation",
    "ModelBackend",
    "ModelError",
    "OpenAIEndpoint",
    "RunStore",
    "SamplingParams",
    "pass_at_k",
    "run_episode",
    "summarize",
]
