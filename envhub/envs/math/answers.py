r"""Answer equivalence for the math environments: is an extracted answer the gold's value.

**Equivalence** (:func:`is_equivalent`) reads both answers with :mod:`envhub.envs.math.parse`:
delimiters, ``\text{}``, labels after a number (``42 apples``), thousands separators,
``x =`` and degree signs are dropped; ``\frac``/``\dfrac``, ``\sqrt``, powers, ``%``,
``\pi``, lists (as multisets), tuples and intervals (in order, brackets included), ``\cup``,
inequalities in one variable (``x \le 3`` is ``(-\infty, 3]``, also flipped, joined by "and"
or in set-builder form), ``\pm``, mixed numbers and repeating decimals (``0.1\overline{6}``
is ``1/6``) are understood. Units of :mod:`envhub.envs.math.units` convert and never cross
(``200 cm`` is ``2 m``; ``6 m`` is not ``6 cm``).

* Fast path, in-process: when both sides have exact rational values (integers, decimals,
  fractions, percentages, arithmetic on them) they are compared exactly with
  :class:`fractions.Fraction`. No sympy, no inter-process call: microseconds. A decimal comma
  (``3,5``; not ``1,000`` nor ``3, 5``) facing a single value is read as one
  (:func:`decimal_comma`).
* Worker path: anything else goes to a worker process (:mod:`envhub.envs.math.pool`) with a
  per-call budget of CPU time (the call raises :class:`~envhub.errors.VerifierTimeout`; a
  worker past the wall-clock backstop is killed and replaced): first envhub's sympy rules
  (:mod:`envhub.envs.math.symbolic`), then, for what they cannot read or decide, math-verify
  (:mod:`envhub.envs.math.library`): relations, matrices, subscripts, named tuples, ratios,
  ``\log_b``, ``\binom``, prose golds.

Rounding, on purpose: a decimal is its exact value. ``0.333`` is not ``1/3`` and ``3.14159``
is not ``\pi`` unless the task's data states a ``tolerance`` (absolute; ``MathEnv`` reads
``task.metadata["tolerance"]``), and then only where a side is written as a decimal: two
exact values never match by tolerance (``\pi`` is not ``3``). A gold written as a decimal is
a rounded value: an exact irrational answer matches when it rounds to it at the gold's own
precision (``\sqrt{2}`` for ``1.41``, not ``1.42``). A decimal of 15 or more significant
digits is a double printed in full and matches to float precision.

Errors: a gold answer that neither envhub nor math-verify can read, or one of hostile size,
raises :class:`~envhub.errors.GoldAnswerError` (``env_error``), never a verdict. A
prediction that cannot be read, or that sympy fails on, is a wrong answer. Any other
exception in the checker is a bug and propagates. Values too large to be real answers
(``9**9**9**9``, ``100000!``) and predictions over
:data:`~envhub.envs.math.latex.MAX_ANSWER_CHARS` characters are rejected before any evaluation.
"""

from __future__ import annotations

import re
from functools import lru_cache

from envhub.errors import GoldAnswerError, VerifierTimeout

from . import library, symbolic
from .compare import distinct, quick_compare
from .extract import MAX_RESPONSE_CHARS
from .hedges import BOUND, BOUND_AFTER
from .lastnumber import MONTHS, REFERENCE, UNREAD_WORD_AFTER
from .latex import AnswerSyntaxError, boxed_contents, clean, plain_digits
from .numerals import MERIDIEM, normalize
from .parse import (
    PARSE_ERRORS,
    Answer,
    Expr,
    Items,
    Seq,
    parse_answer,
    relations_as_intervals,
)
from .pool import run_in_worker
from .spelled import gold_in_words, roman_value
from .units import measure

__all__ = ["is_equivalent", "validate_gold"]

_HARD = ("too large", "too deeply")
"""envhub parse failures that no other parser may overrule: a hostile size or depth (and, for
a prediction, its length: a gold may be a whole worked solution, a final answer may not; and a
digit glued after a letter, ``v0``, ``H0O``, which math-verify reads as a product, so 0)."""


def _hard(error: Exception, *, pred: bool = False) -> bool:
    hard = _HARD + ("longer than", "glued after a letter") if pred else _HARD
    return isinstance(error, RecursionError) or any(h in str(error) for h in hard)


@lru_cache(maxsize=4096)
def _gold(gold: str) -> Answer | None:
    """Envhub's parse of a gold answer; None when only math-verify may read it.

    Raises:
        GoldAnswerError: The gold is broken or hostile (unbalanced, too large, too deep).
    """
    boxes = boxed_contents(gold) if "\\boxed" in gold or "\\fbox" in gold else []
    if len(distinct(boxes)) > 1:
        return None  # several boxes: math-verify reads what the prose around them says
    try:
        return parse_answer(gold)
    except PARSE_ERRORS as e:
        if _hard(e):
            raise GoldAnswerError(f"gold answer {gold[:80]!r} cannot be parsed: {e}") from e
        return None


@lru_cache(maxsize=4096)
def _library_reads(gold: str, timeout: float) -> bool:
    """math-verify finds an answer in ``gold`` (a gold it cannot read in time is broken)."""
    try:
        return run_in_worker(library.readable_gold, (gold,), timeout) is True
    except VerifierTimeout as e:  # the gold's fault, never the model's timeout
        raise GoldAnswerError(
            f"gold answer {gold[:80]!r}: math-verify could not read it within {timeout:g}s"
        ) from e


def validate_gold(gold: str, *, timeout: float = 10.0) -> None:
    """Raise :class:`~envhub.errors.GoldAnswerError` when ``gold`` cannot be read (cached).

    envhub's parser reads it, or else math-verify must (in a worker, within ``timeout``).
    Call it even when the response has no answer to compare, so that a broken gold answer is
    reported as an error rather than hidden behind a reward of 0.
    """
    if not isinstance(gold, str):
        raise GoldAnswerError(f"gold answer must be text, got {type(gold).__name__}")
    if not gold.strip() or len(gold) > MAX_RESPONSE_CHARS:
        raise GoldAnswerError(f"gold answer {gold[:80]!r} cannot be parsed: empty or too long")
    if not _balanced(gold):
        raise GoldAnswerError(
            f"gold answer {gold[:80]!r} cannot be parsed: unbalanced brackets; "
            "fix the task's answer"
        )
    if _gold(gold) is None and not _library_reads(gold, timeout):
        raise GoldAnswerError(
            f"gold answer {gold[:80]!r} cannot be parsed by envhub's parser nor by math-verify;"
            " fix the task's answer"
        )


def _balanced(text: str) -> bool:
    r"""True when braces pair up and round/square brackets close what they open.

    ``[1, 2)`` is an interval, so ``(``/``[`` and ``)``/``]`` count together. math-verify reads
    a cut-off gold such as ``\frac{1}{`` or ``abc(``; envhub calls it broken.
    """
    braces = depth = 0
    for ch in text.replace("\\{", "").replace("\\}", ""):
        braces += {"{": 1, "}": -1}.get(ch, 0)
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        if braces < 0 or depth < 0:
            return False
    return braces == 0 and depth == 0


def _settled(pred: Answer, gold: Answer) -> bool:
    """True when the exact fast-path verdict on these two is final.

    That is two rational numbers, the prediction not a double printed in full (see
    :data:`envhub.envs.math.symbolic.FLOAT_DIGITS`).
    """
    if not (isinstance(pred, Expr) and isinstance(gold, Expr)):
        return False
    if pred.value is None or gold.value is None:
        return False
    return not pred.decimal or len(pred.py.replace("-", "").replace(".", "").lstrip("0")) < 15


def is_equivalent(
    pred: str, gold: str, *, timeout: float = 2.0, tolerance: float | None = None
) -> bool:
    """True when the predicted answer has the gold answer's value (rules in the module doc).

    Args:
        pred: The model's final answer (for example :attr:`Extraction.answer`).
        gold: The task's gold answer.
        timeout: CPU seconds allowed for the symbolic comparison, if one is needed (a loaded
            machine's waiting is not counted; see :mod:`envhub.envs.math.pool`).
        tolerance: The task's absolute rounding tolerance (from its data); None: exact.

    Raises:
        GoldAnswerError: ``gold`` cannot be parsed (never answered with True or False).
        VerifierTimeout: The symbolic comparison spent ``timeout`` CPU seconds.
        InfraError: A worker process died for another reason.
    """
    validate_gold(gold)
    if not isinstance(pred, str) or not pred.strip():
        return False
    pred, gold = plain_digits(pred), plain_digits(gold)
    written = _decided_as_written(pred, gold)
    if written is not None:
        return written
    pred = roman_value(_TEXT_ONLY.sub(r"\1", pred)) or pred  # XLII, \text{XIV}, Ⅻ: Roman
    dates = _date_value(pred), _date_value(gold)
    if None not in dates:
        return dates[0] == dates[1]  # "1 June", "June 1st" and "June 1" are one day
    pred, gold = _written_plainly(pred), _written_plainly(gold)
    pred, gold = facing(pred, gold), facing(gold, pred)
    gold_ans = _gold(gold)
    pred = _as_gold_writes(pred, gold, gold_ans)
    try:
        pred_ans: Answer | None = parse_answer(pred)
    except PARSE_ERRORS as e:
        if _hard(e, pred=True):
            return False  # hostile or broken: a wrong answer, decided here in microseconds
        pred_ans = None  # envhub cannot read it; math-verify may
    spelled_out = _gold_spelled(pred, gold_ans)
    if spelled_out is not None:  # "czterdzieści dwa jabłka" facing 42
        pred, pred_ans = spelled_out
    if _maybe_another_unit(pred, pred_ans, gold_ans) or _gold_label_unread(
        gold, pred_ans, gold_ans
    ):
        return False  # "45 giây" facing 45 minutes, "1050 dólares" facing 1050 euros
    if pred_ans is None and not (isinstance(gold_ans, Expr) and gold_ans.unit):
        pred, pred_ans = _without_label(pred) or (pred, pred_ans)  # "₹1,25,000 है"
    if isinstance(gold_ans, Expr) and not isinstance(pred_ans, Expr):
        pred, pred_ans = decimal_comma(pred) or (pred, pred_ans)
    elif isinstance(pred_ans, Expr) and isinstance(gold_ans, Items):
        gold, gold_ans = decimal_comma(gold) or (gold, gold_ans)
    if gold_ans is not None and pred_ans is not None and tolerance is None:
        quick = quick_compare(pred_ans, gold_ans)
        if quick is True or (quick is False and _settled(pred_ans, gold_ans)):
            return quick
    verdict = run_in_worker(symbolic.judge, (pred, gold, pred_ans, gold_ans, tolerance), timeout)
    if verdict.startswith(symbolic.GOLD_ERROR):
        raise GoldAnswerError(f"gold answer {gold[:80]!r} cannot be evaluated: {verdict}")
    return verdict == symbolic.EQUAL


def _decided_as_written(pred: str, gold: str) -> bool | None:
    """What the answers as written decide, or None: read on."""
    if pred.split() == gold.split():
        return True  # the gold as written, whatever either parser makes of it ("x2")
    if _not_a_value(pred, gold):
        return False  # "\neq 5", "> 42", "42^+", "42_8", "3.14...": not the gold's value
    return _same_choice(pred, gold)  # "\textbf{(C)}\ 18" facing (C): the letter is the answer


_BARE_TIME = re.compile(
    r"\s*(?:(?:at|à|a\s+las|las|la|um|om|alle|às|в|во|klo|kl\.?|saat|pukul|jam|lúc)\s+)?"
    r"(\d{1,2})\s?(?::|h)\s?([0-5]\d)\s*\.?",
    re.IGNORECASE,
)
_TIME_OF_DAY = re.compile(
    rf"\d:[0-5]\d\s*(?:{MERIDIEM})|(?<!\d)(?:1[3-9]|2[0-3]|0\d):[0-5]\d|[点點時时시]"
)
_DEGREES = re.compile(
    r"\s*(-?\d+(?:\.\d+)?)\s*(?:°|º|\^\s*\{?\s*\\circ\s*\}?|\\degree|degrees?)\s*"
)
_BARE_SET = re.compile(r"\s*\{[^{}\\]*\}\s*")
_RADIANS = re.compile(r"π|\\pi(?![A-Za-z])")
_RADIAN_WORD = re.compile(r"\s*(?:\\(?:text|mathrm)\{\s*)?\b(?:rad|radians?)\b\.?\}?\s*$")


def facing(answer: str, other: str) -> str:
    r"""``answer`` as read beside ``other``, where a notation's meaning depends on it.

    A bare ``10:50`` facing a time of day (``10:50 AM``, ``下午3点``) is one too, on the 24-hour
    clock (``3:45`` is not ``3:45 PM``); alone it may be a ratio or a duration. Degrees facing
    an angle in radians (``30°`` beside ``\frac{\pi}{6}``) are converted to radians, and
    ``{2}`` facing the set ``\{2\}`` is that set (alone, braces only group).
    """
    time = _BARE_TIME.fullmatch(answer) if ":" in answer or "h" in answer else None
    if time is not None and _TIME_OF_DAY.search(other):
        hour, minute = int(time.group(1)), int(time.group(2))
        return f"{hour * 60 + minute} clock" if hour < 24 else answer
    if "{" in answer and _BARE_SET.fullmatch(answer) and other.strip().startswith("\\{"):
        return f"\\{{{answer.strip()[1:-1]}\\}}"  # {2} facing \{2\}: a set
    if "π" in answer or "pi" in answer:  # π/2 rad: the unit of an angle, no product r·a·d
        answer = _RADIAN_WORD.sub("", answer)
    if not ("π" in other or "pi" in other):
        return answer  # (the rest reads degrees beside radians only)
    degrees = _DEGREES.fullmatch(answer.strip().strip("$"))
    if degrees is not None and _RADIANS.search(other):
        return f"\\frac{{{degrees.group(1)} \\pi}}{{180}}"
    return answer


def _gold_spelled(pred: str, gold: Answer | None) -> tuple[str, Answer] | None:
    """``pred`` read with the gold's value for its words, or None.

    When it starts with the gold in words in a language no parser here reads
    (:func:`envhub.envs.math.spelled.gold_in_words`); the words after are its unit, or a label.
    """
    if not isinstance(gold, Expr) or gold.value is None or gold.value.denominator != 1:
        return None
    rest = gold_in_words(pred, int(gold.value))
    if rest is None:
        return None
    readings = [f"{gold.value} {rest}".strip()]
    if rest and not gold.unit:  # a label in another script: the value alone
        readings.append(str(gold.value))  # (facing a unit, an unread word may be another unit)
    for text in readings:
        try:
            return text, parse_answer(text)
        except PARSE_ERRORS:
            continue
    return None


_INTERVAL = re.compile(r"^\s*\$?\s*(?:\\left)?[\[(].*,.*[\])]|\\infty|\\cup|∪")
r"""A gold written as intervals: ``(-\infty, -10) \cup (4, \infty)``, ``[2, 5)``."""


def _date_value(text: str) -> tuple[int, int] | None:
    """(month, day) of a date written as one ("June 1", "1 June", "June 29th"), else None."""
    m = _ONE_DATE.fullmatch(text.strip().strip("$").strip().rstrip("."))
    if m is None:
        return None
    month = (m.group("m1") or m.group("m2"))[:3].lower()
    return _MONTH_INDEX[month], int(m.group("d1") or m.group("d2"))


_DATE_TEXT = (
    rf"(?:\b(?P<m1>{MONTHS})\.?\s+(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\b"
    rf"|\b(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m2>{MONTHS})\.?)"
)
"""A day of a month: "June 1", "1 June", "June 29th", "the 3rd of May"."""
_DATE = re.compile(_DATE_TEXT)
_ONE_DATE = re.compile(rf"(?:\\text\{{)?{_DATE_TEXT}\}}?")
_MONTH_INDEX = {
    m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())
}


def _written_plainly(answer: str) -> str:
    r"""``answer`` with notations of one value rewritten.

    Accounts' ``(500)`` is -500, an option's letter goes (``(B) 3`` is 3), a French interval
    ``]2 ; 5]`` is ``(2, 5]``, ``∈`` is ``\in``.
    """
    bare = answer.strip()
    accounting = _ACCOUNTING.fullmatch(bare)
    if accounting:
        return "-" + bare[1:-1].strip()
    bare = _OPTION.sub("", bare)
    french = _FRENCH_INTERVAL.fullmatch(bare)
    if french:
        left = "(" if french.group(1) == "]" else "["
        right = ")" if french.group(4) == "[" else "]"
        return f"{left}{french.group(2)}, {french.group(3)}{right}"
    return bare.replace("∈", "\\in ")


_OPTION = re.compile(r"^\(?[A-E]\)\s+(?=[-−$\d\\])")
_FRENCH_INTERVAL = re.compile(r"([\]\[])\s*([^;\[\]]+?)\s*;\s*([^;\[\]]+?)\s*([\]\[])")


_GLUED_UNIT = re.compile(r"\s*([-−]?\d[\d.,]*)([A-Za-zµ]{1,3}(?:/[A-Za-z]{1,3})?)\s*")


def _as_gold_writes(pred: str, gold: str, gold_ans: Answer | None) -> str:
    """``pred`` in the gold's notation where it has two readings.

    A unit glued to its number (``1500m``, alone a product) facing a gold with a unit is that
    unit; inequalities ("x < -10 or x > 4") facing intervals are those intervals; one value
    for each letter ("x = 1, y = 2") facing a point is that point.
    """
    glued = _GLUED_UNIT.fullmatch(pred)
    if glued and isinstance(gold_ans, Expr) and gold_ans.unit and measure(glued.group(2)):
        return f"{glued.group(1)} {glued.group(2)}"
    if isinstance(gold_ans, Seq) and gold_ans.left == "(" and "=" in pred:
        point = _as_point(pred, len(gold_ans.items))
        if point is not None:
            return point  # x = 1, y = 2 facing (1, 2)
    if _INTERVAL.search(gold):
        return relations_as_intervals(pred) or pred
    return pred


def _same_choice(pred: str, gold: str) -> bool | None:
    """Facing a gold that is a choice letter, whether ``pred`` opens with that letter alone.

    None when the gold is no choice letter or ``pred`` opens with none (then read as usual).
    """
    choice = _CHOICE_GOLD.fullmatch(gold)
    said = _CHOICE_FIRST.match(pred) if choice is not None else None
    if said is None:
        return None
    rest = pred[said.end() :]
    return said.group(1) == choice.group(1) and not _ANOTHER_CHOICE.search(rest)


_CHOICE_GOLD = re.compile(r"\s*(?:\\text(?:bf)?\s*\{\s*)?\(?\s*([A-E])\s*\)?\s*\}?\s*")
_CHOICE_FIRST = re.compile(r"\s*(?:\\text(?:bf)?\s*\{\s*)?\(\s*([A-E])\s*\)\s*\}?(?=\\\s|\s|$)")
r"""A choice letter in brackets opening an answer: ``\textbf{(C)}\ 18``, ``(C) 18``."""
_ANOTHER_CHOICE = re.compile(r"(?i)\(\s*[A-E]\s*\)|\b(?:or|and)\b")
_COORDINATE = re.compile(r"\s*([a-z])\s*=\s*([^=,;]+?)\s*")
_COORDINATE_JOINER = re.compile(r",\s*(?:\\[ ,;]|\\quad|\\qquad)?|;|\band\b|\\text\{\s*and\s*\}")


def _as_point(pred: str, size: int) -> str | None:
    """``x = 1, y = 2`` facing a point ``(1, 2)``: that point, its letters in order (x, y, z)."""
    parts = _COORDINATE_JOINER.split(pred.replace("$", "").strip())
    pairs = [_COORDINATE.fullmatch(p) for p in parts]
    if len(pairs) != size or not all(pairs):
        return None
    letters = {m.group(1): m.group(2) for m in pairs if m}
    if len(letters) != size or not set(letters) <= set("abcdxyz"):
        return None  # one letter twice, or letters of no conventional order
    return "(" + ", ".join(letters[k] for k in sorted(letters, key="xyzabcd".index)) + ")"


def _maybe_another_unit(pred: str, pred_ans: Answer | None, gold_ans: Answer | None) -> bool:
    """Facing a gold with a unit, ``pred`` holds a word that may be another unit.

    A word the parser cannot read ("45 giây"), or one it read as a label ("1050 dólares").
    """
    if not (isinstance(gold_ans, Expr) and gold_ans.unit):
        return False
    if pred_ans is None:
        return bool(_WORD_AFTER.search(pred))
    words = _LABEL_AFTER.search(normalize(pred))  # a scale word is no label: 2,5 tys. zł
    return isinstance(pred_ans, Expr) and pred_ans.unit is None and bool(words)


def _gold_label_unread(gold: str, pred_ans: Answer | None, gold_ans: Answer | None) -> bool:
    """``gold`` holds a word no table reads ("10 knots" once) and ``pred`` names a unit.

    The word may be a unit too (``10 mph`` is no answer to it); a label the prediction
    repeats was already matched as written.
    """
    return (
        isinstance(gold_ans, Expr)
        and gold_ans.unit is None
        and isinstance(pred_ans, Expr)
        and pred_ans.unit is not None
        and bool(_LABEL_AFTER.search(gold))
    )


_FIRST_DIGIT = re.compile(r"\d")
_TEXT_ONLY = re.compile(r"^\s*\\(?:text|textbf|mathrm|mathbf)\{([^{}]*)\}\s*$")
_PI_DEGREES = re.compile(r"(?:\\pi|π).*(?:\\circ|°|\\degree)")
_DIGIT_RUN = re.compile(r"\d+")
_DENIED = re.compile(
    r"(?i)(?:(?:not|nicht|pas|não|не|ні|nie|no|non)\s+|不是|并非|並非)[\s$€£¥₹]*[-−]?\d"
)


def _not_a_value(pred: str, gold: str) -> bool:
    r"""``pred`` is a relation, a one-sided limit, a number in another base or a cut decimal.

    ``\neq 5``, ``> 42``, ``\approx 42``, ``x \to 42``, ``not 42`` say something of a number,
    not that it is the answer; ``42^+`` and ``42-`` are one side of it; ``42_8`` is 34 and
    ``1011_3`` is not ``1011_2``; ``3.14...`` goes on (never a gold written as a finite
    decimal); "see Table 42" names a table.
    """
    bare = pred.strip().strip("$").strip()
    if _DENIED.match(bare):
        return True  # "not 42", "не 42": the answer it is not
    if _PI_DEGREES.search(bare) and not _PI_DEGREES.search(gold):
        return True  # "\frac{\pi}{6}^{\circ}": π/6 degrees, no angle of π/6
    first = _FIRST_DIGIT.search(bare)
    lead = bare[: first.start()] if first is not None else ""
    if lead and (BOUND.match(lead) or BOUND.match(lead.rstrip())):
        return True  # "at least 42", "至少 42": a bound, no value
    digits = list(_DIGIT_RUN.finditer(bare))
    if digits and BOUND_AFTER.match(bare, digits[-1].end()) and not BOUND_AFTER.match(gold):
        return True  # "42 or more", "42 이상", "42'den büyük"
    if _RELATION_FIRST.match(bare) and not _RELATION_FIRST.match(gold.strip().strip("$")):
        return True
    if _ONE_SIDED.search(bare) and not _ONE_SIDED.search(gold):
        return True
    pred_base, gold_base = _BASE.search(bare), _BASE.search(gold.strip().strip("$"))
    if pred_base and (gold_base.group(1) if gold_base else "10") != pred_base.group(1):
        return True  # (1011 facing 1011_2 is the base the question asked for)
    if bool(_DATE.search(bare)) is not bool(_DATE.search(gold)):
        return True  # "March 15" is a day of a date, never a count of 15 days (nor the reverse)
    if re.search(r"\d[₀-₉]+", bare) and not re.search(r"[₀-₉]", gold):
        return True  # "42₈": another base, like 42_8
    named = re.search(r"\d", bare)
    if named and REFERENCE.search(bare, 0, named.start()) and not REFERENCE.search(gold):
        return True  # "see Table 42" names a table
    left, gold_left = _LEFT_SIDE.match(bare), _LEFT_SIDE.match(gold.strip().strip("$"))
    if left and gold_left and left.group(1) != gold_left.group(1):
        return True  # x = 3 is not the line y = 3
    apostrophes = _APOSTROPHE_IN.finditer(bare) if "'" in bare or "’" in bare else ()
    if any(not _GROUPED.fullmatch(g.group(0)) for g in apostrophes):
        return True  # 1'23, 12'5: no thousands group and no height in feet and inches
    return bool(_GOES_ON_DIGITS.search(bare)) and bool(_FINITE.fullmatch(gold.strip()))


_RELATION_FIRST = re.compile(
    r"(?:\\(?:neq|ne|not|le|leq|ge|geq|lt|gt|approx|sim|simeq|lesssim|gtrsim|ll|gg|propto|equiv"
    r"|to|rightarrow|mapsto)(?![A-Za-z])|[<>≤≥≠≈~∼→]|!=)"
    r"|[a-zA-Z]\s*(?:\\to|\\rightarrow|→)"  # x \to 42: a limit
)
_ONE_SIDED = re.compile(r"\d\s*(?:\^\s*\{?\s*[+\-−]\s*\}?|[+\-−])\s*$")
_BASE = re.compile(r"(?<=\d)_\{?\s*(\d+)\s*\}?\s*$")
_GOES_ON_DIGITS = re.compile(r"\d\s*(?:\\[lc]?dots|\.{3}|…)\s*$")
_ACCOUNTING = re.compile(r"\(\s*[$€£]?\s*\d{1,3}(?:,\d{3})*(?:\.\d+)?\s*\)")
"""One amount in brackets, as accounts write a loss: ``(500)``, ``($1,200.50)``; never ``(3,2)``."""
_LEFT_SIDE = re.compile(r"\s*([a-zA-Z])\s*=(?!=)")
_APOSTROPHE_IN = re.compile(r"(?<!\d)\d++['’′]\d++")
_GROUPED = re.compile(r"\d{1,3}['’]\d{3}|\d['’′](?:1[01]|\d)")
"""Digits around an apostrophe: a Swiss group (``1'234``), or feet and inches (``5'11``)."""
_FINITE = re.compile(r"[-−]?\d+(?:[.,]\d+)?")


def _without_label(pred: str) -> tuple[str, Answer] | None:
    """``pred`` without the word of another alphabet that ends it, read, or None.

    "₹1,25,000 है" is ₹1,25,000 facing a gold without a unit ("है" is "is"); facing a gold with
    one, an unread word may be another unit and is never dropped.
    """
    word = UNREAD_WORD_AFTER.search(pred, max(0, len(pred) - 60))
    while word is not None and word.end() != len(pred.rstrip()):
        word = UNREAD_WORD_AFTER.search(pred, word.end())
    if word is None or not pred[: word.start()].strip():
        return None
    bare = pred[: word.start()].strip()
    try:
        return bare, parse_answer(bare)
    except PARSE_ERRORS:
        return None


_WORD_AFTER = re.compile(r"\d\s*[^\W\d_]")
_LABEL_AFTER = re.compile(r"\d\s+[^\W\d_]{2}")
"""A number and a word after it, which the parser dropped as a label (``42 apples``)."""
"""A number with a word after it: math-verify would read the number and drop the word."""
_DECIMAL_COMMA = re.compile(r"(?<![\d.])(\d+),(\d+)(?![\d.])")


def decimal_comma(answer: str) -> tuple[str, Expr] | None:
    r"""An answer read with its one comma as a decimal point, when that makes it one number.

    Asked only when the other side is a single value, so ``3,5`` is ``3.5`` (also ``3{,}5``,
    ``x = 3,5``, ``12,5\%``, ``3,5 \text{ cm}``) while facing a list or tuple it stays the
    list ``3, 5``. Either side may be the one with the comma (math-verify's suite has the gold
    ``1,22`` for ``1.22``; a gold list is written ``1, 2``). A comma before exactly three
    digits is a thousands separator (``1,000`` is 1000, read so by
    :func:`~envhub.envs.math.latex.clean`, as is ``1.000,5``); a comma followed by a space is a
    list. Returns the rewritten text and its parse, or None.
    """
    try:
        text = clean(answer)
    except AnswerSyntaxError:
        return None
    m = _DECIMAL_COMMA.search(text)
    if m is None or text.count(",") != 1 or text[:1] in "([":
        return None  # (1,5) is a point, [1,5] an interval
    text = f"{text[: m.start()]}{m.group(1)}.{m.group(2)}{text[m.end() :]}"
    try:
        read = parse_answer(text)
    except PARSE_ERRORS:
        return None
    return (text, read) if isinstance(read, Expr) and read.value is not None else None
