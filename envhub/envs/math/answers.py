r"""Final-answer extraction and answer equivalence for the math environments.

**Extraction** (:func:`extract_answer`) looks for the final answer in this order and stops
at the first rule that finds one:

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
(:func:`~envhub.envs.math.latex.plain_digits`: ``１２３``, ``١٢٣``, ``1\u200b23``).

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
what cannot be decided exactly commit to nothing (:func:`_contradicted`). A final answer
taken back right after it ("#### 5. Actually, 7.") is hedged too, and so is one followed by
another value offered as also possible ("#### 5. 7 is also acceptable.", :func:`_retracted`).

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
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import lru_cache

from envhub.errors import GoldAnswerError, VerifierTimeout

from . import library, locales, symbolic
from .compare import quick_compare
from .latex import AnswerSyntaxError, boxed_contents, clean, plain_digits
from .parse import Answer, Expr, Items, Seq, Text, compound, parse_answer, split_top
from .pool import run_in_worker
from .units import measure

__all__ = [
    "Extraction",
    "extract_answer",
    "format_score",
    "is_equivalent",
    "validate_gold",
]

MAX_RESPONSE_CHARS = 100_000
"""Extraction reads only this many characters from the end of a response."""
_PARSE_ERRORS = (AnswerSyntaxError, RecursionError, ValueError, ArithmeticError)
"""What envhub's parser raises on text it cannot read (anything else is a bug)."""


# ---------------------------------------------------------------- extraction


@dataclass(frozen=True)
class Extraction:
    """The final answer found in a response."""

    answer: str | None
    """Final answer text as written (``\\frac{1}{2}``, ``1,000``); None if nothing found."""
    method: str | None
    """The rule that found it: ``hash``, ``boxed``, ``answer_is`` or ``last_number``."""
    hedged: bool
    """The response gives several different final answers: it earns no correctness."""


_HASH = re.compile(r"####[ \t]*([^\n]*)")
_FOREIGN_ANSWER = (
    r"antwort|antwoord|r[ée]ponse|respuesta|resposta|risposta|lösung|solución|soluzione"
    r"|oplossing|ответ|решение|odpowiedź|wynik|cevap|sonuç|yanıt"
)
_ANSWER_IS = re.compile(
    rf"(?:answer|correct\s+(?:choice|option)|{_FOREIGN_ANSWER}|答案|答え|정답|उत्तर)"
    r"\s*(?:ist|is|est|es|é|è|to|是|は|은|है|:|：|=)(?![^\W\d_])\s*[:：]?\s*"
    rf"|(?:{_FOREIGN_ANSWER})\s+(?=[-−+$€£¥₹\\\d(\[])"  # "Also ist die Antwort 42"
    r"|(?:الإجابة|الجواب)\s*(?:هي|:)?\s*",
    re.IGNORECASE,
)
"""A statement of the answer ("the answer is", "Final answer:", "Antwort:", "La réponse est",
"La respuesta es", "A resposta é", "La risposta è", "Het antwoord is", "Ответ:", "答案是",
"الإجابة"; not a word ending in "answer", which :func:`_statements` checks: a leading ``\b``
made the scan 4 times slower)."""
_ANSWER_STEMS = ("answer", "antw", "ponse", "respu", "respo", "rispo", "ответ", "答案", "उत्तर")
_ANSWER_STEMS += (
    "lösung",
    "soluci",
    "soluzi",
    "oplos",
    "решени",
    "答え",
    "정답",
    "الإجابة",
    "الجواب",
    "choice",
    "option",
    "odpowied",
    "wynik",
    "cevap",
    "sonu",
    "yanıt",
)
"""Substrings one of which every statement of :data:`_ANSWER_IS` holds (a fast first test)."""
_FILLER = re.compile(
    r"(?:therefore|thus|simply|just|equal\s+to|exactly|definitely|certainly|clearly|indeed"
    r"|donc|bien|also|sicher|dus|quindi|entonces|então|portanto|итак|следовательно)\s+",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(
    r"(?<!\bRs)\.(?=[\s*]|$)|\n|\s+(?:because|since|which|as)\b|;\s+(?=if\b|otherwise\b)",
    re.IGNORECASE,
)
_HYPOTHESIS = frozenset(
    {"if", "suppose", "supposing", "assume", "assuming", "whether", "check", "verify", "show",
     "prove", "not", "say"}
)  # fmt: skip
"""Words before "the answer is" that make it a hypothesis rather than a commitment."""
_RESTATED = re.compile(r"(?:the\s+)?(?:final\s+)?answer\s*(?:is|:|=)\s*:?\s*", re.IGNORECASE)
_POWER = r"(?:[eE][-+]?\d+|\s*(?:\^|\*\*)\s*(?:\{\s*[-+]?\d+\s*\}|[-+]?\d+)|[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)?"
"""A power or scientific exponent is part of its number: ``599e+72``, ``10^{3}``, ``2**10``,
``10²`` are one token each, never their last digits."""
_NUMBER = re.compile(
    r"(?:(?<![\w)])[-\u2212\u2013])?\\[dt]?frac\{[-\u2212]?\d+\}\{\d+\}"
    r"|(?:(?<![\w)])[-\u2212\u2013])?(?<![\w.])(?:(?<![,/])\d+ \d+/\d+(?![\d/])"  # 2 1/2
    r"|\d{1,2}(?:,\d\d)+,\d{3}(?:\.\d+)?"  # 1,23,456: lakh and crore
    r"|\d{1,3}(?:,\d{3})+(?:\.\d+)?"
    r"|\d{1,3}(?:\.\d{3}){2,}(?:,\d+)?|\d{1,3}(?:\.\d{3})+,\d+"  # 1.234.567, 1.234,5
    r"|[1-9]\d{0,2}(?:['’]\d{3})+(?:\.\d+)?"  # 1'234.5
    r"|[1-9]\d{0,2}(?: \d{3})+(?:,\d+)?(?!\d|\.\d)"  # 1 000, 12 345,6: spaced thousands
    r"|(?<![eE][-+])(?<!\^\{)(?<!\^)\d+(?:\.\d+)?(?:/\d+)?" + _POWER + r"|\.\d+)%?(?!\w*\d|_|\.\d)"
)
"""A number written as a whole token: no letter, digit, ``_`` or point glued before it, and
no digits later in its token (``x72``, ``is72``, ``e72``, ``599e72`` and ``A32`` hold no
number); a word glued after it must be a unit (:func:`_numbers`). An exponent belongs to its
number (:data:`_POWER`)."""
_GLUED_WORD = re.compile(r"[A-Za-z]+")


def _numbers(text: str) -> list[re.Match]:
    """The numbers of ``text`` (:data:`_NUMBER`), each a whole token.

    A number right after ``,`` or ``/`` counts only when a number ends there too: ``31,32``
    and ``1/2/3`` are numbers, the ``234`` of ``x1,234`` is the tail of a word. A word glued
    after a number must name a unit (``42cm``, ``1,000.99m²``; not ``72x``, ``1AAA``).
    """
    found: list[re.Match] = []
    end = -1
    for m in _NUMBER.finditer(text):
        start = m.start()
        glued = start > 1 and text[start - 1] in ",/" and end != start - 1
        glued = glued and text[start - 2] not in _UNICODE_MATH  # π/4 is a number
        word = _GLUED_WORD.match(text, m.end())
        if not glued and (word is None or measure(word.group(0)) is not None):
            found.append(m)
        end = m.end()
    return found


def _tidy(answer: str) -> str:
    return answer.strip().strip("*").strip().rstrip(".,;:。，；：").strip()


def _hash_answers(text: str) -> list[str]:
    return [a for a in (_tidy(m.group(1)) for m in _HASH.finditer(text)) if a]


def _answer_is(text: str) -> list[str]:
    """What follows each "the answer is" / "Answer:", up to the end of its sentence."""
    return [answer for _, answer in _statements(text)]


_LATIN_LETTER = re.compile(r"[A-Za-zÀ-ÿ]")


def _statements(text: str) -> Iterator[tuple[int, str]]:
    """Each "the answer is ..." statement: where it starts, and the answer it states."""
    for m in _ANSWER_IS.finditer(text):
        if m.start() and _LATIN_LETTER.match(text[m.start() - 1]):
            continue  # "reanswer is" (but 所以答案是 9 is a statement)
        answer = text[m.end() : m.end() + 200]
        # "Final Answer: The final answer is $8$." (Minerva style) states it twice
        while (inner := _RESTATED.match(answer)) is not None:
            answer = answer[inner.end() :]
        filler = _FILLER.match(answer)
        if filler:
            answer = answer[filler.end() :]
        stop = _SENTENCE_END.search(answer)
        answer = _tidy(answer[: stop.start()] if stop else answer)
        if answer:
            yield m.start(), answer


def _contradicted(text: str, finals: list[str]) -> bool:
    r"""A committed answer stated elsewhere ("The answer is 5.") differs from the final ones.

    A statement under a hypothesis ("if the answer is 5", "suppose", "check whether") is not
    committed; one that cannot be read, or not decided exactly (``\sqrt{2}`` beside
    ``1.414``), is given the benefit of the doubt.
    """
    lower = text.lower()
    if not any(stem in lower for stem in _ANSWER_STEMS):
        return False
    stated, supposed = set(), []
    for count, (start, answer) in enumerate(_statements(text)):
        if count == MAX_CANDIDATES:
            return True  # no single answer is stated so many times: read no further
        (supposed.append if _hypothetical(text, start) else stated.add)(_stated_value(answer))
    if len(supposed) > 1 and not stated:  # "if order matters, 12; if not, the answer is 6"
        stated.update(supposed[:-1])
    return any(_contradicts(a, finals) for a in stated)


def _hypothetical(text: str, start: int) -> bool:
    """A word of :data:`_HYPOTHESIS` in the 40 characters before ``start``, same sentence."""
    clause = re.split(r"[.\n]", text[max(0, start - 40) : start].lower())[-1]
    return not _HYPOTHESIS.isdisjoint(re.findall(r"[a-z]+", clause))


def _contradicts(statement: str, finals: list[str]) -> bool:
    """``statement`` is decisively none of ``finals``.

    It is read whole and, of a chain (``6*7 = 42``), as its last value: either may match.
    """
    whole = _ASIDE.sub("", statement) or statement
    if any(whole.split() == final.split() for final in finals):
        return False
    last = whole.rsplit("=", 1)[-1].strip()
    for reading in {whole, last or whole}:
        said = _read(reading)
        if isinstance(said, str) or _prose(said):
            return False
        for final in finals:
            value = _read(final)
            if isinstance(value, str) or isinstance(value, Text) is not isinstance(said, Text):
                return False  # "the answer is reasonable" beside 7: words are no rival value
            if quick_compare(said, value) is not False:
                return False
    return True


def _prose(answer: Answer) -> bool:
    """Words rather than a value ("the sum of both counts", "not obvious"): no commitment.

    A one-word answer (``Friday``) is a value.
    """
    if isinstance(answer, Text):
        return " " in answer.words
    if isinstance(answer, (Items, Seq)):
        return any(_prose(item) for item in answer.items)
    return False


@lru_cache(maxsize=8192)
def _read(answer: str) -> Answer | str:
    """Parsed answer, or its whitespace-normalised text when it does not parse."""
    try:
        return parse_answer(answer)
    except _PARSE_ERRORS:  # anything unreadable is compared as text
        return " ".join(answer.split()).lower()


def _same(a: str, b: str) -> bool:
    """True when two written answers are the same value, decided exactly and without sympy."""
    if a.split() == b.split():
        return True
    ra, rb = _read(a), _read(b)
    if ra == rb:
        return True
    if isinstance(ra, str) or isinstance(rb, str):
        return False
    if quick_compare(ra, rb) is True:
        return True
    comma = _SHORT_DECIMAL_COMMA.search(a) or _SHORT_DECIMAL_COMMA.search(b)
    return bool(comma) and _same(locales.english_notation(a), locales.english_notation(b))


_SHORT_DECIMAL_COMMA = re.compile(r"\d,\d{1,2}(?!\d)")
"""``0,5``: a decimal comma (never ``1,000``), tried when two values are compared for sameness."""


def _distinct(answers: list[str]) -> list[str]:
    """``answers`` without repeats of one value (``1/2`` then ``0.5`` is one answer)."""
    out: list[str] = []
    for a in answers:
        if not any(_same(a, b) for b in out):
            out.append(a)
    return out


_HEDGE_WORDS = re.compile(
    r"\b(?:maybe|perhaps(?!\s+(?:un)?surprising)|possibly|probably|either(?!\s+way)|alternatively|or\s+so|not\s+sure|unsure"
    r"|i\s+guess"
    # the same in the languages whose answer statements are read (_ANSWER_IS)
    r"|vielleicht|wahrscheinlich|möglicherweise|eventuell|peut-être|peut\s+être|probablement"
    r"|quizás?|tal\s+vez|probablemente|posiblemente|forse|probabilmente|talvez|provavelmente"
    r"|misschien|waarschijnlijk|wellicht|может\s+быть|наверное|возможно|ربما|يحتمل|शायद"
    r"|아마도?|chyba|może|prawdopodobnie|muhtemelen|belki|galiba|bzw|beziehungsweise"
    r"|not\s+(?:\w+\s+)?(?:sure|certain|confident)|unless)\b"
    r"|\b(?:might|could|may)\s+be\s+(?:about\s+|around\s+)?[-−$\d\\]"  # "might be 42"
    r"|也许|可能|大概|たぶん|多分|おそらく|恐らく"
    r"|\\(?:vee|lor)(?![a-zA-Z])|\d\s*\|\s*\d"  # 31 \vee 32, 31 | 32: alternatives
    r"|\(\s*(?:or|otherwise)\b",  # 32 (or 31)
    re.IGNORECASE,
)
_OR_ANOTHER = re.compile(
    r"\b(?:or|otherwise|maybe|perhaps|possibly|probably|alternatively|oder|ou|или|أو|या)\b"
    r"[^.\n]{0,40}?\d",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"\b(?:actually|wait|oops|correction|i\s+mean|(?:could|might|may)\s+(?:also\s+)?be"
    r"|kidding|scratch\s+that|on\s+second\s+thought|misread|misunderstood|instead|rather"
    r"|unless|otherwise|alternatively|if\s+(?:i|we|you|one)|final|result|solution"
    r"|(?:also|or|else)(?=\s*[:=,]?\s*[-\u2212]?\d))\b",
    re.IGNORECASE,
)
"""Words after the final answer that may bring another one ("Actually, 7", "could also be 7",
"Just kidding, 7", "if I misread, 7", "Final: 7", "also 7", "else 7")."""
_ALSO = re.compile(
    r"\b(?:also|too|as\s+well|another|alternative(?:ly)?|equally|besides)\b", re.IGNORECASE
)
_ACCEPTABLE = re.compile(
    r"\b(?:possible|acceptable|valid|correct|right|works?|fine|answers?|solutions?|options?"
    r"|possibilit(?:y|ies)|candidates?|fits?|holds?|applies|satisf(?:y|ies))\b",
    re.IGNORECASE,
)
"""With :data:`_ALSO`: a sentence after the final answer offering another value as also
possible ("7 is also possible", "another valid answer is 7"): a hedge (:func:`_retracted`)."""
_OR_BEFORE = re.compile(
    r"\bor\b(?!\s+[A-Za-z]\s*=)[^.,;\n]{0,12}$"
    r"|(?:[)\]}]|\\infty)\s*(?:[,;/|∨]+|\b(?:vs|versus|else|ou|oder)\b)?\s*$"
    r"|(?<![\d.,/_^{])\d+(?:\.\d+)?[ \t]+$",  # "28080 104": two numbers side by side
    re.IGNORECASE,
)
r"""An "or" right before the last number, or a listed interval or tuple: ``(-\infty, 4) or
\frac{4}{5}`` and ``(4, \infty), \frac{4}{5}`` offer two answers."""
ALSO_WINDOW = 600
"""Characters after the final answer searched for another value offered as also possible."""
_CLAUSE_END = re.compile(r"\.(?=\s|$)|\n")
_JOINER = re.compile(
    r"[\s$]*(?:(?:,|;|/|\bor\b|\band\b|\bnor\b|\\text\{\s*or\s*\})[\s$]*)+"
    r"(?:[A-Za-z]\s*=\s*)?"  # x = 2 or x = 3: the roots, one list
)
_ASIDE = re.compile(r"(?<=\S)\s+\([^()]*[^\W\d_]{2}[^()]*\)\s*$")
_SPAN = re.compile(
    r"\$\$(.{1,1000}?)\$\$|\$(.{1,1000}?)\$|\\\((.{1,1000}?)\\\)|\\\[(.{1,1000}?)\\\]", re.DOTALL
)
SPAN_WINDOW = 4000
"""The ``math`` rule looks for its span in this many final characters only."""
FALLBACK_WINDOW = 10_000
"""The ``math`` and ``last_number`` rules read only this many final characters."""
MAX_CANDIDATES = 64
"""More distinct explicit answers than this is a hedge outright (no list answer is so long),
and so are this many "the answer is" statements beside a final ``####`` or box."""


def _hedges(answer: str, after: str) -> bool:
    """True when the final answer, or what follows it in its sentence, offers another one.

    ``after`` is the text right after the answer; only its first clause is read. "or" and the
    same value again ("$5, or 500 cents") is a restatement, not a second answer; a doubt
    ("but I might have miscounted") is a hedge.
    """
    if _HEDGE_WORDS.search(answer) or _DOUBT.search(answer) or "?" in answer:
        return True  # "48?", "48?? I'm not confident", "42, but I may have misread"
    if _SIDE_BY_SIDE.search(answer) or _VERSUS.search(answer):
        return True  # "44 0", "44 vs 0", "44 else 0": two values, whatever joins them
    clause = _first_clause(after)
    other = _OR_ANOTHER.search(clause)
    if other and not _same(_tidy(_JOINER_WORD.sub("", clause[other.start() :], 1)), answer):
        return True
    return bool(_DOUBT.search(clause))


_SIDE_BY_SIDE = re.compile(
    r"(?<![\d.,/_^{])\d+(?:\.\d+)?[ \t]+(?!\d{3}(?![\d/]))\d+(?:\.\d+)?(?![\d./])"
)
"""Two numbers with only a space between them (``44 0``; not ``1 000`` nor ``2 1/2``)."""
_VERSUS = re.compile(r"\d\s*(?:\b(?:vs\.?|versus|else|oder|ou|или|或)\s|∨)\s*[-−$\\]?\d", re.I)
"""Two values joined by a word of choice (``44 vs 0``, ``44 oder 0``, ``44 ∨ 0``)."""
_JOINER_WORD = re.compile(r"^\W*\w+\s*")
_DOUBT = re.compile(
    r"\b(?:might|may|could)\s+have\s+(?:mis\w*|made|got|gotten)|\bmiscount\w*"
    r"|\bnot\s+(?:\w+\s+)?(?:sure|certain|confident)"
    r"|\bunsure\b|(?<!\bno\s)(?<!without\s)(?<!beyond\s)\bdoubt",
    re.IGNORECASE,
)
"""Doubt about the answer just given: a hedge."""


def _first_clause(after: str) -> str:
    """The clause right after an answer; a line holding only a joiner ("or") runs on."""
    after = after[:300].lstrip(" \t\n*$}).,;:")
    stop = _CLAUSE_END.search(after)
    if stop is not None and _JOINER_LINE.fullmatch(after[: stop.start()]):
        rest = _CLAUSE_END.search(after, stop.end())
        return after[: rest.start()] if rest else after
    return after[: stop.start()] if stop else after


_JOINER_LINE = re.compile(r"\s*(?:or|else|also|otherwise|alternatively|maybe|perhaps)\s*", re.I)


def _retracted(answer: str, after: str) -> bool:
    r"""The clause after the final answer takes it back, or adds another number.

    "#### 5. Actually, 7.", "\boxed{5}. Wait, no: 7.", "It could also be 7.": a correction
    or an alternative (:data:`_CORRECTION`) and, last in that clause, a number that is not
    the answer ("Wait, let me check: 3*4 = 12" after ``12`` is no retraction).
    """
    clause = _first_clause(after)
    if _CORRECTION.search(clause) and _other_value(clause, answer):
        return True
    sentences = _CLAUSE_END.split(after[:ALSO_WINDOW])
    if any(_DOUBT.search(sentence) for sentence in sentences):
        return True  # "\boxed{42}. I'm not sure which one is intended."
    return any(
        (_offers_another(sentence) or _HEDGE_WORDS.search(sentence))
        and _other_value(sentence, answer)
        for sentence in sentences
    )


def _offers_another(sentence: str) -> bool:
    """The sentence offers a value as also possible ("7 is also acceptable", "another answer")."""
    return bool(_ALSO.search(sentence) and _ACCEPTABLE.search(sentence))


def _other_value(clause: str, answer: str) -> bool:
    """The last value of ``clause`` is another value than ``answer`` ("4.2 × 10¹" is 42)."""
    found = _numbers(clause)
    if not found:
        return False
    last = _last_number(clause, found)
    return not (_same(found[-1].group(0), answer) or (last and _same(last.answer, answer)))


def _enumeration(text: str, numbers: list[re.Match]) -> list[str]:
    """The numbers of the enumeration that ends with the last one (``31 or 32``, ``1, 2, 3``).

    Numbers count as enumerated when only separators (``,`` ``;`` ``/`` ``or`` ``and``) stand
    between them; a fraction chain ``31/32/33`` is split into its three numbers.
    """
    found = [numbers[-1]]
    for m in reversed(numbers[:-1]):
        if not _JOINER.fullmatch(text, m.end(), found[-1].start()):
            break
        found.append(m)
    found.reverse()
    if len(found) == 2 and text[found[0].end() : found[1].start()] == ",":
        return [text[found[0].start() : found[1].end()]]  # 2,74: a decimal comma
    chained = len(found) > 1 and any(
        text[a.end() : b.start()].strip() == "/" for a, b in zip(found, found[1:], strict=False)
    )
    return [p for m in found for p in (m.group(0).split("/") if chained else [m.group(0)])]


def _last_number(text: str, numbers: list[re.Match]) -> Extraction | None:
    """The rule of last resort: the last number, or the enumeration that it ends."""
    if not numbers:
        return None
    items = _enumeration(text, numbers)
    last = numbers[-1]
    start = text.rfind("\n", 0, last.start()) + 1
    sentence = text[max(start, last.start() - 200) : last.start()]
    clause = _CLAUSE_END.split(sentence)[-1] + _first_clause(text[last.end() :])
    hedged = (
        _hedges(sentence + last.group(0), text[last.end() :])
        or _offers_another(clause)
        or bool(_OR_BEFORE.search(sentence))
    )
    if len(items) > 1:
        return Extraction(", ".join(items), "last_number", hedged)
    run = _unicode_math(text, last)
    if run is not None:  # "√2", "2·π·3 = 6π", "(−∞, 3]", "x ≤ 3": the expression, not its digit
        return Extraction(run, "last_number", hedged)
    arithmetic = _ARITHMETIC_BEFORE.search(text, max(0, last.start() - 80), last.start())
    if arithmetic is not None:  # "the total is 1+2": the sum, never its last operand
        return Extraction(text[arithmetic.start() : last.end()], "last_number", hedged)
    answer = _currency_before(text, last.start()) + items[0] + _unit_after(text, last.end())
    before = _AMOUNT_BEFORE.search(text, max(0, last.start() - 40), last.start())
    if before is not None and compound(text[before.start() : last.start()] + answer):
        answer = text[before.start() : last.start()] + answer  # 12 dollars and 50 cents
    said = _said_before(text, numbers, answer)
    if said is not None:  # "2 hours, or 120 minutes", "1.5 hours (90 minutes)": one value
        return Extraction(said, "last_number", bool(_HEDGE_WORDS.search(sentence)))
    return Extraction(answer, "last_number", hedged)


_CURRENCY_SIGN = re.compile(r"(?:\\\$|[$€£¥₹₺])\s?$")


def _currency_before(text: str, start: int) -> str:
    """The currency sign written right before a number ("$15 per day"), or ""."""
    m = _CURRENCY_SIGN.search(text, max(0, start - 3), start)
    return m.group(0) if m else ""


_RUN_CHAR = re.compile(r"[\d.,\s√∛∜π∞±∓≤≥<>=×÷·−+*/^()\[\]²³⁰¹⁴⁵⁶⁷⁸⁹⁻]")
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
    run = run.rsplit("=", 1)[-1].strip(" \t\n.,;:")
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
        run + _unit_after(text, end - (len(text[start:end]) - len(text[start:end].rstrip())))
    ) or None


def _said_before(text: str, numbers: list[re.Match], answer: str) -> str | None:
    """The amount before the last one when the last only restates it, else None.

    "2 hours, or 120 minutes" and "1.5 hours (90 minutes)" give the first amount.
    """
    if len(numbers) < 2:
        return None
    prev, last = numbers[-2], numbers[-1]
    unit = _unit_after(text, prev.end())
    first = prev.group(0) + unit
    between = text[
        prev.end()
        + len(_UNIT_AFTER.match(text, prev.end()).group(0) if unit else "") : last.start()
    ]
    if not _RESTATING.fullmatch(between) or not _same(first, answer):
        return None
    return first


_RESTATING = re.compile(r"\s*(?:,?\s*(?:or|i\.\s?e\.,?|that\s+is,?)\s+|\(\s*)", re.IGNORECASE)


_ARITHMETIC_BEFORE = re.compile(r"(?<![\w.])(?:\d+(?:\.\d+)?(?:\s*[+*×·÷]\s*|\s+-\s*|-\s+))+$")
"""Numbers and operators right before the last number: an expression the number ends. A
hyphen glued on both sides is a range ("3-5"), not a subtraction."""
_AMOUNT_BEFORE = re.compile(r"\d+(?:\.\d+)?\s*[A-Za-z]+\s*(?:,\s*|and\s+)?$")
"""An amount right before the last number, as in "2 hours 15 minutes" (see ``parse.compound``)."""


_NOT_RATE = frozenset({"each", "every", "a"})
_UNIT_AFTER = re.compile(r"[ \t]*((?:°\s*[CF]|[A-Za-z€£¥₹¢])[A-Za-z/^23²³. ]{0,40})")


def _unit_after(text: str, end: int) -> str:
    """The unit written right after the number ending at ``end`` (`` seconds``, `` km/h``), or "".

    The last number of "so it takes 300 seconds." is ``300 seconds``: its unit is part of the
    answer (``300 minutes`` is another one). The longest run of up to four words that names a
    unit of :mod:`envhub.envs.math.units` is kept; a word that names none (``apples``) is not.
    """
    m = _UNIT_AFTER.match(text, end)
    if m is None:
        return ""
    words = m.group(1).rstrip(". ").split(" ")[:4]
    cut = next((i for i, w in enumerate(words) if w.lower() in _NOT_RATE), len(words))
    words = words[:cut]  # "5 km each day" ran 5 km: "each" and "every" start no rate here
    if words[:1] == ["in"] and len(words) > 1:
        return ""  # "7 in all": a preposition; "7 in." is inches
    for n in range(len(words), 0, -1):
        phrase = " ".join(words[:n]).rstrip(".").replace("²", "^2").replace("³", "^3")
        if phrase.startswith("°"):
            phrase = "deg" + phrase[1:].strip().lower()
        if phrase and measure(phrase) is not None:
            return " " + phrase
    return ""


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
        if not _JOINER.fullmatch(text, m.end(), joined[-1].start()):
            break
        joined.append(m)
    contents = [_span_value(m) for m in reversed(joined)]
    content = ", ".join(c for c in contents if c)
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
        found = [a for a in (_tidy(m.group(1)) for m in hashes) if a]
        if "\\boxed" in text or "\\fbox" in text:
            found += boxed_contents(text)
        if found:
            return "hash", found, hashes[0].start(), hashes[-1].end()
    if "\\boxed" in text or "\\fbox" in text:
        boxes = boxed_contents(text)
        end = _end_of_last_box(text)
        stated_later = _answer_is(text[end:])
        if boxes and not stated_later:  # "The final answer is ..." after the boxes wins
            first = min(i for i in (text.find("\\boxed"), text.find("\\fbox")) if i >= 0)
            return "boxed", boxes, first, end
    stated = list(_statements(text))
    if stated:  # the last statement is the answer; any other one must agree (_contradicted)
        start, answer = stated[-1]
        end = text.find(answer, start)
        end = len(text) if end < 0 else end + len(answer)
        return "answer_is", [_stated_value(answer)], start, end
    return None


_RESTATEMENT = re.compile(r"(.+?)\s+\(([^()]+)\)\s*")
_SAID_AGAIN = re.compile(
    r"(.+?)\s*,?\s*(?:or(?:\s+equivalently)?|equivalently|i\.\s?e\.,?|that\s+is,?|es\s+decir,?"
    r"|c'est-à-dire,?|d\.\s?h\.,?|то\s+есть"
    r"|das\s+heißt,?|ou\s+seja,?|cioè,?)\s+(.+)",
    re.IGNORECASE,
)
"""The answer said again another way ("$5, or 500 cents", "0,5, es decir, 1/2")."""
_SURELY = re.compile(
    r"\s*,?\s*(?:no\s+doubt(?:\s+about\s+it)?|for\s+sure|definitely|certainly|of\s+course)\W*$",
    re.IGNORECASE,
)
_SUFFIX = re.compile(r"(?<=\d)['’][^\W\d_]{1,4}$")
_REJECTED = re.compile(r"\s*(?:—|–|--|,|;)\s*(?:and\s+|but\s+)?not\s+[^.]*$", re.IGNORECASE)
"""A rejected value after the answer: "7 — not 8, as one might think"."""
_OFFERS = re.compile(
    r"\b(?:also|too|though|although|plausible|likely|possible|alternatively|or|otherwise|could"
    r"|might|may|if|else)\b",
    re.IGNORECASE,
)
"""Words in an aside that offer its number as another answer: "15 (though 16 is plausible)"."""


def _offers_value(aside: str, answer: str) -> bool:
    """An aside offers another value: a cue word and a number that is not the answer again.

    "15 (though 16 is also plausible)" offers 16; "3,50 € (also 350 Cent)" says 3,50 € again.
    """
    found = _numbers(aside)
    if not found or not _OFFERS.search(aside):
        return False
    said = found[-1].group(0) + _unit_after(aside, found[-1].end())
    return not _same(said, answer.strip())


def _stated_value(answer: str) -> str:
    """The value a statement gives.

    Without an aside ("32 apples (16 pairs)") unless the aside offers another answer ("5 (or 6
    if ...)", kept so that it is read as a hedge) or restates it ("2 km (2000 m)"), and of a
    chain of numbers its last value ("3 ÷ 2 = 1.5" states ``1.5``).
    """
    answer = _REJECTED.sub("", answer) or answer  # "7 — not 8"
    answer = _SUFFIX.sub("", answer)  # Turkish "12'dir", "3,5'tir": the number
    answer = _SURELY.sub("", answer) or answer  # "42, no doubt"
    aside = _ASIDE.search(answer)
    offers = aside is not None and _offers_value(aside.group(0), answer[: aside.start()])
    if not _HEDGE_WORDS.search(answer) and not offers:
        answer = _ASIDE.sub("", answer) or answer
        restated = _RESTATEMENT.fullmatch(answer) or _SAID_AGAIN.fullmatch(answer)
        if restated and _same(restated.group(1), restated.group(2)):
            answer = restated.group(1)  # "2 km (2000 m)", "$5, or 500 cents": one value
    chain = answer.split("=")
    if len(chain) > 1 and chain[-1].strip() and not re.search(r"[A-Za-z]", "".join(chain[:-1])):
        return chain[-1].strip()
    return answer


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


_AMBIGUOUS = re.compile(r"\d\.\d{3}(?!\d)|\d,\d")
"""A number a locale may read two ways (``1.250``, ``1,5``)."""


def extract_answer(text: str) -> Extraction:
    """Find the final answer of a response (rules and hedging in the module docstring).

    Only the last :data:`MAX_RESPONSE_CHARS` characters are read, with their digits in ASCII
    (:func:`~envhub.envs.math.latex.plain_digits`: ``１２３``, ``١٢٣``, ``1\u200b23``). The
    answer of a response that writes numbers the continental way has them in English notation
    (``1.250`` -> ``1250``; :mod:`envhub.envs.math.locales`).
    """
    text = plain_digits(text[-MAX_RESPONSE_CHARS:])
    found = _extract(text)
    if found.answer and _AMBIGUOUS.search(found.answer) and locales.continental(text):
        found = replace(found, answer=locales.english_notation(found.answer))
    return found


def _lead(text: str, start: int) -> str:
    r"""The words right before an explicit answer, in its sentence ("probably \boxed{9}")."""
    lead = text[max(0, start - 60) : start]
    return re.split(r"[.!?\n。]", lead)[-1]


def _extract(text: str) -> Extraction:
    explicit = _explicit(text)
    if explicit:
        method, found, first, end = explicit
        if len(set(found)) > MAX_CANDIDATES:  # checked before the quadratic de-duplication
            return Extraction(found[-1], method, True)
        distinct = _distinct(found)
        answer = found[-1] if len(distinct) == 1 else ", ".join(distinct)
        tail = text[end:] if method != "answer_is" else ""
        between = text[max(first, end - 400) : end] if len(distinct) > 1 else answer
        hedged = (
            _hedges(between, tail)
            or bool(_HEDGE_WORDS.search(_lead(text, first)))
            or _contradicted(text, distinct)
            or (len(distinct) == 1 and _retracted(answer, text[end:]))
        )
        return Extraction(answer, method, hedged)
    tail = text[-FALLBACK_WINDOW:]  # the last-resort rules read only the end of the response
    numbers = _numbers(tail)
    number = _last_number(tail, numbers)
    span = _math_span(tail, numbers[-1].end() if numbers else 0)
    if span is not None and not (number and "," in number.answer and _NUMBER.fullmatch(span[0])):
        content, end = span
        return Extraction(content, "math", _hedges(content, tail[end:]))
    return number or Extraction(None, None, False)


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
    marker = _tidy(markers[0])
    if found.answer != marker and locales.continental(text):
        marker = locales.english_notation(marker)
    return 0.0 if found.hedged or found.answer != marker else 1.0


# ---------------------------------------------------------------- equivalence


_HARD = ("too large", "too deeply")
"""envhub parse failures that no other parser may overrule: a hostile size or depth (and, for
a prediction, its length: a gold may be a whole worked solution, a final answer may not)."""


def _hard(error: Exception, *, pred: bool = False) -> bool:
    hard = _HARD + ("longer than",) if pred else _HARD
    return isinstance(error, RecursionError) or any(h in str(error) for h in hard)


@lru_cache(maxsize=4096)
def _gold(gold: str) -> Answer | None:
    """Envhub's parse of a gold answer; None when only math-verify may read it.

    Raises:
        GoldAnswerError: The gold is broken or hostile (unbalanced, too large, too deep).
    """
    boxes = boxed_contents(gold) if "\\boxed" in gold or "\\fbox" in gold else []
    if len(_distinct(boxes)) > 1:
        return None  # several boxes: math-verify reads what the prose around them says
    try:
        return parse_answer(gold)
    except _PARSE_ERRORS as e:
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
    gold_ans = _gold(gold)
    try:
        pred_ans: Answer | None = parse_answer(pred)
    except _PARSE_ERRORS as e:
        if _hard(e, pred=True):
            return False  # hostile or broken: a wrong answer, decided here in microseconds
        pred_ans = None  # envhub cannot read it; math-verify may
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
    except _PARSE_ERRORS:
        return None
    return (text, read) if isinstance(read, Expr) and read.value is not None else None
