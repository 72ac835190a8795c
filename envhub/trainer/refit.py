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
  cluster Ray moves it once per node.
- the same engine actors over a torch collective group (:class:`CollectiveSync`,
  ``generation.transport: gloo`` on CPU tensors, ``nccl`` on GPU tensors, as NeMo RL does on
  GPU clusters): policy rank 0 broadcasts the gathered weights in size-bounded flat buckets
  straight to every engine, with no copy through the object store or the driver
  (:mod:`envhub.trainer.collective` holds the group and the bucket layout).

Every sync returns the seconds of the whole refit; a failure names the transport.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import torch


class WeightSync(Protocol):
    """Moves the current policy weights into every generation engine."""

    def push(self, version: int | None = None) -> float:
        """Refit all engines to weight ``version``; return the seconds (slowest engine)."""


def load_into_engine(engine: Any, state: Mapping[str, torch.Tensor]) -> float:
    """In-process refit: copy ``state`` into ``engine``'s weights; returns seconds."""
    t0 = time.perf_counter()
    engine.load_state_dict(state)
    return time.perf_counter() - t0


class ColocatedSync:
    """Refit of engines that live inside the policy workers (see module docstring)."""

    def __init__(self, policy_workers: Sequence[Any]) -> None:
        """``policy_workers``: the :class:`envhub.trainer.workers.PolicyWorker` actor handles."""
        self.workers = list(policy_workers)

    def push(self, version: int | None = None) -> float:
        """Every rank gathers and loads at once (the gather is collective)."""
        import ray

        t0 = time.perf_counter()
        ray.get([w.refit.remote() for w in self.workers])
        return time.perf_counter() - t0


class ObjectStoreSync:
    """Refit of engine actors through Ray's object store (see module docstring)."""

    def __init__(self, policy_workers: Sequence[Any], engines: Sequence[Any]) -> None:
        """``engines``: :class:`envhub.trainer.generation.GenerationWorker` actor handles."""
        self.workers, self.engines = list(policy_workers), list(engines)
        self.last_load_seconds: float = 0.0
        self.last_state: Any = None
        """The newest weights' object (kept: a restarted engine is refit from it)."""
        self.version: int | None = None

    def push(self, version: int | None = None) -> float:
        """Gather on every rank, ship rank 0's copy once, load into every engine.

        An engine that dies meanwhile is skipped: Ray restarts it and :meth:`revive` loads
        these weights into it before it samples again.
        """
        import ray

        t0 = time.perf_counter()
        gathered = [w.gather_state.remote() for w in self.workers]
        loads = [e.load_weights.remote(gathered[0], version) for e in self.engines]
        ray.get(gathered)  # a policy worker's failure is the run's
        self.last_state, self.version = gathered[0], version
        seconds = []
        for ref in loads:
            try:
                seconds.append(ray.get(ref))
            except ray.exceptions.RayActorError:
                continue  # a lost engine: revived on its next generate
        self.last_load_seconds = max(seconds, default=0.0)
        return time.perf_counter() - t0

    def revive(self, engine: Any, timeout_s: float) -> None:
        """Load the newest weights into a restarted ``engine`` (waits for it to be up).

        Raises:
            RuntimeError: the engine is not back within ``timeout_s``
                (``generation.restart_timeout_s``) or is dead for good (restarts used up).
        """
        import ray

        end = time.monotonic() + timeout_s
        while True:
            left = end - time.monotonic()
            try:
                ref = engine.load_weights.remote(self.last_state, self.version)
                ray.get(ref, timeout=max(left, 0.1))
                return
            except ray.exceptions.ActorUnavailableError:  # still restarting
                if left <= 0:
                    break
                time.sleep(0.5)
            except ray.exceptions.GetTimeoutError:
                break
            except ray.exceptions.ActorDiedError as e:
                raise RuntimeError(
                    f"a generation engine died and Ray will not restart it "
                    f"(generation.max_restarts used up): {e}"
                ) from e
        raise RuntimeError(
            f"a restarted generation engine was not up and refit within {timeout_s:g} s "
            "(generation.restart_timeout_s)"
        )


class CollectiveSync:
    """Refit of engine actors over a torch collective group (see module docstring).

    The group is set up here, once: policy rank 0 hosts the store, then rank 0 and every
    engine join in a single ``ray.get`` (they must join concurrently). :meth:`close` tears it
    down.
    """

    def __init__(
        self,
        policy_workers: Sequence[Any],
        engines: Sequence[Any],
        *,
        transport: str,
        timeout_s: float = 300.0,
        bucket_mb: int = 256,
    ) -> None:
        """Join the group; ``timeout_s`` bounds the rendezvous and every broadcast."""
        self.workers, self.engines = list(policy_workers), list(engines)
        self.transport, self.timeout_s = transport, timeout_s
        self.last_load_seconds = self.last_transfer_seconds = 0.0
        # a backstop only: every broadcast has its own timeout, and a failed member is
        # reported as soon as its call returns
        self.deadline_s = 2 * timeout_s + 60
        store = self.workers[0].host_refit_store.remote(transport, timeout_s)
        host, port = self._wait([store], "starting the store on policy rank 0")[0]
        size = len(self.engines) + 1
        joins = [
            self.workers[0].join_refit_group.remote(
                transport, host, port, size, timeout_s, bucket_mb
            ),
            *[
                e.join_refit_group.remote(transport, host, port, i + 1, size, timeout_s)
                for i, e in enumerate(self.engines)
            ],
        ]
        self._wait(joins, "joining the group")

    def push(self, version: int | None = None) -> float:
        """Gather on every rank, broadcast rank 0's copy in buckets, load into every engine."""
        t0 = time.perf_counter()
        sends = [w.send_weights.remote() for w in self.workers]
        receives = [e.receive_weights.remote(version) for e in self.engines]
        done = self._wait(sends + receives, "moving the weights")
        times = done[len(sends) :]
        self.last_transfer_seconds = max(t["transfer_s"] for t in times)
        self.last_load_seconds = max(t["load_s"] for t in times)
        return time.perf_counter() - t0

    def revive(self, engine: Any, timeout_s: float) -> None:
        """A restarted engine cannot rejoin a formed collective group: stop the run.

        Raises:
            RefitTransportError: always; the message names the way on.
        """
        from .collective import RefitTransportError

        raise RefitTransportError(
            f"a generation engine was lost and restarted, but generation.transport="
            f"{self.transport} cannot admit it into the formed weight-transfer group; rerun "
            "with --resume auto to continue from the newest checkpoint, or use "
            "generation.transport=object_store, whose engines are refit after a restart"
        )

    def close(self) -> None:
        """Leave the group on every member (best effort: members may be dead already)."""
        import ray

        members = [self.workers[0], *self.engines]
        try:
            ray.get([m.leave_refit_group.remote() for m in members], timeout=30)
        except Exception:  # a dead member must not block the shutdown
            pass

    def _wait(self, refs: list[Any], what: str) -> list[Any]:
        """Results of ``refs`` in order; the first failure or the deadline raises at once.

        Raises:
            ConfigError: a member refused the transport (e.g. ``nccl`` without CUDA).
            RefitTransportError: a member failed or died, or the deadline passed.
        """
        import ray

        from .collective import RefitTransportError
        from .config import ConfigError

        pending, end = list(refs), time.monotonic() + self.deadline_s
        while pending:
            ready, pending = ray.wait(pending, timeout=max(0.0, end - time.monotonic()))
            if not ready:
                raise RefitTransportError(
                    f"refit over generation.transport={self.transport} timed out while {what} "
                    f"({self.deadline_s:.0f} s; generation.refit_timeout_s="
                    f"{self.timeout_s:g}): a member is stuck"
                )
            for ref in ready:
                try:
                    ray.get(ref)
                except (ConfigError, RefitTransportError):
                    raise
                except Exception as e:  # a dead actor (RayActorError), a crash in a member
                    raise RefitTransportError(
                        f"refit over generation.transport={self.transport} failed while "
                        f"{what}: {type(e).__name__}: {e}"
                    ) from e
        return ray.get(list(refs))


SYNCS: dict[str, Callable[..., WeightSync]] = {
    "object_store": ObjectStoreSync,
    "gloo": CollectiveSync,
    "nccl": CollectiveSync,
}
"""Engine-actor refit by ``generation.transport`` (colocated engines need none)."""
COLLECTIVE = frozenset({"gloo", "nccl"})
"""Transports that take the collective options (``transport``, ``timeout_s``, ``bucket_mb``)."""


def make_weight_sync(
    policy_workers: Sequence[Any],
    engines: Sequence[Any] = (),
    transport: str = "object_store",
    *,
    timeout_s: float = 300.0,
    bucket_mb: int = 256,
) -> WeightSync:
    """In-process sync when the engines live in the policy workers, else ``transport``.

    Raises:
        ValueError: a transport without an implementation.
    """
    if not engines:
        return ColocatedSync(policy_workers)
    if transport not in SYNCS:
        raise ValueError(f"no refit transport {transport!r}; available: {', '.join(SYNCS)}")
    if transport not in COLLECTIVE:
        return SYNCS[transport](policy_workers, engines)
    options = {"transport": transport, "timeout_s": timeout_s, "bucket_mb": bucket_mb}
    return SYNCS[transport](policy_workers, engines, **options)
