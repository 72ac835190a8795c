"""The number reader reads whole numbers, never the tails of tokens (issue 33, item 1).

With gold 2, a random model once earned full correctness on ``gsm8k`` and ``math`` with
``x72``, ``is72``, ``e72``, ``599e72`` or ``...total is A32``: the last-number rule started a
match inside a letter-glued token. Each attack is played through the environments, and a
property test draws text that holds no standalone gold and checks it is never credited.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envhub
from envhub.envs.games.connect4 import parse_column
from envhub.envs.math.answers import extract_answer, is_equivalent
from envhub.envs.math.units import measure
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
        ("$42", "42"),
        ("it is 50%", "50%"),
        ("x = 5", "5"),
        ("it is 1,000.99m²", "1,000.99"),
        ("about 42cm", "42"),
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


# ---------------------------------------------------------------- the property

_TOKEN = re.compile(r"\w+(?:[.,]\w+)*")


def _values(token: str) -> set[float]:
    """Every number a token may be read as (commas as separators or as a decimal point)."""
    token = token.strip(".,")
    unit = re.search(r"(?<=\d)[A-Za-z]+$", token)
    if unit and measure(unit.group(0)) is not None:  # 42cm, 72yd: a number with its unit
        token = token[: unit.start()]
    readings = {token.replace(",", ""), token.replace(",", ".")}
    out = set()
    for r in readings:
        if re.fullmatch(r"\d+(?:\.\d+)?", r):
            out.add(float(r))
    return out


def _standalone(text: str, gold: str) -> bool:
    """``gold`` is written in ``text`` as a number of its own (read generously)."""
    return any(float(gold) in _values(t) for t in _TOKEN.findall(text))


_WORD = st.text(alphabet="abcdexyzAEXZ", min_size=1, max_size=4)
_DIGITS = st.integers(0, 9999).map(str)
_SEP = st.sampled_from(["", "", " ", ", ", ". ", "...", "\n"])  # no operators: no arithmetic
_PREFIX = st.sampled_from(["", "#### ", "The answer is ", "Final answer: ", "so the total is "])


@st.composite
def _soup(draw, gold: str) -> str:
    """Digit soup: the gold glued to words and digits, other numbers, separators."""
    glued = st.one_of(
        st.builds(lambda w: w + gold, _WORD),
        st.builds(lambda w: gold + w, _WORD),
        st.builds(lambda d: d + gold, _DIGITS),
        st.builds(lambda d, w: d + "e" + gold + w, _DIGITS, _WORD),
    )
    pieces = draw(st.lists(st.one_of(glued, _WORD, _DIGITS), min_size=1, max_size=8))
    seps = draw(st.lists(_SEP, min_size=len(pieces), max_size=len(pieces)))
    body = "".join(p + s for p, s in zip(pieces, seps, strict=True))
    return draw(_PREFIX) + body


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), gold=st.integers(1, 999).map(str))
def test_text_without_a_standalone_gold_is_never_credited(data, gold):
    text = data.draw(_soup(gold))
    if _standalone(text, gold):
        return
    assert not _credited(text, gold), (text, extract_answer(text))
