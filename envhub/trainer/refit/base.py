"""The two roles of a refit, and the orders the driver gives them.

Each transport is one pair (:mod:`envhub.trainer.refit.build`): a :class:`Sender` that every
policy rank holds from its construction, and a :class:`Receiver` that every generation engine
actor holds from its construction. The actors expose ``send(order)``, ``receive(order,
payload)`` and ``close()``, nothing else of the refit; the driver's side of the transport (a
:class:`~envhub.trainer.refit.syncs.WeightSync`) says what happens by the order it sends.

Orders are frozen dataclasses: :class:`Push` (one refit, on every transport) here, and each
transport's own steps beside its pair (forming a group, vLLM's update calls). A role handles
an order by its type; an order it does not know is a bug, named by :func:`unknown`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class Source(Protocol):
    """What a policy rank offers its sender (``envhub.trainer.workers.cluster.RankSource``)."""

    rank: int

    def state(self) -> dict[str, Any]:
        """The full weights under the base model's names (collective: every rank calls it)."""

    def adapter(self) -> dict[str, bytes] | None:
        """LoRA: the adapter as ``peft`` saves it, on rank 0 (None elsewhere). Collective."""

    def engine(self) -> Any:
        """The colocated engine in this process (``placement: colocated``), else None."""


class Sender(Protocol):
    """A policy rank's end of a transport."""

    def send(self, source: Source, order: Any) -> Any:
        """Carry out ``order`` (e.g. :class:`Push`) with ``source``'s weights; its answer."""

    def close(self) -> None:
        """Leave whatever the transport joined (best effort)."""


class Receiver(Protocol):
    """A generation engine actor's end of a transport."""

    def receive(self, engine: Any, order: Any, payload: Any = None) -> Any:
        """Carry out ``order`` on ``engine``; :class:`Loaded` when new weights landed.

        ``payload``: what came through Ray's object store with the order (the weights).
        """

    def close(self) -> None:
        """Leave whatever the transport joined (best effort)."""


@dataclass(frozen=True)
class Push:
    """One refit: the policy's current weights into the engines, as weight ``version``."""

    version: int | None = None


@dataclass(frozen=True)
class Loaded:
    """A receiver's answer when the engine now holds weight ``version``."""

    version: int | None
    answer: Any = None
    """What the actor's caller gets back (seconds, timings)."""


def unknown(role: object, order: object) -> TypeError:
    """The error for an order a role has no handler for (a bug in the driver's side)."""
    return TypeError(f"{type(role).__name__} has no handler for {type(order).__name__}")
