"""Difficulty knobs: each does what it says, bad values are refused, tasks carry a difficulty.

Every knob here is attacked the way a curriculum would lean on it: a larger setting must give
harder tasks, a hint must never give the word away, and no knob changes what a reward means.
"""

import random

import pytest

import envhub
from envhub.envs.games import connect4_engine as c4
from envhub.envs.games import wordle
from envhub.envs.games.wordle_env import WordleEnv
from envhub.envs.math.generators import KINDS
from envhub.errors import ConfigError
from envhub.registry.catalog import spec as catalog_spec
from envhub.trainer.episodes.curriculum import Curriculum, CurriculumConfig


def small(name, size=6, options=None, **env_options):
    """The catalog's ``name`` with ``size`` tasks and these dataset and env options."""
    base = catalog_spec(name).dataset.model_dump()
    dataset = {**base, "size": size, "options": options or {}}
    return envhub.make(name, dataset=dataset, **env_options)


# ------------------------------------------------------------------ sokoban


def test_sokoban_min_moves_gives_longer_shortest_solutions():
    easy = [t.metadata["difficulty"] for t in small("sokoban", options={"min_moves": 2}).tasks()]
    hard = [t.metadata["difficulty"] for t in small("sokoban", options={"min_moves": 16}).tasks()]
    assert min(hard) >= 16 and sum(hard) / len(hard) > sum(easy) / len(easy)
    for task in small("sokoban", options={"min_moves": 16}).tasks():
        assert task.metadata["difficulty"] == len(task.answer) == task.metadata["optimal_moves"]


def test_sokoban_refuses_unknown_and_out_of_range_knobs():
    with pytest.raises(ConfigError, match=r"unknown dataset.options.min_move;.*'min_moves'"):
        small("sokoban", options={"min_move": 12})  # a typo is no longer silently ignored
    with pytest.raises(ConfigError, match=r"boxes = 0 is not allowed.*from 1 to 5"):
        small("sokoban", options={"boxes": 0})
    with pytest.raises(ConfigError, match=r"width = True is not allowed.*an integer"):
        small("sokoban", options={"width": True})
    with pytest.raises(ConfigError, match=r"options.max_moves = 0 is not allowed"):
        small("sokoban", max_moves=0)


# ------------------------------------------------------------------ connect4


def play_fixed(opponent, moves, seed):
    """The model plays ``moves`` (0-based columns) whatever happens: its outcome."""
    board, rng = c4.Board(), random.Random(seed)
    for col in moves:
        if board.wins(col):
            return "win"
        board = board.play(col)
        reply = opponent.choose(board, rng)
        if board.wins(reply):
            return "loss"
        board = board.play(reply)
    return "playing"


def test_connect4_depth_0_is_beaten_by_a_fixed_sequence_depth_4_is_not():
    stack = [3, 3, 3, 3, 2, 2, 2, 2]
    random_player = c4.Opponent(depth=0, epsilon=0.0)
    searcher = c4.Opponent(depth=4, epsilon=0.0)
    random_wins = sum(play_fixed(random_player, stack, s) == "win" for s in range(20))
    search_wins = sum(play_fixed(searcher, stack, s) == "win" for s in range(20))
    assert random_wins >= 10 and search_wins == 0


def test_connect4_depth_is_each_tasks_difficulty_and_refused_out_of_range():
    env = small("connect4", opponent_depth=0)
    assert env.opponent == c4.Opponent(depth=0, epsilon=0.1)
    assert {t.metadata["difficulty"] for t in env.tasks()} == {0}
    assert {t.metadata["difficulty"] for t in small("connect4", opponent_depth=4).tasks()} == {4}
    with pytest.raises(ConfigError, match=r"opponent_depth = 9 is not allowed.*from 0 to 8"):
        small("connect4", opponent_depth=9)
    with pytest.raises(ConfigError, match=r"opponent_epsilon = -0.5.*from 0 to 1"):
        small("connect4", opponent_epsilon=-0.5)


def test_connect4_reference_still_wins_against_the_random_opponent():
    env = small("connect4", size=3, opponent_depth=0)
    for seed in range(3):
        env.reset(seed=seed)
        result = None
        while result is None or not result.done:
            result = env.step(env.reference_action(env._episode))
        assert result.info.components["win"] == 1.0


# ------------------------------------------------------------------ wordle


def hint_letters(text):
    """``{place: letter}`` of an opening message's hint line."""
    line = next((x for x in text.splitlines() if x.startswith("Hint:")), "")
    pairs = [p.split(" is ") for p in line.removeprefix("Hint: ").rstrip(".").split(", ") if p]
    return {int(p[0].removeprefix("letter ")) - 1: p[1] for p in pairs}


@pytest.mark.parametrize("hints", [1, 2, 4])
def test_wordle_hints_reveal_right_letters_and_never_the_word(hints):
    env = small("wordle", size=40, hints=hints)
    fewer = small("wordle", size=40, hints=hints - 1)
    for task, other in zip(env.tasks(), fewer.tasks(), strict=True):
        shown = hint_letters(env.opening_messages(task)[-1].content)
        assert len(shown) == hints < 5
        assert all(task.answer[i] == letter for i, letter in shown.items())
        assert hint_letters(fewer.opening_messages(other)[-1].content).items() <= shown.items()


def test_wordle_hints_refused_when_they_give_the_word_away():
    with pytest.raises(ConfigError, match=r"hints = 5 is not allowed.*from 0 to 4"):
        small("wordle", hints=5)
    with pytest.raises(ValueError, match="hints must be from 0 to 4"):
        wordle.hint_text("CRANE", 5)
    assert "Hint" not in small("wordle", size=3).tasks()[0].prompt


def test_wordle_hints_do_not_change_what_a_solve_pays():
    plain, hinted = small("wordle", size=3), small("wordle", size=3, hints=3)
    paid = []
    for env in (plain, hinted):
        env.reset(seed=1)
        paid.append(env.step(env.reference_action(env._episode)).info.components)
    assert paid[0] == paid[1] and paid[0]["solved"] == 1.0


def test_wordle_common_answers_are_a_frequent_subset_of_the_official_ones():
    official, common = wordle.answers("official"), wordle.answers("common")
    assert set(common) < set(official) and len(common) == 1136
    assert all(wordle.rarity(w) <= 2 for w in common)
    env = small("wordle", size=300, options={"answers": "common"})
    assert {t.answer for t in env.tasks()} <= set(common)
    assert {t.metadata["difficulty"] for t in env.tasks()} <= {1, 2}


def test_wordle_answer_list_and_its_refusals():
    words = ["CRANE", "ABBEY", "ZESTY", "WATER", "HOUSE", "NYMPH", "QUART", "SHIRE"]
    env = small("wordle", size=None, options={"answers": words})
    got = {t.answer for t in env.tasks("train") + env.tasks("test")}
    assert got == set(words)
    with pytest.raises(ConfigError, match=r"official Wordle answers; not one: \['AAHED'\]"):
        small("wordle", options={"answers": ["CRANE", "aahed"]}).tasks()
    with pytest.raises(ConfigError, match=r"'ofical' is not allowed.*\['official', 'common'\]"):
        small("wordle", options={"answers": "ofical"}).tasks()
    with pytest.raises(ConfigError, match="answers must be one of"):
        small("wordle", options={"answers": 3}).tasks()


def test_wordle_rarity_orders_by_frequency():
    assert wordle.rarity("HOUSE") == 1 and wordle.rarity("CRANE") == 2
    assert wordle.rarity("ZEBRA") == 3 and wordle.rarity("AAHED") == 4


def test_wordle_default_tasks_unchanged_by_the_knobs():
    spec = catalog_spec("wordle")
    default = WordleEnv(spec, **spec.options).tasks()
    named = small("wordle", size=None, options={"answers": "official"}).tasks()
    assert [t.answer for t in default] == [t.answer for t in named]


# ------------------------------------------------------------------ search


def test_search_hops_filter_the_questions():
    both = {t.metadata["hops"] for t in small("search", size=40).tasks()}
    two = {t.metadata["hops"] for t in small("search", size=40, options={"hops": 2}).tasks()}
    three = small("search", size=40, options={"hops": [3, 3]}).tasks()
    assert both == {2, 3} and two == {2}
    assert {t.metadata["hops"] for t in three} == {3} and len(three) == 40
    assert all(t.metadata["difficulty"] == t.metadata["hops"] for t in three)


@pytest.mark.parametrize("bad", [4, [3, 2], [1, 3], "3", [2, 3, 3], True])
def test_search_bad_hops_refused(bad):
    with pytest.raises(ConfigError, match=r"dataset.options.hops = .* is not allowed.*2 <= min"):
        small("search", options={"hops": bad})


def test_search_hops_only_filter_generated_questions(tmp_path):
    rows = tmp_path / "q.jsonl"
    rows.write_text('{"prompt": "Who?", "answer": "Ada", "difficulty": "hard"}\n')
    dataset = {"kind": "jsonl", "path": str(rows), "options": {"hops": 2}}
    with pytest.raises(ConfigError, match="hops filters the generated questions"):
        envhub.make("search", dataset=dataset)
    own = envhub.make("search", dataset={"kind": "jsonl", "path": str(rows)})
    assert own.tasks()[0].metadata["difficulty"] == "hard"  # a dataset's own column


# ------------------------------------------------------------------ math


def test_math_kinds_pick_the_problem_kinds():
    tasks = small("math", size=12, options={"kinds": ["percent", "expand"]}).tasks()
    assert {t.metadata["kind"] for t in tasks} == {"percent", "expand"}
    assert all(t.metadata["difficulty"] == t.metadata["kind"] for t in tasks)
    with pytest.raises(ConfigError, match=r"kinds = \['percent', 'calculus'\].*one of \["):
        small("math", options={"kinds": ["percent", "calculus"]})
    with pytest.raises(ConfigError, match=r"kinds = \[\] is not allowed"):
        small("math", options={"kinds": []})
    with pytest.raises(ConfigError, match=r"unknown dataset.options.level; .*\['kinds'\]"):
        small("math", options={"level": 3})  # was silently ignored
    with pytest.raises(ConfigError, match=r"unknown dataset.options.kinds; the knobs there are"):
        small("gsm8k", options={"kinds": ["percent"]})


def test_math_default_tasks_unchanged_by_the_knob():
    default = small("math", size=20).tasks()
    every = small("math", size=20, options={"kinds": sorted(KINDS)})
    assert [t.prompt for t in default] == [t.prompt for t in every.tasks()]


# ------------------------------------------------------------------ per-task difficulty


BUCKETS = {
    "sokoban": lambda keys: all(int(k) >= 8 for k in keys) and len(keys) > 1,
    "connect4": lambda keys: keys == {"2"},
    "wordle": lambda keys: keys <= {"1", "2", "3", "4"} and len(keys) > 1,
    "search": lambda keys: keys == {"2", "3"},
    "math": lambda keys: len(keys) == 14,
    "gsm8k": lambda keys: all(k.isdigit() for k in keys) and len(keys) > 1,
    "rg-basic_arithmetic": lambda keys: all("num_terms=" in k for k in keys) and len(keys) > 1,
}


@pytest.mark.parametrize("name", sorted(BUCKETS))
def test_every_task_carries_a_difficulty_the_curriculum_buckets_on(name):
    tasks = small(name, size=40).tasks()
    assert all("difficulty" in t.metadata for t in tasks)
    pairs = [(t.task_id, t.metadata["difficulty"]) for t in tasks]
    curriculum = Curriculum(CurriculumConfig(enabled=True, by="difficulty"), {name: pairs})
    keys = {curriculum.key(t, d) for t, d in pairs}
    assert BUCKETS[name](keys), sorted(keys)
    curriculum.update([(name, pairs[0][0], True)])
    assert curriculum.stats[name] == {curriculum.key(*pairs[0]): [1, 1]}
