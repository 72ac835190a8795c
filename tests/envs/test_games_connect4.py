"""Connect Four: wins in every direction, the opponent, the reference planner, episodes."""

import random

import pytest

import envhub
from envhub.envs.games import connect4_engine as c4
from envhub.envs.games.connect4 import parse_column
from envhub.envs.games.connect4_env import Connect4Env
from envhub.errors import ConfigError
from envhub.spec import EnvSpec
from envhub.types import Status

DRAW = "456725433757635255367276733442221466141111"
"""A full game (columns 1-7) in which nobody ever has four in a row."""


def board_of(moves):
    """The board after ``moves`` (a string of 1-based columns)."""
    board = c4.Board()
    for ch in moves:
        board = board.play(int(ch) - 1)
    return board


def make(**options):
    spec = EnvSpec(
        name="connect4",
        family="games",
        max_turns=30,
        dataset={"kind": "builtin", "size": 40},
        reward={"weights": {"win": 1.0, "draw": 0.3, "loss": -0.5, "format": 0.1}},
        options=options,
    )
    return Connect4Env(spec, **options)


# first player (X) builds the line, second player (O) plays elsewhere harmlessly
@pytest.mark.parametrize(
    "moves, direction",
    [
        ("1212121", "vertical"),
        ("1122334", "horizontal"),
        ("12234334454", "diagonal /"),
        ("76654554434", "diagonal \\"),
        ("4455667", "horizontal, right edge"),
    ],
)
def test_four_in_a_row_in_every_direction(moves, direction):
    def last_player_won(board):  # the side that just moved has four in a row
        return c4.aligned(board.cur ^ board.mask)

    before = board_of(moves[:-1])
    assert not last_player_won(before)
    assert before.wins(int(moves[-1]) - 1), direction
    after = before.play(int(moves[-1]) - 1)
    assert last_player_won(after) and c4.aligned(after.discs(True))


def test_no_wrap_around_between_columns():
    # X holds the top three cells of column 1 and the bottom cell of column 2: four
    # consecutive cells in a naive 6-bit layout; the spare bit per column keeps them apart.
    board = board_of("7171611515152")
    x = board.discs(True)
    assert x & (0b111 << 3) == 0b111 << 3 and x & (1 << 7)
    assert not c4.aligned(x) and not c4.aligned(board.discs(False))


def test_full_column_and_draw():
    board = board_of("444444")
    assert not board.can_play(3) and 3 not in board.legal()
    board = c4.Board()
    for i, ch in enumerate(DRAW):
        assert not board.wins(int(ch) - 1), f"move {i}"
        board = board.play(int(ch) - 1)
    assert board.full and board.legal() == []
    assert not c4.aligned(board.discs(True)) and not c4.aligned(board.discs(False))


def test_render_shows_columns_and_discs():
    text = c4.render(board_of("43"))
    lines = text.splitlines()
    assert lines[0] == " 1 2 3 4 5 6 7"
    assert lines[6] == "|. . O X . . .|"


def test_negamax_takes_a_win_and_blocks_a_threat():
    board = board_of("112233")  # X to move, three in a row on the bottom: 4 wins
    values = c4.move_values(board, 2)
    assert max(values, key=values.get) == 3
    board = board_of("1122335")  # O to move; X threatens column 4
    opponent = c4.Opponent(depth=2, epsilon=0.0)
    assert opponent.choose(board, random.Random(0)) == 3


def test_opponent_is_reproducible_and_epsilon_randomises():
    board = board_of("4")
    strong = c4.Opponent(depth=3, epsilon=0.0)
    a = [strong.choose(board, random.Random(s)) for s in range(10)]
    b = [strong.choose(board, random.Random(s)) for s in range(10)]
    assert a == b
    noisy = c4.Opponent(depth=3, epsilon=1.0)
    moves = {noisy.choose(board, random.Random(s)) for s in range(60)}
    assert moves == set(range(7))


@pytest.mark.parametrize(
    "depth, epsilon, games",
    [
        (2, 0.1, 6),
        pytest.param(3, 0.0, 12, marks=pytest.mark.slow),
        pytest.param(4, 0.1, 4, marks=pytest.mark.slow),
    ],
)
def test_planner_beats_the_opponent(depth, epsilon, games):
    opponent = c4.Opponent(depth=depth, epsilon=epsilon)
    for seed in range(games):
        rng = random.Random(seed)
        board = c4.Board()
        for _ in range(seed % 4):  # both colours: openings of 0-3 random discs
            board = board.play(rng.choice(board.legal()))
        plan = c4.plan_win(board, opponent, rng)
        assert plan is not None, seed
        for col in plan[:-1]:
            board = board.play(col)
            reply = opponent.choose(board, rng)
            assert not board.wins(reply)
            board = board.play(reply)
        assert board.wins(plan[-1])


@pytest.mark.parametrize(
    "text, col",
    [
        ("<move>4</move>", 4),
        ("I play column 3", 3),
        ("<move>column 5</move>", 5),
        ("<think>4</think><move>2</move>", 2),
        ("<move>8</move>", 8),
        ("nothing", None),
    ],
)
def test_parse_column(text, col):
    assert parse_column(text) == col


def test_invalid_moves_are_flagged_and_change_nothing():
    env = make()
    task = next(t for t in env.tasks() if not t.metadata["opening"])
    env.reset(task_id=task.task_id, seed=0)
    for _ in range(3):  # fill column 1 alternately with the opponent's replies elsewhere
        env.step("<move>1</move>")
    board = env._episode.state.board
    cases = [
        ("pass", "no column found"),
        ("<move>0</move>", "off the board"),
        ("<move>9</move>", "off the board"),
    ]
    if not board.can_play(0):
        cases.append(("<move>1</move>", "is full"))
    for text, why in cases:
        r = env.step(text)
        assert r.info.status is Status.INVALID_ACTION and not r.done
        assert why in r.info.error and why in r.messages[0].content
        assert env._episode.state.board == board


def test_full_column_is_refused(tmp_path):
    path = tmp_path / "openings.jsonl"
    path.write_text('{"task_id": "full1", "opening": "111111", "seed": 4}\n')
    spec = EnvSpec(name="connect4", max_turns=30, dataset={"kind": "jsonl", "path": str(path)})
    env = Connect4Env(spec)
    env.reset(task_id="full1")
    assert "You move first" not in env._episode.messages[-1].content
    r = env.step("<move>1</move>")
    assert r.info.status is Status.INVALID_ACTION and "column 1 is full" in r.info.error
    r = env.step("<move>2</move>")
    assert r.info.status is Status.OK and "You played column 2" in r.messages[0].content


def test_openings_file_is_checked(tmp_path):
    path = tmp_path / "openings.jsonl"
    path.write_text('{"opening": "1212121"}\n')
    spec = EnvSpec(name="connect4", max_turns=30, dataset={"kind": "jsonl", "path": str(path)})
    with pytest.raises(ConfigError, match="already wins"):
        Connect4Env(spec).tasks()
    path.write_text('{"opening": "18"}\n')
    with pytest.raises(ConfigError, match="not a legal column"):
        Connect4Env(spec).tasks()


def test_reference_wins_every_task_through_reset_and_step():
    env = make()
    for task in env.tasks()[:8]:
        env.reset(task_id=task.task_id, seed=1)
        moves = 0
        while True:
            r = env.step(env.reference_action(env._episode))
            moves += 1
            assert r.info.status is Status.OK
            if r.done:
                break
        assert r.terminated and r.info.outcome == "win"
        assert r.info.components["win"] == 1.0 and r.info.components["loss"] == 0.0
        # openings may already hold some of the model's discs: a win in 3 counts as in 4
        assert r.info.components["efficiency"] == pytest.approx(min(1, 1 - (moves - 4) / 17))
        assert "You win!" in r.messages[0].content


def test_losing_pays_the_loss_component():
    env = make(opponent_depth=2, opponent_epsilon=0.0)
    task = next(t for t in env.tasks() if not t.metadata["opening"])
    env.reset(task_id=task.task_id, seed=0)
    r = None
    for _ in range(21):  # always play column 1: a depth-2 opponent wins quickly
        col = next(c for c in (1, 2, 3, 5, 6, 7, 4) if env._episode.state.board.can_play(c - 1))
        r = env.step(f"<move>{col}</move>")
        if r.done:
            break
    assert r.terminated and r.info.outcome == "loss"
    assert r.info.components["win"] == 0.0 and r.info.components["loss"] == 1.0
    assert r.reward == pytest.approx(-0.5 + 0.1)


def test_same_seed_same_game_different_seed_different_dice():
    def transcript(env, seed):
        env.reset(task_id=env.tasks()[0].task_id, seed=seed)
        out = []
        for col in (4, 4, 3, 5, 2, 6):
            r = env.step(f"<move>{col}</move>")
            out.append(r.messages[0].content if r.messages else "")
            if r.done:
                break
        return out

    env = make(opponent_epsilon=1.0)
    assert transcript(env, 3) == transcript(make(opponent_epsilon=1.0), 3)
    assert len({tuple(transcript(env, s)) for s in range(6)}) > 1
    a, b = make().reset(seed=9), make().reset(seed=9)
    assert a == b


def test_openings_give_both_colours():
    env = make()
    first = [t for t in env.tasks() if len(t.metadata["opening"]) % 2 == 0]
    second = [t for t in env.tasks() if len(t.metadata["opening"]) % 2 == 1]
    assert first and second
    env.reset(task_id=second[0].task_id)
    assert "You play X" in env._episode.messages[-1].content
    board = env._episode.state.board
    assert board.moves == len(second[0].metadata["opening"])


def test_bad_options_name_the_option():
    with pytest.raises(ConfigError, match="opponent_depth"):
        make(opponent_depth=9)
    with pytest.raises(ConfigError, match="opponent_epsilon"):
        make(opponent_epsilon=1.5)


def test_strength_set_through_make_overrides():
    env = envhub.make("connect4", opponent_depth=3, opponent_epsilon=0.0)
    assert env.opponent == c4.Opponent(depth=3, epsilon=0.0)
    with pytest.raises(ConfigError, match="opponent_depth"):
        envhub.make("connect4", opponent_depth=-1)


def test_registered_entry_plays_to_a_win():
    env = envhub.make("connect4")
    env.reset(seed=0)
    while True:
        r = env.step(env.reference_action(env._episode))
        if r.done:
            break
    assert r.info.components["win"] == 1.0 and r.reward > 1.0
