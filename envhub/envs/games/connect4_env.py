"""The ``connect4`` environment: Connect Four against a negamax opponent (its entry point).

The rules, the move parser and the state are in :mod:`.connect4`, the board, the opponent and the
reference planner in :mod:`.connect4_engine`; the shared episode machinery (seeded task
generation, opponent dice, turn accounting, refusals) in :mod:`.env`.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

from envhub.core import Episode, Feedback
from envhub.errors import ConfigError, GoldAnswerError
from envhub.spec import EnvSpec, Knob
from envhub.types import Message, Task

from . import connect4
from . import connect4_engine as c4
from .connect4 import OFF_BOARD, Connect4State, parse_column
from .env import GameEnv, check_range, episode_rng


class Connect4Env(GameEnv):
    """Connect Four against a negamax opponent; see the module docstring."""

    components = frozenset({"win", "draw", "loss", "efficiency", "format"})
    primary_component = "win"
    game: ClassVar[str] = "connect4"
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("opponent_depth", "options", "Plies the opponent searches (0: it plays a "
             "uniformly random legal move).", 2, "int", "higher", low=0, high=8),
        Knob("opponent_epsilon", "options", "Probability that the opponent plays a uniformly "
             "random legal move instead of its search's.", 0.1, "float", "lower", low=0.0,
             high=1.0),
    )  # fmt: skip
    task_difficulty: ClassVar[str] = "the opponent's search depth (options.opponent_depth)"

    def __init__(
        self,
        spec: EnvSpec,
        opponent_depth: int = 2,
        opponent_epsilon: float = 0.1,
        reference_budget: int = 8000,
    ) -> None:
        """Check the opponent's settings.

        Args:
            spec: The catalog entry.
            opponent_depth: Plies the opponent searches (0: none, a uniformly random legal
                move; 1: its own immediate wins and a heuristic; 2: also blocks the model's
                immediate wins; each ply costs several times more time, for the opponent and
                for the reference planner).
            opponent_epsilon: Probability that the opponent plays a random legal move.
            reference_budget: Simulated opponent replies the reference planner may spend.
        """
        check_range(spec.name, "reference_budget", reference_budget, 1)
        super().__init__(
            spec,
            opponent_depth=opponent_depth,
            opponent_epsilon=opponent_epsilon,
            reference_budget=reference_budget,
        )
        self.option_knob("opponent_depth", opponent_depth)
        self.option_knob("opponent_epsilon", opponent_epsilon)
        self.opponent = c4.Opponent(depth=int(opponent_depth), epsilon=float(opponent_epsilon))
        self.reference_budget = int(reference_budget)

    def make_task(self, rng: random.Random, index: int, split: str) -> Task:
        """An opening of 0-3 random discs; the model moves next."""
        board = c4.Board()
        opening = []
        for _ in range(rng.randrange(4)):
            col = rng.choice(sorted(board.legal()))
            board = board.play(col)
            opening.append(col + 1)
        task_id = f"connect4-{split}-{self.spec.dataset.seed}-{index:04d}"
        return self._opening_task(opening, rng.randrange(2**31), task_id)

    def row_to_task(self, row: dict[str, Any], index: int, split: str) -> Task:
        """A task from a row of an openings file (``dataset.kind: jsonl``).

        Rows hold ``opening`` (1-based columns, as a list or a string such as ``"4433"``),
        and optionally ``seed`` and ``task_id``.
        """
        raw = row.get("opening", [])
        try:
            opening = [int(c) for c in raw]
        except (TypeError, ValueError) as e:
            raise ConfigError(
                f"{self.spec.name}: row {index} of split {split!r}: opening {raw!r} must be "
                "columns 1-7, as a list or a string like '4433'"
            ) from e
        task_id = str(row.get("task_id", f"connect4-{split}-{index:04d}"))
        return self._opening_task(opening, int(row.get("seed", index)), task_id)

    def _opening_task(self, opening: list[int], seed: int, task_id: str) -> Task:
        board = connect4.replay(opening, task_id)
        first, second = ("X", "O") if len(opening) % 2 == 0 else ("O", "X")
        status = "Your move." if opening else "You move first."
        return Task(
            task_id=task_id,
            prompt=connect4.RULES.format(
                me="X", them="O", board=c4.render(board, first, second), status=status
            ),
            metadata={"opening": opening, "seed": seed, "difficulty": self.opponent.depth},
        )

    def init_state(self, episode: Episode) -> Connect4State:
        """The board after the task's opening; the opponent's dice from task and seed."""
        try:
            board = connect4.replay(episode.task.metadata.get("opening", []), episode.task.task_id)
        except ConfigError as e:
            raise GoldAnswerError(str(e)) from e
        rng = episode_rng(episode.task, episode.seed)
        return Connect4State(board, board.moves % 2 == 0, self.opponent, rng)

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        """Drop the model's disc, then the opponent's, and show the board."""
        state: Connect4State = episode.state
        col = parse_column(message.content)
        error = self._check(state.board, col)
        state.turns.record(error is None)
        if error is not None:
            hint = f"{self._render(state)}\nReply with <move>COLUMN</move>, a column from 1 to 7."
            return self.invalid(error, hint, board=self._render(state))
        assert col is not None
        lines = [f"You played column {col}."]
        state.board = self._drop(state, col - 1, "win")
        state.my_moves += 1
        if state.outcome == "playing":
            reply = state.opponent.choose(state.board, state.rng)
            state.board = self._drop(state, reply, "loss")
            lines.append(f"Your opponent played column {reply + 1}.")
        ending = {
            "win": "You win!",
            "loss": "Your opponent wins.",
            "draw": "The board is full: draw.",
        }
        lines.append(self._render(state))
        lines.append(ending.get(state.outcome, "Your move."))
        text = "\n".join(lines)
        if state.outcome == "playing":
            return Feedback(messages=[Message(role="user", content=text)], info=self._info(state))
        return Feedback(
            messages=[Message(role="user", content=text)],
            done=True,
            components=self._components(state),
            info=self._info(state),
        )

    def _check(self, board: c4.Board, col: int | None) -> str | None:
        if col is None:
            return "no column found; end your message with <move>COLUMN</move>"
        if col >= OFF_BOARD:
            return f"that number is far off the board; columns are 1 to {c4.WIDTH}"
        if not 1 <= col <= c4.WIDTH:
            return f"column {col} is off the board; columns are 1 to {c4.WIDTH}"
        if not board.can_play(col - 1):
            return f"column {col} is full"
        return None

    def _drop(self, state: Connect4State, col: int, if_wins: str) -> c4.Board:
        if state.board.wins(col):
            state.outcome = if_wins
        after = state.board.play(col)
        if state.outcome == "playing" and after.full:
            state.outcome = "draw"
        return after

    def _render(self, state: Connect4State) -> str:
        first, second = state.marks
        return c4.render(state.board, first, second)

    def _components(self, state: Connect4State) -> dict[str, float]:
        won = state.outcome == "win"
        efficiency = max(0.0, min(1.0, 1 - (state.my_moves - 4) / 17)) if won else 0.0
        return {
            "win": float(won),
            "draw": float(state.outcome == "draw"),
            "loss": float(state.outcome == "loss"),
            "efficiency": efficiency,
            "format": state.turns.format,
        }

    def _info(self, state: Connect4State) -> dict[str, Any]:
        return {"board": self._render(state), "outcome": state.outcome, "my_moves": state.my_moves}

    def on_truncate(self, episode: Episode) -> dict[str, float]:
        """What the board says when the game is cut short (reported in ``info.measured``)."""
        return self._components(episode.state)

    def reference_action(self, episode: Episode) -> Message:
        """A move of a line that beats this opponent, found by simulating its exact replies.

        The plan is made once (:func:`~envhub.envs.games.connect4_engine.plan_win`) and followed
        while the game goes as simulated. If no winning line is found within ``reference_budget``
        replies, the best move of a deeper search than the opponent's is played instead.
        """
        state: Connect4State = episode.state
        key = (state.board.mask, state.board.cur)
        if key not in state.plan:
            self._make_plan(state)
        col = state.plan.get(key)
        if col is None:
            depth = state.opponent.depth + 2
            values = c4.move_values(state.board, depth)
            col = max(values, key=lambda c: values[c])
        return Message(role="assistant", content=f"<move>{col + 1}</move>")

    def _make_plan(self, state: Connect4State) -> None:
        line = c4.plan_win(state.board, state.opponent, state.rng, budget=self.reference_budget)
        if line is None:
            return
        board, sim = state.board, random.Random()
        sim.setstate(state.rng.getstate())
        for col in line:
            state.plan[(board.mask, board.cur)] = col
            if board.wins(col):
                break
            board = board.play(col)
            board = board.play(state.opponent.choose(board, sim))
