"""A curriculum over tasks by their running pass rate (``rollout.curriculum``).

As prime-rl's difficulty pools, it favours tasks the policy solves sometimes but not always:
those are the groups whose rewards differ, the only ones GRPO learns from. Each key (a task,
or a difficulty bucket: the task's ``metadata["difficulty"]``) keeps its passes ``s`` and
attempts ``n``; its pass rate is the Beta(1, 1) posterior mean ``p = (s + 1) / (n + 2)`` and
its weight ``p (1 - p)`` (0.25 at ``p = 0.5``), never below ``min_weight``; a key never
tried weighs ``unseen_weight``. A step's tasks are drawn without replacement by weight
(Efraimidis-Spirakis keys) from a generator seeded by the run seed, source, step and round,
so the draws are deterministic per seed. The state (``s``, ``n`` per key) is saved in
checkpoints and logged as ``curriculum/<env>/...``.
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class CurriculumConfig(BaseModel):
    """The ``rollout.curriculum`` section (off by default)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    by: Literal["task", "difficulty"] = "task"
    """Keep pass rates per task, or per ``metadata["difficulty"]`` bucket of the tasks."""
    unseen_weight: float = Field(default=0.1, gt=0)
    """Weight of a key never tried (0.25 is the most a tried key weighs)."""
    min_weight: float = Field(default=0.01, gt=0)
    """Floor of a key's weight: always-solved and never-solved tasks stay reachable."""


class Curriculum:
    """Pass-rate state per source and key, and weighted draws of task ids."""

    def __init__(self, cfg: CurriculumConfig, tasks: dict[str, Sequence[tuple[str, Any]]]):
        """``tasks``: per source, its training tasks as ``(task_id, difficulty)``."""
        self.cfg = cfg
        self.tasks = {name: list(ts) for name, ts in tasks.items() if ts}
        self.stats: dict[str, dict[str, list[int]]] = {name: {} for name in self.tasks}

    def covers(self, source: str) -> bool:
        """True when the source's tasks are drawn by the curriculum."""
        return source in self.tasks

    def key(self, task_id: str, difficulty: Any) -> str:
        """The key a task's results are kept under."""
        return task_id if self.cfg.by == "task" else str(difficulty)

    def weight(self, source: str, key: str) -> float:
        """The draw weight of ``key`` (see the module docstring)."""
        s, n = self.stats[source].get(key, (0, 0))
        if n == 0:
            return self.cfg.unseen_weight
        p = (s + 1) / (n + 2)
        return max(p * (1 - p), self.cfg.min_weight)

    def pick(self, source: str, k: int, rng: random.Random) -> list[str]:
        """``k`` task ids of ``source`` (distinct while there are enough), drawn by weight."""
        tasks = self.tasks[source]
        weights = [self._task_weight(source, t, d) for t, d in tasks]
        keys = [math.log(rng.random() or 1e-300) / w for w in weights]
        scored = sorted(zip(keys, (t for t, _ in tasks), strict=True), reverse=True)
        ids = [t for _, t in scored]
        return [ids[i % len(ids)] for i in range(k)]

    def _task_weight(self, source: str, task_id: str, difficulty: Any) -> float:
        w = self.weight(source, self.key(task_id, difficulty))
        if self.cfg.by == "difficulty":  # a bucket's weight is shared by its tasks
            size = sum(1 for _, d in self.tasks[source] if str(d) == str(difficulty))
            w /= max(size, 1)
        return w

    def update(self, results: Iterable[tuple[str, str, bool]]) -> None:
        """Count ``(source, task_id, passed)`` results, in order."""
        for source, task_id, passed in results:
            if source not in self.tasks:
                continue
            diff = dict(self.tasks[source]).get(task_id)
            s_n = self.stats[source].setdefault(self.key(task_id, diff), [0, 0])
            s_n[0] += int(passed)
            s_n[1] += 1

    def metrics(self) -> dict[str, float]:
        """``curriculum/<env>/seen``, ``.../mean_pass`` and ``.../medium`` (0 < rate < 1)."""
        out: dict[str, float] = {}
        for source, stats in self.stats.items():
            rates = [s / n for s, n in stats.values() if n]
            out[f"curriculum/{source}/seen"] = float(len(rates))
            if rates:
                out[f"curriculum/{source}/mean_pass"] = sum(rates) / len(rates)
                out[f"curriculum/{source}/medium"] = sum(0 < r < 1 for r in rates) / len(rates)
        return out

    def snapshot(self, state: dict[str, Any] | None = None) -> Curriculum:
        """A frozen copy to draw with while the live state keeps counting.

        ``state``: a :meth:`state_dict` to freeze instead of the live counts (an asynchronous
        run draws a step's tasks with the counts as of that step's launch). The task lists
        are shared with this curriculum (they never change).
        """
        frozen = copy.copy(self)
        frozen.stats = {name: {} for name in self.tasks}
        frozen.load_state_dict(self.state_dict() if state is None else state)
        return frozen

    def state_dict(self) -> dict[str, Any]:
        """``{source: {key: [passes, attempts]}}``."""
        return copy.deepcopy(self.stats)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict`'s output."""
        for source, stats in state.items():
            if source in self.stats:
                self.stats[source] = {k: list(v) for k, v in stats.items()}
