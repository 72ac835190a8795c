"""Local models for ``envhub eval --model PATH``: vLLM where installed, else transformers.

The engines are :mod:`envhub.engines` (the trainer's too): prompts go in as token ids rendered
with the model's chat template (tools included), completions come out as text and ids. The
evaluator wraps the engine in a :class:`~envhub.evaluate.models.BatchingBackend`, so the
episodes running concurrently are generated as batches.

Nothing here is imported by ``import envhub``; torch, transformers and vllm are
imported inside :func:`load_local_model` only.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

from ..engines.types import Generation, SamplingParams
from ..errors import DependencyMissing
from .models import BatchingBackend

log = logging.getLogger("envhub.evaluate")


def _have(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def choose_engine(preference: str = "auto") -> str:
    """``vllm`` when asked for or installed (``auto``), else ``transformers``."""
    if preference not in ("auto", "vllm", "transformers"):
        raise ValueError(f"engine must be auto, vllm or transformers, got {preference!r}")
    if preference == "auto":
        return "vllm" if _have("vllm") else "transformers"
    return preference


def _build_engine(path: Path, engine: str, batch_size: int) -> Any:
    if engine == "vllm":
        from ..engines.vllm_engine import VLLMEngine

        return VLLMEngine.from_pretrained(str(path))
    from ..engines.transformers_engine import TransformersEngine

    return TransformersEngine.from_pretrained(str(path), batch_size=batch_size)


def load_local_model(
    name_or_path: str, *, max_batch: int = 16, engine: str = "auto"
) -> BatchingBackend:
    """Load a local model (an HF directory, a GGUF folder, or ``smollm2``/``tiny``).

    Args:
        name_or_path: What ``envhub.engines.models.resolve_model`` accepts.
        max_batch: Most chats generated together (the episode concurrency also bounds it).
        engine: ``auto`` (vLLM if installed), ``vllm`` or ``transformers``.

    Raises:
        DependencyMissing: the trainer stack (torch, transformers) is not installed.
    """
    try:
        import transformers  # noqa: F401  (the engines need it; say so before loading)

        from ..engines.chat import ChatFormatter
        from ..engines.models import resolve_model
    except ImportError as e:
        raise DependencyMissing(
            f"a local model needs the trainer stack ({e}); install it with "
            "`pip install 'envhub[trainer]'`, or evaluate an endpoint with --base-url"
        ) from e
    path = resolve_model(name_or_path)
    kind = choose_engine(engine)
    log.info("loading %s with %s", path, kind)
    eng = _build_engine(path, kind, max_batch)
    chat = ChatFormatter(eng.tokenizer)

    def batch_fn(
        chats: list[list[dict[str, Any]]], tools: list[dict[str, Any]] | None, p: SamplingParams
    ) -> list[Generation]:
        prompts = [chat.prompt_ids(c, tools=tools) for c in chats]
        outs = eng.generate(prompts, p)
        for g, ids in zip(outs, prompts, strict=True):
            g.prompt_tokens, g.completion_tokens = len(ids), len(g.token_ids)
        return outs

    name = name_or_path if not Path(name_or_path).exists() else str(Path(name_or_path).resolve())
    backend = BatchingBackend(name, batch_fn, max_batch=max_batch)
    backend.on_close = getattr(eng, "close", None)
    return backend
