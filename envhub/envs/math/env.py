r"""Math environments: ``gsm8k`` (word problems, numeric answers) and ``math`` (symbolic).

One class serves both; the catalog entry picks the data, the prompt and the answer format.
Components: ``correctness`` (the extracted final answer equals the gold one, see
:mod:`envhub.envs.math.extract` for the extraction order and :mod:`envhub.envs.math.answers` for
the equivalence rules) and ``format`` (the answer is given the requested way: ``#### 42`` or
``\\boxed{42}``). A response that hedges between different final answers earns no
correctness.

With ``options.attempts: N`` (default 1) the episode is a retry game of up to N turns: a
response whose final answer is wrong (or missing, or hedged) is answered "not correct, try
again" and the model answers anew; the episode ends at the first correct answer or after the
N-th. The components are those of the last response, so ``correctness`` reads "solved within
N attempts"; the entry's ``max_turns`` must allow N turns. The feedback says only that the
answer was wrong, never how far off it was (a retry game, not a search on the gold).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from envhub.core import Episode, Feedback, TaskEnv
from envhub.errors import ConfigError, GoldAnswerError
from envhub.spec import EnvSpec, Knob, check_dataset_knobs
from envhub.types import Message, Task

from . import answers, extract, generators, pool

GENERATORS: dict[str, Callable[..., list[Task]]] = {
    "gsm_symbolic": generators.gsm_symbolic_tasks,
    "symbolic": generators.symbolic_math_tasks,
}
"""Offline task generators selectable with ``dataset.generator``."""

DEFAULT_SIZE = 500

ATTEMPTS = Knob(
    "attempts",
    "options",
    "Answers the model may give, told after a wrong one to try again (a retry game of up to "
    "this many turns; max_turns must allow it).",
    1,
    "int",
    "lower",
    low=1,
)


class MathEnv(TaskEnv):
    """Single-turn math: one answer, checked against the gold by value."""

    components = frozenset({"correctness", "format"})
    task_difficulty = generators.TASK_DIFFICULTY

    @classmethod
    def difficulty_knobs(cls, spec: EnvSpec) -> tuple[Knob, ...]:
        """``attempts``, and the knobs of the entry's generator (``dataset.generator``)."""
        if spec.dataset.kind != "builtin":
            return (ATTEMPTS,)
        return (ATTEMPTS, *generators.KNOBS.get(spec.dataset.generator or "gsm_symbolic", ()))

    def __init__(
        self,
        spec: EnvSpec,
        answer_format: Literal["hash", "boxed"] = "hash",
        timeout: float = 2.0,
        attempts: int = 1,
    ) -> None:
        r"""Build from the spec; ``answer_format`` is what the format component rewards.

        Args:
            spec: The catalog entry.
            answer_format: ``hash`` (``#### 42``, GSM8K style) or ``boxed`` (``\\boxed{42}``).
            timeout: CPU seconds allowed for one symbolic comparison (waiting for a core on a
                loaded machine is not counted).
            attempts: Answers the model may give; past a wrong one it is told to try again.

        Raises:
            ConfigError: An unknown ``answer_format``, or ``attempts`` below 1 or above the
                entry's ``max_turns``.
        """
        super().__init__(spec, answer_format=answer_format, timeout=timeout, attempts=attempts)
        if spec.dataset.kind == "builtin":
            check_dataset_knobs(spec, self.difficulty_knobs(spec))
        if answer_format not in ("hash", "boxed"):
            raise ConfigError(f"answer_format must be 'hash' or 'boxed', got {answer_format!r}")
        _check_attempts(spec, attempts)
        self.answer_format = answer_format
        self.timeout = timeout
        self.attempts = attempts

    def warmup(self) -> None:
        """Load the tasks and start the symbolic workers (the first start takes seconds)."""
        super().warmup()
        pool.warmup()

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        """Procedural tasks from the generator named in ``dataset.generator``."""
        name = self.spec.dataset.generator or "gsm_symbolic"
        if name not in GENERATORS:
            raise ConfigError(
                f"{self.spec.name}: unknown dataset.generator {name!r}; "
                f"choose one of {sorted(GENERATORS)}"
            )
        return GENERATORS[name](split, size or DEFAULT_SIZE, seed, **self.spec.dataset.options)

    def row_to_task(self, row: dict[str, Any], index: int, split: str) -> Task:
        """A dataset row; a GSM8K-style worked answer (``... #### 72``) keeps only ``72``."""
        task = super().row_to_task(row, index, split)
        if task.answer and "####" in task.answer:
            gold = task.answer.rsplit("####", 1)[1].strip()
            task = task.model_copy(
                update={"answer": gold, "metadata": {**task.metadata, "solution": task.answer}}
            )
        return task

    def task_from_gold(self, gold: str) -> Task:
        """An ad-hoc task on ``gold``, refused with :class:`GoldAnswerError` if unreadable."""
        task = super().task_from_gold(gold)
        answers.validate_gold(gold)
        return task

    def score(self, task: Task, response: Message) -> tuple[dict[str, float], dict[str, Any]]:
        """Correctness and format of one response."""
        if not task.answer:
            raise GoldAnswerError(f"task {task.task_id!r} has no gold answer")
        answers.validate_gold(task.answer)
        found = extract.extract_answer(response.content)
        correct = False
        if found.answer is not None and not found.hedged:
            correct = answers.is_equivalent(
                found.answer, task.answer, timeout=self.timeout, tolerance=_tolerance(task)
            )
        components = {
            "correctness": float(correct),
            "format": extract.format_score(response.content, self.answer_format),
        }
        details = {"extracted": found.answer, "method": found.method, "hedged": found.hedged}
        return components, details

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        """Judge the answer; a wrong one with attempts left is answered "try again"."""
        components, details = self.score(episode.task, message)
        left = self.attempts - episode.turn
        if components["correctness"] == 1.0 or left <= 0:
            return Feedback(done=True, components=components, info=details)
        how = "#### <answer>" if self.answer_format == "hash" else "\\boxed{<answer>}"
        text = (
            f"That is not correct. Try again: {left} attempt{'s' if left > 1 else ''} left. "
            f"End with your final answer as {how}."
        )
        return Feedback(messages=[Message(role="user", content=text)], info=details)

    def reference_action(self, episode: Episode) -> Message | None:
        """The gold answer in the requested format."""
        gold = episode.task.answer
        if gold is None:
            return None
        text = f"#### {gold}" if self.answer_format == "hash" else f"\\boxed{{{gold}}}"
        return Message(role="assistant", content=f"The answer follows.\n{text}")


def _check_attempts(spec: EnvSpec, attempts: object) -> None:
    """Refuse an ``attempts`` option that is no whole number from 1 to ``max_turns``."""
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ConfigError(
            f"{spec.name}: options.attempts must be a whole number >= 1, got {attempts!r}"
        )
    if attempts > spec.max_turns:
        raise ConfigError(
            f"{spec.name}: options.attempts is {attempts} but max_turns is {spec.max_turns}; "
            f"set max_turns: {attempts} (each attempt is a turn)"
        )


def _tolerance(task: Task) -> float | None:
    """The rounding a task allows, from its data (``metadata["tolerance"]``); None: exact.

    Raises:
        GoldAnswerError: The tolerance is not a non-negative number (the task's data is broken).
    """
    value = task.metadata.get("tolerance")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise GoldAnswerError(
            f"task {task.task_id!r}: metadata.tolerance must be a non-negative number, "
            f"got {value!r}"
        )
    return float(value)
