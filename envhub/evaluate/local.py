"""Local models for ``envhub eval --model PATH``: vLLM where installed, else transformers.

The engines are :mod:`envhub.engines` (the trainer's too): prompts go in as token ids rendered
with the model's chat template (tools included), completions come out as text and ids. The
evaluator wraps the engine in a :class:`~envhub.evaluate.backends.BatchingBackend`, so the
episodes running concurrently are generated as batches.

Nothing here is imported by ``import envhub``; torch, transformers and vllm are
imported inside :func:`load_local_model` only.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path
from typing import Any

from ..engines.types import Generation, SamplingParams
from ..errors import DependencyMissing
from ..install import install_command
from .backends import BatchFn, BatchingBackend, ContextExhausted

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


def _smoke(eng: Any) -> None:
    """Generate one token, so a model the engine cannot run fails here, not in every episode.

    (vLLM on CPU starts on a model whose attention it cannot run, e.g. a head size under 32,
    and refuses at the first forward pass.)
    """
    eng.generate([[eng.tokenizer.eos_token_id or 0]], SamplingParams(max_tokens=1))


def _auto_engine(path: Path, batch_size: int) -> tuple[Any, str]:
    """The engine ``auto`` picks: vLLM where installed and it runs the model, else transformers."""
    if choose_engine("auto") == "transformers":
        return _build_engine(path, "transformers", batch_size), "transformers"
    eng = None
    try:
        eng = _build_engine(path, "vllm", batch_size)
        _smoke(eng)
        return eng, "vllm"
    except Exception as e:  # noqa: BLE001 (whatever vLLM refuses with, transformers may run it)
        if eng is not None:
            eng.close()
        reason = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        print(
            f"engine auto: vLLM cannot run {path.name} ({reason}); using transformers",
            file=sys.stderr,
        )
        return _build_engine(path, "transformers", batch_size), "transformers"


def load_local_model(
    name_or_path: str, *, max_batch: int = 16, engine: str = "auto"
) -> BatchingBackend:
    """Load a local model (an HF directory, a GGUF folder, or ``smollm2``/``tiny``).

    Args:
        name_or_path: What ``envhub.engines.weights.resolve_model`` accepts.
        max_batch: Most chats generated together (the episode concurrency also bounds it).
        engine: ``auto`` (vLLM if installed and able to run the model, else transformers,
            saying why in one line), ``vllm`` or ``transformers``.

    Raises:
        DependencyMissing: the trainer stack (torch, transformers) is not installed.
    """
    try:
        import transformers  # noqa: F401  (the engines need it; say so before loading)

        from ..engines.chat import ChatFormatter
        from ..engines.weights import resolve_model
    except ImportError as e:
        raise DependencyMissing(
            f"a local model needs the trainer stack ({e}); install it with "
            f"`{install_command(['trainer'])}`, or evaluate an endpoint with --base-url"
        ) from e
    path = resolve_model(name_or_path)
    if engine == "auto":
        eng, kind = _auto_engine(path, max_batch)
    else:
        kind = choose_engine(engine)
        eng = _build_engine(path, kind, max_batch)
    log.info("loaded %s with %s", path, kind)
    chat = ChatFormatter(eng.tokenizer)

    name = name_or_path if not Path(name_or_path).exists() else str(Path(name_or_path).resolve())
    backend = BatchingBackend(name, engine_batch_fn(eng, chat), max_batch=max_batch)
    backend.on_close = getattr(eng, "close", None)
    return backend


def engine_batch_fn(eng: Any, chat: Any) -> BatchFn:
    """A :data:`BatchFn` over a generation engine and its chat formatter.

    A chat that leaves the model no room to answer fails alone (:class:`ContextExhausted`);
    the others of its batch are generated, each with its own seed when seeds are given.
    """

    def batch_fn(
        chats: list[list[dict[str, Any]]],
        tools: list[dict[str, Any]] | None,
        p: SamplingParams,
        seeds: list[int] | None,
    ) -> list[Generation | ContextExhausted]:
        prompts = [chat.prompt_ids(c, tools=tools) for c in chats]
        outs: list[Any] = [too_long(len(ids), eng.max_model_len) for ids in prompts]
        fits = [i for i, out in enumerate(outs) if out is None]
        kept = None if seeds is None else [seeds[i] for i in fits]
        made = eng.generate([prompts[i] for i in fits], p, kept) if fits else []
        for i, g in zip(fits, made, strict=True):
            g.prompt_tokens, g.completion_tokens = len(prompts[i]), len(g.token_ids)
            outs[i] = g
        return outs

    return batch_fn


def too_long(prompt_tokens: int, max_model_len: int | None) -> ContextExhausted | None:
    """The error for a prompt that leaves the model no room to answer (None if it fits)."""
    if max_model_len is None or prompt_tokens < max_model_len:
        return None
    return ContextExhausted(
        f"the conversation is {prompt_tokens} tokens and the model's context is {max_model_len}"
    )
