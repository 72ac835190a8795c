"""Connect Four against a built-in opponent of set strength.

Each task is an opening (zero to three random discs already dropped, so the model moves first
or second) and a seed. The opponent (:class:`~envhub.envs.games.connect4_engine.Opponent`) searches
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

from envhub.errors import ConfigError

from . import connect4_engine as c4
from .env import Turns, last_tag, strip_thinking

RULES = (
    "Let's play Connect Four on a 7-column, 6-row board. You play {me}, your opponent plays "
    "{them}. Players take turns dropping a disc into a column (1-7); it falls to the lowest "
    "empty cell. The first to get four of their discs in a row (across, up and down, or "
    "diagonally) wins; a full board is a draw.\n"
    "End each message with the column you play, as <move>COLUMN</move>, "
    "for example <move>4</move>.\n\n{board}\n{status}"
)
_DIGIT = re.compile(r"(?<![\w.])\d+(?![\w.])")
"""A whole number token: ``x3`` and ``3rd`` are no column."""
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


def replay(opening: list[int], task_id: str) -> c4.Board:
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
