"""Overlong handling: DAPO's soft overlong penalty and masking of truncated samples.

Both are off by default (``rollout.overlong``).

- **Soft overlong penalty** (Yu et al. 2025, "DAPO", Eq. 13): with a response of ``L`` model
  tokens, a budget ``L_max`` and a buffer ``L_cache``, the reward gets
  ``0`` when ``L <= L_max - L_cache``, ``((L_max - L_cache) - L) / L_cache`` inside the
  buffer (falling linearly to -1 at ``L_max``), and ``-1`` past ``L_max``, times
  ``penalty_factor``. ``L_max`` defaults to ``sampling.max_tokens`` times the episode's
  turn budget (a multi-turn episode's model tokens are summed).
- **Truncated-sample masking** (DAPO's overlong filtering): an episode whose answer was cut
  (its last turn hit ``max_tokens`` without an end token, or the episode ran out of its
  token budget) keeps its place in its group's advantage baseline but carries no loss.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class OverlongConfig(BaseModel):
    """The ``rollout.overlong`` section."""

    model_config = ConfigDict(extra="forbid")

    buffer: int = Field(default=0, ge=0)
    """``L_cache`` in tokens; 0 turns the soft penalty off."""
    penalty_factor: float = Field(default=1.0, ge=0)
    """The penalty at and past ``L_max`` is ``-penalty_factor``."""
    max_length: int | None = Field(default=None, ge=1)
    """``L_max`` in model tokens; ``sampling.max_tokens`` x the episode's turn budget when unset."""
    mask_truncated: bool = False
    """Give truncated samples no loss (they still count in their group's baseline)."""


def soft_overlong_penalty(length: int, max_length: int, buffer: int, factor: float = 1.0) -> float:
    """DAPO's soft overlong punishment of a ``length``-token response (0 when ``buffer`` is 0)."""
    if buffer <= 0 or length <= max_length - buffer:
        return 0.0
    if length <= max_length:
        return factor * ((max_length - buffer) - length) / buffer
    return -factor


def episode_penalty(ep: Any, cfg: OverlongConfig, max_tokens: int) -> float:
    """The soft overlong penalty of one episode (its model tokens against its budget)."""
    if cfg.buffer <= 0:
        return 0.0
    budget = cfg.max_length or max_tokens * max(ep.max_turns, 1)
    return soft_overlong_penalty(ep.response_tokens, budget, cfg.buffer, cfg.penalty_factor)
