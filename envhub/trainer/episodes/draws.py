"""What a run draws its tasks with: the mix's sampler, its curriculum, and their launch states.

:class:`Draws` holds the run's :class:`~envhub.trainer.episodes.mix.MixSampler` (and its
curriculum, once the environment workers have listed their tasks), the sources' primary
components, and, in asynchronous runs, the curriculum's counts as of each recent step (the
states future steps are drawn with). The driver counts each step's results into it and saves
its :meth:`~Draws.state_dict` in checkpoints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from envhub.trainer.episodes.curriculum import Curriculum, CurriculumConfig
from envhub.trainer.episodes.dynamic import Filtered, outcome
from envhub.trainer.episodes.mix import MixSampler, MixSource


class Draws:
    """The sampler, the curriculum and the launch states of one training run."""

    def __init__(self, sources: Sequence[MixSource], seed: int, max_age: int = 0):
        """``max_age``: the run's ``max_trajectory_age`` (0: synchronous)."""
        self.sampler = MixSampler(list(sources), seed)
        self.max_age = max_age
        self.launch_states: dict[int, dict[str, Any]] = {}
        """Asynchronous runs: the curriculum's counts after each of the last N steps (the
        states future steps are drawn with; saved in checkpoints, see :meth:`snapshot`)."""
        self.primaries: dict[str, str] = {}

    def attach(self, info: Mapping[str, Mapping[str, Any]], curriculum: CurriculumConfig) -> None:
        """The environment workers' answers: primary components (and tasks, for a curriculum).

        ``info``: per source, ``primary`` and, with the curriculum on, ``tasks``
        (:meth:`envhub.trainer.workers.cluster.Cluster.env_info`).
        """
        self.primaries = {name: i["primary"] for name, i in info.items()}
        if curriculum.enabled:
            tasks = {n: i["tasks"] for n, i in info.items()}
            self.sampler.curriculum = Curriculum(curriculum, tasks)

    def resume(self, sampler_state: dict[str, Any]) -> None:
        """Continue from a checkpoint's ``sampler`` entry (:meth:`state_dict`'s output)."""
        self.sampler.load_state_dict(sampler_state)
        saved = sampler_state.get("launch_states") or {}
        self.launch_states = {int(step): counts for step, counts in saved.items()}

    def primary_of(self, source: str) -> str:
        """The primary component of ``source`` (``correctness`` when unknown)."""
        return self.primaries.get(source, "correctness")

    def snapshot(self, step: int) -> Any:
        """The frozen curriculum to draw step ``step``'s tasks with (None: the live one).

        An asynchronous run (``N = max_trajectory_age``) launches step k right after step
        ``max(1, k - N)`` is counted (the first step launches steps 2 .. N + 1): k's tasks
        are drawn with the counts as of that step, which :meth:`count` keeps for the last N
        steps and checkpoints save, so a resumed run draws what the uninterrupted one drew.
        None in synchronous runs, without a curriculum, for the first step, and after
        resuming a checkpoint written before these states were saved (the live counts).
        """
        cur = self.sampler.curriculum
        state = self.launch_states.get(max(1, step - self.max_age))
        if cur is None or self.max_age == 0 or state is None:
            return None
        return cur.snapshot(state)

    def count(self, step: int, results: Iterable[tuple[str, str, bool]]) -> None:
        """Count step ``step``'s ``(source, task_id, passed)`` results into the curriculum.

        Asynchronous runs keep the counts after each of the last N steps (:meth:`snapshot`).
        """
        cur = self.sampler.curriculum
        if cur is None:
            return
        cur.update(results)
        if self.max_age > 0:
            self.launch_states[step] = cur.state_dict()
            for old in [s for s in self.launch_states if s <= step - self.max_age]:
                del self.launch_states[old]

    def observe(self, step: int, filtered: Filtered) -> None:
        """Count every scored episode the step generated (all backfill rounds)."""
        self.count(
            step,
            (
                (e.env, e.task_id, outcome(e, self.primary_of(e.env)) >= 1.0)
                for e in filtered.generated.episodes
                if not e.dropped and e.task_id is not None
            ),
        )

    def metrics(self) -> dict[str, float]:
        """The curriculum's figures (none without one)."""
        cur = self.sampler.curriculum
        return cur.metrics() if cur is not None else {}

    def state_dict(self, step: int) -> dict[str, Any]:
        """The checkpoint's ``sampler`` entry after ``step``: the sampler's, and launch states.

        The sampler's draws are counted as of ``step`` (see :meth:`MixSampler.state_dict`).
        """
        launch = {str(k): counts for k, counts in self.launch_states.items()}
        return self.sampler.state_dict(step) | {"launch_states": launch}
