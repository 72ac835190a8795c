"""Generation engines: one part used by ``envhub eval`` and by the trainer.

* :mod:`.types`: :class:`SamplingParams`, :class:`Generation`, the :class:`GenerationEngine`
  protocol (torch-free);
* :mod:`.chat`: :class:`~.chat.ChatFormatter`, chat messages to token ids;
* :mod:`.transformers_engine`: :class:`~.transformers_engine.TransformersEngine`;
* :mod:`.vllm_engine`: :class:`~.vllm_engine.VLLMEngine` (with :mod:`.vllm_cpu_refit`, the
  vLLM-CPU weight refit);
* :mod:`.models`: the model resolver (``resolve_model``: ``smollm2``, ``tiny``, HF and GGUF
  folders), the SmolLM2 conversion and the tiny random Llama of the tests.

The engines stand on the core (:mod:`envhub.types`); the core never imports them. Importing
this package loads neither torch nor vLLM: they are imported by the modules that need them.
"""

from .types import FinishReason, Generation, GenerationEngine, SamplingParams

__all__ = ["FinishReason", "Generation", "GenerationEngine", "SamplingParams"]
