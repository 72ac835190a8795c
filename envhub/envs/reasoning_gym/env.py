"""Every reasoning-gym generator as an environment: the catalog's ``rg-<dataset>`` entries.

One class serves them all; the entry names the generator (``options.generator``) and its
knobs (``dataset.options``), and :mod:`envhub.envs.reasoning_gym.catalog` writes the entries.
Components: ``correctness``, the generator's own ``score_answer`` on the ``<answer>`` block
(rules in :mod:`envhub.envs.reasoning_gym.scoring`), and ``format``, exactly one non-empty
``<answer>`` block. Splits are disjoint by question (:mod:`envhub.envs.reasoning_gym.tasks`).
"""

from __future__ import annotations

from typing import Any

from envhub.core import Episode, TaskEnv
from envhub.errors import GoldAnswerError
from envhub.spec import EnvSpec, Knob
from envhub.types import Message, Task

from . import catalog, evaluated, scoring
from . import tasks as generation


class ReasoningGymEnv(TaskEnv):
    """Single-turn: one ``<answer>``, scored by the generator's ``score_answer``."""

    components = frozenset({"correctness", "format"})
    task_difficulty = generation.TASK_DIFFICULTY

    @classmethod
    def difficulty_knobs(cls, spec: EnvSpec) -> tuple[Knob, ...]:
        """The generator's knobs, from the snapshot (:mod:`.catalog`): no generator imports."""
        return catalog.knobs(str(spec.options.get("generator", "")))

    def __init__(self, spec: EnvSpec, generator: str) -> None:
        """Build from the spec.

        Args:
            spec: The catalog entry; ``dataset.options`` holds the generator's knobs.
            generator: The reasoning-gym dataset name (``basic_arithmetic``, ``composite``...).
        """
        super().__init__(spec, generator=generator)
        self.generator = generator
        self._scorer: Any = None
        self._floors: dict[str, float] = {}
        """What a constant answer earns, by task id (:func:`scoring.constant_floor`)."""
        self._generated: dict[str, tuple[Task, dict[str, Any]]] = {}
        """Each task made here, by id, with its item metadata as generated (the task holds
        it JSON-safe)."""

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        """The generator's tasks of ``split`` (``dataset.size`` of them, default 200)."""
        ds = self.spec.dataset
        size = size or catalog.DEFAULT_SIZE
        made = generation.cached_tasks(self.generator, split, size, seed, ds.options)
        self._generated.update((task.task_id, (task, raw)) for task, raw in made)
        return [task for task, _ in made]

    def scorer(self) -> Any:
        """The generator's ``score_answer`` (its dataset is built once, with the entry's knobs)."""
        if self._scorer is None and self.generator in scoring.OWN_SCORERS:
            self._scorer = scoring.OWN_SCORERS[self.generator]
        if self._scorer is None:
            ds = self.spec.dataset
            self._scorer = generation.dataset(self.generator, ds.options, ds.seed, 1).score_answer
            if self.generator in evaluated.EVALUATES:
                self._scorer = evaluated.guarded(self._scorer, evaluated.EVALUATES[self.generator])
        return self._scorer

    def score(self, task: Task, response: Message) -> tuple[dict[str, float], dict[str, Any]]:
        """Correctness and format of one response."""
        if task.answer is None:
            raise GoldAnswerError(f"task {task.task_id!r} has no gold answer")
        reading = scoring.read_answer(response.content)
        entry = {"question": task.prompt, "answer": task.answer, "metadata": self._metadata(task)}
        value, why = scoring.correctness(
            self.scorer(),
            reading,
            entry,
            floor=self._floor(task, entry),
            full_only=self.generator in catalog.CLOSENESS_CREDIT,
        )
        components = {
            "correctness": value,
            "format": float(reading.blocks == 1 and bool(reading.answer)),
        }
        details = {"extracted": reading.answer, "hedged": reading.hedged, "why": why}
        return components, details

    def _floor(self, task: Task, entry: dict[str, Any]) -> float:
        """What a constant answer earns on ``task`` (measured once per task)."""
        if task.task_id not in self._floors:
            self._floors[task.task_id] = scoring.constant_floor(self.scorer(), entry)
        return self._floors[task.task_id]

    def _metadata(self, task: Task) -> dict[str, Any]:
        """The item metadata of ``task`` as generated; JSON-safe for a task not made here."""
        made = self._generated.get(task.task_id)
        if made is not None and made[0] == task:
            return made[1]
        return task.metadata.get("rg", {})

    def reference_action(self, episode: Episode) -> Message | None:
        """The task's own answer (reasoning-gym's), in the ``<answer>`` format."""
        gold = episode.task.answer
        if gold is None:
            return None
        return Message(role="assistant", content=f"<answer>{gold}</answer>")
