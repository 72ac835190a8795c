"""The number reader reads whole numbers, never the tails of tokens (issue 33, item 1).

With gold 2, a random model once earned full correctness on ``gsm8k`` and ``math`` with
``x72``, ``is72``, ``e72``, ``599e72`` or ``...total is A32``: the last-number rule started a
match inside a letter-glued token. Each attack is played through the environments; the
property test is in ``test_number_reader_property.py``.
"""

from __future__ import annotations

import re

import pytest

import envhub
from envhub.envs.games.connect4 import parse_column
from envhub.envs.math.answers import is_equivalent
from envhub.envs.math.extract import extract_answer
from envhub.envs.mcp_tools.grading import as_number
from envhub.types import Status

GLUED = ["x72", "is72", "e72", "599e72", "...total is A32", "so 72x", "x1,234", "2a", "A2B", "1AAA"]


def _credited(text: str, gold: str) -> bool:
    found = extract_answer(text)
    return bool(found.answer) and not found.hedged and is_equivalent(found.answer, gold)


@pytest.mark.parametrize("text", GLUED)
@pytest.mark.parametrize("gold", ["2", "72", "32", "234"])
def test_a_number_glued_to_a_word_is_no_answer(text, gold):
    assert not _credited(text, gold)


@pytest.mark.parametrize("env_id", ["gsm8k", "math"])
@pytest.mark.parametrize("text", GLUED)
def test_glued_numbers_earn_nothing_in_the_environments(env_id, text):
    env = envhub.make(env_id)
    task = next(t for t in env.tasks() if re.fullmatch(r"\d+", t.answer or ""))
    for glued in (f"{text} x{task.answer}", f"{text} is{task.answer}", f"{text} 9e{task.answer}"):
        env.reset(task_id=task.task_id)
        result = env.step(glued)
        assert result.info.status == Status.OK
        assert result.info.components["correctness"] == 0.0, glued


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("so 7 in all", "7"),
        ("It costs -4 degrees", "-4"),
        ("Total 1,234,567 units", "1,234,567"),
        ("it is 42.", "42"),
        ("it is (42)", "42"),
        ("$42", "$42"),  # its currency sign is part of it
        ("it is 50%", "50%"),
        ("x = 5", "5"),
        ("it is 1,000.99m²", "1,000.99 m^2"),  # a unit after the last number is kept
        ("about 42cm", "42 cm"),
    ],
)
def test_whole_numbers_are_still_read(text, answer):
    assert extract_answer(text).answer == answer


def test_the_other_number_readers_read_whole_tokens():
    assert parse_column("x3") is None
    assert parse_column("play 3rd") is None
    assert parse_column("<move>4</move>") == 4
    assert as_number("1,2") is None  # not 12
    assert as_number("1,234") == 1234


@pytest.mark.parametrize(
    ("text", "gold"),
    [
        ("the total is 599e+72", "72"),
        ("the total is 5E-72", "72"),
        ("the total is 1.5e-2", "2"),
        ("So the total is 10^2", "2"),
        ("So the total is 10^2", "10"),
        ("the total is 10^{3}", "3"),
        ("so the total is 2^10", "10"),
        ("so the total is 10**2", "2"),
        ("the total is 10²", "10"),
        ("the total is 1+2", "2"),
        ("the total is 3*2", "2"),
        ("the total is 5 - 2", "2"),
    ],
)
def test_an_exponent_or_the_last_operand_is_not_the_answer(text, gold):
    """A number is its whole token, exponent included; an expression is read whole."""
    found = extract_answer(text)
    assert not (found.answer and is_equivalent(found.answer, gold)), found


@pytest.mark.parametrize(
    ("text", "gold"),
    [
        ("So the total is 10^2", "100"),
        ("the total is 1+2", "3"),
        ("the total is 599e+72", "5.99e74"),
    ],
)
def test_powers_and_sums_are_read_whole(text, gold):
    found = extract_answer(text)
    assert found.answer and is_equivalent(found.answer, gold), found
