"""Local models for ``envhub eval --model PATH``: vLLM where installed, else transformers.

The engines are the trainer's (:mod:`trainer.engine`): prompts go in as token ids rendered
with the model's chat template (tools included), completions come out as text and ids. The
evaluator wraps the engine in a :class:`~envhub.evaluate.models.BatchingBackend`, so the
episodes running concurrently are generated as batches.

Nothing here is imported by ``import envhub``; torch, transformers, vllm and the trainer are
imported inside :func:`load_local_model` only.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

from ..errors import DependencyMissing
from .models import BatchingBackend, SamplingParams

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


class VLLMEngine:
    """A minimal vLLM engine with the trainer's ``generate(prompt_ids, params)`` interface.

    Used only where ``trainer.engine`` offers no vLLM engine of its own. Set
    ``VLLM_CPU_KVCACHE_SPACE`` on CPU (see RUNTIME-NOTES), or vLLM reserves most of the RAM.
    """

    def __init__(self, path: str, **llm_kwargs: Any) -> None:
        """Start ``vllm.LLM`` on the HF directory ``path`` (float32, eager: see below).

        On CPU, bfloat16 runs ~12x slower than float32 on AVX2-only machines and
        ``torch.compile`` adds ~15 s to the start, so both are off unless overridden; the KV
        cache gets 1 GiB unless ``VLLM_CPU_KVCACHE_SPACE`` says otherwise (vLLM's own default
        reserves most of the RAM).
        """
        import os

        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        os.environ.setdefault("VLLM_HOST_IP", "127.0.0.1")
        import vllm

        self._vllm = vllm
        kwargs = {"dtype": "float32", "enforce_eager": True, "seed": 0, **llm_kwargs}
        self.llm = vllm.LLM(model=path, **kwargs)

    @property
    def tokenizer(self) -> Any:
        """The model's tokenizer."""
        return self.llm.get_tokenizer()

    def close(self) -> None:
        """Stop vLLM's engine process (best effort: the API differs across versions)."""
        core = getattr(getattr(self.llm, "llm_engine", None), "engine_core", None)
        shutdown = getattr(core, "shutdown", None)
        if callable(shutdown):
            shutdown()

    def generate(self, prompts: list[list[int]], params: Any) -> list[Any]:
        """Sample one completion per prompt (token ids); returns trainer ``Generation``s."""
        from trainer.engine import Generation

        sp = self._vllm.SamplingParams(
            max_tokens=params.max_tokens,
            temperature=params.temperature,
            top_p=params.top_p,
            seed=params.seed,
        )
        inputs = [{"prompt_token_ids": p} for p in prompts]
        outs = self.llm.generate(inputs, sp, use_tqdm=False)
        result = []
        for out in outs:
            c = out.outputs[0]
            result.append(
                Generation(
                    token_ids=list(c.token_ids),
                    logprobs=[0.0] * len(c.token_ids),
                    text=c.text,
                    finish_reason="length" if c.finish_reason == "length" else "stop",
                )
            )
        return result


def _build_engine(path: Path, engine: str, batch_size: int) -> Any:
    if engine == "vllm":
        try:  # the trainer's engine (with refit) once it exists; ours otherwise
            from trainer.vllm_engine import VLLMEngine as TrainerVLLM

            if hasattr(TrainerVLLM, "from_pretrained"):
                return TrainerVLLM.from_pretrained(str(path))
        except ImportError:
            pass
        return VLLMEngine(str(path))
    from trainer.engine import TransformersEngine

    return TransformersEngine.from_pretrained(str(path), batch_size=batch_size)


def load_local_model(
    name_or_path: str, *, max_batch: int = 16, engine: str = "auto"
) -> BatchingBackend:
    """Load a local model (an HF directory, a GGUF folder, or ``smollm2``/``tiny``).

    Args:
        name_or_path: What ``trainer.models.resolve_model`` accepts.
        max_batch: Most chats generated together (the episode concurrency also bounds it).
        engine: ``auto`` (vLLM if installed), ``vllm`` or ``transformers``.

    Raises:
        DependencyMissing: the trainer stack (torch, transformers) is not installed.
    """
    try:
        from trainer.engine import ChatFormatter
        from trainer.engine import SamplingParams as EngineParams
        from trainer.models import resolve_model
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
    ) -> list[tuple[str, int, int, str]]:
        prompts = [chat.prompt_ids(c, tools=tools) for c in chats]
        params = EngineParams(max_tokens=p.max_tokens, temperature=p.temperature, top_p=p.top_p)
        outs = eng.generate(prompts, params)
        return [
            (g.text, len(ids), len(g.token_ids), g.finish_reason)
            for g, ids in zip(outs, prompts, strict=True)
        ]

    name = name_or_path if not Path(name_or_path).exists() else str(Path(name_or_path).resolve())
    backend = BatchingBackend(name, batch_fn, max_batch=max_batch)
    backend.on_close = getattr(eng, "close", None)
    return backend
