"""Refit: getting the policy's new weights into the generation engines after each update.

The driver only sees :class:`WeightSync` (``push() -> seconds``). The implementation is picked
by ``cluster.placement`` from :data:`SYNCS`:

- ``colocated`` (:class:`ColocatedSync`): every policy worker hosts an engine. Each rank
  all-gathers the full weights from the FSDP2 shards (``get_model_state_dict`` with
  ``full_state_dict=True``) and loads them into its engine in the same process: no copy
  through Ray's object store or disk.
- engines as their own actors (``engine: vllm``, or ``placement: split``;
  :class:`ObjectStoreSync`, ``generation.transport: object_store``): the ranks gather the full
  weights (collective), rank 0's copy becomes one object in Ray's object store (the return
  value of its ``gather_state`` call, never fetched by the driver), and every engine reads it
  from there and loads it in place. On one node the engines read it from shared memory; on a
  cluster Ray moves it once per node. A ``nccl`` transport (a torch collective group between
  rank 0 and the GPU engines, as NeMo RL does) is the next step and is refused by the config.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import torch


class WeightSync(Protocol):
    """Moves the current policy weights into every generation engine."""

    def push(self) -> float:
        """Refit all engines; return the seconds it took (the slowest engine)."""


def load_into_engine(engine: Any, state: Mapping[str, torch.Tensor]) -> float:
    """In-process refit: copy ``state`` into ``engine``'s weights; returns seconds."""
    t0 = time.perf_counter()
    engine.load_state_dict(state)
    return time.perf_counter() - t0


class ColocatedSync:
    """Refit of engines that live inside the policy workers (see module docstring)."""

    def __init__(self, policy_workers: Sequence[Any]) -> None:
        """``policy_workers``: the :class:`trainer.workers.PolicyWorker` actor handles."""
        self.workers = list(policy_workers)

    def push(self) -> float:
        """Every rank gathers and loads at once (the gather is collective)."""
        import ray

        t0 = time.perf_counter()
        ray.get([w.refit.remote() for w in self.workers])
        return time.perf_counter() - t0


class ObjectStoreSync:
    """Refit of engine actors through Ray's object store (see module docstring)."""

    def __init__(self, policy_workers: Sequence[Any], engines: Sequence[Any]) -> None:
        """``engines``: :class:`trainer.generation.GenerationWorker` actor handles."""
        self.workers, self.engines = list(policy_workers), list(engines)
        self.last_load_seconds: float = 0.0

    def push(self) -> float:
        """Gather on every rank, ship rank 0's copy once, load into every engine."""
        import ray

        t0 = time.perf_counter()
        gathered = [w.gather_state.remote() for w in self.workers]
        loads = [e.load_weights.remote(gathered[0]) for e in self.engines]
        ray.get(gathered[1:])
        self.last_load_seconds = max(ray.get(loads))
        return time.perf_counter() - t0


SYNCS: dict[str, Callable[..., WeightSync]] = {
    "colocated": ColocatedSync,
    "object_store": ObjectStoreSync,
}
"""Weight sync implementations: in-process, or through the object store to engine actors."""


def make_weight_sync(
    policy_workers: Sequence[Any], engines: Sequence[Any] = (), transport: str = "object_store"
) -> WeightSync:
    """In-process sync when the engines live in the policy workers, else ``transport``.

    Raises:
        ValueError: a transport without an implementation.
    """
    if not engines:
        return ColocatedSync(policy_workers)
    if transport not in SYNCS or transport == "colocated":
        raise ValueError(f"no refit transport {transport!r}; available: object_store")
    return SYNCS[transport](policy_workers, engines)
