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

from . import catalog, scoring, worker
from . import tasks as generation

OTHER_GOLDS = 3
"""Golds of other tasks tried as answers when a task's floor is measured."""


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
        self._floors: dict[str, float] = {}
        """What an answer made without solving earns, by task id (:func:`scoring.constant_floor`,
        measured in the worker the first time)."""
        self._others: tuple[str, ...] | None = None
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

    def score(self, task: Task, response: Message) -> tuple[dict[str, float], dict[str, Any]]:
        """Correctness and format of one response, scored in a worker process (:mod:`.worker`)."""
        if task.answer is None:
            raise GoldAnswerError(f"task {task.task_id!r} has no gold answer")
        reading = scoring.read_answer(response.content)
        entry = {"question": task.prompt, "answer": task.answer, "metadata": self._metadata(task)}
        floor = self._floors.get(task.task_id)
        job = worker.Job(
            generator=self.generator,
            options=self.spec.dataset.options,
            seed=self.spec.dataset.seed,
            reading=reading,
            entry=entry,
            floor=floor,
            others=self._other_golds() if floor is None else (),
        )
        value, why, self._floors[task.task_id] = worker.score(job)
        components = {
            "correctness": value,
            "format": float(reading.blocks == 1 and bool(reading.answer)),
        }
        details = {"extracted": reading.answer, "hedged": reading.hedged, "why": why}
        return components, details

    def _other_golds(self) -> tuple[str, ...]:
        """Golds of the generator's first :data:`OTHER_GOLDS` items, for the floor.

        Answers of the tasks' own kind that solve other tasks (any split; the same in every
        process, so a task's floor does not depend on which tasks were made here).
        """
        if self._others is None:
            ds = self.spec.dataset
            items = generation.dataset(self.generator, ds.options, ds.seed, OTHER_GOLDS)
            golds = (items[i].get("answer") for i in range(OTHER_GOLDS))
            self._others = tuple(str(g) for g in golds if g is not None)
        return self._others

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
