"""Connect Four: a bitboard, a depth-limited negamax opponent and a planner that beats it.

The board is 7 columns by 6 rows. As in Pascal Pons' solver, each column takes 7 bits (6 cells
and a spare top bit that keeps shifted lines from wrapping), ``mask`` holds every disc and
``cur`` the discs of the player to move; playing a move swaps the two sides. Four in a row is
found with four shift-and tests (vertical 1, horizontal 7, the diagonals 6 and 8).

:class:`Opponent` is the built-in player of set strength: alpha-beta negamax to ``depth``
plies with a window-counting heuristic, ties broken at random, and with probability
``epsilon`` a uniformly random legal move instead. All its randomness comes from the
``random.Random`` it is handed, so a game is reproducible from that generator's seed.

:func:`plan_win` is the environment's reference player: because the opponent is deterministic
given its generator's state, the planner simulates the opponent's exact replies and searches
(depth first, strongest moves first) for a line of play that wins.
"""

from __future__ import annotations

import heapq
import itertools
import random
from dataclasses import dataclass

WIDTH, HEIGHT = 7, 6
H1 = HEIGHT + 1
ORDER = (3, 2, 4, 1, 5, 0, 6)
"""Columns, centre first: the best move ordering for alpha-beta."""
WIN = 1_000_000
BOTTOM = sum(1 << (c * H1) for c in range(WIDTH))
FULL = BOTTOM * ((1 << HEIGHT) - 1)


def _bottom(col: int) -> int:
    return 1 << (col * H1)


def _top(col: int) -> int:
    return 1 << (col * H1 + HEIGHT - 1)


def _column(col: int) -> int:
    return ((1 << HEIGHT) - 1) << (col * H1)


def aligned(discs: int) -> bool:
    """True when ``discs`` hold four in a row in any direction."""
    for shift in (1, H1, H1 - 1, H1 + 1):
        pairs = discs & (discs >> shift)
        if pairs & (pairs >> (2 * shift)):
            return True
    return False


def _windows() -> tuple[int, ...]:
    out = []
    for c in range(WIDTH):
        for r in range(HEIGHT):
            for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)):
                cells = [(c + i * dc, r + i * dr) for i in range(4)]
                if all(0 <= x < WIDTH and 0 <= y < HEIGHT for x, y in cells):
                    out.append(sum(1 << (x * H1 + y) for x, y in cells))
    return tuple(out)


WINDOWS = _windows()
"""The 69 lines of four cells, as bitmasks."""
CENTRE = _column(3)


@dataclass(frozen=True)
class Board:
    """A position: every disc (``mask``), the discs of the side to move (``cur``), ply count."""

    mask: int = 0
    cur: int = 0
    moves: int = 0

    def can_play(self, col: int) -> bool:
        """True when ``col`` (0-based) is on the board and not full."""
        return 0 <= col < WIDTH and not self.mask & _top(col)

    def legal(self) -> list[int]:
        """Playable columns, centre first."""
        return [c for c in ORDER if self.can_play(c)]

    def play(self, col: int) -> Board:
        """The position after the side to move drops a disc in ``col`` (0-based)."""
        mask = self.mask | (self.mask + _bottom(col))
        return Board(mask, self.cur ^ self.mask, self.moves + 1)

    def wins(self, col: int) -> bool:
        """True when dropping a disc in ``col`` makes four in a row for the side to move."""
        disc = (self.mask + _bottom(col)) & _column(col)
        return aligned(self.cur | disc)

    @property
    def full(self) -> bool:
        """No column has room left."""
        return self.moves >= WIDTH * HEIGHT

    def discs(self, first: bool) -> int:
        """The discs of the first player (``first=True``) or of the second."""
        mover_is_first = self.moves % 2 == 0
        return self.cur if mover_is_first == first else self.cur ^ self.mask


def render(board: Board, first: str = "X", second: str = "O") -> str:
    """The board as text, top row first, with column numbers 1-7."""
    a, b = board.discs(True), board.discs(False)
    lines = [" " + " ".join(str(c + 1) for c in range(WIDTH))]
    for r in reversed(range(HEIGHT)):
        row = []
        for c in range(WIDTH):
            bit = 1 << (c * H1 + r)
            row.append(first if a & bit else second if b & bit else ".")
        lines.append("|" + " ".join(row) + "|")
    lines.append("+" + "-" * (2 * WIDTH - 1) + "+")
    return "\n".join(lines)


def evaluate(board: Board) -> int:
    """Heuristic value for the side to move: open lines of two and three, centre discs."""
    me, them = board.cur, board.cur ^ board.mask
    score = 3 * ((me & CENTRE).bit_count() - (them & CENTRE).bit_count())
    for w in WINDOWS:
        mine, theirs = (me & w).bit_count(), (them & w).bit_count()
        if theirs == 0:
            score += (0, 1, 4, 16, 0)[mine]
        elif mine == 0:
            score -= (0, 1, 4, 16, 0)[theirs]
    return score


def negamax(board: Board, depth: int, alpha: int = -WIN - 1, beta: int = WIN + 1) -> int:
    """Alpha-beta value of ``board`` for the side to move, searching ``depth`` plies.

    Wins score ``WIN - plies``, so sooner wins (and later losses) are preferred.
    """
    legal = board.legal()
    for col in legal:
        if board.wins(col):
            return WIN - board.moves - 1
    if board.moves + 1 >= WIDTH * HEIGHT or not legal:
        return 0
    if depth <= 1:
        return evaluate(board)
    best = -WIN - 1
    for col in legal:
        value = -negamax(board.play(col), depth - 1, -beta, -alpha)
        if value > best:
            best = value
        alpha = max(alpha, value)
        if alpha >= beta:
            break
    return best


def move_values(board: Board, depth: int) -> dict[int, int]:
    """The exact ``depth``-ply value of every legal move, for the side to move."""
    values = {}
    for col in board.legal():
        if board.wins(col):
            values[col] = WIN - board.moves
        else:
            child = board.play(col)
            values[col] = 0 if child.full else -negamax(child, depth - 1)
    return values


@dataclass(frozen=True)
class Opponent:
    """The built-in player: ``depth``-ply negamax, random ties, an ``epsilon`` of blunders.

    Depth 0 searches nothing: every move is a uniformly random legal one.
    """

    depth: int = 3
    epsilon: float = 0.1

    def choose(self, board: Board, rng: random.Random) -> int:
        """The column (0-based) this opponent plays on ``board``, drawing from ``rng``."""
        legal = board.legal()
        if rng.random() < self.epsilon or self.depth == 0:
            return rng.choice(sorted(legal))
        values = move_values(board, self.depth)
        best = max(values.values())
        return rng.choice(sorted(c for c, v in values.items() if v == best))


def plan_win(
    board: Board, opponent: Opponent, rng: random.Random, depth: int = 4, budget: int = 8000
) -> list[int] | None:
    """A sequence of moves for the side to move that wins against ``opponent``.

    The opponent's replies are simulated with copies of ``rng``, so they are exactly the
    replies it will play; ``rng`` itself is not advanced. Because those replies are known, the
    game is a one-player search: best first, over positions after the opponent's reply, ranked
    by their ``depth``-ply negamax value for the planner. It gives up after ``budget``
    simulated replies.

    Returns:
        The planner's moves (0-based columns), or ``None`` when no winning line was found
        within the budget.
    """
    frontier: list[tuple[int, int, int, Board, object, list[int]]] = []
    counter = itertools.count()
    heapq.heappush(frontier, (0, 0, next(counter), board, rng.getstate(), []))
    left = budget
    while frontier and left > 0:
        _, _, _, node, state, path = heapq.heappop(frontier)
        for col in node.legal():
            if node.wins(col):
                return [*path, col]
        for col in node.legal():
            after = node.play(col)
            if after.full:
                continue
            left -= 1
            sim = random.Random()
            sim.setstate(state)  # type: ignore[arg-type]
            reply = opponent.choose(after, sim)
            if after.wins(reply):
                continue
            nxt = after.play(reply)
            if nxt.full:
                continue
            value = negamax(nxt, depth)
            heapq.heappush(
                frontier, (-value, -nxt.moves, next(counter), nxt, sim.getstate(), [*path, col])
            )
    return None
