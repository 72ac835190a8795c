r"""Numbers in a response's running text, and the answer that the last one states.

:func:`find_numbers` finds the numbers of a text, each a whole token (:data:`NUMBER`: ``-3``,
``1,000``, ``1 000``, ``1,23,456``, ``2.5``, ``2 1/2``, ``\frac{3}{4}``, ``50%``, ``599e+72``,
``10²``; not a digit glued to a word, ``AZYUK2A``). :func:`last_number` reads the answer that
the last of them states, for the ``last_number`` rule of :mod:`envhub.envs.math.extract` and
for the hedges that look for another value (:mod:`envhub.envs.math.hedges`): the enumeration
it ends (``31 or 32``), the plain-text math around it (``√2``, ``x ≤ 3``), the expression it
ends (``1+2``), its currency sign and unit (``$15``, ``300 seconds``), an amount before it
(``12 dollars and 50 cents``), or the amount that it only restates ("2 hours, or 120
minutes").
"""

from __future__ import annotations

import re

from .compare import same
from .numerals import CJK_CLOCK, DAY_PART, MERIDIEM, SCALE_WORD, UNIT_WORD_AFTER, normalize
from .parse import COMPOUND_JOINER, compound
from .units import measure

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
"""Kana, Han and Hangul: scripts written without spaces, so a number may follow a word (是42)."""
_POWER = r"(?:[eE][-+]?\d+|[ \t]*(?:\^|\*\*)[ \t]*(?:\{\s*[-+]?\d+\s*\}|[-+]?\d+)|[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)?"
"""A power or scientific exponent is part of its number: ``599e+72``, ``10^{3}``, ``2**10``,
``10²`` are one token each, never their last digits."""
NUMBER = re.compile(
    r"(?:(?<![\w)])[-\u2212\u2013])?\\[dt]?frac\{[-\u2212]?\d+\}\{\d+\}"
    r"|(?:(?<![\w)])[-\u2212\u2013])?(?<!\.)(?:(?<![^\W"
    + _CJK
    + r"])|(?<=\bRp)|(?<=\bRs)|(?<=\bRM)"
    r"|(?<=\bKSh))(?:(?<![,/])\d+ \d+/\d+(?![\d/])"
    r"|\d{1,2}(?:,\d\d)+,\d{3}(?:\.\d+)?"  # 1,23,456: lakh and crore
    r"|\d{1,3}(?:,\d{3})+(?:\.\d+)?"
    r"|\d{1,3}(?:\.\d{3}){2,}(?:,\d+)?|\d{1,3}(?:\.\d{3})+,\d+"  # 1.234.567, 1.234,5
    r"|[1-9]\d{0,2}(?:['’]\d{3})+(?:\.\d+)?"  # 1'234.5
    r"|[1-9]\d{0,2}(?: \d{3})+(?:,\d+)?(?!\d|\.\d)"  # 1 000, 12 345,6: spaced thousands
    r"|(?<![eE][-+])(?<!\^\{)(?<!\^)\d+(?:\.\d+)?(?:/\d+)?" + _POWER + r"|\.\d+)%?(?!\w*\d|_|\.\d)"
)
"""A number written as a whole token: no letter, digit, ``_`` or point glued before it (but
a currency's letters: ``Rp12.500``, ``Rs500``, ``RM20``, ``KSh300``), and
no digits later in its token (``x72``, ``is72``, ``e72``, ``599e72`` and ``A32`` hold no
number); a word glued after it must be a unit (:func:`find_numbers`). An exponent belongs to its
number (:data:`_POWER`)."""
_GLUED_WORD = re.compile(r"[A-Za-z]+")
_CJK_CHAR = re.compile(f"[{_CJK}]")


MONTHS = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)(?![A-Za-z])"
)
"""The names of the months, English, as a pattern: a day of a date is no amount."""
REFERENCE = re.compile(
    r"(?:\b(?:(?:problem|question|exercise|task|step|part|example|chapter|section|page|item"
    r"|table|figure|fig|appendix|equation|eq|theorem|lemma|slide|line)s?"
    r"|no\.?|(?:the\s+)?(?:original|initial|starting)(?:\s+[^\W\d_]+)?)"
    r"|#)\s*(?:\d+\s*[-–—]\s*)?$",
    re.IGNORECASE,
)
"""A number that names something ("problem 7", "steps 1–3"), not a value."""


def find_numbers(text: str) -> list[re.Match]:
    """The numbers of ``text`` (:data:`NUMBER`), each a whole token.

    A number right after ``,`` or ``/`` counts only when a number ends there too: ``31,32``
    and ``1/2/3`` are numbers, the ``234`` of ``x1,234`` is the tail of a word. A word glued
    after a number must name a unit (``42cm``, ``1,000.99m²``; not ``72x``, ``1AAA``).
    """
    found: list[re.Match] = []
    end = -1
    for m in NUMBER.finditer(text):
        start = m.start()
        glued = start > 1 and text[start - 1] in ",/" and end != start - 1
        glued = glued and text[start - 2] not in _UNICODE_MATH  # π/4 is a number
        glued = glued and not _CJK_CHAR.match(text, start - 2)  # 等等，13: a comma of Han text
        word = _GLUED_WORD.match(text, m.end())
        if not glued and (word is None or _glued_unit(word.group(0))):
            found.append(m)
        end = m.end()
    return found


def _glued_unit(word: str) -> bool:
    """A word glued after a number that names a unit: ``cm``, ``kg``, the pence of ``85p``."""
    return word == "p" or measure(word) is not None


def tidy(answer: str) -> str:
    """``answer`` without the spaces, bold marks and punctuation around it."""
    return answer.strip().strip("*").strip().rstrip(".,;:。，；：").strip()


JOINER = re.compile(
    r"[\s$]*(?:(?:,|;|/|\b(?:or|and|nor|und|oder|et|ou|y)\b|\\text\{\s*or\s*\}|\.{3}|…|\\l?dots)[\s$]*)+"
    r"(?:[A-Za-z]\s*=\s*)?"  # x = 2 or x = 3: the roots, one list
)


_NAMED_BEFORE = re.compile(r"(?<![\w.])[A-Za-z]\s*=\s*$")
"""A bare variable and "=" before a value: ``x = 2`` (not ``2x = 8``)."""


def _enumeration(text: str, numbers: list[re.Match]) -> list[str]:
    """The numbers of the enumeration that ends with the last one (``31 or 32``, ``1, 2, 3``).

    Numbers count as enumerated when only separators (``,`` ``;`` ``/`` ``or`` ``and``) stand
    between them; a fraction chain ``31/32/33`` is split into its three numbers.
    """
    found = [numbers[-1]]
    for m in reversed(numbers[:-1]):
        joiner = JOINER.fullmatch(text, m.end(), found[-1].start())
        if not joiner:
            break
        if "=" in joiner.group(0) and not _NAMED_BEFORE.search(
            text, max(0, m.start() - 8), m.start()
        ):
            break  # "2x = 8 and x = 4": a step, then the root
        found.append(m)
    found.reverse()
    if len(found) == 2 and text[found[0].end() : found[1].start()] == ",":
        return [text[found[0].start() : found[1].end()]]  # 2,74: a decimal comma
    chained = len(found) > 1 and any(
        text[a.end() : b.start()].strip() == "/" for a, b in zip(found, found[1:], strict=False)
    )
    return [p for m in found for p in (m.group(0).split("/") if chained else [m.group(0)])]


def last_number(text: str, numbers: list[re.Match]) -> tuple[str, bool]:
    """The answer that the last of ``numbers`` (not empty) states, and whether it restates.

    The enumeration it ends (``31 or 32`` gives ``31, 32``), the plain-text math around it
    (``√2``), the expression it ends (``1+2``), or the number with its currency sign, its unit
    and an amount right before it (``$15``, ``300 seconds``, ``12 dollars and 50 cents``). A
    last number that only restates the amount before it ("2 hours, or 120 minutes") gives that
    amount, and True.
    """
    last = numbers[-1]
    clock = _clock_ending(text, last)
    if clock is not None:  # "arrives at 15:45", "at 3:45 PM": the time, not its minutes
        return clock, False
    written = _written_whole(text, last)
    if written is not None:  # 6'2", 5 °C below zero: one amount
        return written, False
    out_of = _OUT_OF.search(text, max(0, last.start() - 30), last.start())
    if out_of is not None:  # "3 out of 5 passed": the count, or 3/5 when a chance is asked
        line = text[text.rfind("\n", 0, last.start()) + 1 : last.start()]
        count = out_of.group(1)
        return (f"{count}/{last.group(0)}" if _CHANCE.search(line) else count), False
    items = _enumeration(text, numbers)
    if len(items) == 2:  # "$5, or 500 cents": one value said twice, no list
        restating = _currency_before(text, last.start()) + last.group(0)
        said = _said_before(text, numbers, restating + unit_after(text, last.end()))
        if said is not None:
            return said, True
    if len(items) > 1:
        pairs = _BRACKETED.finditer(text, max(0, last.start() - 200), last.end() + 3)
        pair = next((p for p in pairs if p.start() < last.start() < p.end()), None)
        if pair is not None:  # "is (2, 3).": an ordered pair, "[1, 4)" an interval
            return pair.group(0), False
        return ", ".join(items), False
    bound = _BOUND_BEFORE.search(text, max(0, last.start() - 40), last.start())
    if bound is not None:  # "So x > 5.": the interval, never the number 5
        return _SIGNS.sub(lambda m: _SIGN_OF[m.group(0)], bound.group(0)) + last.group(0), False
    run = _unicode_math(text, last)
    if run is not None:  # "√2", "2·π·3 = 6π", "(−∞, 3]", "x ≤ 3": the expression, not its digit
        return run, False
    span = _RANGE_BEFORE.search(text, max(0, last.start() - 20), last.start())
    if span is not None and span.group(1) != last.group(0):  # "3-5 hours": both ends
        return f"{span.group(1)}, {last.group(0)}", False
    arithmetic = _ARITHMETIC_BEFORE.search(text, max(0, last.start() - 80), last.start())
    if arithmetic is not None:  # "the total is 1+2": the sum, never its last operand
        return text[arithmetic.start() : last.end()], False
    first = numbers[-2] if items[0] != last.group(0) and len(numbers) > 1 else last  # 45,00
    answer = _currency_before(text, first.start()) + items[0] + unit_after(text, last.end())
    answer = _words_before(text, last, answer, items[0])
    negated = NEGATED_BEFORE.search(text, max(0, last.start() - 16), last.start())
    if negated is not None:  # "It is not 42.", "答案不是42。": 42 denied, never stated
        return negated.group(0) + answer, False
    before = _AMOUNT_BEFORE.search(text, max(0, last.start() - 40), last.start())
    if before is not None and compound(normalize(text[before.start() : last.start()] + answer)):
        answer = text[before.start() : last.start()] + answer  # 12 dollars and 50 cents
    said = _said_before(text, numbers, answer)
    if said is not None:  # "2 hours, or 120 minutes", "1.5 hours (90 minutes)": one value
        return said, True
    return answer, False


_OUT_OF = re.compile(r"(?<![\w.])(\d+)\s+out\s+of\s+$", re.IGNORECASE)
_CHANCE = re.compile(r"(?i)\b(?:probability|chance|likelihood|fraction|proportion)\b")
""""3 out of 5" is a count, never the 5; in a sentence of chance, the fraction 3/5."""
_COLON_RUN = re.compile(
    rf"(?<![\d:.])\d+(?::\d+)+(?![\d:])(?:\s*(?:{MERIDIEM})|(?i:\s+{DAY_PART}))?"
)
_H_BEFORE = re.compile(r"(?<![\d:.])(?:[01]?\d|2[0-3]) ?h ?$")
"""The hour of a French time of day before its minutes: ``15 h 45``, ``19h30``."""


def _clock_ending(text: str, last: re.Match) -> str | None:
    """The time of day or ratio that the number ``last`` ends (``15:45``, ``3:45 PM``, ``1:2``)."""
    french = _H_BEFORE.search(text, max(0, last.start() - 6), last.start())
    if french is not None and re.fullmatch(r"[0-5]\d", last.group(0)):
        return text[french.start() : last.end()]  # 15 h 45
    start = last.start()
    while start > 0 and (text[start - 1].isdigit() or text[start - 1] == ":"):
        start -= 1
    m = _COLON_RUN.match(text, start) if start < last.start() else None
    return m.group(0).rstrip(".") if m is not None and m.end() >= last.end() else None


_FEET_BEFORE = re.compile(r"(?<![\d.])\d+\s*['′]\s*$")
_INCHES_AFTER = re.compile(r"\s*(?:\"|″|''|”)")
_BELOW_ZERO_AFTER = re.compile(
    r"[ \t]*(?:°|º|degrees?)?[ \t]*(?:[CF]\b|Celsius|Fahrenheit)?[ \t]+below[ \t]+zero\b",
    re.IGNORECASE,
)


_MERIDIEM_AFTER = re.compile(rf"[ \t]?(?:{MERIDIEM})|(?i:[ \t]+{DAY_PART})")


def _written_whole(text: str, last: re.Match) -> str | None:
    """Feet and inches with primes (``6'2"``) or a temperature below zero that ``last`` ends."""
    feet = _FEET_BEFORE.search(text, max(0, last.start() - 12), last.start())
    inches = _INCHES_AFTER.match(text, last.end())
    if feet is not None and inches is not None:
        return text[feet.start() : inches.end()]
    below = _BELOW_ZERO_AFTER.match(text, last.end())
    if below is not None:
        return text[last.start() : below.end()]
    clock = CJK_CLOCK.search(text, max(0, last.start() - 8), last.end() + 6)
    if clock is not None and clock.start() <= last.start() < clock.end():
        if clock.group("mer") or clock.group("m") or clock.group("half"):
            return clock.group(0)  # 下午3点45分, 午後3時半: a time of day
    meridiem = _MERIDIEM_AFTER.match(text, last.end())  # 11 a.m.
    return (
        text[last.start() : meridiem.end()]
        if meridiem and ":" not in text[last.start() - 1 : last.start()]
        else None
    )


_CURRENCY_SIGN = re.compile(
    r"(?:R\$|US\$|\\\$|\bRM|[$€£¥₹₺₩₽₫₱₪฿₦₴₸₾₭៛৳₨]|\b(?:CHF|EUR|USD|GBP|INR|BRL|Rs\.?) )\s?$"
)


def _currency_before(text: str, start: int) -> str:
    """The currency sign written right before a number ("$15 per day"), or ""."""
    m = _CURRENCY_SIGN.search(text, max(0, start - 6), start)
    return m.group(0) if m else ""


_RUN_CHAR = re.compile(r"[\d., \t√∛∜π∞±∓≤≥<>=×÷·−+*/^()\[\]²³⁰¹⁴⁵⁶⁷⁸⁹⁻]")
_BOUND_BEFORE = re.compile(
    r"(?:(?<![\w.])[-−]?\d+(?:\.\d+)?\s*(?:<=?|≤)\s*)?(?<![\w\\])[A-Za-z]\s*(?:<=|>=|=<|=>|[<>≤≥])\s*$"
)
"""A variable and an ASCII inequality sign before the last number: ``x > 5``, ``-3 < x <= 5``."""
_SIGNS = re.compile(r"<=|>=|=<|=>")
_SIGN_OF = {"<=": "≤", ">=": "≥", "=<": "≤", "=>": "≥"}
_UNICODE_MATH = frozenset("√∛∜π∞±∓≤≥×÷·")
_VARIABLE_BEFORE = re.compile(r"(?:^|\s)([A-Za-z])\s*$")


def _unicode_math(text: str, number: re.Match) -> str | None:
    """The plain-text math around the last number, when it uses Unicode signs; else None.

    "is √2." gives ``√2``, "2·π·3 = 6π." ``6π`` (of a chain, its value), "(−∞, 3]." the
    interval, "So x ≤ 3." ``x ≤ 3``, "3√5 cm" ``3√5 cm``. ASCII text is left to the other rules.
    """
    start, end = number.start(), number.end()
    while start > 0 and _RUN_CHAR.match(text[start - 1]) and number.start() - start < 200:
        start -= 1
    while end < len(text) and _RUN_CHAR.match(text[end]) and end - number.end() < 200:
        end += 1
    run = text[start:end]
    if _UNICODE_MATH.isdisjoint(run):
        return None
    run = run.rsplit("=", 1)[-1].strip(" \t\n.,;:*")
    while run[-1:] in (")", "]") and run.count("(") + run.count("[") < run.count(")") + run.count(
        "]"
    ):
        run = run[:-1].rstrip(" .,;:")  # "(... 4.2 × 10¹.)": the aside's bracket
    if run[:1] in "≤≥<>":
        variable = _VARIABLE_BEFORE.search(
            text, 0, start + len(text[start:end]) - len(text[start:end].lstrip())
        )
        if variable is None:
            return None
        run = f"{variable.group(1)} {run}"
    return (
        run + unit_after(text, end - (len(text[start:end]) - len(text[start:end].rstrip())))
    ) or None


def _said_before(text: str, numbers: list[re.Match], answer: str) -> str | None:
    """The amount before the last one when the last only restates it, else None.

    "2 hours, or 120 minutes" and "1.5 hours (90 minutes)" give the first amount.
    """
    if len(numbers) < 2:
        return None
    prev, last = numbers[-2], numbers[-1]
    unit = unit_after(text, prev.end())
    first = _currency_before(text, prev.start()) + prev.group(0) + unit
    written = _UNIT_AFTER.match(text, prev.end()) or UNIT_WORD_AFTER.match(text, prev.end())
    end = last.start() - len(_currency_before(text, last.start()))  # "320p, or £3.20"
    between = text[prev.end() : end]
    if unit and between.startswith(unit):  # "2000 g or 2 kg"
        between = between[len(unit) :]
    elif unit and written:
        between = text[prev.end() + len(written.group(0)) : end]
    if not _RESTATING.fullmatch(between) or not same(first, answer):
        return None
    return first


_RESTATING = re.compile(
    r"(?:\s+[^\W\d_]+){0,2}\s*(?:,?\s*(?:or|i\.\s?e\.,?|that\s+is,?)\s+|\(\s*)(?:\*\*|__)?",
    re.IGNORECASE,
)
"""Between an amount and the same said again: "2 hours, or 120 minutes", "$5 left, or 500
cents", "1.5 hours (90 minutes)"."""


_ARITHMETIC_BEFORE = re.compile(
    r"(?<![\w.])(?:\d+(?:\.\d+)?(?:\s*(?:[+*×·÷]|\\times|\\cdot)\s*|\s+-\s*|-\s+))+$"
)
"""Numbers and operators right before the last number: an expression the number ends. A
hyphen glued on both sides is a range ("3-5"), not a subtraction."""
_SWAHILI_SCALES = r"elfu|milioni|bilioni"
UNIT_BEFORE = re.compile(
    r"(?i)\b((?:kilomita|milimita|mita|sentimita|dakika|sekunde|siku|wiki|kilogramu|gramu"
    rf"|mililita|lita|shilingi|dola|maili|saa)(?:\s+(?:{_SWAHILI_SCALES}))?|{_SWAHILI_SCALES})\s+$"
)
"""A unit or a scale written before its number, as Swahili does ("kilomita 12", "dakika 45",
"shilingi milioni 3": 3 million shillings)."""


def unit_said_after(before: re.Match) -> str:
    """The words of a :data:`UNIT_BEFORE` match in English order: "milioni shilingi"."""
    return " ".join(reversed(before.group(1).split()))


_BRACKETED = re.compile(r"[(\[]\s*-?\d+(?:\.\d+)?(?:\s*,\s*-?\d+(?:\.\d+)?)+\s*[)\]]")
"""A tuple or interval of numbers: ``(2, 3)``, ``[1, 4)``."""
MINUS_WORD = re.compile(
    r"(?i)(?:\b(?:minus|negative|moins|menos|минус|мінус|eksi|âm)\s+|(?:零下|영하|氷点下)\s*)$"
)
"""A word of sign right before a number: "minus 5 degrees", "eksi 9", "零下5℃", "영하 7도"."""


def _words_before(text: str, last: re.Match, answer: str, number: str) -> str:
    """``answer`` (the last number, ``number``, with its currency and unit) and the words before.

    A unit written first (Swahili "kilomita 12": 12 km), a sign ("minus 5 degrees": -5).
    """
    before = UNIT_BEFORE.search(text, max(0, last.start() - 30), last.start())
    if before is not None and answer == number:
        answer = f"{answer} {unit_said_after(before)}"
    if MINUS_WORD.search(text, max(0, last.start() - 12), last.start()) and number[0] != "-":
        answer = "-" + answer
    return answer


NEGATED_BEFORE = re.compile(
    r"(?i)(?:\b(?:not|isn['’]t|nicht|pas|não\s+é|no\s+es|non\s+è|не|ні|nie)\s+|不是|并非|並非)"
    r"[\s$€£¥₹]*$"
)
"""A denial right before a number: "not 42", "n'est pas 42", "не 42", "不是42"."""
_RANGE_BEFORE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?:-|\s?[–—]\s?)$")
"""A range that the last number ends: ``3-5``, ``3–5``."""
_AMOUNT_BEFORE = re.compile(
    r"\d+(?:\.\d+)?\s*(?:[^\W\d_]|[\u0900-\u0dff])+\.?\s*"
    rf"{COMPOUND_JOINER}?$"
)
"""An amount right before the last number, as in "2 hours 15 minutes" (see ``parse.compound``)."""


_SCALE_AFTER = re.compile(rf"[ \t]+(?:{SCALE_WORD}|dozens?)(?![^\W\d_])", re.IGNORECASE)
"""A scale word after a number ("$1,200 million", "₹2.5 lakh", "2 Milliarden")."""
_SCALE_OR_UNIT_AFTER = re.compile(r"(?i)[ \t]+(?:mil|bin)(?![^\W\d_])")
"""A word after a number that is a scale in one language and a unit or a word in another
(``mil``: a thousand in Spanish, a mile in Indonesian; ``bin``: a thousand in Turkish)."""
_PENCE = re.compile(r"p(?![^\W_])")
_NOT_RATE = frozenset({"each", "every", "a"})
_DIMENSIONS = frozenset({"wide", "long", "tall", "high", "deep", "thick", "across", "square"})
_DEGREE_SIGN = re.compile(r"[ \t]?([℃℉‰]|°(?![ \t]?[CF]))")
_SIGN_AFTER = re.compile(r"[ \t]?([€£¥₹₩₽₺₪₫₱฿₦₴₸₾₭៛৳₨])(?![^\W\d_])")
UNREAD_WORD_AFTER = re.compile(
    r"[ \t]?((?:(?![A-Za-z\u00c0-\u024f\u1e00-\u1eff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])"
    r"[^\W\d_]|[\u0900-\u0dff\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff])+)"
)
"""A word of another alphabet (not Latin, not Han, kana or Hangul, whose counters ``个`` ``人``
are words) right after a number, that no table here reads."""
_COPULAS = frozenset(
    "है हैं था थी थे होगा होगी होंगे ہے ہیں تھا تھی ہوگا است هست بود হবে হয় আছে ஆகும் ஆக உள்ளது"
    " ఉంది అవుతుంది છે હશે आहे आहेत ነው ናቸው ครับ ค่ะ ပါ သည် គឺ ແມ່ນ это είναι هو هي".split()
)
"""Words for "is" (and polite particles) that follow an answer in other scripts: no unit."""
_UNIT_AFTER = re.compile(r"[ \t]*((?:°\s*[CF]|[A-Za-zÀ-ÿµμ€£¥₹¢])[A-Za-zÀ-ÿ/^23²³. ]{0,40})")


def unit_after(text: str, end: int) -> str:
    """The unit written right after the number ending at ``end`` (`` seconds``, `` km/h``), or "".

    The last number of "so it takes 300 seconds." is ``300 seconds``: its unit is part of the
    answer (``300 minutes`` is another one). The longest run of up to four words that names a
    unit of :mod:`envhub.envs.math.units` is kept; a word that names none (``apples``) is not.
    """
    if _PENCE.match(text, end):  # 85p
        return "p"
    degree = _DEGREE_SIGN.match(text, end)
    if degree is not None:  # 25℃, 42 ℃, 5‰
        return degree.group(1)
    sign = _SIGN_AFTER.match(text, end)
    if sign is not None:  # "15 £", "3000 ₽": the currency (a "$" after a number closes math)
        return " " + sign.group(1)
    scale = _SCALE_AFTER.match(text, end)
    if scale is not None:  # "$1,200 million", "3 thousand km"
        return scale.group(0) + unit_after(text, scale.end())
    either = _SCALE_OR_UNIT_AFTER.match(text, end)
    if either is not None:  # "3,5 mil": thousand in Spanish, miles in Indonesian; never bare
        return either.group(0)
    m = _UNIT_AFTER.match(text, end)
    latin = _latin_unit(m.group(1)) if m is not None else None
    if latin is not None:
        return latin
    word = UNIT_WORD_AFTER.match(text, end)  # 5米, 45 секунд, 7 أمتار, 45 giây
    if word is not None:
        return f" {word.group(1)}"
    unread = UNREAD_WORD_AFTER.match(text, end)  # "75 روپے", "5000 រៀល": kept, so that a word
    if unread is None or unread.group(1) in _COPULAS:  # that may be a unit never pays a unit
        return ""
    return f" {unread.group(1)}"


def _latin_unit(run: str) -> str | None:
    """The unit named by the words of ``run`` (" km/h"), "" for a preposition, None for none."""
    words = run.rstrip(". ").split(" ")[:4]
    cut = next((i for i, w in enumerate(words) if w.lower() in _NOT_RATE), len(words))
    words = words[:cut]  # "5 km each day" ran 5 km: "each" and "every" start no rate here
    if words[:1] == ["in"] and len(words) > 1 and words[1].lower() not in _DIMENSIONS:
        return ""  # "7 in all": a preposition; "7 in." and "25 in wide" are inches
    for n in range(len(words), 0, -1):
        phrase = " ".join(words[:n]).rstrip(".").replace("²", "^2").replace("³", "^3")
        if phrase.startswith("°"):
            phrase = "deg" + phrase[1:].strip().lower()
        if phrase and measure(phrase) is not None:
            return " " + phrase
    return None
