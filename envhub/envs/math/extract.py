r"""Final-answer extraction: which part of a math response is its answer.

:func:`extract_answer` looks for the final answer in this order and stops at the first rule
that finds one:

1. ``hash``: GSM8K-style ``#### 42`` lines (with any ``\boxed{}`` beside them);
2. ``boxed``: ``\boxed{42}`` (or ``\fbox{}``), braces balanced; a "The final answer is ..."
   written after the last box wins over the boxes (Minerva style);
3. ``answer_is``: "the answer is 42", "Final answer: 42" (up to the end of the sentence; an
   aside in parentheses after it, "32 apples (16 pairs)", is dropped);
4. ``math``: the last ``$...$`` / ``\(...\)`` / ``\[...\]`` span, when the last number is
   inside it or before it ("Therefore $x \ge 5$."); of a chain ``a = b = c``, ``c``;
5. ``last_number``: the last number (``-3``, ``1,000``, ``1 000``, ``2.5``, ``2 1/2``,
   ``\frac{3}{4}``, ``50%``; not a digit glued to a word, ``AZYUK2A``).

Before any rule, digits of every script become ASCII and invisible characters go
(:func:`~envhub.envs.math.latex.plain_digits`: ``１２３``, ``١٢٣``, ``1\u200b23``), and a
``<think>`` never closed is cut off with what follows it: a thought cut off states no answer.

**Several candidates are one answer: a list.** A response that offers several different
final answers, in any form, gives all of them, and all of them are compared with the gold:
several ``####`` lines or boxes that differ, several "the answer is", ``31 or 32``, ``31, 32``,
``31/32/33``, or an enumeration of numbers joined only by ``,`` ``;`` ``/`` ``or`` ``and``
that ends the response (``1, 2, ..., 100``). A list equals a gold only when the gold is the
same list (as a multiset), so against a single-valued gold every hedge scores 0 whichever
candidate is right, and listing more candidates never helps; a task whose answer *is* a list
(``\boxed{2} and \boxed{3}`` for the roots 2, 3) is still answered correctly. Repeating one
value in another form (``\boxed{1/2}`` ... ``\boxed{0.5}``) is one answer. Words of
uncertainty on the final answer or in the clause right after it (``maybe``, ``perhaps``,
``possibly``, ``probably``, ``either``, ``alternatively``, ``not sure``; or ``or``/``otherwise``
followed by a number: ``\boxed{32}, or maybe 31``) mark the response **hedged**: no
correctness, even against a list gold, and no format point. So does a committed answer
stated anywhere else that is decisively none of the final ones ("The answer is 5. ... Final
answer: 7", "The answer is 5. ... #### 7"): two committed answers are a hedge, whichever the
gold is. A hypothesis ("if the answer is 5"), words ("the answer is the sum of ...") and
what cannot be decided exactly commit to nothing
(:func:`~envhub.envs.math.statements.contradicted`). A final answer
taken back right after it ("#### 5. Actually, 7.") is hedged too, and so is one followed by
another value offered as also possible ("#### 5. 7 is also acceptable.",
:func:`~envhub.envs.math.remarks.retracted`).

What hedges an answer is :mod:`envhub.envs.math.hedges`; the statements of rule 3 are read by
:mod:`envhub.envs.math.statements`; the numbers of running text and the answer the last one
states, by :mod:`envhub.envs.math.lastnumber`. :func:`format_score` scores the response's form.
Whether an extracted answer equals the gold is :func:`envhub.envs.math.answers.is_equivalent`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from envhub.tags import tag_blocks

from . import locales, spelled
from .compare import distinct, same
from .conclusion import before_table, result_first, summary_disagrees, total_row_disagrees
from .hedges import (
    ALSO_WINDOW,
    HEDGE_WORDS,
    TAKEN_BACK,
    is_hedged,
    last_number_hedged,
    offers_value,
    other_value,
)
from .lastnumber import JOINER, MONTHS, NUMBER, REFERENCE, find_numbers, last_number, tidy
from .latex import boxed_contents, plain_digits
from .parse import split_top
from .remarks import retracted, taken_back
from .restating import restated, rival_amount
from .statements import (
    MAX_CANDIDATES,
    contradicted,
    contradicts,
    find_statements,
    marked_value,
    stated_value,
)
from .units import CHANGE, measure
from .weighing import hedged_before
from .wordfractions import fraction_in_words

__all__ = ["Extraction", "extract_answer", "format_score"]

MAX_RESPONSE_CHARS = 100_000
"""Extraction reads only this many characters from the end of a response."""


@dataclass(frozen=True)
class Extraction:
    """The final answer found in a response."""

    answer: str | None
    """Final answer text as written (``\\frac{1}{2}``, ``1,000``); None if nothing found."""
    method: str | None
    """The rule that found it: ``hash``, ``boxed``, ``answer_is`` or ``last_number``."""
    hedged: bool
    """The response gives several different final answers: it earns no correctness."""


_HASH = re.compile(r"####[ \t]*((?:[^\n.]|\.(?![ \t]+[^\W\d_]))*)")
"""A ``####`` line's answer, up to the end of its sentence ("#### 5. Actually, 7." gives ``5``
and leaves "Actually, 7" to be read as what follows the answer)."""


def _hash_answers(text: str) -> list[str]:
    return [a for a in (tidy(m.group(1)) for m in _HASH.finditer(text)) if a]


_SPAN = re.compile(
    r"\$\$(.{1,1000}?)\$\$|\$([^$\n]{1,1000}?)\$|\\\((.{1,1000}?)\\\)|\\\[(.{1,1000}?)\\\]",
    re.DOTALL,
)
SPAN_WINDOW = 4000
"""The ``math`` rule looks for its span in this many final characters only."""
FALLBACK_WINDOW = 10_000
"""The ``math`` and ``last_number`` rules read only this many final characters."""


def _math_span(text: str, after: int) -> tuple[str, int] | None:
    r"""The last ``$...$`` / ``\(...\)`` / ``\[...\]`` span ending after ``after``.

    Only the last :data:`SPAN_WINDOW` characters are searched, and a span is at most 1000
    characters, so the search stays linear however many delimiters are left open. Spans
    joined by ``or``/``and``/``,`` ("$x = -1$ or $x = 4$") are one list answer.
    """
    offset = max(0, len(text) - SPAN_WINDOW)
    spans = list(_SPAN.finditer(text, offset))[-MAX_CANDIDATES:]
    if not spans or spans[-1].end() <= after:
        return None
    joined = [spans[-1]]
    for m in reversed(spans[:-1]):
        if not JOINER.fullmatch(text, m.end(), joined[-1].start()):
            break
        joined.append(m)
    contents = [c for c in (_span_value(m) for m in reversed(joined)) if c]
    content = contents[-1] if len(distinct(contents)) == 1 else ", ".join(contents)
    return (content, spans[-1].end()) if content else None


def _span_value(span: re.Match) -> str:
    """A span's content; of a chain ``a = b = c``, ``c``."""
    content = next(g for g in span.groups() if g is not None).strip()
    chain = split_top(content, "=")
    if len(chain) >= 3 and "," not in content:  # a chain a = b = c states its value last
        content = chain[-1]
    elif len(chain) == 2 and chain[1] and not _LETTER.search(_COMMAND.sub("", chain[0])):
        content = chain[1]  # 1 \div 3 = 0.\overline{3}: a computation and its value
    return content


_COMMAND = re.compile(r"\\[A-Za-z]+")
_LETTER = re.compile(r"[A-Za-z]")


def _explicit(text: str) -> tuple[str, list[str], int, int] | None:
    """The rule that found explicit answers, the answers, and their span in the text.

    Returns:
        ``(method, answers, start of the first, end of the last)``, or None.
    """
    hashes = list(_HASH.finditer(text))
    if hashes:
        found = [marked_value(a) for a in (tidy(m.group(1)) for m in hashes) if a]
        end = _end_of_value(hashes[-1], found[-1]) if found else 0
        if "\\boxed" in text or "\\fbox" in text:
            found += boxed_contents(text)
        if found:
            return "hash", found, hashes[0].start(), end or hashes[-1].end()
    if "\\boxed" in text or "\\fbox" in text:
        boxes = boxed_contents(text)
        end = _end_of_last_box(text)
        stated_later = list(find_statements(text[end:]))
        if boxes and not stated_later:  # "The final answer is ..." after the boxes wins
            first = min(i for i in (text.find("\\boxed"), text.find("\\fbox")) if i >= 0)
            unit = _unit_after_box(text, end)
            if unit and not re.search(r"[^\W\d_]", boxes[-1]):
                boxes[-1] = f"{boxes[-1]} {unit}"  # \boxed{42}\text{ minutes}
            return "boxed", boxes, first, end
    stated = list(find_statements(text))
    if stated:  # the last statement is the answer; any other one must agree (contradicted)
        start, answer = stated[-1]
        end = text.find(answer, start)
        end = len(text) if end < 0 else end + len(answer)
        if not any(c.isdigit() for c in answer) and fraction_in_words(answer) is None:
            answer = _in_digits(answer, spelled.language(text))  # zweiundvierzig: 42
        return "answer_is", [stated_value(answer)], start, end
    return None


def _in_digits(answer: str, lang: str | None) -> str:
    """A stated answer in words, in digits.

    A number in words that opens it whole ("three and three-quarters pizzas": 15/4 pizzas), else
    number by number (:func:`~envhub.envs.math.spelled.as_digits`).
    """
    lead = spelled.leading_words_value(answer)
    if lead is not None:  # "a quarter of a million dollars": 250000 dollars, never 1000000
        return f"{lead[0]} {lead[1]}".strip()
    return spelled.as_digits(answer, lang)


def _end_of_value(marker: re.Match, value: str) -> int:
    """Where the value of the ``####`` line ``marker`` ends, so an aside it dropped is read after.

    "#### 8000 (I think)": the value is 8000 and "(I think)" is what follows it (a hedge); 0
    when the value is not the line's start as written.
    """
    raw = marker.group(1)
    at = len(raw) - len(raw.lstrip())
    return marker.start(1) + at + len(value) if raw[at:].startswith(value) else 0


_UNIT_AFTER_BOX = re.compile(
    r"\s*(?:\\(?:text|mathrm|textrm|mbox)\s*\{([^{}\n]{1,30})\}|[ \t]+([A-Za-z]{1,15})\b)"
)
"""A unit written right after the last box: ``\boxed{42}\text{ minutes}``, ``\boxed{42} km``."""


def _unit_after_box(text: str, end: int) -> str:
    """The unit written right after the box that ends at ``end``, or ""."""
    m = _UNIT_AFTER_BOX.match(text, end)
    word = (m.group(1) or m.group(2)).strip() if m else ""
    return word if word.lower() not in _NOT_UNIT and measure(word) else ""


_NOT_UNIT = frozenset({"in", "at", "a", "s"})
"""Words after a box that are no unit there ("\boxed{5} in total")."""


def _end_of_last_box(text: str) -> int:
    last = text.rfind("\\boxed")
    depth, i = 0, text.find("{", last)
    if i < 0:
        return len(text)
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return j + 1
    return len(text)


_AMBIGUOUS = re.compile(r"\d\.\d{3}(?!\d)|\d,\d|\d\{,\}\d")
"""A number a locale may read two ways (``1.250``, ``1,5``)."""


def extract_answer(text: str) -> Extraction:
    """Find the final answer of a response (rules and hedging in the module docstring).

    Only the last :data:`MAX_RESPONSE_CHARS` characters are read, with their digits in ASCII
    (:func:`~envhub.envs.math.latex.plain_digits`: ``１２３``, ``١٢٣``, ``1\u200b23``). The
    answer of a response that writes numbers the continental way has them in English notation
    (``1.250`` -> ``1250``; :mod:`envhub.envs.math.locales`).
    """
    text = plain_digits(text[-MAX_RESPONSE_CHARS:])
    if "<think" in text or "<THINK" in text:
        text = _before_unclosed_thought(text)
    text, hidden = _without_comments(text) if "<!--" in text else (text, [])
    if "]: #" in text:  # a Markdown comment, "[alt]: # (234)": hidden when rendered
        hidden += [m.group(1) for m in _MARKDOWN_COMMENT.finditer(text)]
        text = _MARKDOWN_COMMENT.sub("", text)
    if "\\iffalse" in text:  # LaTeX's own hidden text: "\\iffalse 100 \\fi"
        text, latex_hidden = _without_comments(text, "\\iffalse", "\\fi")
        hidden += latex_hidden
    if "</" in text:  # "$13.50 <sup><sub>12.50</sub></sup>": small print may hedge
        text = _HTML_FORMAT.sub("", text)  # <b>42</b>: 42
        hidden += [m[2] for m in _HTML_ELEMENT.finditer(text) if not _power(m)]
        text = _HTML_ELEMENT.sub(lambda m: f"^{m[2].strip()}" if _power(m) else " ", text)
    if "](" in text:  # "![the answer is 43](solution.png)": the link's text
        text = _MARKDOWN_LINK.sub(r"\1", text)
    notes = _FOOTNOTES.search(text, max(0, len(text) - 2000)) if "[" in text else None
    if notes is not None:  # "150 km [1].\n\n[1] Assuming ...": 150 km; a note may hedge
        hidden.append(notes.group(0))
        text = text[: notes.start()]
    if "[" in text:
        text = _CITATION.sub("", text)
    if ".–" in text or ".-" in text:  # Fr. 1'250.–: whole francs
        text = _WHOLE_FRANCS.sub(r"\1", text)
    if "h" in text:  # chega às 15h45, à 9h30: 15:45, 9:30 (a time, never 15 hours and 45)
        text = _H_CLOCK.sub(r"\g<at>\g<hour>:\g<minute>", text)
    if "Uhr" in text or "น." in text or "pukul" in text:  # 15.45 Uhr, pukul 15.45: 15:45
        text = _DOTTED_CLOCK.sub(lambda m: ":".join(g for g in m.groups() if g), text)
    found = _extract(text)
    if found.answer and _AMBIGUOUS.search(found.answer) and locales.continental(text):
        found = replace(found, answer=locales.english_notation(found.answer))
    if found.answer and locales.LONG_SCALE.search(found.answer) and locales.continental(text):
        found = replace(found, answer=locales.long_scale(found.answer))  # "2 billions": 2e12
    if found.answer and hidden and _hidden_hedge(hidden, found.answer):
        found = replace(found, hedged=True)  # another value in a comment or a footnote
    if found.answer and _TEMPERATURE.search(found.answer) and _called_a_change(text, found.answer):
        found = replace(found, answer=f"{found.answer} {CHANGE}")  # "it rose by 18 °F"
    return found


def _before_unclosed_thought(text: str) -> str:
    """``text`` up to a ``<think>`` never closed: a thought cut off states no answer."""
    unclosed = [b for b in tag_blocks(text, "think") if not b.closed]
    return text[: unclosed[0].start] if unclosed else text


_TEMPERATURE = re.compile(
    r"[°º℃℉]|\\circ|\bdeg(?:rees?\s+(?:[CF]\b|Celsius|Fahrenheit)|[cf]\b)", re.I
)
_CHANGE_BEFORE = re.compile(
    r"(?i)(?:\b(?:rose|risen|rises|fell|fallen|falls|dropped|drops|increased|decreased|changed"
    r"|climbed|warmed|cooled|went\s+(?:up|down))\s+by"
    r"|\b(?:rise|drop|fall|increase|decrease|change|difference)\s+(?:in\s+temperature\s+)?"
    r"(?:of|is|was|=|:))[\s*$]*(?:\\boxed\{)?$"
)
"""The words before a temperature that make it a change: "rose by 18 °F", "a drop of 20 °C"."""


def _called_a_change(text: str, answer: str) -> bool:
    """The response calls the temperature ``answer`` a change ("it dropped by 68 °F")."""
    number = NUMBER.search(answer)
    at = text.rfind(number.group(0)) if number else -1
    return at > 0 and bool(_CHANGE_BEFORE.search(text, max(0, at - 60), at))


def _without_comments(
    text: str, opening: str = "<!--", closing: str = "-->"
) -> tuple[str, list[str]]:
    r"""``text`` without its HTML comments (hidden when rendered), and the comments.

    "42 hours <!-- 42 minutes -->" shows 42 hours; what is hidden may hedge. Linear in the
    text: an unclosed ``<!--`` hides the rest. (``\iffalse ... \fi`` too, with those marks.)
    """
    shown, hidden, start = [], [], 0
    while (open_at := text.find(opening, start)) >= 0:
        close = text.find(closing, open_at + len(opening))
        shown.append(text[start:open_at])
        hidden.append(text[open_at + len(opening) : close if close >= 0 else len(text)])
        start = close + len(closing) if close >= 0 else len(text)
    shown.append(text[start:])
    return " ".join(shown), hidden[-MAX_CANDIDATES:]


def _hidden_hedge(hidden: list[str], answer: str) -> bool:
    """A comment holds another value, or a footnote offers or takes back one."""
    comments = [h for h in hidden if not h.lstrip().startswith("[")]
    notes = [h for h in hidden if h.lstrip().startswith("[")]
    return any(other_value(c.replace("#", " "), answer) for c in comments) or any(
        retracted(answer, _NOTE_MARK.sub(" ", n)) or _COMMITS.search(n) and other_value(n, answer)
        for n in notes
    )


_COMMITS = re.compile(r"(?i)\b(?:answer|result|total|value|correct)\b")
"""Words of a footnote that states an answer: "[1] The answer is 160." hedges 150."""
_NOTE_MARK = re.compile(r"\[\^?\d{1,2}\]:?")


def _extract(text: str) -> Extraction:
    explicit = _explicit(text)
    if explicit:
        return _stated(text, *explicit)
    return _last_resort(text[-FALLBACK_WINDOW:])  # these rules read only the response's end


def _stated(text: str, method: str, found: list[str], first: int, end: int) -> Extraction:
    """The answer that ``found`` (explicit answers, ``text[first:end]``) states, and its hedging."""
    if len(set(found)) > MAX_CANDIDATES:  # checked before the quadratic de-duplication
        return Extraction(found[-1], method, True)
    different = distinct(found)
    answer, other = restated(found[-1]) if len(different) == 1 else (", ".join(different), False)
    tail = text[end:] if method != "answer_is" else ""
    between = text[max(first, end - 400) : end] if len(different) > 1 else answer
    hedged = (
        other  # "#### 42 (forty-three)"
        or is_hedged(between, tail)
        or (len(different) > 1 and taken_back(between))  # "\boxed{-1, 0, 1} That's not right."
        or hedged_before(text[max(0, first - 300) : first], answer)
        or summary_disagrees(text[:first], answer)
        or total_row_disagrees(text[:first], answer)
        or (
            len(text) - end > ALSO_WINDOW
            and retracted(answer, text[-ALSO_WINDOW:], text[:-ALSO_WINDOW])
        )
        or contradicted(text, different)
        or (method == "answer_is" and _overridden_box(text[:first], answer))
        or (len(different) == 1 and retracted(answer, text[end:], text[:first]))
    )
    return Extraction(answer, method, hedged)


_CORRECTED = re.compile(
    r"(?i)\b(?:actually|wait|oops|correction|scratch\s+that|on\s+second\s+thought"
    r"|should\s+(?:be|have\s+been)|en\s+fait|eigentlich|en\s+realidad|na\s+verdade)\b"
)
"""Words that take back the box before them ("Actually, it should be $5$")."""


def _overridden_box(before: str, answer: str) -> bool:
    r"""The box right before a final statement holds another value.

    "\\boxed{43}\n\nThe answer is 42" commits twice. A box of a step, with more working
    after it ("\\boxed{255} So $10,200 + $255 = $10,455. The final answer is $10,455$"), and
    one that reads ``\$16,\!386.20`` beside ``16,\!386.20``, are no rival.
    """
    if "\\boxed" not in before and "\\fbox" not in before:
        return False
    boxes = boxed_contents(before)
    working = before[_end_of_last_box(before) :]
    corrected = _CORRECTED.search(working) or TAKEN_BACK.search(working)
    if not boxes or (any(c.isdigit() for c in working) and not corrected):
        return False  # ("Actually, it should be $5$ ...": the box is taken back, not a step)
    return contradicts(boxes[-1].replace("\\$", ""), [answer.replace("\\$", "")])


def _last_resort(tail: str) -> Extraction:
    """The ``math`` and ``last_number`` rules, on the end of a response with no stated answer."""
    end = tail[-300:]  # both patterns end at the end of the text
    unfinished = _UNFINISHED.search(end) or _CUT_OFF.search(end)
    opened = _OPEN_CALL.search(end) or _OPEN_BOX.search(end)  # "print(cookies", "\boxed{42"
    if unfinished or tail.count("```") % 2 or opened:
        return Extraction(None, None, False)  # "so we multiply 25 × 2 =": cut off, no answer
    check = _CHECK_AFTER.search(tail) or _REASON_AFTER.search(tail, max(0, len(tail) - 200))
    if check is not None and _concluded_after(tail, check.start()):
        check = None  # "Verification: 100 + 50 + 100 = 250 ✓\n\nAmy has $100 left."
    if check is not None and find_numbers(tail[: check.start()]):
        if taken_back(tail[check.start() :]):  # "Check: ... 12, not 11, so x = 4 is wrong."
            return Extraction(None, None, True)
        tail = tail[: check.start()]  # "Therefore x = 4.\n\nCheck: 2(4) + 3 = 11 ✓": 4
    if tail.rstrip().endswith("|"):
        tail, answers = before_table(tail)
        if answers > 1:  # "| Case | Answer |" with a row for each case: several answers
            return Extraction(None, None, True)
    numbers = _values(tail)
    spoken, offered = _without_aside(tail, numbers)
    if spoken != tail:  # "She has 12 apples (3 of them red).": 12
        tail, numbers = spoken, _values(spoken)
    roman = _ROMAN_ENDING.search(tail) if not numbers else None
    if roman is not None:  # "So the answer in Roman numerals is **XIV**."
        return Extraction(roman.group(1), "last_number", False)
    none = _NO_VALUE.search(tail, numbers[-1].end() if numbers else max(0, len(tail) - 300))
    if none is not None and not _CLAUSE_STOP.search(tail, none.end()):
        said = none.group("what") or none.group("none") or "does not exist"
        return Extraction(said.lower(), "last_number", False)  # "so it is undefined."
    if numbers and _GOES_ON.match(tail, numbers[-1].end()):
        return Extraction(None, None, False)  # "She has 12 apples and then she buys": cut off
    stated = result_first(tail, numbers)
    if stated is not None:  # "Итак, она потратила 360 рублей, купив 4 тетради по 90 рублей."
        tail = tail[:stated]
        numbers = _values(tail)
    found = _last_value(tail, numbers)
    return replace(found, hedged=True) if offered and found.answer else found


def _last_value(tail: str, numbers: list[re.Match]) -> Extraction:
    """The last value of ``tail``: plain-text math, a math span, or the last number."""
    cut = numbers[-1].start() if numbers else 0
    after = numbers[-1].end() if numbers else 0
    if _LETTER_AFTER.search(tail, after) and spelled.has_number_word(tail[after:]):
        # "She had 3 bags, so twelve apples.": 12, in the text's language
        tail = tail[:cut] + spelled.as_digits(tail[cut:], spelled.language(tail))
        numbers = _values(tail)
    plain = _plain_math(tail, numbers)
    if plain is not None:  # "The volume is π².", "A ∩ B = {2}.", "The range is (−∞, ∞)."
        return Extraction(plain, "math", False)
    number = _last_number(tail, numbers)
    span = _math_span(tail, numbers[-1].end() if numbers else 0)
    if span is not None and not (number and "," in number.answer and NUMBER.fullmatch(span[0])):
        content, end = span
        return Extraction(content, "math", is_hedged(content, tail[end:]))
    return number or Extraction(None, None, False)


_ROMAN_ENDING = re.compile(r"(?:\bis|:)\s*\**\s*([MDCLXVI]{2,})\s*\**\s*[.!]?\s*$")
"""A response with no digits that ends on a number in Roman numerals: ``... is **XIV**.``."""
_OPEN_CALL = re.compile(r"[A-Za-z_]\([^()\n]*$")
_OPEN_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{[^{}]*$")
"""A response that ends inside a call, ``print(cookies``: cut off (and so is one inside an
unclosed code fence)."""
_NO_VALUE = re.compile(
    r"(?i)\b(?:is|are|be|becomes)\s+(?P<what>undefined|indeterminate)\b"
    r"|\b(?:there\s+(?:is|are)|has|have|with)\s+(?P<none>no\s+(?:real\s+)?solutions?)\b"
    r"|\b(?P<dne>does\s+not|doesn['’]t)\s+exist\b"
)
"""A last sentence that answers with no value: "so the expression is undefined", "there is no
solution" (a number before it, "x = 3 is extraneous", is not the answer)."""
_CLAUSE_STOP = re.compile(r"[.!?;:\n][^\n]*[^\W_]")
_MARKDOWN_COMMENT = re.compile(
    r"(?m)^[ \t]*\[[^\]\n]{0,40}\]:[ \t]*#[ \t]*\(([^()\n]{0,200})\)[ \t]*$"
)
_HTML_ELEMENT = re.compile(
    r"(?is)<(sup|sub|small|span|font|mark|del|s|strike|details|summary|div|p)\b[^<>]{0,300}>"
    r"((?:(?!</?\1\b).){0,2000})</\1\s*>"
)
"""An HTML element of a response (small print, a struck or hidden span): its text is read
as a comment is, a value in it that is not the answer hedges (the outermost of nested ones
once its inner ones are gone)."""
_H_CLOCK = re.compile(
    r"(?<![\w.:])(?P<at>(?:(?:às|à|a\s+las|alle|um|at)\s+)(?=\d{1,2}h)|(?=(?:1[3-9]|2[0-3]|0\d)h))"
    r"(?P<hour>\d{1,2})h(?P<minute>[0-5]\d)(?![\w:])",
    re.IGNORECASE,
)
"""A time of day written with ``h`` between hour and minutes: after a word of time ("às
9h30") or past noon ("15h45"); "2h30" alone stays a duration."""
_HTML_FORMAT = re.compile(r"(?i)</?(?:b|strong|i|em|u)>")
_POWER = re.compile(r"\s*-?\d{1,2}\s*")


def _power(element: re.Match) -> bool:
    """A superscript that is a power or a footnote's mark (``m<sup>2</sup>``), no value."""
    return element[1].lower() == "sup" and _POWER.fullmatch(element[2]) is not None


_MARKDOWN_LINK = re.compile(r"!?\[([^\[\]\n]{0,300})\]\([^()\n]{0,500}\)")
"""Markdown links and images: shown as their text."""
_WHOLE_FRANCS = re.compile(r"(\d)\.[–-](?=\s|$|[,;:!?)])")
_DOTTED_CLOCK = re.compile(
    r"(?<=\bpukul )(?P<h>[01]?\d|2[0-3])\.(?P<m>[0-5]\d)(?!\d)"
    r"|(?<![\d.])(?P<h2>[01]?\d|2[0-3])\.(?P<m2>[0-5]\d)(?=\s*(?:Uhr\b|น\.))"
)
"""A time of day written with a dot: "15.45 Uhr", "๑๕.๔๕ น.", "pukul 15.45"."""
_FOOTNOTES = re.compile(r"(?:\n[ \t]*\[\^?\d{1,2}\][^\n]*)+\s*$")
_CITATION = re.compile(r"(?:(?<=[\d.%])[ \t]?|(?<=[^\W\d_])[ \t])\[\^?\d{1,2}\]")
"""Footnotes that end a response and the markers that cite them: never the answer."""
_TRAILING_ASIDE = re.compile(
    r"(?:\s+|(?<=[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]))"  # no space in CJK text
    r"\((?P<body>[^()\n]{1,300})\)(?P<stop>[ \t]*[.!。]?\s*)$"
)
_ASIDE_WORD = re.compile(r"[^\W\d_]{2}")


def _without_aside(text: str, numbers: list[re.Match]) -> tuple[str, bool]:
    r"""``text`` without the aside in brackets that ends it after a value; whether it offers one.

    "12 apples (3 of them red).", "$20 (after a 10% discount).", "x = 4 (since 2·4 = 8).",
    "x ≡ 3 (mod 7)" and "18 remain.\n(The class had 24.)" state 12, $20, 4, 3 and 18; "5 (or 6
    if it rains)", "12 (should be 13)" and "12 (13 with the teacher)" state 5 and 12 and offer
    another: a hedge. An aside without words ("15 (10 + 5)", "(2, 3)") is kept: it may be the
    value.
    """
    aside = _TRAILING_ASIDE.search(text, max(0, len(text) - 400))
    if aside is None or not numbers or numbers[-1].start() < aside.start():
        return text, False
    body = aside.group("body")
    said = [m for m in numbers if m.end() <= aside.start()]
    if not said or not _ASIDE_WORD.search(body):
        return text, False
    between = text[said[-1].end() : aside.start("body") - 1]
    own_line = between.rstrip(" \t").endswith("\n")  # a note of its own after the answer's line
    if not own_line and (len(between) > 40 or "\n" in between):
        return text, False
    amount, rest = said[-1].group(0), text[said[-1].start() :]
    comma = _DECIMAL_COMMA_BEFORE.search(text, max(0, said[-1].start() - 12), said[-1].start())
    if comma is not None and len(amount) <= 2:  # "2,5 Stunden (150 Minuten)": 2.5 hours
        amount, rest = f"{comma.group(0)[:-1]}.{amount}", f"{comma.group(0)[:-1]}.{rest}"
    sign = _SIGN_BEFORE.search(text, max(0, said[-1].start() - 16), said[-1].start())
    if sign is not None:  # "€12.50 (1205 cents)": the currency is the amount's
        rest = sign.group(0) + rest
    offered = (
        bool(HEDGE_WORDS.search(body))
        or offers_value(body, amount + between.strip())
        or restated(rest)[1]  # "2.5 hours (2 hours 50 minutes)."
        or rival_amount(body, f"{amount} {between.strip()}")  # "42 km (26 km by road)."
    )
    return text[: aside.start()] + aside.group("stop"), offered


_SIGN_BEFORE = re.compile(r"(?:R\$|[$€£¥₹₩])\s?(?:\d+[.,])?$")
_DECIMAL_COMMA_BEFORE = re.compile(r"(?<![\d.,])\d+,$")
"""The whole part of a decimal comma before its decimals: ``2,`` of ``2,5 Stunden``."""
_PLAIN_MATH = re.compile(r"(?:=|\bis\b|:)[ \t]*(?P<value>[^=:\n]{1,80}?)[ \t]*[.。]?[ \t]*$")
_UNICODE_VALUE = re.compile(
    r"[π∞∅√]|(?<![\d\s])[A-Za-zπ)][⁰¹²³⁴⁵⁶⁷⁸⁹]|^\{[^{}]*\}$|(?<![A-Za-z])[A-Za-z)]\^\{?-?\d"
)
"""Math that no number reader reads: π, ∞, ∅, roots, ``x⁵`` (not the ``m²`` of a unit), and a
letter's power in ASCII (``x^2 + 1``)."""
_TWO_LETTERS = re.compile(r"[A-Za-z]{2}")


def _values(text: str) -> list[re.Match]:
    """The numbers of ``text``, without those ending it that name or reject a value.

    "as in Exercise 12" names an exercise; "gives 7 — not 8, since ..." rejects 8.
    """
    numbers = find_numbers(text)
    while numbers:
        last = numbers[-1]
        named = REFERENCE.search(text, max(0, last.start() - 30), last.start())
        named = named or _MONTH_BEFORE.search(text, max(0, last.start() - 12), last.start())
        named = named or _MONTH_AFTER.match(text, last.end())  # "by June 30", "on 30 June"
        before = numbers[-2].end() if len(numbers) > 1 else last.start()
        if not (named or _REJECTED_BEFORE.fullmatch(text, before, last.start())):
            break
        numbers.pop()
    return numbers


_MONTH_BEFORE = re.compile(rf"\b{MONTHS}\.?\s+$")
_MONTH_AFTER = re.compile(rf"(?:st|nd|rd|th)?\s+(?:of\s+)?{MONTHS}")
"""A day of a date names a day, not a value ("saved by June 30", "on 30 June")."""
_REJECTED_BEFORE = re.compile(r"\s*(?:—|–|--|,|;|\()\s*(?:and\s+|but\s+)?not\s+", re.IGNORECASE)


def _plain_math(text: str, numbers: list[re.Match]) -> str | None:
    """A value in plain-text math ending the response (``π²``, ``x^2 + 1``, ``∅``), else None.

    Only after ``=``, "is" or ``:``, without words, and holding every number after it.
    """
    m = _PLAIN_MATH.search(text, max(0, len(text) - 100))
    if m is None:
        return None
    value = m.group("value").strip().strip("*_")  # "**d = 2√3**"
    if not _UNICODE_VALUE.search(value) or _TWO_LETTERS.search(value) or "$" in value:
        return None
    if "^" in value and not _ASCII_MATH.fullmatch(value):
        return None  # "x^2 + 6x - 27 Ⅻ": a power, then something else

    if numbers and numbers[-1].start() < m.start("value"):
        return None
    return value


_ASCII_MATH = re.compile(r"[A-Za-z0-9^+\-*/().{}\s]+")
_GOES_ON = re.compile(
    r"(?=(?:[^\S\n]*[^\W\d_]+){4})[^.!?;:\n\d]*\b(?:and|then|so|but|because|which|while|when"
    r"|after|before|if)\b[^.!?;:\n\d]*[^\W\d_][ \t]*$",
    re.IGNORECASE,
)
"""After the last number, a clause that goes on and breaks off without a stop ("12 apples and
then she buys"): the response was cut off."""
_CUT_OFF = re.compile(
    r"(?:[.!?。।:]\s|\n)\s*(?:[^\W\d_][^\s\d.!?,;:'’-]*[ \t,'’-]+)+"
    r"[^\W\d_][^\s\d.!?,;:'’-]*[ \t]*$",
)
"""A response that breaks off in a sentence of words ("12 × 3 = 36. Luego restamos los que"):
with no stated answer, it has none (generations cut at their token limit end so)."""
_LETTER_AFTER = re.compile(r"[^\W\d_]{3}")
_REASON_AFTER = re.compile(r"(?<=[\w,])[ \t]+(?:since|because)\b[^.\n\d]*\d[^.\n]*[.!]?\s*$")
"""A reason after the answer that ends the response: "42 apples in total, since each basket
holds 7." gives 42, not the given 7."""
_CONCLUSION = re.compile(r"\n[ \t]*\n[ \t>*_#-]*[^\W\d_][^=✓✔✗\n]*\d[^=✓✔✗\n]*$")
"""A last paragraph after a blank line: a sentence with a number and no check in it."""
_CHECKED_VALUE = re.compile(r"=\s*([^=\s✓✔]+)[^=]*$")


def _concluded_after(tail: str, check: int) -> bool:
    r"""The check at ``check`` is followed by a conclusion that states a value of its own.

    "Verification: 100 + 50 + 100 = 250 ✓\n\nAmy has **$100** left." concludes 100; "...
    = 250 ✓\n\nThis matches the original 250." only remarks on the check's result.
    """
    conclusion = _CONCLUSION.search(tail, check)
    if conclusion is None:
        return False
    checked = _CHECKED_VALUE.search(tail, check, conclusion.start())
    numbers = find_numbers(conclusion.group(0))
    return not (checked and numbers and same(numbers[-1].group(0), checked.group(1)))


_CHECK_AFTER = re.compile(
    r"(?:\n|(?<=[.!?])[ \t])[ \t>*_#]*(?:check(?:ing)?|verif(?:y|ication|ying)|sanity\s+check"
    r"|proof|probe|prüfung|vérification|comprobación|verifica|проверка|验证|检验|検算"
    r"|remember|recall|note\s+that|as\s+a\s+reminder|originally|initially|ingat|catatan)\b"
    r"(?:(?!\n\s*(?:so|therefore|thus|hence|answer)\b).)*$",
    re.IGNORECASE | re.DOTALL,
)
"""A check of the answer that ends a response ("Check: 2(4) + 3 = 11 ✓"): the last number
is read before it (a check repeats the problem's numbers, not the answer)."""
_UNFINISHED = re.compile(
    r"(?:[=+×÷/^:]|(?<!\*)\*|\\times|\\cdot"
    r"|\b(?:is|are|be|equals|gives|makes|get|of|to|the|and|or|but|with|by|from|than)"
    r"|答案[是为為]|答えは|정답은|답은|\b(?:plus|minus|times|divided\s+by)|\s[-−]|[,{\\])"
    r"[\s.…]*$",
    re.IGNORECASE,
)
"""A response that ends inside an expression or a sentence ("25 × 2 =", "so it would be",
"therefore the answer is"): without a stated answer it has none."""


def _last_number(text: str, numbers: list[re.Match]) -> Extraction | None:
    """The rule of last resort: the last number, or the enumeration that it ends."""
    if not numbers:
        return None
    answer, restated = last_number(text, numbers)
    return Extraction(answer, "last_number", last_number_hedged(text, numbers[-1], restated))


def format_score(text: str, style: str) -> float:
    r"""1.0 when the final answer is given exactly once in ``style`` and unhedged, else 0.0.

    Args:
        text: The response.
        style: ``hash`` (``#### 42``) or ``boxed`` (``\boxed{42}``).

    Raises:
        ValueError: ``style`` is neither.
    """
    text = plain_digits(text[-MAX_RESPONSE_CHARS:])
    if style == "hash":
        markers = _hash_answers(text)
    elif style == "boxed":
        markers = boxed_contents(text)
    else:
        raise ValueError(f"format style must be 'hash' or 'boxed', got {style!r}")
    if len(markers) != 1:
        return 0.0
    found = extract_answer(text)
    marker = tidy(markers[0])
    if found.answer != marker and locales.continental(text):
        marker = locales.english_notation(marker)
    return 0.0 if found.hedged or found.answer != marker else 1.0
