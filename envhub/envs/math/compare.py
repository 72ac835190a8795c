"""Exact comparison of parsed answers, without sympy.

:func:`quick_compare` settles every comparison whose leaves have rational values (the common
case: GSM8K answers, fractions, decimals, percentages) with :class:`fractions.Fraction`, and
answers ``None`` when sympy is needed (:mod:`envhub.envs.math.symbolic`). :func:`same` tells
whether two written answers of one response are one value (``1/2`` and ``0.5``; a decimal
comma, ``0,5``, too; ``x^2-1`` and ``(x-1)(x+1)``, by :mod:`~envhub.envs.math.identity`), and
:func:`distinct` drops such repeats from a list of candidates.
"""

from __future__ import annotations

import re
from functools import lru_cache

from . import locales
from .identity import identical
from .parse import PARSE_ERRORS, Answer, Equation, Expr, Seq, Text, Union, parse_answer
from .units import scales


def numbers_equal(p: Expr, g: Expr) -> bool | None:
    """Compare two rational leaves exactly; ``None`` when either has no rational value.

    A percentage on one side only matches either reading: ``50%`` equals ``50`` and ``0.5``
    (never a number with a unit: ``5%`` is not ``$5``; facing a fraction or a number under 1,
    only its hundredth: ``75%`` is ``3/4`` and ``0.75``, ``0.75%`` is neither).
    Units convert (``200 cm`` is ``2 m``); different dimensions never match (:mod:`.units`).
    """
    if p.value is None or g.value is None:
        return None
    if p.percent != g.percent and (p.unit or g.unit):
        return False  # 5% is not $5, nor 5 cm
    pv, gv = p.value, g.value
    if p.unit is not None and g.unit is not None:
        both = scales(p.unit, g.unit)
        if both is None:
            return False
        (pf, po), (gf, go) = both
        pv, gv = pv * pf + po, gv * gf + go
    if p.percent == g.percent:
        return pv == gv
    (pct, other), plain = ((pv, gv), g) if p.percent else ((gv, pv), p)
    if "/" in plain.py or abs(other) < 1:
        return other == pct / 100  # a fraction or a share is no count of per cent: 0.75 ≠ 0.75%
    return other in (pct, pct / 100)


def quick_compare(pred: Answer, gold: Answer) -> bool | None:
    """Decide ``pred == gold`` without sympy, or return ``None`` when sympy is needed."""
    if type(pred) is not type(gold):
        return False
    if isinstance(pred, Text):
        return pred.words == gold.words  # type: ignore[union-attr]
    if isinstance(pred, Expr):
        same = numbers_equal(pred, gold)  # type: ignore[arg-type]
        if same is not None:
            return same
        same_text = (pred.py, pred.percent, pred.unit) == (gold.py, gold.percent, gold.unit)  # type: ignore[union-attr]
        return True if same_text else None
    if isinstance(pred, Equation):
        return True if pred.py == gold.py else None  # type: ignore[union-attr]
    if isinstance(pred, Seq):
        if (pred.left, pred.right, len(pred.items)) != (gold.left, gold.right, len(gold.items)):  # type: ignore[union-attr]
            return False
        return _all(quick_compare(p, g) for p, g in zip(pred.items, gold.items, strict=True))  # type: ignore[union-attr]
    if isinstance(pred, Union):
        if len(pred.parts) != len(gold.parts):  # type: ignore[union-attr]
            return False
        same = _all(quick_compare(p, g) for p, g in zip(pred.parts, gold.parts, strict=True))  # type: ignore[union-attr]
        return True if same else None  # in another order the sets may still be equal
    return _unordered(pred.items, gold.items)  # type: ignore[union-attr]


def _all(results) -> bool | None:
    undecided = False
    for r in results:
        if r is False:
            return False
        undecided |= r is None
    return None if undecided else True


def _unordered(pred: tuple[Answer, ...], gold: tuple[Answer, ...]) -> bool | None:
    """Multiset equality when every pair is decidable exactly, else ``None``."""
    if len(pred) != len(gold):
        return False
    table = [[quick_compare(p, g) for g in gold] for p in pred]
    if any(all(r is False for r in row) for row in table):
        return False
    if any(r is None for row in table for r in row):
        return None
    return matching([[bool(r) for r in row] for row in table])


def matching(table: list[list[bool]]) -> bool:
    """True when every row pairs with a distinct column through a True cell (square table)."""
    if any(len(row) != len(table) for row in table):
        return False
    owner: dict[int, int] = {}

    def place(row: int, seen: set[int]) -> bool:
        for col, ok in enumerate(table[row]):
            if ok and col not in seen:
                seen.add(col)
                if col not in owner or place(owner[col], seen):
                    owner[col] = row
                    return True
        return False

    return all(place(r, set()) for r in range(len(table)))


@lru_cache(maxsize=8192)
def read(answer: str) -> Answer | str:
    """Parsed answer, or its whitespace-normalised text when it does not parse."""
    try:
        return parse_answer(answer)
    except PARSE_ERRORS:  # anything unreadable is compared as text
        return " ".join(answer.split()).lower()


def same(a: str, b: str) -> bool:
    """True when two written answers are the same value, decided exactly and without sympy."""
    if a.split() == b.split():
        return True
    ra, rb = read(a), read(b)
    if ra == rb:
        return True
    if isinstance(ra, str) or isinstance(rb, str):
        return False
    if quick_compare(ra, rb) is True:
        return True
    if _letters_alike(ra, rb):
        return True  # x^2+6x-27 and (x+9)(x-3): one polynomial
    if not (_SHORT_DECIMAL_COMMA.search(a) or _SHORT_DECIMAL_COMMA.search(b)):
        return False
    a2, b2 = locales.english_notation(a), locales.english_notation(b)
    return (a2, b2) != (a, b) and same(a2, b2)  # unchanged (1,2,4 is a list): no recursion


def _letters_alike(a: Answer, b: Answer) -> bool:
    """Two expressions in letters, without units, that are one rational function."""
    plain = (
        isinstance(x, Expr) and x.value is None and not x.unit and not x.percent for x in (a, b)
    )
    return all(plain) and identical(a.py, b.py) is True  # type: ignore[union-attr]


_SHORT_DECIMAL_COMMA = re.compile(r"\d,\d{1,2}(?!\d)|(?<![\d.,])0,\d+")
"""``0,5``, ``0,375``: a decimal comma (never ``1,000``), tried when two values are compared for
sameness."""


def distinct(answers: list[str]) -> list[str]:
    """``answers`` without repeats of one value (``1/2`` then ``0.5`` is one answer)."""
    out: list[str] = []
    for a in answers:
        if not any(same(a, b) for b in out):
            out.append(a)
    return out
