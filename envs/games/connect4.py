"""Connect Four against a built-in opponent of set strength.

Each task is an opening (zero to three random discs already dropped, so the model moves first
or second) and a seed. The opponent (:class:`~envs.games.connect4_engine.Opponent`) searches
``options.opponent_depth`` plies (default 2) and plays a uniformly random move with probability
``options.opponent_epsilon`` (default 0.1); its dice come from the task and the reset seed, so
the same seed and the same moves always give the same game.

The model names a column 1-7: ``<move>4</move>``; without the tag, the last free-standing
digit of the message counts (outside ``<think>`` blocks). A message with no column, a column
off the board or a full column is answered with the board and the reason, flagged
``invalid_action``; no disc is dropped and the opponent does not move (the turn still counts
against ``max_turns``).

Components, paid when the game ends: ``win`` (primary), ``draw``, ``loss`` (1.0 on a loss: give
it a negative weight to punish losing), ``efficiency`` (on a win, 1.0 for a win in four of the
model's moves, falling to 0 at 21) and ``format`` (share of turns that were legal moves). A game
cut short (turn limit, ``finish()``) pays each at its worst under its weight, so with a negative
``loss`` weight it counts as a loss: illegal moves cannot stall a losing game into a better
reward (see :mod:`envhub.rewards`).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from envhub.core import Episode, Feedback
from envhub.errors import ConfigError, GoldAnswerError
from envhub.spec import EnvSpec
from envhub.types import Message, Task

from . import connect4_engine as c4
from .base import GameEnv, Turns, check_range, episode_rng, last_tag, strip_thinking

RULES = (
    "Let's play Connect Four on a 7-column, 6-row board. You play {me}, your opponent plays "
    "{them}. Players take turns dropping a disc into a column (1-7); it falls to the lowest "
    "empty cell. The first to get four of their discs in a row (across, up and down, or "
    "diagonally) wins; a full board is a draw.\n"
    "End each message with the column you play, as <move>COLUMN</move>, "
    "for example <move>4</move>.\n\n{board}\n{status}"
)
_DIGIT = re.compile(r"(?<![\d.])\d+(?![\d.])")
_MAX_DIGITS = 6
OFF_BOARD = 10**_MAX_DIGITS
"""What :func:`parse_column` reads a number of more than six digits as (off the board)."""


def parse_column(text: str) -> int | None:
    """The column number in a message (as written, 1-based), or ``None`` if none is found.

    The last ``<move>`` (or ``<column>``) tag wins; without one, the last free-standing number.
    A number of more than six digits reads as :data:`OFF_BOARD`.
    """
    text = strip_thinking(text)
    tagged = last_tag(text, "move", "column")
    source = tagged if tagged is not None else text
    numbers = _DIGIT.findall(source)
    if not numbers:
        return None
    digits = numbers[-1].lstrip("0") or "0"
    # a number of thousands of digits is no column (and int() refuses it): off the board
    return int(digits) if len(digits) <= _MAX_DIGITS else OFF_BOARD


@dataclass
class Connect4State:
    """One game: the board, who is who, the opponent and its dice."""

    board: c4.Board
    model_first: bool
    opponent: c4.Opponent
    rng: random.Random
    my_moves: int = 0
    outcome: str = "playing"
    turns: Turns = field(default_factory=Turns)
    plan: dict[tuple[int, int], int] = field(default_factory=dict)
    """Reference moves by position (``mask``, ``cur``), filled by the planner."""

    @property
    def marks(self) -> tuple[str, str]:
        """Symbols of the first and the second player: the model is always ``X``."""
        return ("X", "O") if self.model_first else ("O", "X")


class Connect4Env(GameEnv):
    """Connect Four against a negamax opponent; see the module docstring."""

    components = frozenset({"win", "draw", "loss", "efficiency", "format"})
    primary_component = "win"
    game: ClassVar[str] = "connect4"

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
            opponent_depth: Plies the opponent searches (1: its own immediate wins and a
                heuristic; 2: also blocks the model's immediate wins; each ply costs several
                times more time, for the opponent and for the reference planner).
            opponent_epsilon: Probability that the opponent plays a random legal move.
            reference_budget: Simulated opponent replies the reference planner may spend.
        """
        check_range(spec.name, "opponent_depth", opponent_depth, 1, 8)
        check_range(spec.name, "opponent_epsilon", opponent_epsilon, 0.0, 1.0)
        check_range(spec.name, "reference_budget", reference_budget, 1)
        super().__init__(
            spec,
            opponent_depth=opponent_depth,
            opponent_epsilon=opponent_epsilon,
            reference_budget=reference_budget,
        )
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
        board = _replay(opening, task_id)
        first, second = ("X", "O") if len(opening) % 2 == 0 else ("O", "X")
        status = "Your move." if opening else "You move first."
        return Task(
            task_id=task_id,
            prompt=RULES.format(
                me="X", them="O", board=c4.render(board, first, second), status=status
            ),
            metadata={"opening": opening, "seed": seed},
        )

    def init_state(self, episode: Episode) -> Connect4State:
        """The board after the task's opening; the opponent's dice from task and seed."""
        try:
            board = _replay(episode.task.metadata.get("opening", []), episode.task.task_id)
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

        The plan is made once (:func:`~envs.games.connect4_engine.plan_win`) and followed while
        the game goes as simulated. If no winning line is found within ``reference_budget``
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


def _replay(opening: list[int], task_id: str) -> c4.Board:
    """The board after ``opening`` (1-based columns); it must be legal and still undecided."""
    board = c4.Board()
    for col in opening:
        if not isinstance(col, int) or not board.can_play(col - 1):
            raise ConfigError(f"task {task_id}: opening move {col!r} is not a legal column")
        if board.wins(col - 1):
            raise ConfigError(f"task {task_id}: the opening {opening} already wins the game")
        board = board.play(col - 1)
    if board.full:
        raise ConfigError(f"task {task_id}: the opening {opening} fills the board")
    return board
