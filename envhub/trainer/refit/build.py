"""The one place a refit is built: each pair's sender, receiver and conductor from the config.

:data:`PAIRS` holds, for every pair the table (:mod:`envhub.trainer.refit.table`) can name,
how to build the policy ranks' :class:`~envhub.trainer.refit.base.Sender`, the engine actors'
:class:`~envhub.trainer.refit.base.Receiver` and the driver's
:class:`~envhub.trainer.refit.syncs.WeightSync`. The actors call :func:`sender` and
:func:`receiver` in their constructors; the cluster calls :func:`conductor` once they are up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envhub.trainer.refit.base import Receiver, Sender
from envhub.trainer.refit.collective_pair import CollectiveReceiver, CollectiveSender
from envhub.trainer.refit.state import (
    AdapterReceiver,
    AdapterSender,
    InProcessSender,
    StateReceiver,
    StateSender,
)
from envhub.trainer.refit.syncs import CollectiveSync, ColocatedSync, ObjectStoreSync, WeightSync
from envhub.trainer.refit.vllm_transfer import (
    VLLMTransferReceiver,
    VLLMTransferSender,
    VLLMTransferSync,
)

if TYPE_CHECKING:
    from envhub.trainer.config import Config


@dataclass(frozen=True)
class Pair:
    """How one transport's three parts are built."""

    sender: Callable[[Config], Sender]
    receiver: Callable[[Config, int], Receiver]
    """Given the engine's index."""
    conductor: Callable[[Config, list[Any], list[Any]], WeightSync]
    """Given the policy workers' and the engines' handles."""


def _collective_sender(c: Config) -> Sender:
    g = c.generation
    return CollectiveSender(g.transport, g.refit_timeout_s, g.bucket_mb, g.max_restarts > 0)


def _collective_receiver(c: Config, index: int) -> Receiver:
    return CollectiveReceiver(index, c.generation.transport, c.generation.refit_timeout_s)


def _collective_sync(c: Config, workers: list[Any], engines: list[Any]) -> WeightSync:
    g = c.generation
    return CollectiveSync(
        workers,
        engines,
        transport=g.transport,
        timeout_s=g.refit_timeout_s,
        restart_timeout_s=g.restart_timeout_s,
        keep=g.max_restarts > 0,
    )


def _store_sync(c: Config, workers: list[Any], engines: list[Any]) -> WeightSync:
    return ObjectStoreSync(workers, engines, c.generation.refit_timeout_s)


PAIRS: dict[str, Pair] = {
    "in_process": Pair(
        lambda c: InProcessSender(),
        lambda c, i: StateReceiver(),  # no engine actor is started with colocated engines
        lambda c, w, e: ColocatedSync(w, c.generation.refit_timeout_s),
    ),
    "object_store": Pair(lambda c: StateSender(), lambda c, i: StateReceiver(), _store_sync),
    "adapter": Pair(lambda c: AdapterSender(), lambda c, i: AdapterReceiver(), _store_sync),
    "collective": Pair(_collective_sender, _collective_receiver, _collective_sync),
    "vllm": Pair(
        lambda c: VLLMTransferSender(c.generation.bucket_mb),
        lambda c, i: VLLMTransferReceiver(i),
        lambda c, w, e: VLLMTransferSync(w, e, timeout_s=c.generation.refit_timeout_s),
    ),
}
"""Every pair the table names, by name."""


def sender(config: Config) -> Sender:
    """A policy rank's end of the config's transport (built in its constructor)."""
    return PAIRS[config.refit_pair].sender(config)


def receiver(config: Config, index: int) -> Receiver:
    """Engine ``index``'s end of the config's transport (built in its constructor)."""
    return PAIRS[config.refit_pair].receiver(config, index)


def conductor(config: Config, workers: Sequence[Any], engines: Sequence[Any]) -> WeightSync:
    """The driver's side, once the actors are up (a collective group is formed here)."""
    return PAIRS[config.refit_pair].conductor(config, list(workers), list(engines))
