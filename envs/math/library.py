r"""math-verify behind envhub's own checker; runs only inside the killable worker processes.

envhub's parser (:mod:`envs.math.parse`) settles the common answers in microseconds; what it
cannot read or cannot decide (relations, chained equations, matrices, subscripts, named tuples,
``;`` lists, ratios, prose golds with the answer somewhere inside) goes to
`math-verify <https://github.com/huggingface/Math-Verify>`_ and its ``latex2sympy2_extended``
parser, the checker NeMo Gym, verl and TRL use, rather than to a second parser of our own.

It is called from :func:`envs.math.symbolic.judge` in a ``pebble`` worker with a deadline, so
its own signal-based timeouts are switched off (``parsing_timeout=None``); the pool kills a
worker that runs over. A gold answer that neither parser can read is an error
(``gold_error``), never a verdict.
"""

from __future__ import annotations

import re
from typing import Any

EQUAL, DIFFERENT, GOLD_ERROR = "equal", "different", "gold_error"
_DELIMITED = re.compile(r"\$|\\\(|\\\[|\\boxed|\\fbox")
_WORD = re.compile(r"(?<!\\)\b[A-Za-z]{3,}\b")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def read(text: str, *, as_gold: bool, formula: bool = False) -> list[Any]:
    r"""math-verify's reading of ``text``; ``[]`` when it finds nothing.

    A gold answer that envhub could not read is read as math-verify reads its own golds (the
    text as written, so prose with the answer inside works); one that envhub read
    (``formula``), or one without prose, is one formula, so ``\log_2 8`` does not become
    ``8``. A prediction is an answer envhub already extracted: it is read as one LaTeX
    formula (``$...$``), so ``31, 32`` stays a list instead of becoming its last number; only
    prose around a single number is read as written.
    """
    from math_verify import parse

    if _DELIMITED.search(text) or _prose(text) or (as_gold and not formula and _WORD.search(text)):
        found = parse(text, parsing_timeout=None)  # type: ignore[arg-type]
        if found or _DELIMITED.search(text) or not as_gold:
            return found
    return parse(f"${text}$", parsing_timeout=None)  # type: ignore[arg-type]


def _prose(text: str) -> bool:
    """Words around exactly one number (``Jane started 3 hours ago``): read as written."""
    return len(_WORD.findall(text)) >= 2 and len(_NUMBER.findall(text)) == 1


def verdict(pred: str, gold: str, *, gold_read_by_envhub: bool, tolerance: float | None) -> str:
    """``equal``/``different`` from math-verify, or ``gold_error`` when no parser reads the gold.

    Args:
        pred: The extracted final answer.
        gold: The gold answer as the task states it.
        gold_read_by_envhub: envhub's own parser read the gold (then math-verify failing on it
            is not a broken gold, only an undecided comparison: ``different``).
        tolerance: The task's absolute rounding tolerance, or None for exact answers.
    """
    from math_verify import verify

    gold_values = read(gold, as_gold=True, formula=gold_read_by_envhub)
    if not gold_values:
        if gold_read_by_envhub:
            return DIFFERENT
        return f"{GOLD_ERROR}: neither envhub nor math-verify can read the gold answer"
    pred_values = read(pred, as_gold=False)
    if not pred_values:
        return DIFFERENT
    digits = 6 if tolerance is None else max(0, min(15, round(-_log10(tolerance))))
    same = verify(gold_values, pred_values, float_rounding=digits, timeout_seconds=None)  # type: ignore[arg-type]
    return EQUAL if same else DIFFERENT


def readable_gold(gold: str) -> bool:
    """True when math-verify finds an answer in ``gold``."""
    return bool(read(gold, as_gold=True))


def _log10(x: float) -> float:
    import math

    return math.log10(x) if x > 0 else -15.0
