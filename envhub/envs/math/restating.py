r"""An answer's value said again after it: the same value is one answer, another is two.

"42 (٤٢)", "90 min (1.5 h)", "42 / forty-two", "$5, or 500 cents" and "10 соток, то есть 1000
м²" say one value; "42 (forty-three)", "42 / forty-three" and "2.5 hours (2 hours 50
minutes)" say two, a hedge (:mod:`envhub.envs.math.hedges`). Read for stated answers, ``####``
answers and the last number's aside alike.
"""

from __future__ import annotations

import re

from . import spelled
from .compare import read, same
from .lastnumber import find_numbers, last_number
from .locales import english_notation
from .parse import COMPOUND_JOINER
from .spelled import words_value
from .units import scales

THAT_IS = (
    r"(?:that\s+is|that['’]s|which\s+is|which['’]s|i\.\s?e\.|in\s+words|or\s+equivalently|equivalently"
    r"|c'est-à-dire|d\.\s?h\.|das\s+heißt"
    r"|es\s+decir|o\s+sea|ou\s+seja|cioè|dus|soit|то\s+есть|即|czyli|to\s+jest|yaitu|yakni"
    r"|artinya|tức\s+là|yani|つまり|즉)"
)
_SAYING_AGAIN = rf"(?:{THAT_IS}|or|also|ou|oder)\s*[,:]?\s*"
_RESTATED = re.compile(
    rf"(?i)(?:(?<=[^\W_]|[%²³}}€$£¥₹₽₺₩])\s*\(\s*(?P<lead>{_SAYING_AGAIN}|=\s*)?"
    rf"|\s*[,;—–]?\s+(?P<said>{_SAYING_AGAIN})|\s+[/|]\s+)"
    r"(?P<value>[^()=]{1,60}?)\s*\)?\s*[.!]?\s*$"
)
"""What may say an answer's value again: an aside ("(٤٢)", "(i.e. 1/2)"), a word of saying
it again ("or 500 cents", ", то есть 1000 м²"), or a spaced slash ("42 / forty-two")."""
_DECIMAL_COMMA = re.compile(r"(?<![\d.,])\d+,\d{1,2}(?![\d,])")
"""A decimal comma (``2,5``, ``12,50``; never ``1,205``)."""
_WHOLE_VALUE = re.compile(
    r"[-\u2212]?[$€£¥]?(?:\d[\d.,]*(?:\s*/\s*\d+)?|\\frac\{\d+\}\{\d+\})"
    r"(?:\s*(?P<u1>[^\W\d_]{1,12}(?:/[^\W\d_]{1,6})?)\.?[²³]?)?"
    rf"(?:\s+{COMPOUND_JOINER}?\s*\d[\d.,]*\s*(?P<u2>[^\W\d_]{{1,12}})\.?[²³]?)?"
)


_DIGITS_AGAIN = re.compile(r"(\d[\d.,]*)\s*\((\d[\d.,]*)\)")


def restated(answer: str) -> tuple[str, bool]:
    """``answer`` without its value said again after it; whether what follows says another.

    "42 (٤٢)", "90 min (1.5 h)", "42 / forty-two", "10 соток, то есть 1000 м²" say one value
    (the first two read ``42`` and ``90 min``; the last, whose first value is unread, ``1000
    м²``); "42 (forty-three)", "2.5 hours (2 hours 50 minutes)" say two: a hedge. A continental
    number the words settle is read their way ("1.500 (that is, one thousand five hundred)":
    1500). Anything else after the value ("12 apples (3 of them red)") is left as it is.
    """
    if "(" in answer:  # "๑๔๐ (140) แท่ง": the digits said again, mid-answer
        answer = _DIGITS_AGAIN.sub(
            lambda m: m.group(1) if m.group(1) == m.group(2) else m.group(0), answer
        )
    found = _RESTATED.search(answer, max(0, len(answer) - 90))
    if found is None:
        return answer, False
    main, text = answer[: found.start()].strip(), found.group("value")
    if "=" in text and not all(same(main, link) for link in text.split("=") if link.strip()):
        return answer, True  # "\frac{1}{2}, i.e. 0.5 = 50% = \frac{5}{100}": one link is not
    roman = spelled.roman_value(main)
    if not (find_numbers(main) or words_value(main) is not None or roman):
        return answer, False  # (a value in words is one too: "forty-two (42)")
    if roman:  # "XIV (14)": the numeral said in digits, or another value
        said = _value_of(text)
        return (
            (main, False) if said is not None and same(roman, said) else (answer, said is not None)
        )
    if same(main, text):
        return main, False
    said = _value_of(text)
    if said is None:
        return answer, False
    if same(main, said):
        return main, False
    if same(english_notation(main), said):
        return said, False
    reading = english_notation(main) if _DECIMAL_COMMA.search(main) else main  # 12,50 €
    if _value_of(reading) is None and dimension(reading) is None:  # "10 соток, то есть 1000 м²"
        lead = found.group("lead") or found.group("said") or ""
        return (said, False) if re.match(THAT_IS, lead, re.IGNORECASE) else (answer, False)
    if converted(said, reading):
        return main, False  # "60 km/h (16.7 m/s)": the same value, rounded
    return answer, comparable(reading, said)  # "$20 (3 hours)" is an aside; "$12.50 (1,205 cents)"


def comparable(value: str, other: str) -> bool:
    """Both plain numbers, or both measures of one thing (cents and any one currency)."""
    unit, other_unit = getattr(read(value), "unit", None), getattr(read(other), "unit", None)
    if unit is None or other_unit is None:
        return unit is other_unit
    return scales(unit, other_unit) is not None


def dimension(value: str) -> tuple | None:
    """What ``value`` measures (its unit's dimension), None for a plain number."""
    unit = getattr(read(value), "unit", None)
    return unit.dimension if unit is not None else None


def _value_of(text: str) -> str | None:
    """``text`` as a value: digits with a unit, words of any language read here, Roman."""
    text = text.strip()
    if not re.search(r"[^\W\d_]", text.replace("\\frac", "")):
        return text  # digits and signs only: "10²", "3/4", "10 + 5"
    if _WHOLE_VALUE.fullmatch(text):  # a unit, not a label: "1000 м²", not "3 red"
        return text if getattr(read(text), "unit", None) is not None else None
    worded = words_value(text)
    if worded is not None:
        return str(worded)
    phrased = spelled.as_digits(text, "en")  # "half an hour": 30 minutes
    if phrased != text and _WHOLE_VALUE.fullmatch(phrased):
        return phrased
    return spelled.roman_value(text)


def converted(value: str, answer: str) -> bool:
    """``value`` is ``answer`` in another unit, rounded (within 1%): "60 km/h (16.7 m/s)"."""
    a, b = read(value), read(answer)
    unit_a, unit_b = getattr(a, "unit", None), getattr(b, "unit", None)
    both = scales(unit_a, unit_b) if unit_a is not None and unit_b is not None else None
    if both is None or both[0][1] or both[1][1] or not b.value:
        return False  # (temperatures: a reading is no rounding of another scale's)
    ratio = (a.value * both[0][0]) / (b.value * both[1][0])
    return abs(ratio - 1) < 0.01


def rival_amount(aside: str, answer: str) -> bool:
    """An aside's amount measures what ``answer`` measures, and is another value.

    "42 km (26 km by road)" gives two distances; "42 km (about 26 miles)" converts, "$20 (3
    hours)" measures something else, "42 km (26 of them uphill)" has no unit.
    """
    if dimension(answer) is None:
        return False
    aside = spelled.as_digits(aside, spelled.language(aside) or "en")  # "(twelve dollars and ...)"
    numbers = find_numbers(aside)
    if not numbers:
        return False
    amount = last_number(aside, numbers)[0]  # "(2 hours 30 minutes)": one amount
    if dimension(amount) is None or not comparable(answer, amount):
        return False
    return not (same(amount, answer) or converted(amount, answer))
