"""Sokoban: push every box onto a goal, on procedurally generated, always-solvable levels.

Levels come from :func:`~envhub.envs.games.sokoban_level.generate` (reverse play from the solved
position, then a BFS proof of a shortest solution), one per task, from the task's own seed
stream: the same ``dataset.seed`` always gives the same levels, and train and test differ.
Generator settings go in YAML ``dataset.options``: ``width``, ``height`` (walls included,
default 8x8), ``boxes`` (2), ``min_moves`` (8).

A message may hold one move or a whole sequence: ``<moves>U U R D</moves>`` (letters
``U D L R``, words ``up down left right`` or arrows, any separators). Without the tag, the last
line that reads as nothing but moves is played. Moves run in order; at the first move that is
blocked (a wall, or a box that cannot be pushed) the rest of the message is dropped and the step
is flagged ``invalid_action``. The game ends when every box is on a goal, when a box is pushed
into a deadlock the environment can see (a dead square such as a corner, or a frozen 2x2
block; turn off with ``options.end_on_deadlock: false``), or when ``options.max_moves``
(default 100) moves have been played.

Components, paid when the game ends: ``solved`` (primary), ``efficiency`` (shortest solution
length over moves played, when solved) and ``format`` (share of turns that were readable,
unblocked moves).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import sokoban_level as sk
from .env import Turns, last_tag, strip_thinking

RULES = (
    "Let's play Sokoban. Push every box onto a goal.\n"
    "Map symbols: # wall, _ floor, . goal, $ box, * box on a goal, @ you, + you on a goal.\n"
    "You move one square up (U), down (D), left (L) or right (R). Walking into a box pushes "
    "it one square, if the square behind it is free; you cannot pull boxes or push two at "
    "once, so a box pushed into a corner is stuck for good.\n"
    "You may send several moves at once. End your message with them as <moves>...</moves>, "
    "for example <moves>U U L</moves>.\n\nThe level:\n{board}"
)
_WORDS = {"UP": "U", "DOWN": "D", "LEFT": "L", "RIGHT": "R", "↑": "U", "↓": "D", "←": "L", "→": "R"}
_SEPARATORS = re.compile(r"[\s,;:|/\-.>]+")
_LABEL = re.compile(r"^\W*(moves?|answer|solution|actions?)\s*[:=]", re.I)


def parse_moves(text: str) -> str | None:
    """The moves in a message as a string over ``UDLR``, or ``None`` when there are none.

    The last ``<moves>``/``<move>`` tag wins; without one, the last line made only of moves.

    Raises:
        ValueError: a tag holds something that is not a move (the message names it).
    """
    text = strip_thinking(text)
    tagged = last_tag(text, "moves", "move")
    if tagged is not None:
        moves = _normalise(tagged)
        if moves is None:
            shown = repr(tagged[:40]) + ("..." if len(tagged) > 40 else "")
            raise ValueError(f"could not read {shown} as moves; use U, D, L, R")
        return moves or None
    for line in reversed(text.strip().splitlines()):
        moves = _normalise(_LABEL.sub("", line))
        if moves:
            return moves
    return None


def _normalise(text: str) -> str | None:
    out = text.upper()
    for word, letter in _WORDS.items():
        out = out.replace(word, letter)
    out = _SEPARATORS.sub("", out.strip("`*\"' "))
    return out if all(ch in sk.MOVES for ch in out) else None


@dataclass
class SokobanState:
    """One game: the level, where things are now, and the counts."""

    board: sk.Board
    pos: sk.Position
    optimal: int
    live: frozenset[int]
    moves: int = 0
    pushes: int = 0
    outcome: str = "playing"
    turns: Turns = field(default_factory=Turns)
