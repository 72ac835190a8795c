"""Sokoban: moves and pushes, deadlocks, the solver, generated levels and whole episodes."""

import itertools
import json
import random

import pytest

import envhub
from envhub.envs.games import sokoban_level as sk
from envhub.envs.games.env import split_rng
from envhub.envs.games.sokoban import parse_moves
from envhub.envs.games.sokoban_env import SokobanEnv
from envhub.errors import ConfigError
from envhub.spec import EnvSpec
from envhub.types import Status

CORRIDOR = """
#######
#@_$_.#
#######
"""
TWO_BOXES = """
######
#.__.#
#_$$_#
#__@_#
######
"""


def make(dataset_options=None, dataset=None, **options):
    spec = EnvSpec(
        name="sokoban",
        family="games",
        max_turns=20,
        dataset=dataset or {"kind": "builtin", "size": 10, "options": dataset_options or {}},
        reward={"weights": {"solved": 1.0, "efficiency": 0.2, "format": 0.1}},
        options=options,
    )
    return SokobanEnv(spec, **options)


def from_levels(tmp_path, *levels, **options):
    """An env whose tasks are the given levels (a JSONL level file)."""
    path = tmp_path / "levels.jsonl"
    rows = [json.dumps({"task_id": f"lvl{i}", "level": lv}) for i, lv in enumerate(levels)]
    path.write_text("\n".join(rows) + "\n")
    return make(dataset={"kind": "jsonl", "path": str(path)}, **options)


def walks(board, pos, step):
    """True when ``step`` moves the player without pushing anything."""
    try:
        return not sk.move(board, pos, step)[1]
    except sk.Blocked:
        return False


def play(level, moves):
    pos = level.start
    for m in moves:
        pos, _ = sk.move(level.board, pos, m)
    return pos


def test_parse_and_render_round_trip():
    level = sk.parse(TWO_BOXES)
    assert sk.render(level.board, level.start) == TWO_BOXES.strip()
    assert len(level.start.boxes) == 2 and len(level.board.goals) == 2
    with pytest.raises(ValueError, match="as many boxes as goals"):
        sk.parse("#####\n#@$_#\n#####")


def test_parse_standard_xsb_with_outside_spaces():
    level = sk.parse("  #####\n###   #\n#.@$  #\n#######")
    assert sk.render(level.board, level.start) == "#######\n###___#\n#.@$__#\n#######"
    assert sk.solve(level.board, level.start) == "RURRDLLL"
    with pytest.raises(ValueError, match="not enclosed"):
        sk.parse("#####\n#@$. \n#####")
    with pytest.raises(ValueError, match="unknown Sokoban symbol"):
        sk.parse("#####\n#@$.X#\n#####")


def test_walk_push_and_blocks():
    level = sk.parse(CORRIDOR)
    board, start = level.board, level.start
    pos, pushed = sk.move(board, start, "R")
    assert not pushed and pos.player == start.player + 1
    pos, pushed = sk.move(board, pos, "R")  # into the box: pushed one square
    assert pushed and pos.boxes == frozenset({start.player + 3})
    with pytest.raises(sk.Blocked, match="wall"):
        sk.move(board, start, "L")
    with pytest.raises(sk.Blocked, match="wall"):
        sk.move(board, start, "U")
    end = play(level, "RRR")
    assert sk.solved(board, end)
    with pytest.raises(sk.Blocked, match="push a box into a wall"):
        sk.move(board, end, "R")


def test_box_cannot_push_box():
    level = sk.parse("#######\n#@$$_.#\n#.____#\n#######")
    with pytest.raises(sk.Blocked, match="into another box"):
        sk.move(level.board, level.start, "R")


def test_dead_cells_and_deadlocks():
    level = sk.parse(TWO_BOXES)
    board = level.board
    live = sk.live_cells(board)
    w = board.width
    corner_bottom_left = 3 * w + 1
    assert corner_bottom_left not in live  # a corner without a goal
    assert 1 * w + 2 in live  # along the top wall, between the goals: still pushable sideways
    assert board.goals <= live
    # push the left box down-left into the corner: dead
    stuck = sk.Position(2 * w + 1, frozenset({3 * w + 1, 2 * w + 3}))
    assert sk.deadlocked(board, stuck)
    assert not sk.deadlocked(board, level.start)


def test_frozen_2x2_block():
    level = sk.parse("########\n#______#\n#_$$___#\n#_$$_@_#\n#....__#\n########")
    board, pos = level.board, level.start
    assert sk.frozen_block(board, pos.boxes, next(iter(pos.boxes)))
    assert sk.deadlocked(board, pos)
    assert sk.solve(board, pos) is None


def test_solver_finds_shortest():
    level = sk.parse(CORRIDOR)
    assert sk.solve(level.board, level.start) == "RRR"
    two = sk.parse(TWO_BOXES)
    solution = sk.solve(two.board, two.start)
    assert solution is not None and sk.solved(two.board, play(two, solution))
    assert len(solution) == 8
    # no sequence of 7 moves solves it (exhaustive check of the BFS optimum)
    for seq in itertools.product("UDLR", repeat=7):
        try:
            end = play(two, seq)
        except sk.Blocked:
            continue
        assert not sk.solved(two.board, end)


def test_unsolvable_level():
    level = sk.parse("#######\n#@$__.#\n#_____#\n#######")
    # the box is against the top wall; the goal is also against the top wall: solvable
    assert sk.solve(level.board, level.start) == "RRR"
    dead = sk.parse("#####\n#$__#\n#@_.#\n#####")
    assert sk.solve(dead.board, dead.start) is None


@pytest.mark.parametrize(
    "size, boxes, min_moves", [((7, 7), 1, 6), ((8, 8), 2, 8), ((9, 9), 3, 10)]
)
def test_generated_levels_are_solvable(size, boxes, min_moves):
    for i in range(15):
        rng = random.Random(f"t{i}")
        level, solution = sk.generate(rng, size[0], size[1], boxes, min_moves)
        assert len(level.start.boxes) == boxes == len(level.board.goals)
        assert not sk.solved(level.board, level.start)
        assert len(solution) >= min_moves
        assert sk.solved(level.board, play(level, solution))
        # an independent solve of the rendered text agrees on the optimum
        again = sk.parse(sk.render(level.board, level.start))
        assert len(sk.solve(again.board, again.start)) == len(solution)


def test_impossible_generator_settings_say_what_to_change():
    with pytest.raises(ValueError, match="lower min_moves"):
        sk.generate(random.Random(0), 5, 5, 2, 60, attempts=5)


@pytest.mark.parametrize(
    "text, moves",
    [
        ("<moves>U U R D</moves>", "UURD"),
        ("<moves>up, up, left</moves>", "UUL"),
        ("<move>r</move>", "R"),
        ("<moves>UU</moves> wait, <moves>LLDR</moves>", "LLDR"),
        ("<moves>→ → ↑</moves>", "RRU"),
        ("I will push it.\nMoves: R R U", "RRU"),
        ("Plan\nRRUL\nThat's it.", "RRUL"),
        ("<think>UUUU</think> nothing", None),
        ("no idea", None),
    ],
)
def test_parse_moves(text, moves):
    assert parse_moves(text) == moves


def test_parse_moves_rejects_junk_in_tag():
    with pytest.raises(ValueError, match="could not read"):
        parse_moves("<moves>U U jump</moves>")


def test_episode_solved_with_several_moves_per_message(tmp_path):
    env = from_levels(tmp_path, TWO_BOXES)
    env.reset(task_id="lvl0", seed=0)
    optimal = env.tasks()[0].answer
    assert len(optimal) == 8
    r = env.step(f"<moves>{optimal[:4]}</moves>")
    assert not r.done and r.info.status is Status.OK and r.info.moves == 4
    r = env.step(f"Now: <moves>{' '.join(optimal[4:])}</moves>")
    assert r.terminated and r.info.outcome == "solved"
    assert r.info.components == {"solved": 1.0, "efficiency": 1.0, "format": 1.0}
    assert "Solved in 8 moves (shortest: 8)" in r.messages[0].content


def test_level_file_rows_are_checked(tmp_path):
    env = from_levels(tmp_path, "#####\n#$__#\n#@_.#\n#####")
    with pytest.raises(ConfigError, match="no solution"):
        env.tasks()
    (tmp_path / "bad.jsonl").write_text('{"board": "x"}\n')
    env = make(dataset={"kind": "jsonl", "path": str(tmp_path / "bad.jsonl")})
    with pytest.raises(ConfigError, match="has no 'level'"):
        env.tasks()


def test_blocked_move_stops_the_sequence_and_is_flagged():
    env = make()
    env.reset(seed=0)
    start = env._episode.state.pos
    board = env._episode.state.board
    wall_dir = next(d for d in "UDLR" if board.is_wall(start.player + board.delta(d)))
    r = env.step(f"<moves>{wall_dir} {wall_dir}</moves>")
    assert r.info.status is Status.INVALID_ACTION and not r.done
    assert "move 1" in r.info.error and "wall" in r.info.error
    assert env._episode.state.pos == start and r.info.moves == 0
    r = env.step("hello")
    assert r.info.status is Status.INVALID_ACTION and "no moves found" in r.info.error


def test_deadlock_ends_the_game(tmp_path):
    env = from_levels(tmp_path, "#######\n#_____#\n#_$@__#\n#____.#\n#######")
    env.reset(task_id="lvl0")
    r = env.step("<moves>L</moves>")  # the box goes to the left wall, off the goal's row: dead
    assert r.terminated and r.info.outcome == "deadlock"
    assert r.info.components["solved"] == 0.0
    assert "can never reach a goal" in r.messages[0].content


def test_deadlock_can_be_left_to_the_budget(tmp_path):
    env = from_levels(
        tmp_path, "#######\n#_____#\n#_$@__#\n#____.#\n#######", end_on_deadlock=False
    )
    env.reset(task_id="lvl0")
    r = env.step("<moves>L</moves>")
    assert not r.done and r.info.outcome == "playing"


def test_suboptimal_solution_has_lower_efficiency_and_move_budget():
    env = make(max_moves=200)
    env.reset(seed=2)
    state = env._episode.state
    board = state.board
    # wander: step out and back once, then solve
    d = next(x for x in "UDLR" if walks(board, state.pos, x))
    back = {"U": "D", "D": "U", "L": "R", "R": "L"}[d]
    env.step(f"<moves>{d}{back}</moves>")
    r = env.step(env.reference_action(env._episode))
    assert r.info.components["solved"] == 1.0
    assert r.info.components["efficiency"] == pytest.approx(state.optimal / (state.optimal + 2))

    tight = make(max_moves=1)
    tight.reset(seed=2)
    r = tight.step("<moves>" + tight.reference_action(tight._episode).content[7:])
    assert r.terminated and r.info.outcome == "out_of_moves"


def test_seeded_levels_reproducible_and_splits_differ():
    a, b = make(), make()
    assert a.reset(seed=5) == b.reset(seed=5)
    train = [t.metadata["level"] for t in a.tasks("train")]
    test = [t.metadata["level"] for t in a.tasks("test")]
    assert train == [t.metadata["level"] for t in b.tasks("train")]
    assert not set(train) & set(test)
    assert (
        split_rng(0, "train", 1, "sokoban").random() != split_rng(0, "test", 1, "sokoban").random()
    )
    other = make({"boxes": 2})  # other generator options (the default's): a new cache entry
    assert [t.metadata["level"] for t in other.tasks("train")] == train


def test_generator_options_apply():
    env = make({"width": 9, "height": 9, "boxes": 3, "min_moves": 10})
    for task in env.tasks("train")[:5]:
        level = sk.parse(task.metadata["level"])
        assert len(level.start.boxes) == 3 and level.board.width == 9
        assert task.metadata["optimal_moves"] >= 10
    with pytest.raises(ConfigError, match="boxes"):
        make({"boxes": "two"}).tasks("train")
    with pytest.raises(ConfigError, match=r"width = 3 is not allowed.* from 4 to 16"):
        make({"width": 3}).tasks("train")
    with pytest.raises(ConfigError, match="lower min_moves"):
        make({"width": 5, "height": 5, "min_moves": 50}).tasks("train")


def test_generator_options_through_make_overrides():
    env = envhub.make("sokoban", dataset={"size": 3, "options": {"boxes": 3, "width": 9}})
    for task in env.tasks():
        level = sk.parse(task.metadata["level"])
        assert len(level.start.boxes) == 3 and level.board.width == 9 and level.board.height == 8


def test_harder_variant_from_yaml_composition(tmp_path):
    from envhub.registry.catalog import BUILTIN_REGISTRY, Registry

    path = tmp_path / "games.yaml"
    path.write_text(
        "environments:\n"
        "  - name: sokoban-hard\n"
        "    base: sokoban\n"
        "    dataset: {kind: builtin, size: 3, options: {width: 9, height: 9, boxes: 3,"
        " min_moves: 14}}\n"
        "    max_turns: 30\n"
    )
    spec = Registry.load([BUILTIN_REGISTRY, path]).spec("sokoban-hard")
    env = SokobanEnv(spec, **spec.options)
    assert env.max_moves == 100 and spec.max_turns == 30
    for task in env.tasks():
        assert len(sk.parse(task.metadata["level"]).start.boxes) == 3
        assert task.metadata["optimal_moves"] >= 14


def test_registered_entry_reference_solves_every_task():
    env = envhub.make("sokoban")
    for task in env.tasks()[:25]:
        env.reset(task_id=task.task_id)
        r = env.step(env.reference_action(env._episode))
        assert r.terminated and r.info.status is Status.OK
        assert r.info.components["solved"] == 1.0 and r.info.components["efficiency"] == 1.0
