"""Ray worker groups driven by the single controller in :mod:`envhub.trainer.train`.

- :class:`PolicyWorker` (one per FSDP2 rank): the sharded policy
  (:class:`envhub.trainer.workers.policy.Policy`) and, with ``placement: colocated``, a generation
  engine holding the full weights, refit in place after every update (no copy through Ray or
  disk).
- :class:`ReferenceWorker`: the frozen initial policy, for the KL term (only when
  ``loss.kl_beta > 0``).
- :class:`EnvWorker`: environment clients made with ``envhub.make``; a threaded actor, so one
  slow episode does not hold up the others.

:class:`Cluster` starts them (on a private local Ray, or an existing cluster given by
``cluster.address``), and offers the driver plain methods over the groups.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import ray

from envhub.engines.types import Generation, SamplingParams
from envhub.trainer.algo.batch import Sample
from envhub.trainer.config import Config
from envhub.trainer.refit import build
from envhub.trainer.refit.base import Push
from envhub.trainer.refit.collective import RefitTransportError
from envhub.trainer.refit.syncs import WeightSync
from envhub.trainer.watchdog import Deadlines, PartHung, RunFailed, generation_work, get, log_stack
from envhub.trainer.workers.lora import adapter_files, merge_state, scaling
from envhub.trainer.workers.placement import check_cluster, describe, options, where
from envhub.types import Message, ResetResult, StepResult


def _set_threads(n: int) -> None:
    import torch

    torch.set_num_threads(n)
    os.environ["OMP_NUM_THREADS"] = str(n)


class PolicyWorker:
    """One FSDP2 rank, plus its colocated generation engine."""

    def __init__(self, rank: int, world_size: int, config: dict[str, Any], model_dir: str):
        """Remember settings; the process group is joined in :meth:`setup`."""
        self.rank, self.world_size = rank, world_size
        self.cfg = Config.model_validate(config)
        self.model_dir = model_dir
        _set_threads(self.cfg.cluster.threads_per_worker)
        self.policy: Any = None
        self.engine: Any = None
        self.sender = build.sender(self.cfg)
        """This rank's end of the refit's transport (``envhub.trainer.refit.build``)."""
        self.source = RankSource(self)

    def where(self) -> dict[str, Any]:
        """This actor's node id, node IP and pid (``envhub.trainer.workers.placement.where``)."""
        return where()

    def address(self) -> tuple[str, int]:
        """This node's IP and a free port, for rank 0 to host the process group."""
        ip = ray.util.get_node_ip_address()
        with socket.socket() as s:
            s.bind(("", 0))
            return ip, s.getsockname()[1]

    def setup(self, addr: str, port: int) -> bool:
        """Join the process group, load and shard the policy, load the engine. Collective."""
        import torch

        from envhub.engines.transformers_engine import TransformersEngine
        from envhub.trainer.workers.policy import Policy, init_distributed

        c = self.cfg
        gpu = c.cluster.gpus_per_worker > 0 and torch.cuda.is_available()
        backend = c.cluster.backend if c.cluster.backend != "auto" else ("nccl" if gpu else "gloo")
        device = "cuda" if gpu else "cpu"
        if self.world_size > 1:
            init_distributed(self.rank, self.world_size, addr, port, backend)
        self.policy = Policy(
            self.model_dir,
            rank=self.rank,
            world_size=self.world_size,
            optim=c.optim,
            loss=c.loss,
            total_optim_steps=c.train.steps * c.train.minibatches,
            temperature=c.rollout.sampling.temperature,
            micro_batch_size=c.train.micro_batch_size,
            device=device,
            dtype=c.model.dtype,
            seed=c.seed,
            off_policy_cap=c.generation.is_cap if c.max_trajectory_age > 0 else None,
            pack=c.train.pack,
            fused=c.train.fused,
            lora=c.model.lora,
            activation_checkpointing=c.model.activation_checkpointing,
        )
        if not c.separate_engines:  # otherwise engines are their own actors (generation.py)
            self.engine = TransformersEngine.from_pretrained(
                self.model_dir,
                dtype=c.model.dtype,
                device=device,
                batch_size=c.cluster.engine_batch_size,
            )
        return True

    def send(self, order: Any) -> Any:
        """Refit: carry out the driver's ``order`` with this rank's sender (see ``refit.base``).

        Most orders are collective (every rank gathers the full weights).
        """
        return self.sender.send(self.source, order)

    def close(self) -> None:
        """Leave what the refit's transport joined (best effort)."""
        self.sender.close()

    def engine_score(
        self, sequences: list[list[int]], starts: list[int], temperature: float
    ) -> list[list[float]]:
        """The colocated engine's logprobs of given tokens (refit verification)."""
        from envhub.trainer.workers.generation import engine_score

        return engine_score(self.engine, sequences, starts, temperature)

    def generate(
        self, prompts: list[list[int]], params: SamplingParams, seeds: list[int] | None = None
    ) -> list[Generation]:
        """Sample with the colocated engine (``seeds``: one per prompt, or None)."""
        return self.engine.generate(prompts, params, seeds)

    def logprobs(self, samples: list[Sample]) -> list[list[float]]:
        """Target-aligned logprobs under the current policy. Collective."""
        return self.policy.logprobs(samples)

    def reference_logprobs(self, samples: list[Sample]) -> list[list[float]]:
        """LoRA: the base model's logprobs (adapter disabled), the KL reference. Collective."""
        return self.policy.logprobs(samples, reference=True)

    def train(self, minibatches: list[list[Sample]]) -> dict[str, float]:
        """One GRPO update on this rank's shards. Collective."""
        return self.policy.train(minibatches)

    def save(self, directory: str) -> bool:
        """Write this rank's part of a checkpoint. Collective."""
        self.policy.save(directory)
        return True

    def load(self, directory: str) -> bool:
        """Restore from a checkpoint and refit the colocated engine. Collective."""
        self.policy.load(directory)
        if self.engine is not None:
            self.send(Push())
        return True

    def export(self, directory: str) -> bool:
        """Write the full policy as an HF directory (rank 0 writes). Collective.

        With LoRA: the merged model there, and the adapter alone in ``directory/adapter``.
        """
        state = self.policy.full_state_dict(merged=False)
        if self.rank == 0:
            if self.policy.lora:
                self.policy.export_adapter(Path(directory) / "adapter", state)
                state = merge_state(state, scaling(self.policy.model))
            self.policy.export(directory, state)
        return True

    def engine_state(self) -> dict[str, Any]:
        """The engine's weights (for tests: they must equal the policy's after a refit)."""
        return {k: v.clone() for k, v in self.engine.model.state_dict().items()}

    def policy_state(self) -> dict[str, Any]:
        """The policy's full weights on CPU (for tests; collective: every rank calls it)."""
        return {k: v.detach().to("cpu") for k, v in self.policy.full_state_dict().items()}


class RankSource:
    """What a policy rank offers its refit sender (``envhub.trainer.refit.base.Source``)."""

    def __init__(self, worker: PolicyWorker) -> None:
        """Read ``worker``'s policy and engine when asked (both exist after its setup)."""
        self.worker = worker
        self.rank = worker.rank

    def state(self) -> dict[str, Any]:
        """The full weights, LoRA adapters merged. Collective."""
        return self.worker.policy.full_state_dict()

    def adapter(self) -> dict[str, bytes] | None:
        """The LoRA adapter as ``peft`` saves it, from rank 0 (None elsewhere). Collective."""
        state = self.worker.policy.full_state_dict(merged=False)
        if self.rank != 0:
            return None
        return adapter_files(self.worker.policy.model, state)

    def engine(self) -> Any:
        """The colocated engine (None when engines are their own actors)."""
        return self.worker.engine


class ReferenceWorker:
    """The frozen initial policy; computes reference logprobs for the KL term."""

    def __init__(self, model_dir: str, config: dict[str, Any]):
        """Load the model (unsharded: forward passes only)."""
        cfg = Config.model_validate(config)
        self.cfg, self.model_dir, self.engine = cfg, model_dir, None
        _set_threads(cfg.cluster.threads_per_worker)
        from envhub.trainer.workers.policy import Policy

        self.policy = Policy(
            model_dir,
            optim=cfg.optim,
            loss=cfg.loss,
            total_optim_steps=1,
            temperature=cfg.rollout.sampling.temperature,
            micro_batch_size=cfg.train.micro_batch_size,
            dtype=cfg.model.dtype,
            seed=cfg.seed,
            pack=cfg.train.pack,
            fused=cfg.train.fused,
        )

    def logprobs(self, samples: list[Sample]) -> list[list[float]]:
        """Target-aligned reference logprobs of each sample."""
        return self.policy.logprobs(samples)

    def generate(
        self, prompts: list[list[int]], params: SamplingParams, seeds: list[int] | None = None
    ) -> list[Generation]:
        """Sample with these frozen weights (a distillation teacher's own pass rate).

        The engine is loaded on the first call only.
        """
        if self.engine is None:
            from envhub.engines.transformers_engine import TransformersEngine

            self.engine = TransformersEngine.from_pretrained(
                self.model_dir,
                dtype=self.cfg.model.dtype,
                batch_size=self.cfg.cluster.engine_batch_size,
            )
        return self.engine.generate(prompts, params, seeds)

    def where(self) -> dict[str, Any]:
        """This actor's node id, node IP and pid (``envhub.trainer.workers.placement.where``)."""
        return where()


class EnvWorker:
    """A pool of environment clients made with ``envhub.make`` (threaded actor)."""

    def __init__(self, name: str, runner: str | None, overrides: dict[str, Any]):
        """Remember how to make clients; they are made on demand."""
        import envhub
        from envhub.trainer.episodes.rollout import LocalEnvPool

        self.pool = LocalEnvPool(lambda: envhub.make(name, runner, **overrides))

    def where(self) -> dict[str, Any]:
        """This actor's node id, node IP and pid (``envhub.trainer.workers.placement.where``)."""
        return where()

    def describe(self, with_tasks: bool) -> dict[str, Any]:
        """The environment's ``primary`` component and, maybe, its training tasks.

        Tasks come as ``(task_id, metadata["difficulty"])`` pairs when ``with_tasks``.
        """
        env = self.pool.factory()
        try:
            out: dict[str, Any] = {"primary": env.primary_component}
            if with_tasks:
                out["tasks"] = [(t.task_id, t.metadata.get("difficulty")) for t in env.tasks()]
            return out
        finally:
            env.close()

    def reset(self, key: str, seed: int | None, task_id: str | None) -> ResetResult:
        """See :class:`envhub.trainer.episodes.rollout.EnvPool`."""
        return self.pool.reset(key, seed, task_id)

    def step(self, key: str, message: Message) -> StepResult:
        """See :class:`envhub.trainer.episodes.rollout.EnvPool`."""
        return self.pool.step(key, message)

    def finish(self, key: str) -> StepResult:
        """See :class:`envhub.trainer.episodes.rollout.EnvPool`."""
        return self.pool.finish(key)

    def close(self, key: str, discard: bool = False) -> None:
        """See :class:`envhub.trainer.episodes.rollout.EnvPool`."""
        self.pool.close(key, discard)

    def shutdown(self) -> None:
        """Close every client (servers and containers the runner started)."""
        self.pool.shutdown()


class RayEnvPool:
    """An :class:`~envhub.trainer.episodes.rollout.EnvPool` over :class:`EnvWorker` actors.

    A call past its deadline drops its episode (``infra_error``). While a call waits, its
    actor is asked for a sign of life every :data:`CHECK_EVERY_S`; one that gives none within
    :data:`PING_S` is handed to ``on_hung`` (the cluster logs its stack, kills it and Ray
    starts it again) and the calls waiting on it end at once.
    """

    PING_S = 10.0
    CHECK_EVERY_S = 30.0

    def __init__(self, actors: Sequence[Any], timeout_s: float, on_hung: Any = None):
        """Route episodes to ``actors``; ``timeout_s`` bounds each call."""
        self.actors, self.timeout_s = list(actors), timeout_s
        self.on_hung = on_hung
        self._route: dict[str, Any] = {}
        self._next = itertools.cycle(range(len(self.actors)))
        self._lock = threading.Lock()
        self._checked: dict[str, float] = {}
        self._hung: set[str] = set()

    def reset(self, key: str, seed: int | None, task_id: str | None) -> ResetResult:
        """Start ``key`` on the next actor (waiting, within the deadline, for one Ray restarts).

        Nothing of the episode exists before its reset, so a reset refused by an actor that
        is restarting is simply sent again; later calls of a lost episode are not retried
        (its state died with the process: the episode is dropped).
        """
        with self._lock:
            actor = self.actors[next(self._next)]
            self._route[key] = actor
        end = time.monotonic() + self.timeout_s
        while True:
            try:
                ref = actor.reset.remote(key, seed, task_id)
                return self._answer(actor, ref, max(0.1, end - time.monotonic()))
            except ray.exceptions.ActorUnavailableError:
                if time.monotonic() >= end:
                    raise
                time.sleep(0.5)

    def step(self, key: str, message: Message) -> StepResult:
        """Step ``key`` on its actor."""
        actor = self._route[key]
        return self._answer(actor, actor.step.remote(key, message), self.timeout_s)

    def finish(self, key: str) -> StepResult:
        """End ``key`` from outside: its final accounting."""
        actor = self._route[key]
        return self._answer(actor, actor.finish.remote(key), self.timeout_s)

    def close(self, key: str, discard: bool = False) -> None:
        """End ``key``."""
        with self._lock:
            actor = self._route.pop(key, None)
        if actor is not None:
            self._answer(actor, actor.close.remote(key, discard), self.timeout_s)

    def _answer(self, actor: Any, ref: Any, timeout_s: float) -> Any:
        """The call's answer within ``timeout_s``; a worker found hung meanwhile is restarted.

        The wait goes in slices of :data:`CHECK_EVERY_S`: after each slice without an answer
        the worker is pinged, so a stopped or wedged process is found within a minute or so,
        however long the call's own deadline (work plus admission to a busy server).
        """
        end = time.monotonic() + timeout_s
        while True:
            left = end - time.monotonic()
            try:
                return ray.get(ref, timeout=max(min(left, self.CHECK_EVERY_S), 0.1))
            except ray.exceptions.GetTimeoutError:
                if left <= self.CHECK_EVERY_S or not self._check(actor):
                    raise

    def _check(self, actor: Any) -> bool:
        """Ping an actor late to answer; a hung one goes to ``on_hung``. False when hung."""
        key = _actor_key(actor)
        now = time.monotonic()
        with self._lock:  # one check per actor at a time, however many calls were late
            recent = now - self._checked.get(key, -1e9) < self.PING_S * 3
            if not recent:
                self._checked[key] = now
        if recent:
            return key not in self._hung
        try:
            ray.get(actor.where.remote(), timeout=self.PING_S)
            self._hung.discard(key)
            return True
        except ray.exceptions.GetTimeoutError:
            self._hung.add(key)
            if self.on_hung is not None:
                self.on_hung(actor)
            return False
        except ray.exceptions.RayError:
            return True  # dead or restarting: Ray's restart is already under way


class Cluster:
    """Starts Ray (if needed) and the worker groups; the driver's handle on them."""

    def __init__(self, config: Config, model_dir: str, *, env_workers: bool = True):
        """Start everything; call :meth:`shutdown` (or use ``with``) to stop what was started.

        ``env_workers=False`` (``envhub sft``: validation makes its own environments) starts
        no environment worker.
        """
        self._empty(config)
        self._with_env_workers = env_workers
        self._start_ray()
        try:
            self._start_workers(model_dir)
        except BaseException:
            self.shutdown()
            raise

    @classmethod
    def over(cls, config: Config, engines: list[Any], policy: list[Any], sync: Any = None):
        """A cluster over actors started elsewhere (tests): no Ray start, no workers."""
        self = cls.__new__(cls)
        self._empty(config)
        self.engines, self.policy, self.weight_sync = engines, policy, sync
        return self

    def _empty(self, config: Config) -> None:
        """The state of a cluster with no worker yet."""
        self.cfg = config
        self._own_ray = False
        self._ray_dir: str | None = None
        self.policy: list[Any] = []
        self.env_workers: list[Any] = []
        self.reference: Any = None
        self.teacher: Any = None
        """``loss.distill`` with a model-path teacher: its worker (never refit)."""
        self.engines: list[Any] = []
        self.weight_sync: WeightSync | None = None
        """The refit's driver side (``envhub.trainer.refit.build.conductor``)."""
        self.weights_version = 0
        """Refits so far: engines hold this version after each (checked before sampling)."""
        self.lost_engines = 0
        """Engines lost, hung or failed while sampling (restarted and refit)."""
        self.deadlines = Deadlines(config.watchdog)
        self.failures: list[str] = []
        """What failed since :meth:`take_failures` (a hung or raising engine, ...)."""
        self._pids: dict[str, int] = {}

    def _start_workers(self, model_dir: str) -> None:
        config = self.cfg
        c = config.cluster
        n = c.policy_workers
        if c.check_resources:  # an unsatisfiable request fails here, naming the resource
            check_cluster(config)
        placed = options(c.policy_resources)
        actor = ray.remote(num_cpus=c.threads_per_worker, num_gpus=c.gpus_per_worker, **placed)(
            PolicyWorker
        )
        data = config.worker_dump()
        self.policy = [actor.remote(r, n, data, model_dir) for r in range(n)]
        startup = config.watchdog.startup_s
        addr, port = self._get(self.policy[0].address.remote(), "policy worker start", startup)
        refs = [w.setup.remote(addr, port) for w in self.policy]
        self._get(refs, "policy workers loading the model", startup)
        from envhub.trainer.workers.generation import start_engines

        self.engines = start_engines(config, model_dir) if config.separate_engines else []
        self.weight_sync = build.conductor(config, self.policy, self.engines)
        if config.model.lora.enabled:
            what = "the LoRA adapter alone" if config.adapter_refit else "merged weights"
            logging.getLogger("envhub.trainer").info("refit: %s", what)
        if config.loss.kl_beta > 0 and not config.model.lora.enabled:
            # (with LoRA the reference is the policy's base model: no second copy)
            ref = ray.remote(num_cpus=0, **placed)(ReferenceWorker)
            self.reference = ref.remote(model_dir, data)
        self._start_teacher(data)
        if self._with_env_workers:
            self._start_env_workers()

    def _start_teacher(self, data: dict[str, Any]) -> None:
        """``loss.distill.teacher`` (a model path): a frozen worker on its own placement."""
        d = self.cfg.loss.distill
        if d is None or d.is_self:
            return
        from envhub.engines.weights import resolve_model

        teacher = ray.remote(num_cpus=d.cpus, num_gpus=d.gpus, **options(d.resources))(
            ReferenceWorker
        )
        self.teacher = teacher.remote(str(resolve_model(d.teacher)), data)

    def _start_env_workers(self) -> None:
        """``workers`` environment actors per mix source, behind one routed pool."""
        from envhub.trainer.episodes.rollout import RoutedEnvPool

        e = self.cfg.env
        env_actor = ray.remote(
            num_cpus=0, max_concurrency=256, max_restarts=e.max_restarts, **options(e.resources)
        )(EnvWorker)
        pools: dict[str, RayEnvPool] = {}
        self.env_groups: dict[str, list[Any]] = {}
        for src in self.cfg.sources():
            overrides = dict(src.overrides)
            if src.split:
                overrides["split"] = src.split
            actors = [env_actor.remote(src.name, src.runner, overrides) for _ in range(src.workers)]
            self.env_groups[src.name] = actors
            self.env_workers.extend(actors)
            pools[src.name] = RayEnvPool(actors, e.call_deadline_s, self._env_hung)
        self.env_pool = RoutedEnvPool(pools)

    def env_info(self, with_tasks: bool) -> dict[str, dict[str, Any]]:
        """Per source: its ``primary`` component and, ``with_tasks``, its training tasks."""
        names = list(self.env_groups)
        refs = [self.env_groups[n][0].describe.remote(with_tasks) for n in names]
        got = self._get(refs, "environment workers", self.cfg.watchdog.startup_s)
        return dict(zip(names, got, strict=True))

    def _env_hung(self, actor: Any) -> None:
        """An environment worker that answers nothing: its stack, then a restart by Ray."""
        name = next((n for n, group in self.env_groups.items() if actor in group), "?")
        part = f"environment worker of {name}"
        log_stack(self.pid_of(actor), part)
        self.failures.append(f"{part} hung (no answer to a ping); killed and restarted")
        ray.kill(actor, no_restart=False)

    def _start_ray(self) -> None:
        if ray.is_initialized():
            return
        if not sys.stdout.isatty():  # the workers' lines in a log: no colour codes around them
            os.environ.setdefault("RAY_COLOR_PREFIX", "0")
        address = self.cfg.cluster.address
        if address:
            # An existing cluster: code reaches the workers through the image or the job's
            # runtime environment (`ray job submit --working-dir .`).
            # A head on loopback registers its node as 127.0.0.1; the driver must match it.
            host = address.split("://")[-1].rsplit(":", 1)[0]
            local = {"_node_ip_address": "127.0.0.1"} if host in ("127.0.0.1", "localhost") else {}
            ray.init(address=address, log_to_driver=True, **local)
        else:
            # A private local Ray: its own temp dir (never joins a stale cluster on a shared
            # machine), stopped by this process alone at the end (never `ray stop`).
            repo = str(checkout_root())
            path = os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH", "")) if p)
            env = {"PYTHONPATH": path, "TOKENIZERS_PARALLELISM": "false"}
            self._ray_dir = tempfile.mkdtemp(prefix="envhub-ray-")
            logging.getLogger(RAY_AUTH_LOGGER).addFilter(_without_auth_notice)
            ray.init(
                address="local",
                num_cpus=self.cfg.cluster.num_cpus or os.cpu_count(),
                _temp_dir=self._ray_dir,
                include_dashboard=False,
                runtime_env={"env_vars": env},
                log_to_driver=True,
            )
        self._own_ray = True
        _unwind_on_sigterm()

    def placement(self) -> list[dict[str, Any]]:
        """Every actor's group, rank, node id, node IP and pid (``DIR/placement.json``)."""
        groups = {"policy": self.policy, "generation": self.engines, "env": self.env_workers}
        if self.reference is not None:
            groups["reference"] = [self.reference]
        if self.teacher is not None:
            groups["teacher"] = [self.teacher]
        rows = describe(groups)
        actors = [a for group in groups.values() for a in group]
        for actor, row in zip(actors, rows, strict=True):
            self._pids[_actor_key(actor)] = row["pid"]
        return rows

    def pid_of(self, actor: Any) -> int | None:
        """The process of ``actor`` as last seen (start, or its restart), if known."""
        return self._pids.get(_actor_key(actor))

    def take_failures(self) -> list[str]:
        """What failed since the last call (each a line naming the part)."""
        out, self.failures = self.failures, []
        return out

    def _get(self, refs: Any, part: str, deadline_s: float, actors: Sequence[Any] = ()) -> Any:
        """:func:`envhub.trainer.watchdog.get` with this run's progress setting and pids."""
        pids = [self.pid_of(a) for a in actors] if actors else None
        every = self.cfg.watchdog.progress_every_s
        return get(refs, part, deadline_s, progress_every_s=every, pids=pids)

    def _policy_get(self, refs: list[Any], what: str, deadline_s: float) -> list[Any]:
        """The policy ranks' answers to ``what``; a hang or an exception stops the run.

        FSDP ranks cannot be replaced mid-run, so a rank that gives no answer within the
        deadline, or raises, ends the run (exit code 1) with a message naming it; a rank that
        died is :class:`envhub.trainer.train.WorkerLost` (Ray's actor error, raised as is).
        """
        try:
            return self._get(refs, f"policy workers ({what})", deadline_s, self.policy)
        except PartHung as e:
            ranks = ", ".join(str(r) for r in e.late)
            raise RunFailed(
                f"policy worker rank {ranks} gave no answer to {what} within "
                f"{deadline_s:.0f} s (watchdog.*; its state is logged above): the run "
                "stops, as FSDP ranks cannot be replaced mid-run. Rerun with --resume auto "
                "to continue from the newest checkpoint."
            ) from e
        except ray.exceptions.RayTaskError as e:
            raise RunFailed(f"a policy worker raised during {what}: {_cause(e)}") from e

    # ------------------------------------------------------------------ group operations

    def generate(
        self, prompts: list[list[int]], params: SamplingParams, seeds: list[int] | None = None
    ) -> list[Generation | Exception]:
        """Split the prompts over the engines; results in prompt order.

        ``seeds``: one per prompt, each prompt's own (validation's requests); without them,
        engine ``r`` samples its share with ``params.seed + 7919 r``. With engine actors, a
        prompt whose engine died while sampling gets the exception instead of a generation
        (the rollout drops its episode as ``infra_error``); the engine, restarted by Ray, is
        refit with the current weights before it samples again.
        """
        group = self.engines or self.policy
        n = len(group)
        size = -(-len(prompts) // n)
        shares = [slice(i * size, (i + 1) * size) for i in range(n)]
        bases = [None if params.seed is None else params.seed + 7919 * r for r in range(n)]
        work = [
            (w, prompts[s], replace(params, seed=bases[r]), None if seeds is None else seeds[s])
            for r, (w, s) in enumerate(zip(group, shares, strict=True))
            if prompts[s]
        ]
        deadline = max(self.deadlines.generation(c, params.max_tokens) for _, c, _, _ in work)
        if not self.engines:  # colocated: a lost policy worker ends the run
            refs = [w.generate.remote(c, p, k) for w, c, p, k in work]
            return [g for part in self._policy_get(refs, "generation", deadline) for g in part]
        version = self.weights_version
        t0 = time.monotonic()
        refs = [w.generate.remote(c, p, version, k) for w, c, p, k in work]
        end = t0 + deadline
        out = [
            g
            for (w, c, p, k), ref in zip(work, refs, strict=True)
            for g in self._engine_result(w, (c, p, version, k), ref, end)
        ]
        if not self.failures:  # a clean call tells how fast the engines are now
            most = max(generation_work(c, params.max_tokens) for _, c, _, _ in work)
            self.deadlines.observe("generation", most, time.monotonic() - t0)
        return out

    def _engine_result(
        self, engine: Any, call: tuple, ref: Any, end: float
    ) -> list[Generation | Exception]:
        """One engine's generations by ``end`` (monotonic); a failed engine is restarted.

        ``call``: the arguments its ``generate`` was sent (prompts first), sent again after a
        refit when the engine had restarted while idle. An engine that died, raised or gave
        no answer by ``end`` is restarted (killed first when alive) and refit; its prompts
        get the failure in place of a generation (the rollout drops them as ``infra_error``).
        """
        from envhub.trainer.workers.generation import EngineNotRefit

        chunk = call[0]
        index = self.engines.index(engine)
        part = f"generation engine {index}"
        try:
            return self._get(ref, part, max(end - time.monotonic(), 1.0), [engine])
        except EngineNotRefit:  # restarted while idle: refit it, then sample as asked
            self._revive(engine)
            return self._get(engine.generate.remote(*call), part, self.deadlines.fixed(2))
        except ray.exceptions.RayActorError as e:  # died while sampling: Ray restarts it
            return self._lost(engine, chunk, f"{part} died while sampling ({type(e).__name__})")
        except PartHung as e:
            failure = f"{part} hung ({e}); killed and restarted"
        except ray.exceptions.RayTaskError as e:  # it raised: vLLM may be left spinning
            failure = f"{part} raised while sampling ({_cause(e)}); killed and restarted"
        self._restart(engine)
        return self._lost(engine, chunk, failure)

    def _lost(self, engine: Any, chunk: list, failure: str) -> list[Generation | Exception]:
        """Count a failed engine call, refit the engine (restarted), fail the call's prompts."""
        self.lost_engines += 1
        self.failures.append(failure)
        self._revive(engine)
        return [RuntimeError(failure)] * len(chunk)

    def _restart(self, engine: Any) -> None:
        """Kill ``engine`` (hung or broken) and wait for Ray's new process (refit next)."""
        old = self.pid_of(engine)
        if old is None:  # not placed yet: ask (a hung one does not answer; it is killed anyway)
            with contextlib.suppress(ray.exceptions.RayError):
                old = ray.get(engine.where.remote(), timeout=2)["pid"]
        ray.kill(engine, no_restart=False)  # a dead one is restarting already
        end = time.monotonic() + self.cfg.generation.restart_timeout_s
        while time.monotonic() < end:  # the kill is asynchronous: the old process may answer
            try:
                info = ray.get(engine.where.remote(), timeout=max(end - time.monotonic(), 0.1))
            except ray.exceptions.ActorUnavailableError:
                time.sleep(0.2)
                continue
            except ray.exceptions.RayError as e:
                raise RunFailed(f"generation engine {self.engines.index(engine)}: {e}") from e
            if info["pid"] != old:
                break
            time.sleep(0.2)

    def _revive(self, engine: Any) -> None:
        """Wait for Ray to restart ``engine``, then load the current weights into it.

        Raises:
            RunFailed: the engine is not back (restarts used up, or past
                ``generation.restart_timeout_s``).
        """
        assert self.weight_sync is not None, "the cluster's workers are started"
        try:
            self.weight_sync.revive(engine, self.cfg.generation.restart_timeout_s)
        except RuntimeError as e:
            raise RunFailed(f"generation engine {self.engines.index(engine)}: {e}") from e
        self.placement_of(engine)

    def placement_of(self, engine: Any) -> None:
        """Record the (new) process of ``engine``."""
        info = self._get(engine.where.remote(), "generation engine", self.deadlines.fixed())
        self._pids[_actor_key(engine)] = info["pid"]

    def refit(self) -> float:
        """New weights into every engine (:mod:`envhub.trainer.refit.syncs`); returns seconds."""
        # the version moves on once every engine holds it: a rollout running meanwhile
        # (in-flight updates) still asks for the previous one, which the engines exceed
        version = self.weights_version + 1
        if self.cfg.generation.sleep_while_training and self.engines:
            self._get([e.wake_up.remote() for e in self.engines], "engines' wake-up", 120.0)
        seconds = self._push(version)
        self.weights_version = version
        return seconds

    def _push(self, version: int) -> float:
        """The weight sync's push; a hung engine is restarted, a hung policy rank stops the run.

        Raises:
            RunFailed: a policy rank gave no answer.
            RefitTransportError: the transport failed and no engine is hung (an engine dead
                for good, a member that refused; the message names the transport).
        """
        assert self.weight_sync is not None, "the cluster's workers are started"
        try:
            seconds = self.weight_sync.push(version)
            late = self.weight_sync.late
        except PartHung as e:  # colocated engines or the gather: the policy ranks
            raise RunFailed(
                f"{e} during the refit: the run stops (FSDP ranks cannot be "
                "replaced mid-run); rerun with --resume auto"
            ) from e
        except RefitTransportError:
            hung = [x for x in self.engines if not self._answers(x)]
            if not hung:  # dead for good, or a transport fault: the error names it
                raise
            seconds, late = 0.0, hung
        for engine in late:  # restarted, then refit
            self.failures.append(
                f"generation engine {self.engines.index(engine)} hung in the refit; restarted"
            )
            log_stack(self.pid_of(engine), "a generation engine's refit")
            self._restart(engine)
            self._revive(engine)
        return seconds

    def _answers(self, engine: Any) -> bool:
        """True when ``engine`` answers a ping within 10 s."""
        try:
            ray.get(engine.where.remote(), timeout=10)
            return True
        except ray.exceptions.GetTimeoutError:
            return False
        except ray.exceptions.RayError:
            return True  # dead or restarting: Ray brings it back; the refit sync readmits it

    def policy_logprobs(self, shards: list[list[Sample]]) -> list[list[list[float]]]:
        """Current-policy logprobs of each rank's shard."""
        refs = [w.logprobs.remote(s) for w, s in zip(self.policy, shards, strict=True)]
        return self._policy_get(refs, "logprobs", self._forward_deadline(shards))

    def _forward_deadline(self, shards: Sequence[Sequence[Sample]]) -> float:
        tokens = max((sum(len(s.tokens) for s in shard) for shard in shards), default=0)
        return self.deadlines.train(tokens, passes=0.5)

    def reference_logprobs(self, samples: list[Sample]) -> list[list[float]]:
        """Reference logprobs (requires ``loss.kl_beta > 0``).

        With LoRA, the policy workers score their shards with the adapter disabled.
        """
        if self.cfg.model.lora.enabled:
            return self._base_model_logprobs(samples)
        if self.reference is None:
            raise RuntimeError("no reference worker: loss.kl_beta is 0")
        ref = self.reference.logprobs.remote(samples)
        return self._policy_get([ref], "reference logprobs", self._forward_deadline([samples]))[0]

    def teacher_logprobs(self, samples: list[Sample]) -> list[list[float]]:
        """The distillation teacher's target-aligned logprobs (``loss.distill.teacher``)."""
        if self.teacher is None:
            raise RuntimeError("no teacher worker: loss.distill.teacher is unset or 'self'")
        ref = self.teacher.logprobs.remote(samples)
        return self._policy_get([ref], "teacher logprobs", self._forward_deadline([samples]))[0]

    def teacher_generate(
        self, prompts: list[list[int]], params: SamplingParams, seeds: list[int] | None = None
    ) -> list[Generation]:
        """Generations of the distillation teacher (its held-out pass rate)."""
        if self.teacher is None:
            raise RuntimeError("no teacher worker: loss.distill.teacher is unset or 'self'")
        deadline = self.deadlines.generation(prompts, params.max_tokens) + self.deadlines.fixed()
        ref = self.teacher.generate.remote(prompts, params, seeds)
        return self._get(ref, "teacher generation", deadline, [self.teacher])

    def sharded_logprobs(self, samples: list[Sample]) -> list[list[float]]:
        """The current policy's logprobs of ``samples``, scored in shards over the ranks."""
        from envhub.trainer.algo.batch import shard

        shards = shard(samples, len(self.policy), pad_id=0)  # padding samples score nothing
        found = {}
        for part, lps in zip(shards, self.policy_logprobs(shards), strict=True):
            found.update({id(s): lp for s, lp in zip(part, lps, strict=True)})
        return [found[id(s)] for s in samples]

    def _base_model_logprobs(self, samples: list[Sample]) -> list[list[float]]:
        """LoRA's reference: each policy rank scores a shard with its adapter disabled."""
        from envhub.trainer.algo.batch import shard

        shards = shard(samples, len(self.policy), pad_id=0)  # padding samples score nothing
        refs = [w.reference_logprobs.remote(s) for w, s in zip(self.policy, shards, strict=True)]
        found = {}
        got = self._policy_get(refs, "reference logprobs", self._forward_deadline(shards))
        for part, lps in zip(shards, got, strict=True):
            found.update({id(s): lp for s, lp in zip(part, lps, strict=True)})
        return [found[id(s)] for s in samples]

    def train(self, per_rank: list[list[list[Sample]]]) -> list[dict[str, float]]:
        """Run the update; ``per_rank[r]`` is rank r's list of minibatch shards.

        With ``generation.sleep_while_training`` the engines sleep first (woken by
        :meth:`refit`).
        """
        if self.cfg.generation.sleep_while_training and self.engines:
            self._get([e.sleep.remote() for e in self.engines], "engines' sleep", 120.0)
        refs = [w.train.remote(mb) for w, mb in zip(self.policy, per_rank, strict=True)]
        tokens = max(sum(len(s.tokens) for mb in rank for s in mb) for rank in per_rank)
        t0 = time.monotonic()
        stats = self._policy_get(refs, "the policy update", self.deadlines.train(tokens))
        self.deadlines.observe("train", tokens, time.monotonic() - t0)
        return stats

    def save(self, directory: str | Path) -> None:
        """All ranks write their shards into ``directory``."""
        refs = [w.save.remote(str(directory)) for w in self.policy]
        self._policy_get(refs, "saving a checkpoint", self.deadlines.fixed(5))

    def load(self, directory: str) -> None:
        """All ranks restore from ``directory`` (and refit their engines)."""
        refs = [w.load.remote(directory) for w in self.policy]
        self._policy_get(refs, "loading a checkpoint", self.deadlines.fixed(5))
        if self.engines:
            self.refit()

    def export(self, directory: str) -> None:
        """Write the policy as a plain HF directory."""
        refs = [w.export.remote(directory) for w in self.policy]
        self._policy_get(refs, "exporting the model", self.deadlines.fixed(5))

    def engine_logprobs(
        self, sequences: list[list[int]], starts: list[int], temperature: float
    ) -> list[list[float]]:
        """The first engine's logprobs of given tokens (``generation.engine_score``)."""
        deadline = self.deadlines.generation(sequences, 1)
        if not self.engines:
            ref = self.policy[0].engine_score.remote(sequences, starts, temperature)
            return self._policy_get([ref], "engine scoring", deadline)[0]
        first = self.engines[0]
        try:
            ref = first.score.remote(sequences, starts, temperature)
            return self._get(ref, "engine scoring", deadline, [first])
        except ray.exceptions.RayActorError:  # lost since the refit: restarted, refit, retried
            self._revive(first)
            ref = first.score.remote(sequences, starts, temperature)
            return self._get(ref, "engine scoring", deadline, [first])

    def shutdown(self) -> None:
        """Stop the actors, and the local Ray if this cluster started it."""
        from envhub.trainer.workers.generation import close_engines, stop_actors

        if self.weight_sync is not None:  # the collective transports' group
            self.weight_sync.close()
        close_engines(self.engines)
        stop_actors(self.env_workers, lambda worker: worker.shutdown.remote())
        for a in [*self.policy, *(w for w in (self.reference, self.teacher) if w is not None)]:
            ray.kill(a)
        if self._own_ray:
            ray.shutdown()
            self._own_ray = False
            if signal.getsignal(signal.SIGTERM) is _sigterm_exit:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if self._ray_dir:
            shutil.rmtree(self._ray_dir, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


RAY_AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"
RAY_AUTH_NOTICE = "Token authentication is enabled for this Ray cluster"


def _without_auth_notice(record: logging.LogRecord) -> bool:
    """Drops Ray 2.60's notice that a new local cluster uses token authentication (its default).

    Ray logs it on every ``ray.init`` that starts a cluster unless ``RAY_AUTH_MODE`` is set, and
    that variable is read when ``ray`` is imported: set later, the driver and the cluster it
    starts disagree and the driver is refused ("Authentication token is missing").
    """
    return RAY_AUTH_NOTICE not in record.getMessage()


def _sigterm_exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _unwind_on_sigterm() -> None:
    """Make SIGTERM (``kill``, a scheduler's stop) unwind the driver like Ctrl-C does.

    ``ray.init`` installs a driver handler that aborts the process on SIGTERM, so the
    cluster's ``shutdown`` never runs: actors stay up on a shared cluster and a private local
    Ray leaves agent processes behind. Raising ``SystemExit`` instead lets ``with Cluster``
    stop them. Only the main thread can set handlers; elsewhere Ray's stays.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _sigterm_exit)


def checkout_root() -> Path:
    """The folder that holds the ``envhub`` package: the workers' ``PYTHONPATH`` entry.

    Never the package folder itself, whose ``types.py`` would shadow the standard library's.
    """
    return Path(__file__).resolve().parents[3]


def _actor_key(actor: Any) -> str:
    """A stable key of an actor handle (its Ray actor id; any object's id in tests)."""
    actor_id = getattr(actor, "_actor_id", None)
    return actor_id.hex() if actor_id is not None else str(id(actor))


def _cause(err: BaseException) -> str:
    """A worker's exception as one line: its type and message, without Ray's traceback."""
    cause = getattr(err, "cause", None) or err
    text = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {text[-1] if text else ''}"
