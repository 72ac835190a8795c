r"""Inequalities on one variable read as the intervals they describe.

A MATH-style answer may give a solution set as relations ("$x < -10$ or $x > 4$") where the
gold writes intervals (``(-\infty, -10) \cup (4, \infty)``); "or" there joins the pieces of
one set, not two answers.
"""

from __future__ import annotations

import re

_LESS = {"<": ")", "\\lt": ")", "\\le": "]", "\\leq": "]", "≤": "]", "\\leqslant": "]"}
_MORE = {">": "(", "\\gt": "(", "\\ge": "[", "\\geq": "[", "≥": "[", "\\geqslant": "["}
_RELATION = r"(<|>|\\l[et]q?(?:slant)?|\\g[et]q?(?:slant)?|≤|≥)"
_BOUND_VALUE = r"([-−]?[^<>=,\s$]+)"
_HALF_LINE = re.compile(rf"([a-z])\s*{_RELATION}\s*{_BOUND_VALUE}")
_BETWEEN_TWO = re.compile(rf"{_BOUND_VALUE}\s*{_RELATION}\s*([a-z])\s*{_RELATION}\s*{_BOUND_VALUE}")
_SET_JOIN = re.compile(r"\s*(?:,|;|\\text\{\s*or\s*\}|\bor\b|\\lor|\\vee|∨|\\cup|∪)\s*")


def relations_as_intervals(text: str) -> str | None:
    r"""``text`` as intervals when it is inequalities on one variable joined by "or".

    ``x < -10 or x > 4`` is ``(-\infty, -10) \cup (4, \infty)``, ``2 \le x < 5`` is ``[2, 5)``;
    anything else (two variables, an equation, words) is None.
    """
    parts = _SET_JOIN.split(text.replace("$", "").strip())
    intervals, names = [], set()
    for part in parts:
        one, two = _HALF_LINE.fullmatch(part), _BETWEEN_TWO.fullmatch(part)
        if one is not None:
            name, op, bound = one.groups()
            low, high = ("-\\infty", bound) if op in _LESS else (bound, "\\infty")
            left, right = ("(", _LESS[op]) if op in _LESS else (_MORE.get(op, "("), ")")
        elif two is not None and two.group(2) in _LESS and two.group(4) in _LESS:
            low, op1, name, op2, high = two.groups()
            left, right = ("(" if _LESS[op1] == ")" else "["), _LESS[op2]
        else:
            return None
        names.add(name)
        intervals.append(f"{left}{low}, {high}{right}")
    return " \\cup ".join(intervals) if len(names) == 1 else None
