"""Reward composition: a reward is a weighted sum of named components, over a whole episode.

An environment computes raw component values (``correctness``, ``format``, ...); the
:class:`Rubric` built from the YAML ``reward`` section weights them. A component with weight 0
is reported but does not count. Generic components that any environment can switch on from
YAML, without code, live in :data:`GENERIC_COMPONENTS`.

Every component a user can weight is defined over the whole episode, because what a policy
learns from is the episode's return (the sum of its step rewards), never one message:

- **Outcome components** (``correctness``, ``win``, ``loss``, ``format``, ``efficiency``...)
  say how the episode went. Each lies in [0, 1] and is paid once, on the step that ends the
  episode.
- **Counters** (the generic ``length``, and those an environment lists in its ``counters``,
  such as search's ``tool_calls``) tally the whole episode: ``length`` counts the characters of
  every assistant message of the episode (text and tool-call arguments), not only the last.
  envhub pays ``length`` on every rewarded step and on the last one, each time what grew since
  it was last paid, so the return holds the episode's value once.

**Truncation is never better than the worst terminal outcome.** An episode cut short (the
turn budget ran out, the caller ended it with ``finish()``, or the model's own failure ended
it: ``timeout``, ``invalid_action``) pays every outcome component at its worst value under
its weight, 0 for a positive weight and 1 for a negative one, and every counter as measured.
For *any* weights, no terminal outcome with the same counters can pay less, so running out the
clock (stalling with illegal moves, looping tool calls) never beats losing. Environments still
report what they measured, in the step's ``info.measured``.

**A reward is always a finite number.** A weight is a finite number of size at most
:data:`MAX_WEIGHT`, refused otherwise wherever a spec is made (YAML, ``envhub register``,
``make(**overrides)``): a ``nan`` weight makes every reward ``nan``, and ``1e308`` times a count
overflows to infinity. A component an environment computes as ``nan`` or infinite (or a sum that
overflows) is the environment's bug: :meth:`Rubric.total` raises :class:`NonFiniteReward`, whose
status is ``env_error``, so the sample is dropped instead of poisoning a batch's advantages.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from .errors import ConfigError, EpisodeError
from .types import Status

MAX_WEIGHT = 1e6
"""The largest weight a reward component may have, either sign. Weights are ratios between
components (1, 0.1, -0.5); a million already turns a component into all of the reward."""


class NonFiniteReward(EpisodeError):
    """A component or the weighted sum is ``nan`` or infinite: the environment's bug."""

    status = Status.ENV_ERROR


def check_weight(weight: float) -> float:
    """``weight`` if it is a finite number of size at most :data:`MAX_WEIGHT`.

    Raises:
        ValueError: saying the bound and the value.
    """
    if not math.isfinite(weight) or abs(weight) > MAX_WEIGHT:
        raise ValueError(
            f"a weight must be a finite number from -{MAX_WEIGHT:.0f} to {MAX_WEIGHT:.0f}, "
            f"got {weight!r}"
        )
    return weight


def length_penalty(chars: int, limit: int) -> float:
    """Fraction by which ``chars`` characters overshoot ``limit``, capped at 1.

    Give it a negative weight to penalise rambling episodes.
    """
    if limit <= 0:
        raise ConfigError(f"reward.length_limit must be positive, got {limit}")
    return min(1.0, max(0, chars - limit) / limit)


GENERIC_COMPONENTS: dict[str, Callable[[int, int], float]] = {"length": length_penalty}
"""Counters computed by envhub itself from the episode's assistant characters, available to
every env: ``fn(characters so far, length_limit)``."""


@dataclass(frozen=True)
class Rubric:
    """Named, weighted reward components."""

    weights: Mapping[str, float]
    """Weight of each component; components absent here are not part of the reward."""
    length_limit: int = 2000
    """Characters an episode's assistant messages may hold before ``length`` grows."""
    offered: frozenset[str] = field(default_factory=frozenset)
    """Components the environment can compute (checked against ``weights``)."""
    counters: frozenset[str] = field(default_factory=frozenset)
    """Components that tally the episode (unbounded counts); all others lie in [0, 1]."""

    def __post_init__(self) -> None:
        for name, weight in self.weights.items():
            try:
                check_weight(weight)
            except ValueError as e:
                raise ConfigError(f"reward.weights.{name}: {e}") from None
        if self.offered:
            known = self.offered | GENERIC_COMPONENTS.keys()
            unknown = sorted(set(self.weights) - known)
            if unknown:
                raise ConfigError(
                    f"unknown reward component(s) {unknown}; this environment offers "
                    f"{sorted(known)}"
                )

    def generic(self, chars: int) -> dict[str, float]:
        """The generic counters that are switched on, for an episode of ``chars`` so far."""
        return {
            name: fn(chars, self.length_limit)
            for name, fn in GENERIC_COMPONENTS.items()
            if self.weights.get(name)
        }

    def truncation(self, measured: Mapping[str, float]) -> dict[str, float]:
        """Components of an episode cut short: outcomes at their worst, counters measured.

        Args:
            measured: What the environment measured (its ``on_truncate``); only the counters
                are taken from it.
        """
        names = (self.offered or frozenset(self.weights)) - GENERIC_COMPONENTS.keys()
        out = {name: float(self.weights.get(name, 0.0) < 0) for name in names}
        for name in self.counters:
            out[name] = float(measured.get(name, 0.0))
        return out

    def total(self, components: Mapping[str, float]) -> float:
        """Weighted sum of the components present in both ``components`` and the weights.

        Raises:
            NonFiniteReward: a component (weighted or not) or the sum is not a finite number.
        """
        bad = {k: v for k, v in components.items() if not math.isfinite(v)}
        if bad:
            raise NonFiniteReward(f"reward components that are not finite numbers: {bad}")
        total = float(sum(w * components.get(name, 0.0) for name, w in self.weights.items()))
        if not math.isfinite(total):
            raise NonFiniteReward(f"the weighted sum of {dict(components)} overflows: {total}")
        return total

    def active(self) -> Iterable[str]:
        """Names of the components that count (non-zero weight)."""
        return (name for name, w in self.weights.items() if w)
