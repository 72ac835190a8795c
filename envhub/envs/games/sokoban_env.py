"""The ``sokoban`` environment: Sokoban on generated levels (the catalog's entry point).

The rules and the move parser are in :mod:`.sokoban`, the board, moves, deadlocks, solver and
generator in :mod:`.sokoban_level`; the shared episode machinery (seeded task generation, turn
accounting, refusals) in :mod:`.env`.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

from envhub.core import Episode, Feedback
from envhub.errors import ConfigError, GoldAnswerError
from envhub.spec import EnvSpec, Knob
from envhub.types import Message, Task

from . import sokoban
from . import sokoban_level as sk
from .env import GameEnv
from .sokoban import SokobanState, parse_moves

GENERATOR_KNOBS = ("width", "height", "boxes", "min_moves")
"""The knobs that are :func:`~envhub.envs.games.sokoban_level.generate`'s arguments."""


def _task(task_id: str, board: str, solution: str) -> Task:
    """A task on the level ``board`` (text form) whose shortest solution is ``solution``."""
    return Task(
        task_id=task_id,
        prompt=sokoban.RULES.format(board=board),
        answer=solution,
        metadata={"level": board, "optimal_moves": len(solution), "difficulty": len(solution)},
    )


class SokobanEnv(GameEnv):
    """Sokoban on generated levels; see the module docstring for rules and options."""

    components = frozenset({"solved", "efficiency", "format"})
    primary_component = "solved"
    game: ClassVar[str] = "sokoban"
    default_size: ClassVar[int] = 100
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("width", "dataset.options", "Columns of the room, walls included.", 8, "int",
             "higher", low=4, high=16),
        Knob("height", "dataset.options", "Rows of the room, walls included.", 8, "int",
             "higher", low=4, high=16),
        Knob("boxes", "dataset.options", "Boxes (and goals) in each level.", 2, "int",
             "higher", low=1, high=5),
        Knob("min_moves", "dataset.options", "Least length of a level's shortest solution "
             "(levels needing fewer moves are not kept).", 8, "int", "higher", low=1, high=60),
        Knob("max_moves", "options", "Moves allowed before the level is lost.", 100, "int",
             "lower", low=1),
    )  # fmt: skip
    task_difficulty: ClassVar[str] = "the length of the level's shortest solution (moves, by BFS)"

    def __init__(self, spec: EnvSpec, max_moves: int = 100, end_on_deadlock: bool = True) -> None:
        """Check the options."""
        super().__init__(spec, max_moves=max_moves, end_on_deadlock=end_on_deadlock)
        self.option_knob("max_moves", max_moves)
        self.max_moves = int(max_moves)
        self.end_on_deadlock = bool(end_on_deadlock)

    def make_task(self, rng: random.Random, index: int, split: str) -> Task:
        """One generated level; its shortest solution is the task's answer."""
        opt = {name: self.generator_option(name) for name in GENERATOR_KNOBS}
        try:
            level, solution = sk.generate(rng, **opt)
        except ValueError as e:
            raise ConfigError(f"{self.spec.name}: dataset.options {opt}: {e}") from e
        task_id = f"sokoban-{split}-{self.spec.dataset.seed}-{index:04d}"
        return _task(task_id, sk.render(level.board, level.start), solution)

    def task_from_gold(self, gold: str) -> Task:
        """A task for a level given in the text form (its solution is found by BFS)."""
        return self._level_task(gold, "sokoban-adhoc")

    def row_to_task(self, row: dict[str, Any], index: int, split: str) -> Task:
        """A task from a row of a level file (``dataset.kind: jsonl``).

        Rows hold ``level`` (the text form) and optionally ``task_id``; the prompt and the
        shortest solution are made here.
        """
        if not isinstance(row.get("level"), str):
            raise ConfigError(
                f"{self.spec.name}: row {index} of split {split!r} has no 'level' text "
                f"(columns: {sorted(row)}); give each row the level in the text form"
            )
        return self._level_task(
            row["level"], str(row.get("task_id", f"sokoban-{split}-{index:04d}"))
        )

    def _level_task(self, text: str, task_id: str) -> Task:
        try:
            level = sk.parse(text)
        except ValueError as e:
            raise ConfigError(f"{self.spec.name}: level {task_id} is not readable: {e}") from e
        solution = sk.solve(level.board, level.start)
        if solution is None:
            raise ConfigError(f"{self.spec.name}: level {task_id} has no solution (BFS)")
        return _task(task_id, sk.render(level.board, level.start), solution)

    def init_state(self, episode: Episode) -> SokobanState:
        """The task's level at its start."""
        task = episode.task
        try:
            level = sk.parse(task.metadata["level"])
        except (KeyError, ValueError) as e:
            raise GoldAnswerError(f"task {task.task_id} has no readable level: {e}") from e
        optimal = int(task.metadata.get("optimal_moves") or len(task.answer or "")) or 1
        board = level.board
        return SokobanState(board, level.start, optimal, sk.live_cells(board))

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        """Play the message's moves in order, stopping at the first blocked one."""
        state: SokobanState = episode.state
        hint = "Send moves as <moves>U D L R</moves>, e.g. <moves>R R U</moves>."
        try:
            moves = parse_moves(message.content)
        except ValueError as e:
            state.turns.record(False)
            return self.invalid(str(e), f"{self._board(state)}\n{hint}")
        if not moves:
            state.turns.record(False)
            return self.invalid("no moves found", f"{self._board(state)}\n{hint}")
        played, error = self._play(state, moves)
        state.turns.record(error is None)
        text = self._report(state, played, moves, error)
        if state.outcome != "playing":
            return Feedback(
                messages=[Message(role="user", content=text)],
                done=True,
                components=self._components(state),
                info=self._info(state),
            )
        if error is not None:
            return self.invalid(error, f"{text}\n{hint}", headline=False, **self._info(state))
        return Feedback(messages=[Message(role="user", content=text)], info=self._info(state))

    def _play(self, state: SokobanState, moves: str) -> tuple[int, str | None]:
        """Play ``moves``; returns how many were played and the error that stopped them."""
        for i, step in enumerate(moves):
            try:
                state.pos, pushed = sk.move(state.board, state.pos, step)
            except sk.Blocked as e:
                return i, f"move {i + 1} ({step}) {e}"
            state.moves += 1
            state.pushes += pushed
            if sk.solved(state.board, state.pos):
                state.outcome = "solved"
            elif (
                pushed
                and self.end_on_deadlock
                and sk.deadlocked(state.board, state.pos, state.live)
            ):
                state.outcome = "deadlock"
            elif state.moves >= self.max_moves:
                state.outcome = "out_of_moves"
            if state.outcome != "playing":
                return i + 1, None
        return len(moves), None

    def _report(self, state: SokobanState, played: int, moves: str, error: str | None) -> str:
        lines = [f"Played {played} of {len(moves)} move(s): {moves[:played] or '-'}."]
        if error:
            lines.append(f"Stopped: {error}; the rest of the message was ignored.")
        lines.append(self._board(state))
        ending = {
            "solved": f"Solved in {state.moves} moves (shortest: {state.optimal}).",
            "deadlock": "A box is stuck where it can never reach a goal: the level is lost.",
            "out_of_moves": f"Out of moves ({self.max_moves}): the level is lost.",
        }
        if state.outcome in ending:
            lines.append(ending[state.outcome])
        return "\n".join(lines)

    def _board(self, state: SokobanState) -> str:
        left = sum(b not in state.board.goals for b in state.pos.boxes)
        return (
            f"{sk.render(state.board, state.pos)}\n"
            f"Boxes off goal: {left}. Moves used: {state.moves}/{self.max_moves}."
        )

    def _components(self, state: SokobanState) -> dict[str, float]:
        won = state.outcome == "solved"
        efficiency = min(1.0, state.optimal / state.moves) if won and state.moves else 0.0
        return {"solved": float(won), "efficiency": efficiency, "format": state.turns.format}

    def _info(self, state: SokobanState) -> dict[str, Any]:
        return {
            "board": sk.render(state.board, state.pos),
            "moves": state.moves,
            "pushes": state.pushes,
            "outcome": state.outcome,
        }

    def on_truncate(self, episode: Episode) -> dict[str, float]:
        """Out of turns before the level was solved."""
        return self._components(episode.state)

    def reference_action(self, episode: Episode) -> Message | None:
        """A shortest solution from the current position (BFS); ``None`` if there is none."""
        state: SokobanState = episode.state
        solution = sk.solve(state.board, state.pos)
        if not solution:
            return None
        return Message(role="assistant", content=f"<moves>{' '.join(solution)}</moves>")
