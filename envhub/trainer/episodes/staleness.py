"""Bounded staleness of asynchronous GRPO (NeMo RL's ``max_trajectory_age_steps``).

Weights are numbered by refit: version ``v`` is what the engines hold after the ``v``-th
refit (the first, at start, is 1). A group's *age* when trained is the version of the
policy being updated minus the oldest version any of its episodes was sampled under. A
group older than ``max_trajectory_age_steps`` is discarded, never trained on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from envhub.trainer.episodes.rollout import RolloutBatch, TrainingEpisode


def group_age(episodes: list[TrainingEpisode], current: int) -> int:
    """Versions between ``current`` and the oldest turn of the group (0 when unversioned)."""
    versions = [v for e in episodes for v in e.versions]
    return current - min(versions) if versions else 0


@dataclass
class AgeFilter:
    """What :func:`filter_by_age` kept and discarded from one batch."""

    batch: RolloutBatch
    """The batch without the discarded groups' episodes."""
    ages: list[int] = field(default_factory=list)
    """Age of every kept group."""
    discarded: int = 0
    """Groups dropped for being older than the bound."""

    def metrics(self) -> dict[str, float]:
        """``trajectory_age_mean``/``_max``, ``groups_trained``, ``groups_discarded_age``."""
        out = {
            "groups_trained": float(len(self.ages)),
            "groups_discarded_age": float(self.discarded),
        }
        if self.ages:
            out["trajectory_age_mean"] = sum(self.ages) / len(self.ages)
            out["trajectory_age_max"] = float(max(self.ages))
        return out


def filter_by_age(batch: RolloutBatch, current: int, max_age: int) -> AgeFilter:
    """Drop the groups of ``batch`` older than ``max_age`` versions at version ``current``."""
    groups: dict[int, list[TrainingEpisode]] = {}
    for e in batch.episodes:
        groups.setdefault(e.group, []).append(e)
    kept: list[TrainingEpisode] = []
    out = AgeFilter(batch)
    for members in groups.values():
        age = group_age(members, current)
        if age > max_age:
            out.discarded += 1
            continue
        kept.extend(members)
        if any(not e.dropped for e in members):
            out.ages.append(age)
    out.batch = RolloutBatch(kept, batch.generation_time, batch.env_time)
    return out
