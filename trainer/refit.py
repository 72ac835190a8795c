"""Refit: getting the policy's new weights into the generation engines after each update.

The driver only sees :class:`WeightSync` (``push() -> seconds``). The implementation is picked
by ``cluster.placement`` from :data:`SYNCS`:

- ``colocated`` (:class:`ColocatedSync`): every policy worker hosts an engine. Each rank
  all-gathers the full weights from the FSDP2 shards (``get_model_state_dict`` with
  ``full_state_dict=True``) and loads them into its engine in the same process: no copy
  through Ray's object store or disk.
- ``split`` (trainer part 2): engines on their own resources, weights sent through the object
  store or a collective; it implements the same ``push``.
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


SYNCS: dict[str, Callable[[Sequence[Any]], WeightSync]] = {"colocated": ColocatedSync}
"""Weight sync by ``cluster.placement``."""


def make_weight_sync(placement: str, policy_workers: Sequence[Any]) -> WeightSync:
    """The :class:`WeightSync` for ``placement``.

    Raises:
        ValueError: a placement without an implementation yet.
    """
    if placement not in SYNCS:
        raise ValueError(f"no refit for placement {placement!r} yet; available: {sorted(SYNCS)}")
    return SYNCS[placement](policy_workers)
