r"""math-verify behind envhub's own checker; runs only inside the killable worker processes.

envhub's parser (:mod:`envhub.envs.math.parse`) settles the common answers in microseconds; what it
cannot read or cannot decide (relations, chained equations, matrices, subscripts, named tuples,
``;`` lists, ratios, prose golds with the answer somewhere inside) goes to
`math-verify <https://github.com/huggingface/Math-Verify>`_ and its ``latex2sympy2_extended``
parser, the checker NeMo Gym, verl and TRL use, rather than to a second parser of our own.

It is called from :func:`envhub.envs.math.symbolic.judge` in a ``pebble`` worker with a deadline, so
its own signal-based timeouts are switched off (``parsing_timeout=None``); the pool kills a
worker that runs over. A gold answer that neither parser can read is an error
(``gold_error``), never a verdict.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from envhub.errors import DependencyMissing
from envhub.install import install_command

EQUAL, DIFFERENT, GOLD_ERROR = "equal", "different", "gold_error"
_DELIMITED = re.compile(r"\$|\\\(|\\\[|\\boxed|\\fbox")
_WORD = re.compile(r"(?<!\\)\b[A-Za-z]{3,}\b")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_LITERAL = re.compile(r"\d+(?:[.,]\d+)*|\.\d+")
_SUBSCRIPT = re.compile(r"_\s*(?:\{[^{}]*\}|\w)")
_SPACED_THOUSANDS = re.compile(r"(?<=\d)[ \u202f\u00a0](?=\d{3}(?!\d))")


class _OwnDeadline(logging.Filter):
    """Drop math-verify's warning that its timeouts are off: the worker pool's deadline is on."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Timeout is disabled")


for _name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_name).addFilter(_OwnDeadline())


def _math_verify() -> Any:
    """The ``math_verify`` module, or an error that says how to install it."""
    try:
        import math_verify
    except ImportError as e:
        raise DependencyMissing(
            "the math checker needs math-verify for notation envhub's parser does not read: "
            f"{install_command(['math'])} (or pip install math-verify)"
        ) from e
    return math_verify


def read(text: str, *, as_gold: bool, formula: bool = False) -> list[Any]:
    r"""math-verify's reading of ``text``; ``[]`` when it finds nothing.

    A gold answer that envhub could not read is read as math-verify reads its own golds (the
    text as written, so prose with the answer inside works); one that envhub read
    (``formula``), or one without prose, is one formula, so ``\log_2 8`` does not become
    ``8``. A prediction is an answer envhub already extracted: it is read as one LaTeX
    formula (``$...$``), so ``31, 32`` stays a list instead of becoming its last number; only
    prose around a single number is read as written.
    """
    parse = _math_verify().parse
    if _DELIMITED.search(text) or _prose(text) or (as_gold and not formula and _WORD.search(text)):
        found = parse(text, parsing_timeout=None)  # type: ignore[arg-type]
        if found or _DELIMITED.search(text) or not as_gold:
            return found
    return parse(f"${text}$", parsing_timeout=None)  # type: ignore[arg-type]


def _prose(text: str) -> bool:
    """Words around exactly one number (``Jane started 3 hours ago``): read as written."""
    return len(_WORD.findall(text)) >= 2 and len(_NUMBER.findall(text)) == 1


_GLUED = re.compile(r"(?<![\\A-Za-z])\d+(?:\.\d+)?([A-Za-z]+)")


def dropped_word(pred: str, values: list[Any]) -> bool:
    """True when math-verify read a number glued to a word that names no unit (``1c``, ``1d``).

    A number is a whole token: math-verify reads ``1c`` as ``1``, dropping the ``c``; envhub
    reads it as the product ``1*c`` (and ``200cm`` as a length).
    """
    import sympy

    from .units import measure

    if not values or not isinstance(values[0], sympy.Number):
        return False
    return any(measure(m.group(1)) is None for m in _GLUED.finditer(pred))


def dropped_numbers(pred: str, values: list[Any]) -> bool:
    r"""True when math-verify read a prediction as one of its numbers, dropping the others.

    math-verify skips what it does not understand and keeps the last number it sees, so
    ``31 \sim 32``, ``31 \to 32`` or ``31 \operatorname{or} 32`` read as ``32``: a hedge
    that would pass. So its reading must account for every number of the prediction: a
    reading that is one of several numbers written, or a relation between two different
    numbers (``31 \equiv 32``), is not the prediction's value. Subscripts (``x_{1}``) and
    spaced thousands (``1 000``) are not separate numbers.
    """
    import sympy

    from .latex import AnswerSyntaxError, clean

    if values and isinstance(values[0], sympy.Eq) and values[0].lhs.is_Number:
        return values[0].rhs.is_Number and values[0].lhs != values[0].rhs  # 31 \\equiv 32
    if not values or not isinstance(values[0], sympy.Number):
        return False
    try:
        text = clean(pred)  # thousands separators, \\text{}, spacing commands
    except AnswerSyntaxError:
        text = pred
    text = _SPACED_THOUSANDS.sub("", _SUBSCRIPT.sub(" ", text))
    literals = [m.replace(",", "") for m in _LITERAL.findall(text)]
    if len(literals) < 2:
        return False
    return any(values[0] == sympy.Rational(m) for m in literals)


def verdict(
    pred: str,
    gold: str,
    *,
    gold_read_by_envhub: bool,
    tolerance: float | None,
    pred_read_by_envhub: bool = True,
) -> str:
    """``equal``/``different`` from math-verify, or ``gold_error`` when no parser reads the gold.

    Args:
        pred: The extracted final answer.
        gold: The gold answer as the task states it.
        gold_read_by_envhub: envhub's own parser read the gold (then math-verify failing on it
            is not a broken gold, only an undecided comparison: ``different``).
        tolerance: The task's absolute rounding tolerance, or None for exact answers.
        pred_read_by_envhub: envhub's parser read the prediction (kept for the record: either
            way math-verify's reading must account for all its numbers,
            :func:`dropped_numbers`).
    """
    verify = _math_verify().verify
    gold_values = read(gold, as_gold=True, formula=gold_read_by_envhub)
    if not gold_values:
        if gold_read_by_envhub:
            return DIFFERENT
        return f"{GOLD_ERROR}: neither envhub nor math-verify can read the gold answer"
    pred_values = read(pred, as_gold=False)
    if not pred_values or dropped_numbers(pred, pred_values) or dropped_word(pred, pred_values):
        return DIFFERENT
    digits = rounding_digits(pred, gold, tolerance)
    same = verify(gold_values, pred_values, float_rounding=digits, timeout_seconds=None)  # type: ignore[arg-type]
    return EQUAL if same else DIFFERENT


_DECIMALS = re.compile(r"(?<![\d.])\d*\.(\d+)")


def rounding_digits(pred: str, gold: str, tolerance: float | None) -> int:
    r"""math-verify's ``float_rounding`` that keeps envhub's rounding rules.

    math-verify rounds both sides to this many places when one is a decimal (its default, 6,
    would credit ``x_1 = 1.414214`` for ``\sqrt{2}``). So: the task's tolerance when it states
    one; a gold written as a decimal, facing an exact prediction, at its own places (the
    exact answer must round to it); anything else exactly, to a double's 15 places.
    """
    if tolerance is not None:
        return max(0, min(15, round(-_log10(tolerance))))
    places = [len(m) for m in _DECIMALS.findall(gold)]
    if places and not _DECIMALS.search(pred):
        return min(15, max(places))
    return 15


def readable_gold(gold: str) -> bool:
    """True when math-verify finds an answer in ``gold``."""
    return bool(read(gold, as_gold=True))


def _log10(x: float) -> float:
    import math

    return math.log10(x) if x > 0 else -15.0
