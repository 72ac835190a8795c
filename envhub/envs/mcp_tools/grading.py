"""Grading a final answer against the task's gold: a number match, else a normalised text match.

The answer is the text of the last ``<answer>...</answer>`` block of the model's message, or
the whole message when it has none (then ``format`` is 0). The comparison, on purpose simple:

* when the gold reads as a number (``42``, ``-3.5``, ``1,200``), the answer must read as a
  number equal to it (relative tolerance 1e-9): ``42.0`` matches ``42``, ``forty-two`` does not;
* otherwise both are compared case-folded, with runs of blanks collapsed and a trailing period
  dropped: ``paris.`` matches ``Paris``; nothing else is forgiven (no aliases, no F1).

A missing or empty gold is the environment's error (:class:`GoldAnswerError`), never a reward.
"""

from __future__ import annotations

import math
import re

from envhub.errors import GoldAnswerError
from envhub.tags import block_text, tag_blocks

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_THOUSANDS = re.compile(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?")
"""Commas only as thousands separators: ``1,2`` is no number (not 12)."""


def extract_answer(text: str) -> tuple[str, bool]:
    """The answer in ``text`` and whether it came in a closed ``<answer>`` block."""
    closed = [b for b in tag_blocks(text, "answer") if b.closed]
    if closed:
        return block_text(text, closed[-1]).strip(), True
    return text.strip(), False


def as_number(text: str) -> float | None:
    """``text`` as a finite number (thousands commas allowed), or ``None``."""
    candidate = text.strip()
    if "," in candidate and not _THOUSANDS.fullmatch(candidate):
        return None
    candidate = candidate.replace(",", "")
    if len(candidate) > 64 or not _NUMBER.fullmatch(candidate):
        return None
    value = float(candidate)
    return value if math.isfinite(value) else None


def normalise(text: str) -> str:
    """Case-folded, blanks collapsed, one trailing period dropped."""
    return " ".join(text.split()).casefold().removesuffix(".").strip()


def matches(answer: str, gold: str | None) -> bool:
    """Whether ``answer`` is the gold answer (see the module docstring)."""
    if gold is None or not gold.strip():
        raise GoldAnswerError("the task has no gold answer; give each row an 'answer'")
    gold_number = as_number(gold)
    if gold_number is not None:
        got = as_number(answer)
        return got is not None and math.isclose(got, gold_number, rel_tol=1e-9, abs_tol=1e-12)
    return normalise(answer) == normalise(gold)
