"""Reward composition: a reward is a weighted sum of named components.

An environment computes raw component values (``correctness``, ``format``, ...); the
:class:`Rubric` built from the YAML ``reward`` section weights them. A component with weight 0
is reported but does not count. Generic components that any environment can switch on from
YAML, without code, live in :data:`GENERIC_COMPONENTS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from .errors import ConfigError


def length_penalty(response: str, limit: int) -> float:
    """Fraction by which ``response`` overshoots ``limit`` characters, capped at 1.

    Give it a negative weight to penalise rambling answers.
    """
    if limit <= 0:
        raise ConfigError(f"reward.length_limit must be positive, got {limit}")
    return min(1.0, max(0, len(response) - limit) / limit)


GENERIC_COMPONENTS: dict[str, Callable[[str, int], float]] = {"length": length_penalty}
"""Components computed by envhub itself from the response text, available to every env."""


@dataclass(frozen=True)
class Rubric:
    """Named, weighted reward components."""

    weights: Mapping[str, float]
    """Weight of each component; components absent here are not part of the reward."""
    length_limit: int = 2000
    """Characters allowed before the generic ``length`` component starts to grow."""
    offered: frozenset[str] = field(default_factory=frozenset)
    """Components the environment can compute (checked against ``weights``)."""

    def __post_init__(self) -> None:
        if self.offered:
            known = self.offered | GENERIC_COMPONENTS.keys()
            unknown = sorted(set(self.weights) - known)
            if unknown:
                raise ConfigError(
                    f"unknown reward component(s) {unknown}; this environment offers "
                    f"{sorted(known)}"
                )

    def extend(self, response: str, components: dict[str, float]) -> dict[str, float]:
        """Add the generic components that are switched on and not already computed."""
        out = dict(components)
        for name, fn in GENERIC_COMPONENTS.items():
            if self.weights.get(name) and name not in out:
                out[name] = fn(response, self.length_limit)
        return out

    def total(self, components: Mapping[str, float]) -> float:
        """Weighted sum of the components present in both ``components`` and the weights."""
        return float(sum(w * components.get(name, 0.0) for name, w in self.weights.items()))

    def active(self) -> Iterable[str]:
        """Names of the components that count (non-zero weight)."""
        return (name for name, w in self.weights.items() if w)
