r"""The conclusion that ends a response with no stated answer, read before what follows it.

Two shapes put a value the working already gave after the response's conclusion:

* a markdown table that sums the working up ("So she bought 7 items." then a table whose last
  cell is a cost): the conclusion states the answer, not the table (:func:`before_table`); a
  table whose head names an answer ("| Case | Answer |") gives one answer per row, a hedge;
* a last sentence that states the working's result and then the givens it came from
  ("Итак, Маша потратила 360 рублей, купив 4 тетради по 90 рублей."): the result is the
  answer, not the last given (:func:`result_first`).
"""

from __future__ import annotations

import re

from .hedges import last_number_hedged
from .lastnumber import find_numbers

_CONCLUSION = re.compile(
    r"(?i)[ \t>*_#-]*(?:so|thus|therefore|hence|in\s+total|altogether|overall|in\s+all|итак"
    r"|таким\s+образом|значит|jadi|kwa\s+hiyo|hivyo|vậy|do\s+đó|donc|also|daher|somit|por\s+lo\s+tanto"
    r"|entonces|así\s+que|portanto|então|quindi|dunque|dus|zatem|więc|takže|bu\s+yüzden"
    r"|dolayısıyla)\b|\s*(?:ดังนั้น|अतः|इसलिए|অতএব|তাই|إذن|لذلك|したがって|よって|所以|因此|따라서|그러므로)"
)
"""Words that open a conclusion ("So", "Итак", "Jadi", "ดังนั้น", "अतः", "إذن", "所以")."""
_RULE_ROW = re.compile(r"\|(?:\s*:?-+:?\s*\|)+")
_ANSWER_HEAD = re.compile(r"(?i)\|\s*\**answers?\**\s*\|")


def before_table(tail: str) -> tuple[str, int]:
    r"""``tail`` without its closing markdown table if a conclusion precedes; the table's answers.

    "So she bought 7 items.\n\n| Item | Qty | Cost |\n...\n| **Total** | **7** | **$15** |"
    states 7; the table sums up the working. A table after no conclusion keeps its last cell.
    A table whose head names an answer ("| Case | Answer |") gives one for each row below it.
    """
    lines = tail.rstrip().split("\n")
    table = []
    while lines and lines[-1].strip().startswith("|"):
        table.append(lines.pop())
    rows = [r for r in table[::-1] if not _RULE_ROW.fullmatch(r.strip())]
    answers = len(rows) - 1 if rows and _ANSWER_HEAD.search(rows[0]) else 0
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and _CONCLUSION.match(lines[-1]) and find_numbers(lines[-1]):
        return "\n".join(lines), answers
    return tail, answers


_SENTENCE_BREAK = re.compile(r"[.!?。।](?=\s|$)|\n")
_RESULT = re.compile(r"=\s*(?:[$€£¥₹]|Rp\.?|Rs\.?)?\s*(\d[\d.,]*\d|\d)(?![\d:/])")
"""The result of a step of the working: the number after ``=`` (``4 · 90 = 360``)."""


def result_first(tail: str, numbers: list[re.Match]) -> int | None:
    """Where to end ``tail`` when its last sentence states the working's result, then givens.

    The last sentence opens with a conclusion (:data:`_CONCLUSION`), has no ``=`` and no
    hedge, and holds the last result of the working (the value after its last ``=``) and
    after it only numbers that the working already wrote: the end of that result, else None.
    """
    if len(numbers) < 2:
        return None
    breaks = [m.end() for m in _SENTENCE_BREAK.finditer(tail, 0, numbers[-1].start())]
    start = breaks[-1] if breaks else 0
    results = _RESULT.findall(tail, 0, start)
    if not results or not _CONCLUSION.match(tail, start) or "=" in tail[start:]:
        return None
    if last_number_hedged(tail, numbers[-1], restated=False):
        return None  # "So it takes 1.5 hours, or maybe 2 hours": the hedge stands
    earlier = tail[:start]
    said = [n for n in numbers if n.start() >= start]
    for i, number in enumerate(said[:-1]):
        if number.group(0) != results[-1]:
            continue
        rest = said[i + 1 :]
        return number.end() if all(_written_in(n.group(0), earlier) for n in rest) else None
    return None


def _written_in(number: str, text: str) -> bool:
    """``number`` stands in ``text`` as a whole number."""
    return re.search(rf"(?<![\d.,]){re.escape(number)}(?![\d]|[.,]\d)", text) is not None
