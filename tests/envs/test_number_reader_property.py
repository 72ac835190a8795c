"""Property test of the number reader: text with no standalone gold is never credited.

Hypothesis draws digit soup (the gold glued to words and digits, other numbers, separators,
optionally after ``####`` or "The answer is"); when no token of it is the gold as a number of
its own, read generously, the math checker must not credit the gold (issue 33, item 1).
"""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envhub.envs.math.answers import is_equivalent
from envhub.envs.math.extract import extract_answer
from envhub.envs.math.units import measure


def _credited(text: str, gold: str) -> bool:
    found = extract_answer(text)
    return bool(found.answer) and not found.hedged and is_equivalent(found.answer, gold)


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
