"""Sokoban rules, deadlock detection, a BFS solver and a reverse-play level generator.

Cells are integers ``row * width + col``. A :class:`Board` is the static part of a level
(walls, goals, size); a :class:`Position` is the dynamic part (player, boxes). Levels are made
by playing backwards from the solved position (the player *pulls* boxes off their goals), so
every generated level is solvable by construction; the BFS solver then finds a shortest
solution (in moves), which is both the reference play and the yardstick of ``efficiency``.

Text form (a variant of the XSB format, with ``_`` for floor so that no line ends in spaces):
``#`` wall, ``_`` floor, ``.`` goal, ``$`` box, ``*`` box on a goal, ``@`` player,
``+`` player on a goal.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass

MOVES = "UDLR"
WALL, FLOOR, GOAL, BOX, BOX_ON_GOAL, PLAYER, PLAYER_ON_GOAL = "#_.$*@+"


class Blocked(Exception):
    """A move that cannot be made; the message says why."""


@dataclass(frozen=True)
class Board:
    """The static part of a level."""

    width: int
    height: int
    walls: frozenset[int]
    goals: frozenset[int]

    def delta(self, move: str) -> int:
        """Cell offset of one of ``U``, ``D``, ``L``, ``R``."""
        return {"U": -self.width, "D": self.width, "L": -1, "R": 1}[move]

    def inside(self, cell: int) -> bool:
        """True for cells on the grid."""
        return 0 <= cell < self.width * self.height

    def is_wall(self, cell: int) -> bool:
        """Walls, and anything off the grid."""
        return cell in self.walls or not self.inside(cell)


@dataclass(frozen=True)
class Position:
    """The dynamic part of a level: where the player and the boxes are."""

    player: int
    boxes: frozenset[int]


@dataclass(frozen=True)
class Level:
    """A board with its starting position."""

    board: Board
    start: Position


def parse(text: str) -> Level:
    """Read the text form (see the module docstring).

    Spaces and ``-`` also read as floor (standard XSB); rows are padded with walls, and
    everything outside the walls around the player becomes wall.

    Raises:
        ValueError: an unknown symbol, no player, unequal boxes and goals, or a level that
            is not enclosed by walls.
    """
    rows = [r for r in text.strip("\n").splitlines() if r.strip()]
    width = max(len(r) for r in rows)
    walls, goals, boxes, player = set(), set(), set(), None
    for r, row in enumerate(rows):
        for c, ch in enumerate(row.ljust(width, WALL)):
            cell = r * width + c
            if ch == WALL:
                walls.add(cell)
            if ch in (GOAL, BOX_ON_GOAL, PLAYER_ON_GOAL):
                goals.add(cell)
            if ch in (BOX, BOX_ON_GOAL):
                boxes.add(cell)
            if ch in (PLAYER, PLAYER_ON_GOAL):
                player = cell
            if ch not in "#_.$*@+ -":
                raise ValueError(f"unknown Sokoban symbol {ch!r} in row {r}")
    if player is None or len(boxes) != len(goals) or not boxes:
        raise ValueError("a level needs one player and as many boxes as goals (at least one)")
    area = _enclosed_area(width, len(rows), walls, player)
    if (boxes | goals) - area:
        raise ValueError("a box or goal lies outside the walls around the player")
    walls = set(range(width * len(rows))) - area  # outside the walls counts as wall
    board = Board(width, len(rows), frozenset(walls), frozenset(goals))
    return Level(board, Position(player, frozenset(boxes)))


def _enclosed_area(width: int, height: int, walls: set[int], player: int) -> set[int]:
    """Cells the player could reach on an empty board; they must be enclosed by walls."""
    area, stack = {player}, [player]
    while stack:
        cell = stack.pop()
        r, c = divmod(cell, width)
        if r in (0, height - 1) or c in (0, width - 1):
            raise ValueError("the level is not enclosed: the player can reach the edge")
        for nxt in (cell - width, cell + width, cell - 1, cell + 1):
            if nxt not in walls and nxt not in area:
                area.add(nxt)
                stack.append(nxt)
    return area


def render(board: Board, pos: Position) -> str:
    """The text form of ``pos`` on ``board``."""
    lines = []
    for r in range(board.height):
        row = []
        for c in range(board.width):
            cell = r * board.width + c
            goal = cell in board.goals
            if cell in board.walls:
                row.append(WALL)
            elif cell in pos.boxes:
                row.append(BOX_ON_GOAL if goal else BOX)
            elif cell == pos.player:
                row.append(PLAYER_ON_GOAL if goal else PLAYER)
            else:
                row.append(GOAL if goal else FLOOR)
        lines.append("".join(row))
    return "\n".join(lines)


def move(board: Board, pos: Position, step: str) -> tuple[Position, bool]:
    """Play one move; returns the new position and whether a box was pushed.

    Raises:
        Blocked: a wall is in the way, or the box cannot be pushed (wall or box behind it).
    """
    d = board.delta(step)
    target = pos.player + d
    if board.is_wall(target):
        raise Blocked("walks into a wall")
    if target not in pos.boxes:
        return Position(target, pos.boxes), False
    beyond = target + d
    if board.is_wall(beyond):
        raise Blocked("would push a box into a wall")
    if beyond in pos.boxes:
        raise Blocked("would push a box into another box")
    return Position(target, (pos.boxes - {target}) | {beyond}), True


def solved(board: Board, pos: Position) -> bool:
    """Every box is on a goal."""
    return pos.boxes == board.goals


def live_cells(board: Board) -> frozenset[int]:
    """Cells from which a lone box can still be pushed onto some goal.

    A box on any other floor cell (a corner, or along a wall with no goal) is dead. Other
    boxes are ignored, so a cell outside this set is dead in every position.
    """
    live, queue = set(board.goals), deque(board.goals)
    while queue:
        cell = queue.popleft()
        for step in MOVES:
            d = board.delta(step)
            came_from, player_at = cell - d, cell - 2 * d
            if came_from in live or board.is_wall(came_from) or board.is_wall(player_at):
                continue
            live.add(came_from)
            queue.append(came_from)
    return frozenset(live)


def frozen_block(board: Board, boxes: frozenset[int], cell: int) -> bool:
    """A 2x2 square around ``cell`` made only of walls and boxes, one of them off its goal.

    No box in such a square can ever move again.
    """
    w = board.width
    for corner in (cell, cell - 1, cell - w, cell - w - 1):
        square = (corner, corner + 1, corner + w, corner + w + 1)
        if all(board.is_wall(c) or c in boxes for c in square) and any(
            c in boxes and c not in board.goals for c in square
        ):
            return True
    return False


def deadlocked(board: Board, pos: Position, live: frozenset[int] | None = None) -> bool:
    """A box off its goal on a dead cell, or in a frozen 2x2 block: the level is lost."""
    live = live if live is not None else live_cells(board)
    return any(
        b not in board.goals and (b not in live or frozen_block(board, pos.boxes, b))
        for b in pos.boxes
    )


def solve(board: Board, start: Position, max_states: int = 200_000) -> str | None:
    """A shortest solution (fewest moves) by breadth-first search, or ``None``.

    ``None`` means no solution exists, or none was found within ``max_states`` positions.
    Pushes onto dead cells and into frozen blocks are pruned.
    """
    if solved(board, start):
        return ""
    live = live_cells(board)
    parents: dict[Position, tuple[Position, str] | None] = {start: None}
    queue = deque([start])
    while queue:
        pos = queue.popleft()
        for step in MOVES:
            try:
                nxt, pushed = move(board, pos, step)
            except Blocked:
                continue
            if nxt in parents:
                continue
            if pushed and deadlocked(board, nxt, live):
                continue
            parents[nxt] = (pos, step)
            if solved(board, nxt):
                return _path(parents, nxt)
            if len(parents) >= max_states:
                return None
            queue.append(nxt)
    return None


def _path(parents: dict[Position, tuple[Position, str] | None], end: Position) -> str:
    steps = []
    link = parents[end]
    while link is not None:
        prev, step = link
        steps.append(step)
        link = parents[prev]
    return "".join(reversed(steps))


# ---------------------------------------------------------------- generation


def carve_room(rng: random.Random, width: int, height: int) -> tuple[frozenset[int], list[int]]:
    """Walls and floor cells of a random room: a wandering walk inside a wall border."""
    interior = [r * width + c for r in range(1, height - 1) for c in range(1, width - 1)]
    floor = {rng.choice(interior)}
    cell = next(iter(floor))
    target = int(len(interior) * 0.6)
    dirs = [-width, width, -1, 1]
    d = rng.choice(dirs)
    for _ in range(len(interior) * 20):
        if len(floor) >= target:
            break
        if rng.random() < 0.35:
            d = rng.choice(dirs)
        nxt = cell + d
        r, c = divmod(nxt, width)
        if not (0 < r < height - 1 and 0 < c < width - 1):
            d = rng.choice(dirs)
            continue
        cell = nxt
        floor.add(cell)
        side = cell + rng.choice(dirs)
        sr, sc = divmod(side, width)
        if rng.random() < 0.3 and 0 < sr < height - 1 and 0 < sc < width - 1:
            floor.add(side)
    walls = frozenset(range(width * height)) - floor
    return walls, sorted(floor)


def reverse_play(board: Board, pos: Position, rng: random.Random, steps: int) -> Position:
    """Walk backwards from ``pos``: the player moves, sometimes pulling the box behind it.

    Returns the visited position whose boxes lie farthest (Manhattan, summed) from the goals,
    with every box off its goal if possible.
    """
    best, best_score = pos, -1
    w = board.width
    for _ in range(steps):
        step = rng.choice(MOVES)
        d = board.delta(step)
        target = pos.player + d
        if board.is_wall(target) or target in pos.boxes:
            continue
        behind = pos.player - d
        boxes = pos.boxes
        if behind in boxes and rng.random() < 0.75:
            boxes = (boxes - {behind}) | {pos.player}
        pos = Position(target, boxes)
        off = [b for b in boxes if b not in board.goals]
        dist = sum(
            min(abs(b // w - g // w) + abs(b % w - g % w) for g in board.goals) for b in boxes
        )
        score = dist + 100 * len(off)
        if score > best_score:
            best, best_score = pos, score
    return best


def generate(
    rng: random.Random,
    width: int = 8,
    height: int = 8,
    boxes: int = 2,
    min_moves: int = 8,
    max_states: int = 200_000,
    attempts: int = 500,
    walks: int = 4,
) -> tuple[Level, str]:
    """A random level and a shortest solution of it.

    Each attempt carves a room, puts the boxes on their goals and plays backwards ``walks``
    times; the walk whose end needs the most moves (by the BFS solver) is kept when it needs
    at least ``min_moves``.

    Raises:
        ValueError: no level found in ``attempts`` tries (the room is too small for the
            boxes, or ``min_moves`` is too high for the size).
    """
    for _ in range(attempts):
        walls, floor = carve_room(rng, width, height)
        if len(floor) < boxes + 4:
            continue
        goals = rng.sample(floor, boxes)
        board = Board(width, height, walls, frozenset(goals))
        player = rng.choice([c for c in floor if c not in goals])
        best: tuple[Position, str] | None = None
        for _ in range(walks):
            start = reverse_play(board, Position(player, frozenset(goals)), rng, 60 * boxes + 60)
            if solved(board, start) or deadlocked(board, start):
                continue
            solution = solve(board, start, max_states)
            if solution is not None and (best is None or len(solution) > len(best[1])):
                best = (start, solution)
        if best is not None and len(best[1]) >= min_moves:
            return Level(board, best[0]), best[1]
    raise ValueError(
        f"could not generate a {width}x{height} Sokoban level with {boxes} boxes needing "
        f">= {min_moves} moves in {attempts} attempts; lower min_moves or enlarge the room"
    )
