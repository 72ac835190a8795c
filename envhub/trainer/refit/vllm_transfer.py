"""Refit through vLLM's own weight-transfer API: ``generation.weight_transfer: vllm``.

**Written for GPUs and never run on one** (no GPU was available to this work); on CPU it is
refused, because vLLM's backends are GPU-only (its ``nccl`` backend runs on PyNccl and CUDA
streams, ``ipc`` on CUDA IPC handles). What is tested here: the config checks, the detection
of the API in the installed vLLM, the refusals, and the sender's bookkeeping through vLLM's
own packing code with the CUDA streams replaced (``tests/trainer/test_vllm_transfer.py``).

vLLM (0.32 here, ``vllm.distributed.weight_transfer``) offers RL trainers a weight-transfer
API: an engine started with a ``WeightTransferConfig`` takes ``init_weight_transfer_engine``,
``start_weight_update``, ``update_weights`` and ``finish_weight_update`` (methods of
``vllm.LLM``), and the trainer side is ``WeightTransferTrainerFactory.trainer_init(init_info,
client=..., source=...)``, then ``send_weights()`` at every refit. With the flag, envhub uses
it in place of its own collective (:mod:`envhub.trainer.refit.collective`):

- the engines (:class:`envhub.trainer.workers.generation.GenerationWorker`, ``placement: split``)
  start vLLM with ``weight_transfer_config={"backend": "nccl"}``; their
  :class:`VLLMTransferReceiver` carries out ``LLM``'s four calls, each an order
  (:class:`InitTransfer`, :class:`StartUpdate`, :class:`Update`, :class:`FinishUpdate`) that
  :class:`EngineClient` (vLLM's ``RayVLLMWeightSyncClient``, spoken through the engines'
  ``receive``) sends them;
- policy rank 0 is the sender (:class:`VLLMTransferSender` over :class:`VLLMSender`): group
  rank 0 of vLLM's NCCL group, the engines ranks 1..N (vLLM's ``rank_offset=1``), the
  rendezvous on a free port of its node; its source
  (:class:`envhub.trainer.refit.vllm_source.StateSource`) is the full state dict that every
  rank gathers at each refit (only rank 0 sends), tied weights sent once, packed by vLLM into
  buffers of ``generation.bucket_mb``;
- the driver (:class:`VLLMTransferSync`) runs the gather-and-send on every rank and then
  tells each engine the new weight version (:class:`SetVersion`).

Refused: in the config (:meth:`envhub.trainer.config.Config`), without ``cluster.engine:
vllm``, without ``placement: split``, with a ``generation.transport`` or without GPUs on
the policy workers and engines; at start, in the driver, when the installed vLLM lacks the
API (:func:`require_support`), and in each actor without a CUDA device
(:func:`require_cuda`). Not done: vLLM's ``ipc`` backend (colocated engines on the
trainer's GPU), forming the group again after Ray restarts an engine (a lost engine stops
the run; resume it with ``--resume auto``), LoRA adapter-only refits (merged weights go).
"""

from __future__ import annotations

import importlib
import importlib.util
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envhub.trainer.config import TrainConfigError
from envhub.trainer.refit.base import Loaded, Push, Source, unknown

API: tuple[tuple[str, str], ...] = (
    ("vllm.config", "WeightTransferConfig"),
    ("vllm.distributed.weight_transfer", "WeightTransferTrainerFactory"),
    ("vllm.distributed.weight_transfer", "WeightSource"),
    ("vllm.distributed.weight_transfer", "ParamMeta"),
    ("vllm.distributed.weight_transfer.base", "WeightTransferInitRequest"),
    ("vllm.distributed.weight_transfer.base", "WeightTransferUpdateRequest"),
    ("vllm.distributed.weight_transfer.nccl_engine", "NCCLTrainerInitInfo"),
    ("vllm", "LLM"),
)
"""What the flag uses from vLLM: ``(module, name)``."""
LLM_METHODS = (
    "init_weight_transfer_engine",
    "start_weight_update",
    "update_weights",
    "finish_weight_update",
)
"""The engine-side calls, on ``vllm.LLM``."""
INSTEAD = (
    "use generation.weight_transfer=envhub (the default: generation.transport=nccl is "
    "envhub's own collective on GPUs, gloo or object_store on CPUs)"
)


def missing_support() -> str | None:
    """Why the installed vLLM cannot do the flag's refit; None when it can.

    Imports the modules of :data:`API` (vLLM's import takes seconds) and looks for each name,
    and for :data:`LLM_METHODS` on ``vllm.LLM``.
    """
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed"
    for module, name in API:
        try:
            found = getattr(importlib.import_module(module), name, None)
        except ImportError as e:
            return f"the installed vLLM has no {module} ({type(e).__name__}: {e})"
        if found is None:
            return f"the installed vLLM has no {module}.{name}"
    llm = importlib.import_module("vllm").LLM
    absent = [m for m in LLM_METHODS if not callable(getattr(llm, m, None))]
    if absent:
        return f"the installed vLLM's LLM has no {', '.join(absent)}"
    return None


def require_support() -> None:
    """Raise unless the installed vLLM has the weight-transfer API (the driver, at start).

    Raises:
        TrainConfigError: naming what is missing and what to use instead.
    """
    reason = missing_support()
    if reason is not None:
        raise TrainConfigError(
            f"generation.weight_transfer=vllm needs vLLM's weight-transfer API "
            f"(vllm.distributed.weight_transfer, vLLM >= 0.32), but {reason}: upgrade vLLM "
            f"on every node, or {INSTEAD}"
        )


def require_cuda(who: str) -> None:
    """Raise unless this process has a CUDA device (vLLM's backends are GPU-only).

    Raises:
        TrainConfigError: ``who`` (e.g. ``policy rank 0``) has no CUDA device.
    """
    import torch

    if not torch.cuda.is_available():
        raise TrainConfigError(
            f"generation.weight_transfer=vllm: vLLM's weight-transfer backends are GPU-only "
            f"(nccl runs on PyNccl and CUDA streams, ipc on CUDA IPC handles) and {who} has "
            f"no CUDA device; on CPUs {INSTEAD}"
        )


def init_info(engines: int, host: str, port: int, bucket_mb: int) -> Any:
    """The ``NCCLTrainerInitInfo`` (vLLM's) of policy rank 0 and ``engines`` engines.

    Packed transfer in buffers of ``bucket_mb`` MB (vLLM's default is 1 GB, two buffers).
    """
    from vllm.distributed.weight_transfer.nccl_engine import NCCLTrainerInitInfo

    return NCCLTrainerInitInfo(
        master_address=host,
        master_port=port,
        world_size=engines + 1,
        packed=True,
        packed_buffer_size_bytes=bucket_mb * 2**20,
        rank=0,
    )


class VLLMSender:
    """Policy rank 0's side: vLLM's trainer engine over a :class:`StateSource`."""

    def __init__(self, engine: Any, source: Any) -> None:
        """``engine``: vLLM's ``TrainerWeightTransferEngine``, built over ``source``."""
        self.engine, self.source = engine, source

    @classmethod
    def connect(cls, engines: Sequence[Any], bucket_mb: int) -> VLLMSender:
        """Rendezvous with the engine actors (they join from their own processes).

        Raises:
            TrainConfigError: this process has no CUDA device.
        """
        import ray
        from vllm.distributed.weight_transfer import WeightTransferTrainerFactory

        from envhub.trainer.refit.vllm_source import StateSource

        require_cuda("policy rank 0")
        host = ray.util.get_node_ip_address()
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
        source = StateSource()
        engine = WeightTransferTrainerFactory.trainer_init(
            init_info(len(engines), host, port, bucket_mb),
            client=EngineClient(engines),
            source=source,
        )
        return cls(engine, source)

    def send(self, state: Mapping[str, Any]) -> None:
        """One refit: ``state`` (the gathered full state dict) to every engine."""
        self.source.load(state)
        try:
            self.engine.send_weights()
        finally:
            self.source.load({})  # drop the round's tensors

    def close(self) -> None:
        """Tear down vLLM's communicator."""
        self.engine.shutdown()


class VLLMTransferSync:
    """The driver's side (a :class:`~envhub.trainer.refit.syncs.WeightSync`; see the module)."""

    def __init__(
        self, policy_workers: Sequence[Any], engines: Sequence[Any], *, timeout_s: float = 300.0
    ) -> None:
        """Form vLLM's group: policy rank 0 and every engine, within ``timeout_s``."""
        self.workers, self.engines, self.timeout_s = list(policy_workers), list(engines), timeout_s
        self.version: int | None = None
        self.late: list[Any] = []
        """Never filled: a lost engine stops the run (:meth:`revive`)."""
        join = self.workers[0].send.remote(Connect(tuple(self.engines)))
        self._wait([join], "forming vLLM's group")

    def push(self, version: int | None = None) -> float:
        """Gather on every rank, rank 0 sends through vLLM; then the engines' version."""
        t0 = time.perf_counter()
        self._wait([w.send.remote(Push(version)) for w in self.workers], "moving the weights")
        versions = [e.receive.remote(SetVersion(str(version))) for e in self.engines]
        self._wait(versions, "setting the engines' weight version")
        self.version = version
        return time.perf_counter() - t0

    def _wait(self, refs: list[Any], what: str) -> list[Any]:
        """``ray.get`` within ``generation.refit_timeout_s``.

        Raises:
            RefitTransportError: the deadline passed (a member is stuck or dead).
        """
        import ray

        from envhub.trainer.refit.collective import RefitTransportError

        try:
            return ray.get(refs, timeout=self.timeout_s)
        except ray.exceptions.GetTimeoutError as e:
            raise RefitTransportError(
                f"refit through generation.weight_transfer=vllm timed out while {what} "
                f"({self.timeout_s:g} s, generation.refit_timeout_s): a member is stuck"
            ) from e

    def revive(self, engine: Any, timeout_s: float) -> None:
        """A restarted engine cannot join vLLM's formed group: the run stops.

        Raises:
            RuntimeError: always, naming the way on.
        """
        raise RuntimeError(
            "a generation engine was lost, and generation.weight_transfer=vllm does not form "
            "vLLM's weight-transfer group again: rerun with --resume auto, or use "
            "generation.weight_transfer=envhub (its group is formed again)"
        )

    def close(self) -> None:
        """Leave the group (best effort: members may be dead already)."""
        import ray

        try:
            ray.get(self.workers[0].close.remote(), timeout=30)
        except Exception:  # noqa: BLE001 (a dead member must not block the shutdown)
            pass


# ------------------------------------------------------------------------ the pair's orders


@dataclass(frozen=True)
class Connect:
    """Policy rank 0: form vLLM's group with ``engines`` (their actor handles)."""

    engines: tuple[Any, ...]


@dataclass(frozen=True)
class InitTransfer:
    """An engine: join vLLM's group (``LLM.init_weight_transfer_engine``)."""

    request: Any


@dataclass(frozen=True)
class StartUpdate:
    """An engine: ``LLM.start_weight_update``."""


@dataclass(frozen=True)
class Update:
    """An engine: receive one round (``LLM.update_weights``)."""

    request: Any


@dataclass(frozen=True)
class FinishUpdate:
    """An engine: ``LLM.finish_weight_update``, then its prefix cache reset."""


@dataclass(frozen=True)
class SetVersion:
    """An engine: the weight version it now holds (``"None"``: never refit)."""

    version: str


@dataclass(frozen=True)
class ShutdownTransfer:
    """An engine: leave vLLM's group."""


class EngineClient:
    """vLLM's ``RayVLLMWeightSyncClient`` over envhub's engine actors.

    The same five calls, each fanned out to every engine as an order to its ``receive`` and
    waited on together.
    """

    def __init__(self, engines: Sequence[Any]) -> None:
        """``engines``: :class:`~envhub.trainer.workers.generation.GenerationWorker` handles."""
        self.engines = list(engines)

    def _all(self, order: Any) -> None:
        import ray

        ray.get([e.receive.remote(order) for e in self.engines])

    def init_weight_transfer_engine(self, init_info: dict[str, Any]) -> None:
        """Every engine joins vLLM's group."""
        from vllm.distributed.weight_transfer.base import WeightTransferInitRequest

        self._all(InitTransfer(WeightTransferInitRequest(init_info=init_info)))

    def shutdown_weight_transfer_engine(self) -> None:
        """Every engine leaves it."""
        self._all(ShutdownTransfer())

    def start_weight_update(self) -> None:
        """Every engine begins a round."""
        self._all(StartUpdate())

    def update_weights(self, update_info: Any) -> None:
        """Every engine receives the round."""
        from vllm.distributed.weight_transfer.base import WeightTransferUpdateRequest

        self._all(Update(WeightTransferUpdateRequest(update_info=update_info)))

    def finish_weight_update(self, weight_version: str | None = None) -> None:
        """Every engine ends the round (and takes ``weight_version`` when given)."""
        self._all(FinishUpdate())
        if weight_version is not None:
            self._all(SetVersion(weight_version))


class VLLMTransferSender:
    """A policy rank's end: every rank gathers, rank 0 sends through vLLM."""

    def __init__(self, bucket_mb: int) -> None:
        """Not connected until the driver's :class:`Connect`."""
        self.bucket_mb = bucket_mb
        self.link: VLLMSender | None = None

    def send(self, source: Source, order: Any) -> bool:
        """:class:`Connect` (rank 0) or :class:`~envhub.trainer.refit.base.Push` (all ranks)."""
        if isinstance(order, Connect):
            self.link = VLLMSender.connect(order.engines, self.bucket_mb)
            return True
        if not isinstance(order, Push):
            raise unknown(self, order)
        state = source.state()
        if source.rank == 0:
            if self.link is None:
                raise RuntimeError("policy rank 0 is not in vLLM's group (no Connect yet)")
            self.link.send(state)
        return True

    def close(self) -> None:
        """Tear down vLLM's communicator."""
        link, self.link = self.link, None
        if link is not None:
            link.close()


class VLLMTransferReceiver:
    """An engine's end: ``LLM``'s weight-transfer calls, as orders (untested on a GPU)."""

    def __init__(self, index: int) -> None:
        """Engine ``index`` (named in the refusal without CUDA)."""
        self.index = index
        self._on = {
            InitTransfer: self._init,
            StartUpdate: lambda llm, order: llm.start_weight_update(),
            Update: lambda llm, order: llm.update_weights(order.request),
            FinishUpdate: self._finish,
            ShutdownTransfer: lambda llm, order: llm.shutdown_weight_transfer_engine(),
        }

    def receive(self, engine: Any, order: Any, payload: Any = None) -> Any:
        """Carry out one of vLLM's calls on ``engine.llm``; :class:`SetVersion` is Loaded."""
        if isinstance(order, SetVersion):
            return Loaded(None if order.version == "None" else int(order.version))
        handle = self._on.get(type(order))
        if handle is None:
            raise unknown(self, order)
        return handle(engine.llm, order)

    def _init(self, llm: Any, order: InitTransfer) -> None:
        """Join vLLM's group (blocks until policy rank 0 joins too).

        Raises:
            TrainConfigError: this engine has no CUDA device.
        """
        require_cuda(f"generation engine {self.index}")
        llm.init_weight_transfer_engine(order.request)

    def _finish(self, llm: Any, order: FinishUpdate) -> None:
        """End the round; cached KV blocks belong to the old weights, so drop them."""
        llm.finish_weight_update()
        llm.reset_prefix_cache()

    def close(self) -> None:
        """Nothing held here (policy rank 0 tears vLLM's communicator down)."""
