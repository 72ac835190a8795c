"""The ``collective`` pair: ``generation.transport: gloo`` or ``nccl``.

Policy rank 0's :class:`CollectiveSender` hosts the group's store and broadcasts the buckets
(:mod:`envhub.trainer.refit.collective` holds the group and the layout); each engine's
:class:`CollectiveReceiver` receives them in place and loads them. The driver's
:class:`~envhub.trainer.refit.syncs.CollectiveSync` forms the group with :class:`Host` and
:class:`Join`, refits with :class:`~envhub.trainer.refit.base.Push` and, after Ray restarted an
engine, forms it again and sends rank 0's kept copy with :class:`Resend`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from envhub.trainer.refit.base import Loaded, Push, Source, unknown
from envhub.trainer.refit.collective import (
    RefitGroup,
    RefitTransportError,
    cpu_copy,
    host_store,
    transport_device,
)


@dataclass(frozen=True)
class Host:
    """Rank 0: host a new store (leaving the group of an earlier generation)."""


@dataclass(frozen=True)
class Join:
    """Join the group formed at ``host:port`` as ``rank`` of ``size`` (engines: 1..N)."""

    host: str
    port: int
    size: int
    generation: int = 0
    rank: int = 0


@dataclass(frozen=True)
class Resend:
    """Rank 0: broadcast the weights last sent again (to a group formed anew)."""


class CollectiveSender:
    """A policy rank's end; only rank 0 is in the group, every rank gathers."""

    def __init__(self, transport: str, timeout_s: float, bucket_mb: int, keep: bool) -> None:
        """``keep``: hold a CPU copy of the weights last sent (to refit a restarted engine)."""
        self.transport, self.timeout_s, self.keep = transport, timeout_s, keep
        self.bucket_bytes = bucket_mb * 2**20
        self.group: RefitGroup | None = None
        self.store: Any = None
        self.sent: dict[str, Any] | None = None
        """The weights last sent, kept on CPU with ``keep`` (they survive leaving the group)."""
        self._on = {Host: self._host, Join: self._join, Push: self._push, Resend: self._resend}

    def send(self, source: Source, order: Any) -> Any:
        """Carry out :class:`Host`, :class:`Join`, :class:`Push` or :class:`Resend`."""
        handle = self._on.get(type(order))
        if handle is None:
            raise unknown(self, order)
        return handle(source, order)

    def _host(self, source: Source, order: Host) -> tuple[str, int]:
        """This node's IP and the new store's port.

        Raises:
            TrainConfigError: ``nccl`` without CUDA in this process (before anyone waits).
        """
        import ray

        transport_device(self.transport)
        self.close()
        self.store, port = host_store(self.timeout_s)
        return ray.util.get_node_ip_address(), port

    def _join(self, source: Source, order: Join) -> bool:
        self.group = RefitGroup(
            self.transport,
            order.host,
            order.port,
            0,
            order.size,
            self.timeout_s,
            store=self.store,
            generation=order.generation,
        )
        return True

    def _push(self, source: Source, order: Push) -> dict[str, float]:
        """Gather on every rank (collective); rank 0 broadcasts."""
        t0 = time.perf_counter()
        state = source.state()
        if source.rank == 0:
            if self.keep:  # kept before sending: a failed send is resent from it
                self.sent = cpu_copy(state)
            self._member().send_state(state, self.bucket_bytes)
        return {"transfer_s": time.perf_counter() - t0}

    def _resend(self, source: Source, order: Resend) -> dict[str, float]:
        """Rank 0: the kept copy again.

        Raises:
            RuntimeError: nothing kept (``generation.max_restarts: 0``).
        """
        if self.sent is None:
            raise RuntimeError("no weights kept to resend: the group was joined without keep")
        t0 = time.perf_counter()
        self._member().send_state(self.sent, self.bucket_bytes)
        return {"transfer_s": time.perf_counter() - t0}

    def _member(self) -> RefitGroup:
        if self.group is None:
            raise RefitTransportError("policy rank 0 is not in the weight-transfer group")
        return self.group

    def close(self) -> None:
        """Leave the group and stop its store (the kept weights stay)."""
        if self.group is not None:
            self.group.close()
        self.group = self.store = None


class CollectiveReceiver:
    """An engine's end: joins as rank ``index + 1``, receives every bucket in place."""

    def __init__(self, index: int, transport: str, timeout_s: float) -> None:
        """Engine ``index``; the group is joined on the driver's :class:`Join`."""
        self.index, self.transport, self.timeout_s = index, transport, timeout_s
        self.group: RefitGroup | None = None
        self._on = {Join: self._join, Push: self._push}

    def receive(self, engine: Any, order: Any, payload: Any = None) -> Any:
        """Carry out :class:`Join` (answers this pid) or :class:`Push` (:class:`Loaded`)."""
        handle = self._on.get(type(order))
        if handle is None:
            raise unknown(self, order)
        return handle(engine, order)

    def _join(self, engine: Any, order: Join) -> int:
        """Leave an earlier generation's group, join this one; the pid tells a restart."""
        self.close()
        self.group = RefitGroup(
            self.transport,
            order.host,
            order.port,
            order.rank,
            order.size,
            self.timeout_s,
            generation=order.generation,
        )
        return os.getpid()

    def _push(self, engine: Any, order: Push) -> Loaded:
        """Receive the buckets, load the state dict; the seconds of each.

        Raises:
            RefitTransportError: this engine is in no group (Ray restarted it: the group must
                be formed again), or the transfer failed.
        """
        if self.group is None:
            raise RefitTransportError(
                f"engine {self.index} is not in the weight-transfer group (restarted by Ray?)"
            )
        t0 = time.perf_counter()
        state = self.group.receive_state()
        t1 = time.perf_counter()
        engine.load_state_dict(state)
        times = {"transfer_s": t1 - t0, "load_s": time.perf_counter() - t1}
        return Loaded(order.version, times)

    def close(self) -> None:
        """Leave the group."""
        if self.group is not None:
            self.group.close()
        self.group = None
