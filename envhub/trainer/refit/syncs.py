"""Refit, the driver's side: each transport's conductor over its actors' senders and receivers.

The driver only sees :class:`WeightSync` (``push() -> seconds``, ``revive``, ``close``); the
builder (:mod:`envhub.trainer.refit.build`) picks the conductor, and the actors' roles, from
the one table (:mod:`envhub.trainer.refit.table`). A conductor talks to the actors only through
their ``send(order)``, ``receive(order, payload)`` and ``close()``:

- ``in_process`` (:class:`ColocatedSync`): every policy worker hosts an engine. Each rank
  all-gathers the full weights from the FSDP2 shards (``get_model_state_dict`` with
  ``full_state_dict=True``) and loads them into its engine in the same process: no copy
  through Ray's object store or disk.
- ``object_store`` and ``adapter`` (:class:`ObjectStoreSync`, engines as their own actors:
  ``engine: vllm`` or ``placement: split``): the ranks gather the full weights (collective),
  rank 0's answer to :class:`~envhub.trainer.refit.base.Push` becomes one object in Ray's
  object store (never fetched by the driver), and every engine reads it from there and loads
  it in place. On one node the engines read it from shared memory; on a cluster Ray moves it
  once per node. With LoRA on vLLM engines the object is the adapter's files
  (:mod:`envhub.trainer.refit.state`).
- ``collective`` (:class:`CollectiveSync`, ``generation.transport: gloo`` on CPU tensors,
  ``nccl`` on GPU tensors, as NeMo RL does on GPU clusters): policy rank 0 broadcasts the
  gathered weights in size-bounded flat buckets straight to every engine, with no copy
  through the object store or the driver (:mod:`envhub.trainer.refit.collective` holds the
  group and the bucket layout, :mod:`~envhub.trainer.refit.collective_pair` the roles).
- ``vllm``: vLLM's own weight-transfer API from policy rank 0
  (:mod:`envhub.trainer.refit.vllm_transfer`; GPU-only, never run on a GPU).

An engine that dies is restarted by Ray and refit before it samples again (``revive``): the
object-store sync loads the newest weights' object into it; the collective sync forms the
group anew with every member (the restarted process cannot join a formed group) and policy
rank 0 broadcasts again the weights it last sent, which it keeps as a CPU copy for this.

Every sync returns the seconds of the whole refit; a failure names the transport.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any, Protocol

from envhub.trainer.refit.base import Push
from envhub.trainer.refit.collective_pair import Host, Join, Resend


class WeightSync(Protocol):
    """Moves the current policy weights into every generation engine."""

    late: list[Any]
    """Engines that missed the last push's deadline (the cluster restarts and revives them)."""

    def push(self, version: int | None = None) -> float:
        """Refit all engines to weight ``version``; return the seconds (slowest engine)."""

    def revive(self, engine: Any, timeout_s: float) -> None:
        """Refit ``engine`` after Ray restarted it, before it samples again."""

    def close(self) -> None:
        """Leave what the transport formed (best effort: members may be dead already)."""


class ColocatedSync:
    """Refit of engines that live inside the policy workers (see module docstring)."""

    def __init__(self, policy_workers: Sequence[Any], deadline_s: float = 300.0) -> None:
        """``policy_workers``: :class:`~envhub.trainer.workers.cluster.PolicyWorker` handles."""
        self.workers, self.deadline_s = list(policy_workers), deadline_s
        self.late: list[Any] = []

    def push(self, version: int | None = None) -> float:
        """Every rank gathers and loads at once (the gather is collective).

        Raises:
            envhub.trainer.watchdog.PartHung: a rank gave no answer within the deadline.
        """
        from envhub.trainer.watchdog import get

        t0 = time.perf_counter()
        refs = [w.send.remote(Push(version)) for w in self.workers]
        get(refs, "policy workers (refit)", self.deadline_s)
        return time.perf_counter() - t0

    def revive(self, engine: Any, timeout_s: float) -> None:
        """Colocated engines live and die with their policy worker: never revived.

        Raises:
            RuntimeError: always (a lost policy worker stops the run).
        """
        raise RuntimeError("colocated engines are never restarted apart from their rank")

    def close(self) -> None:
        """Nothing formed."""


class ObjectStoreSync:
    """Refit of engine actors through Ray's object store (see module docstring)."""

    def __init__(
        self, policy_workers: Sequence[Any], engines: Sequence[Any], deadline_s: float = 300.0
    ) -> None:
        """``engines``: :class:`~envhub.trainer.workers.generation.GenerationWorker` handles."""
        self.workers, self.engines = list(policy_workers), list(engines)
        self.deadline_s = deadline_s
        self.late: list[Any] = []
        """Engines that did not load the last push within the deadline (to be restarted)."""
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

        from envhub.trainer.watchdog import PartHung, get

        t0 = time.perf_counter()
        end = time.monotonic() + self.deadline_s
        gathered = [w.send.remote(Push(version)) for w in self.workers]
        loads = [e.receive.remote(Push(version), gathered[0]) for e in self.engines]
        get(gathered, "policy workers (gathering the weights)", self.deadline_s)
        self.last_state, self.version = gathered[0], version
        seconds, self.late = [], []
        for engine, ref in zip(self.engines, loads, strict=True):
            try:
                left = max(end - time.monotonic(), 1.0)
                seconds.append(get(ref, "a generation engine's refit", left))
            except ray.exceptions.RayActorError:
                continue  # a lost engine: revived on its next generate
            except PartHung:
                self.late.append(engine)  # the cluster restarts it; refit before it samples
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
        wait_until_up(engine, timeout_s)
        ref = engine.receive.remote(Push(self.version), self.last_state)
        try:
            ray.get(ref, timeout=max(end - time.monotonic(), 0.1))
        except ray.exceptions.GetTimeoutError as e:
            raise RuntimeError(
                f"a restarted generation engine was not refit within {timeout_s:g} s "
                "(generation.restart_timeout_s)"
            ) from e

    def close(self) -> None:
        """Nothing formed: the weights' object goes with the last reference to it."""


def wait_until_up(engine: Any, timeout_s: float) -> dict[str, Any]:
    """``engine.where()`` (node, pid) once the actor answers: restarted by Ray if it died.

    Raises:
        RuntimeError: the engine is not back within ``timeout_s``
            (``generation.restart_timeout_s``) or is dead for good (restarts used up).
    """
    import ray

    end = time.monotonic() + timeout_s
    while True:
        left = end - time.monotonic()
        try:
            return ray.get(engine.where.remote(), timeout=max(left, 0.1))
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
        f"a restarted generation engine was not up within {timeout_s:g} s "
        "(generation.restart_timeout_s)"
    )


class CollectiveSync:
    """Refit of engine actors over a torch collective group (see module docstring).

    The group is formed here: policy rank 0 hosts the store, then rank 0 and every engine
    join in a single ``ray.get`` (they must join concurrently). An engine that Ray restarts
    (a new process) is let in by forming the group again, every member re-joining under the
    next generation's prefix and a new store port (:mod:`envhub.trainer.refit.collective`), then
    rank 0 sends the weights it last sent again. :meth:`close` tears the group down.
    """

    def __init__(
        self,
        policy_workers: Sequence[Any],
        engines: Sequence[Any],
        *,
        transport: str,
        timeout_s: float = 300.0,
        restart_timeout_s: float = 300.0,
        keep: bool = True,
    ) -> None:
        """Form the group; ``timeout_s`` bounds the rendezvous and every broadcast.

        ``restart_timeout_s``: how long to wait for a restarted engine; ``keep``: rank 0 keeps
        a CPU copy of the weights last sent (needed to refit a restarted engine; off when
        engines are never restarted, ``generation.max_restarts: 0``). The bucket size and
        the copy itself are the senders' (built with the actors).
        """
        self.workers, self.engines = list(policy_workers), list(engines)
        self.transport, self.timeout_s = transport, timeout_s
        self.restart_timeout_s, self.keep = restart_timeout_s, keep
        self.late: list[Any] = []
        """Never filled: a hung member fails the push (the cluster finds it by a ping)."""
        self.last_load_seconds = self.last_transfer_seconds = 0.0
        # a backstop only: every broadcast has its own timeout, and a failed member is
        # reported as soon as its call returns
        self.deadline_s = 2 * timeout_s + 60
        self.version: int | None = None
        """The weight version the engines hold (last push)."""
        self.generation = -1
        """Times the group was formed, minus one (its key prefix: ``envhub-refit/<n>``)."""
        self.pids: list[int] = []
        """The engine processes in the group (a different pid: Ray restarted that engine)."""
        self._lock = threading.Lock()  # a push and a revive never interleave
        self._form()

    def _form(self) -> None:
        """Form the group (again): a new store on rank 0, every member joins it."""
        self.generation += 1
        n = self.generation
        store = self.workers[0].send.remote(Host())
        host, port = self._wait([store], "starting the store on policy rank 0")[0]
        size = len(self.engines) + 1
        joins = [
            self.workers[0].send.remote(Join(host, port, size, n)),
            *[
                e.receive.remote(Join(host, port, size, n, rank=i + 1))
                for i, e in enumerate(self.engines)
            ],
        ]
        self.pids = self._wait(joins, f"forming the group (generation {n})")[1:]

    def push(self, version: int | None = None) -> float:
        """Gather on every rank, broadcast rank 0's copy in buckets, load into every engine.

        A push that fails because Ray restarted an engine forms the group again and sends
        the same weights to every engine; any other failure is the run's.
        """
        from envhub.trainer.refit.collective import RefitTransportError

        with self._lock:
            t0 = time.perf_counter()
            sends = [w.send.remote(Push(version)) for w in self.workers]
            receives = [e.receive.remote(Push(version)) for e in self.engines]
            try:
                times = self._wait(sends + receives, "moving the weights")[len(sends) :]
            except RefitTransportError as e:
                if not self.keep or not self._restarted(e):
                    raise
                times = self._readmit(version)
            self.version = version
            self.last_transfer_seconds = max(t["transfer_s"] for t in times)
            self.last_load_seconds = max(t["load_s"] for t in times)
            return time.perf_counter() - t0

    def revive(self, engine: Any, timeout_s: float) -> None:
        """Let a restarted ``engine`` into the group and refit it before it samples.

        Raises:
            RefitTransportError: engines cannot be restarted here
                (``generation.max_restarts: 0``), or forming the group failed.
            RuntimeError: the engine is not back within ``timeout_s`` or is dead for good.
        """
        from envhub.trainer.refit.collective import RefitTransportError

        if not self.keep:
            raise RefitTransportError(
                f"a generation engine was lost, and generation.transport={self.transport} "
                "keeps no copy of the weights to refit it with (generation.max_restarts=0)"
            )
        with self._lock:
            wait_until_up(engine, timeout_s)
            if self._restarted():  # else a concurrent push has let it in already
                self._readmit(self.version)

    def _restarted(self, failure: BaseException | None = None) -> bool:
        """Wait until every engine answers; True if any is a new process (restarted by Ray).

        Raises:
            RefitTransportError: an engine is dead for good or not back in time (the message
                holds ``failure``, the refit error that led here, when given).
        """
        from envhub.trainer.refit.collective import RefitTransportError

        try:
            pids = [wait_until_up(e, self.restart_timeout_s)["pid"] for e in self.engines]
        except RuntimeError as e:
            before = f"{failure}; then " if failure is not None else ""
            raise RefitTransportError(f"{before}{e}") from failure or e
        return pids != self.pids

    def _readmit(self, version: int | None) -> list[dict[str, float]]:
        """Form the group again and resend rank 0's last weights; the engines' timings."""
        self._form()
        if version is None:  # never pushed: every engine holds the checkpoint's weights
            return [{"transfer_s": 0.0, "load_s": 0.0}]
        refs = [
            self.workers[0].send.remote(Resend()),
            *[e.receive.remote(Push(version)) for e in self.engines],
        ]
        return self._wait(refs, "sending the weights to the group formed again")[1:]

    def close(self) -> None:
        """Policy rank 0 leaves the group (best effort: it may be dead already).

        Its leaving frees any engine still waiting on a broadcast; the engines leave when
        their actors close.
        """
        import ray

        try:
            ray.get(self.workers[0].close.remote(), timeout=30)
        except Exception:  # noqa: BLE001 (a dead member must not block the shutdown)
            pass

    def _wait(self, refs: list[Any], what: str) -> list[Any]:
        """Results of ``refs`` in order; the first failure or the deadline raises at once.

        Raises:
            TrainConfigError: a member refused the transport (e.g. ``nccl`` without CUDA).
            RefitTransportError: a member failed or died, or the deadline passed.
        """
        import ray

        from envhub.trainer.config import TrainConfigError
        from envhub.trainer.refit.collective import RefitTransportError

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
                except (TrainConfigError, RefitTransportError):
                    raise
                except Exception as e:  # a dead actor (RayActorError), a crash in a member
                    raise RefitTransportError(
                        f"refit over generation.transport={self.transport} failed while "
                        f"{what}: {type(e).__name__}: {e}"
                    ) from e
        return ray.get(list(refs))
