"""Wordle: the official lists, the marks (duplicates included), parsing and whole episodes."""

import random
from collections import Counter

import pytest

import envhub
from envhub.envs.games.wordle import feedback, parse_guess, word_lists
from envhub.envs.games.wordle_env import WordleEnv
from envhub.errors import ConfigError
from envhub.spec import EnvSpec
from envhub.types import Status


def make(**options):
    spec = EnvSpec(
        name="wordle",
        family="games",
        max_turns=10,
        reward={"weights": {"solved": 1.0, "efficiency": 0.5, "format": 0.1}},
        options=options,
    )
    return WordleEnv(spec, **options)


def play_to(env, answer, seed=0):
    """Reset on the task whose secret is ``answer``."""
    task = next(t for t in env.tasks("train") + env.tasks("test") if t.answer == answer)
    env.reset(task_id=task.task_id, seed=seed)


def test_official_lists():
    lists = word_lists()
    assert len(lists.answers) == 2315
    assert len(lists.allowed) == 12972
    assert set(lists.answers) <= lists.allowed
    assert {"CRANE", "ABACK", "ZESTY"} <= set(lists.answers)
    assert "AAHED" in lists.allowed and "AAHED" not in lists.answers


@pytest.mark.parametrize(
    "guess, answer, marks",
    [
        ("CRANE", "CRANE", "GGGGG"),
        ("CRANE", "BUMPY", "_____"),
        ("SPEED", "ABIDE", "__Y_Y"),  # one E in the answer: only the first extra E is yellow
        ("EERIE", "THERE", "Y_Y_G"),  # green E first, the other answer E goes to guess E #1
        ("LLAMA", "HELLO", "YY___"),  # two Ls in both: both yellow
        ("ROBOT", "FLOOR", "YY_G_"),  # green O uses one O, the other O is yellow
        ("SASSY", "CLASS", "YY_G_"),  # green S at 4 leaves one S: the first S yellow, third not
        ("ABBEY", "BABES", "YYGG_"),
        ("ALLOT", "LLAMA", "YGY__"),  # answer has 2 Ls: one green, one yellow
    ],
)
def test_feedback_examples(guess, answer, marks):
    assert feedback(guess, answer) == marks


def test_feedback_properties_on_random_pairs():
    """Per letter, marked (G or Y) copies = min(copies in guess, copies in answer)."""
    lists = word_lists()
    rng = random.Random(0)
    allowed = sorted(lists.allowed)
    for _ in range(3000):
        guess, answer = rng.choice(allowed), rng.choice(lists.answers)
        marks = feedback(guess, answer)
        for i in range(5):
            assert (marks[i] == "G") == (guess[i] == answer[i])
        marked = Counter(g for g, m in zip(guess, marks, strict=True) if m != "_")
        for letter in set(guess):
            assert marked[letter] == min(guess.count(letter), answer.count(letter))


@pytest.mark.parametrize(
    "text, guess",
    [
        ("<guess>crane</guess>", "CRANE"),
        ("first <guess>SLATE</guess> no, <guess>crane</guess>", "CRANE"),
        ("I'll go with <guess> Crane. </guess>", "CRANE"),
        ("my guess: <guess>trace", "TRACE"),
        ("Let me try CRANE", "CRANE"),
        ("Let me try CRANE as my guess", "CRANE"),
        ("maybe crane, final: slate", "SLATE"),
        ("<think>maybe SLATE</think> I pick TRACE!", "TRACE"),
        ("<guess>two words</guess>", "TWO WORDS"),
        ("no idea", None),
        ("<think>CRANE</think>", None),
    ],
)
def test_parse_guess(text, guess):
    assert parse_guess(text) == guess


def test_solve_in_three_pays_efficiency():
    env = make()
    play_to(env, "CRANE")
    r1 = env.step("<guess>SLATE</guess>")
    assert not r1.done and r1.reward == 0.0 and r1.info.status is Status.OK
    assert "S L A T E   _ _ G _ G" in r1.messages[0].content
    assert "Guesses left: 5" in r1.messages[0].content
    assert "Letters not in the word: L S T" in r1.messages[0].content
    env.step("<guess>GRACE</guess>")
    r3 = env.step("<guess>CRANE</guess>")
    assert r3.terminated and not r3.truncated
    assert r3.info.components == {"solved": 1.0, "efficiency": pytest.approx(4 / 6), "format": 1.0}
    assert r3.reward == pytest.approx(1.0 + 0.5 * 4 / 6 + 0.1)
    assert r3.info.guesses == ["SLATE", "GRACE", "CRANE"]
    assert "Solved in 3 guesses" in r3.messages[0].content


def test_invalid_guesses_are_flagged_and_free_by_default():
    env = make()
    play_to(env, "CRANE")
    for text, why in [
        ("<guess>XYZZY</guess>", "not in the word list"),
        ("<guess>CRANES</guess>", "not a five-letter word"),
        ("I don't know", "no guess found"),
    ]:
        r = env.step(text)
        assert r.info.status is Status.INVALID_ACTION and not r.done and r.reward == 0.0
        assert why in r.info.error and why in r.messages[0].content
        assert "Guesses left: 6" in r.messages[0].content
    final = env.step("<guess>CRANE</guess>")
    assert final.info.status is Status.OK
    assert final.info.components["solved"] == 1.0
    assert final.info.components["efficiency"] == 1.0  # invalid guesses cost no guess
    assert final.info.components["format"] == pytest.approx(1 / 4)


def test_invalid_guess_costs_a_guess_when_configured():
    env = make(invalid_costs_guess=True, max_guesses=2)
    play_to(env, "CRANE")
    r = env.step("<guess>QQQQQ</guess>")
    assert r.info.status is Status.INVALID_ACTION and "Guesses left: 1" in r.messages[0].content
    r = env.step("<guess>XYZZY</guess>")
    assert r.terminated and r.info.components["solved"] == 0.0
    assert "The word was CRANE" in r.messages[0].content


def test_six_wrong_guesses_lose_and_reveal():
    env = make()
    play_to(env, "CRANE")
    words = ["SLATE", "PIOUS", "BUMPY", "FIGHT", "WORDY", "GLAND"]
    for i, w in enumerate(words):
        r = env.step(f"<guess>{w}</guess>")
        assert r.done == (i == 5)
    assert r.terminated and r.info.components == {"solved": 0.0, "efficiency": 0.0, "format": 1.0}
    assert r.reward == pytest.approx(0.1)
    assert "The word was CRANE" in r.messages[0].content


def test_turn_budget_truncates_with_components():
    spec = EnvSpec(name="wordle", max_turns=2, reward={"weights": {"solved": 1.0, "format": 1.0}})
    env = WordleEnv(spec)
    env.reset(seed=3)
    env.step("nothing")
    r = env.step(
        "<guess>SLATE</guess>" if env._episode.task.answer != "SLATE" else "<guess>CRANE</guess>"
    )
    assert r.truncated and not r.terminated
    # a truncation pays every outcome at its worst (envhub.rewards); the measure is reported
    assert r.info.components["solved"] == 0.0 and r.info.components["format"] == 0.0
    assert r.reward == 0.0 and r.info.measured["format"] == 0.5


def test_seeding_and_splits():
    env = make()
    a, b = env.reset(seed=11), env.reset(seed=11)
    assert a == b
    ids = {env.reset(seed=s).info.task_id for s in range(20)}
    assert len(ids) > 10
    train = {t.answer for t in env.tasks("train")}
    test = {t.answer for t in env.tasks("test")}
    assert not train & test and len(train | test) == 2315
    assert [t.answer for t in make().tasks("train")[:5]] == [
        t.answer for t in env.tasks("train")[:5]
    ]


def test_bad_options_name_the_option():
    with pytest.raises(ConfigError, match="max_guesses"):
        make(max_guesses=0)


def test_registered_entry_reference_wins_first_guess():
    env = envhub.make("wordle")
    for seed in range(5):
        env.reset(seed=seed)
        r = env.step(env.reference_action(env._episode))
        assert r.terminated and r.info.status is Status.OK
        assert r.info.components["solved"] == 1.0 and r.info.components["efficiency"] == 1.0
