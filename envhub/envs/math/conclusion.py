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

from .compare import same
from .hedges import last_number_hedged
from .lastnumber import find_numbers, unit_after

_CONCLUDING = (
    r"\b(?:so|thus|therefore|hence|in\s+total|altogether|overall|in\s+all|итак|таким\s+образом"
    r"|en\s+total|au\s+total|insgesamt|in\s+totale|no\s+total|всего|итого|in\s+summary"
    r"|putting\s+it\s+(?:all\s+)?together|to\s+sum\s+up|in\s+conclusion"
    r"|значит|jadi|kwa\s+hiyo|hivyo|vậy|do\s+đó|donc|also|daher|somit|por\s+lo\s+tanto|entonces"
    r"|así\s+que|portanto|então|quindi|dunque|dus|zatem|więc|takže|bu\s+yüzden|dolayısıyla|yani)\b"
    r"|ดังนั้น|अतः|इसलिए|অতএব|তাই|সুতরাং|కాబట్టి|எனவே|म्हणून|તેથી|إذن|لذلك|لہذا|لہٰذا|بنابراین|ስለዚህ"
    r"|לכן|sonuç\s+olarak"
    r"|したがって|よって|所以|因此|따라서|그러므로"
)
CONCLUSION = re.compile(rf"(?i)[ \t>*_#-]*(?:{_CONCLUDING})")
"""A line that opens with a conclusion ("So", "Итак", "Jadi", "ดังนั้น", "अतः", "إذن", "所以")."""
_CONCLUDES = re.compile(rf"(?i){_CONCLUDING}")
"""A conclusion word anywhere ("Janet verdient also 45 Dollar", "Janet gagne donc 27")."""
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
    if lines and CONCLUSION.match(lines[-1]) and find_numbers(lines[-1]):
        return "\n".join(lines), answers
    return tail, answers


_SENTENCE_BREAK = re.compile(r"[.!?。।](?=\s|$)|\n")
_RESULT = re.compile(
    r"=\s*(?:[$€£¥₹]|Rp\.?|Rs\.?)?\s*(\d{1,3}(?:[ \u00a0\u202f]\d{3})+|\d[\d.,]*\d|\d)(?![\d:/])"
)
"""The result of a step of the working: the number after ``=`` (``4 · 90 = 360``)."""


def result_first(tail: str, numbers: list[re.Match]) -> int | None:
    """Where to end ``tail`` when its last sentence states the working's result, then givens.

    The last sentence has a conclusion word before the last result of the working (the value
    after its last ``=``), no ``=`` and no hedge, and after that result only numbers the
    working already wrote: the end of that result, else None.
    """
    if len(numbers) < 2:
        return None
    breaks = [m.end() for m in _SENTENCE_BREAK.finditer(tail, 0, numbers[-1].start())]
    start = breaks[-1] if breaks else 0
    results = _RESULT.findall(tail, 0, start)
    if not results or "=" in tail[start:]:
        return None
    if last_number_hedged(tail, numbers[-1], restated=False):
        return None  # "So it takes 1.5 hours, or maybe 2 hours": the hedge stands
    earlier = tail[:start]
    said = [n for n in numbers if n.start() >= start]
    for i, number in enumerate(said[:-1]):
        if number.group(0) != results[-1]:
            continue
        if not _CONCLUDES.search(tail, start, number.end() + 20):  # "48.000 euros en total"
            return None  # no conclusion: the last number stands
        rest = said[i + 1 :]
        return number.end() if all(written_in(n.group(0), earlier) for n in rest) else None
    return None


def summary_disagrees(before: str, answer: str) -> bool:
    r"""The conclusion on the lines right before the final answer states another result.

    "... 217 - 153 = 64.\n\nPutting it together, the result is 97.\n#### 64": the summary
    gives 97, a result the working reached and left, and the marker 64: two committed answers.
    Only a conclusion (:data:`_CONCLUDES`) with one number, no ``=`` and no "not", on a line of
    its own, whose number the working wrote as a result (``= 97``).
    """
    window = before[-300:]
    sentences = [s for s in _SENTENCE_BREAK.split(window) if s.strip()]
    numbered = [i for i, s in enumerate(sentences) if any(c.isdigit() for c in s)]
    if not numbered or numbered[-1] < len(sentences) - 2:  # ("**Final answer:**" may follow)
        return False
    last = sentences[numbered[-1]]
    if len(_DIGIT_RUNS.findall(last)) != 1 or "=" in last:
        return False  # (most sentences before an answer hold its working: several numbers)
    if NOT.search(last) or not _CONCLUDES.search(last):
        return False
    values = find_numbers(last)
    if len(values) != 1:
        return False
    if "\n" not in window[window.rfind(last) + len(last) :]:
        return False  # "So 50 is $\boxed{20}$ percent": the answer's own sentence
    value = values[0].group(0)
    if value not in _RESULT.findall(
        before, 0, max(0, len(before) - len(window) + window.rfind(last))
    ):
        return False
    return not (same(value + unit_after(last, values[0].end()), answer) or same(value, answer))


def total_row_disagrees(before: str, answer: str) -> bool:
    r"""A table right before the final answer has a total row that states another value.

    "| **Total** | **45** |\n\n**Answer: 42**": the table commits to 45. Only the table that
    ends the text before the answer (blank lines and a heading between), only its row named a
    total in a language read here, and only that row's last number.
    """
    lines = before.rstrip(" \t\n*_#>").splitlines()[-12:]
    if not lines or not lines[-1].lstrip().startswith("|"):
        return False
    for line in reversed(lines):
        if not line.lstrip().startswith("|"):
            break
        cells = [c.strip(" *_") for c in line.strip().strip("|").split("|")]
        if cells and _TOTAL.fullmatch(cells[0]):
            numbers = find_numbers(line)
            return bool(numbers) and not same(numbers[-1].group(0), answer)
    return False


_TOTAL = re.compile(
    r"(?i)(?:grand\s+)?total|sum|overall|gesamt|summe|insgesamt|suma|somme|totale?|итого|всего"
    r"|合计|總計|总计|合計|총계|합계|المجموع|कुल|toplam|jumlah|tổng"
)


_DIGIT_RUNS = re.compile(r"\d(?:[\d.,'’\u202f\u00a0]|\s(?=\d{3}))*")
NOT = re.compile(r"(?i)\b(?:not|no|nicht|pas|no\s+es|не)\b")


def written_in(number: str, text: str) -> bool:
    """``number`` stands in ``text`` as a whole number."""
    return re.search(rf"(?<![\d.,]){re.escape(number)}(?![\d]|[.,]\d)", text) is not None
