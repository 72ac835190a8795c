"""Dynamic sampling (DAPO): drop groups whose raw outcome has zero variance, then backfill.

A group whose episodes all earned the same *outcome* (the environment's primary component:
``correctness``, ``solved``, ``win``; the reward where the component is missing) gets an
advantage of 0 for every episode: it costs a training pass and teaches nothing. The test is on
the raw outcome, not on the shaped, weighted reward: a group that is all wrong but differs in
a length penalty is still filtered. ``rollout.filter_groups: zero_variance`` drops such
groups and rolls out fresh prompts until the step has ``prompts_per_step`` groups, at most
``rollout.max_backfill_rounds`` extra rounds; a step still short trains on what it has.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from envhub.trainer.episodes.rollout import RolloutBatch, TrainingEpisode


def outcome(ep: TrainingEpisode, primary: str) -> float:
    """The episode's raw outcome: its ``primary`` component, else its reward."""
    return ep.components.get(primary, ep.reward)


def groups_of(episodes: list[TrainingEpisode]) -> dict[int, list[TrainingEpisode]]:
    """Episodes by group, in first-seen order."""
    out: dict[int, list[TrainingEpisode]] = {}
    for e in episodes:
        out.setdefault(e.group, []).append(e)
    return out


def zero_variance(members: list[TrainingEpisode], primary: str) -> bool:
    """True when the group's kept episodes (at least one) all have the same raw outcome.

    A group with fewer than two kept episodes has nothing to compare: zero variance too.
    """
    kept = [e for e in members if not e.dropped]
    return len({outcome(e, primary) for e in kept}) <= 1


@dataclass
class Filtered:
    """A step's batch after dynamic sampling, and what it cost."""

    batch: RolloutBatch
    """The groups to train on (at most ``prompts_per_step``)."""
    generated: RolloutBatch
    """Every episode generated for the step (all rounds), for metrics and logs."""
    metrics: dict[str, float] = field(default_factory=dict)


RoundFn = Callable[[int, int], RolloutBatch]
"""``round_fn(round, n_groups)``: roll out ``n_groups`` fresh groups for backfill ``round``."""


def collect_filtered(
    round_fn: RoundFn,
    n_groups: int,
    primary_of: Callable[[str], str],
    *,
    enabled: bool,
    max_rounds: int,
) -> Filtered:
    """Roll out ``n_groups`` groups; if ``enabled``, replace zero-variance ones (see module).

    Group ids of later rounds are renumbered after the earlier ones. Metrics:
    ``filter/groups_zero_variance`` (and per source ``filter/<env>/zero_variance``),
    ``filter/backfill_rounds``, ``filter/groups_generated``, ``filter/extra_episodes``,
    ``filter/extra_tokens`` (generated tokens of the backfill rounds), ``filter/groups_short``
    and ``time/backfill``.
    """
    kept: list[TrainingEpisode] = []
    everything = RolloutBatch([])
    m: dict[str, float] = {"filter/groups_zero_variance": 0.0, "filter/groups_generated": 0.0}
    n_kept, offset, round_, t_backfill = 0, 0, 0, 0.0
    while True:
        t0 = time.perf_counter()
        batch = round_fn(round_, n_groups - n_kept if enabled else n_groups)
        _renumber(batch, offset)
        groups = groups_of(batch.episodes)
        offset += len(groups)
        _absorb(everything, batch, m, extra=round_ > 0)
        for members in groups.values():
            if enabled and zero_variance(members, primary_of(members[0].env)):
                _count_filtered(m, members[0].env)
            elif n_kept < n_groups:
                kept.extend(members)
                n_kept += 1
        if round_ > 0:
            t_backfill += time.perf_counter() - t0
        if not enabled or n_kept >= n_groups or round_ >= max_rounds:
            break
        round_ += 1
    m["filter/backfill_rounds"] = float(round_)
    m["filter/groups_short"] = float(n_groups - n_kept)
    m["time/backfill"] = t_backfill
    out = RolloutBatch(kept, everything.generation_time, everything.env_time)
    return Filtered(out, everything, m)


def _renumber(batch: RolloutBatch, offset: int) -> None:
    for e in batch.episodes:
        e.group += offset


def _absorb(total: RolloutBatch, batch: RolloutBatch, m: dict[str, float], *, extra: bool) -> None:
    total.episodes.extend(batch.episodes)
    total.generation_time += batch.generation_time
    total.env_time += batch.env_time
    m["filter/groups_generated"] += len(groups_of(batch.episodes))
    if extra:
        m["filter/extra_episodes"] = m.get("filter/extra_episodes", 0.0) + len(batch.episodes)
        tokens = sum(e.response_tokens for e in batch.episodes)
        m["filter/extra_tokens"] = m.get("filter/extra_tokens", 0.0) + tokens


def _count_filtered(m: dict[str, float], source: str) -> None:
    m["filter/groups_zero_variance"] += 1
    if source:
        key = f"filter/{source}/zero_variance"
        m[key] = m.get(key, 0.0) + 1
