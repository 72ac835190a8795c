r"""Statements of the answer: "the answer is 42", "Final answer: 42", "Antwort: 42", "答案是 42".

:func:`find_statements` finds each statement, in English and in the other languages of
:data:`_ANSWER_IS`, with the answer it states (to the end of its sentence, after words such as
"therefore"). :func:`stated_value` reads the value a statement gives: without an aside ("32
apples (16 pairs)"), a restatement ("2 km (2000 m)") or a rejected value ("7 — not 8"), and of
a chain its last value ("3 ÷ 2 = 1.5"). :func:`contradicted` tells whether a statement made
elsewhere in the response commits to a value that is decisively none of the final answers
("The answer is 5. ... #### 7"): two committed answers are a hedge, whichever the gold is. A
hypothesis ("if the answer is 5"), words ("the answer is the sum of ...") and what cannot be
decided exactly commit to nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .compare import quick_compare, read, same
from .hedges import HEDGE_WORDS, offers_value
from .lastnumber import tidy
from .locales import ANSWER_WORD, ANSWER_WORDS, IS_WORDS
from .parse import Answer, Items, Seq, Text

_EASTERN_WORDS = ("答案", "答え", "정답", "उत्तर")
""""Answer" in Chinese, Japanese, Korean and Hindi (before 是, は, 은, है or a colon)."""
_ARABIC_WORDS = ("الإجابة", "الجواب")
_EASTERN_WORD, _ARABIC_WORD = "|".join(_EASTERN_WORDS), "|".join(_ARABIC_WORDS)
_ANSWER_IS = re.compile(
    rf"(?:answer|correct\s+(?:choice|option)|{ANSWER_WORD}|{_EASTERN_WORD})"
    rf"\s*(?:{IS_WORDS}|是|は|은|है|:|：|=)(?![^\W\d_])\s*[:：]?\s*"
    rf"|(?:{ANSWER_WORD})\s+(?=[-−+$€£¥₹\\\d(\[])"  # "Also ist die Antwort 42"
    rf"|(?:{_ARABIC_WORD})\s*(?:هي|:)?\s*",
    re.IGNORECASE,
)
"""A statement of the answer ("the answer is", "Final answer:", "Antwort:", "La réponse est",
"La respuesta es", "A resposta é", "La risposta è", "Het antwoord is", "Ответ:", "答案是",
"الإجابة"; not a word ending in "answer", which :func:`find_statements` checks: a leading ``\b``
made the scan 4 times slower)."""
_ANSWER_STEMS = (
    "answer",
    "choice",
    "option",
    *_EASTERN_WORDS,
    *_ARABIC_WORDS,
    *ANSWER_WORDS.values(),
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
"""An English "(the final) answer is" right after a statement's opening, skipped: the Minerva
format writes "Final Answer: The final answer is $8$." (English only, as that format is)."""


_LATIN_LETTER = re.compile(r"[A-Za-zÀ-ÿ]")


def find_statements(text: str) -> Iterator[tuple[int, str]]:
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
        answer = tidy(answer[: stop.start()] if stop else answer)
        if answer:
            yield m.start(), answer


MAX_CANDIDATES = 64
"""More distinct explicit answers than this is a hedge outright (no list answer is so long),
and so are this many "the answer is" statements beside a final ``####`` or box."""


def contradicted(text: str, finals: list[str]) -> bool:
    r"""A committed answer stated elsewhere ("The answer is 5.") differs from the final ones.

    A statement under a hypothesis ("if the answer is 5", "suppose", "check whether") is not
    committed; one that cannot be read, or not decided exactly (``\sqrt{2}`` beside
    ``1.414``), is given the benefit of the doubt.
    """
    lower = text.lower()
    if not any(stem in lower for stem in _ANSWER_STEMS):
        return False
    stated, supposed = set(), []
    for count, (start, answer) in enumerate(find_statements(text)):
        if count == MAX_CANDIDATES:
            return True  # no single answer is stated so many times: read no further
        (supposed.append if _hypothetical(text, start) else stated.add)(stated_value(answer))
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
        said = read(reading)
        if isinstance(said, str) or _prose(said):
            return False
        for final in finals:
            value = read(final)
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


_ASIDE = re.compile(r"(?<=\S)\s+\([^()]*[^\W\d_]{2}[^()]*\)\s*$")
"""An aside in brackets, with words, after an answer: "32 apples (16 pairs)"."""


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


def stated_value(answer: str) -> str:
    """The value a statement gives.

    Without an aside ("32 apples (16 pairs)") unless the aside offers another answer ("5 (or 6
    if ...)", kept so that it is read as a hedge) or restates it ("2 km (2000 m)"), and of a
    chain of numbers its last value ("3 ÷ 2 = 1.5" states ``1.5``).
    """
    answer = _REJECTED.sub("", answer) or answer  # "7 — not 8"
    answer = _SUFFIX.sub("", answer)  # Turkish "12'dir", "3,5'tir": the number
    answer = _SURELY.sub("", answer) or answer  # "42, no doubt"
    aside = _ASIDE.search(answer)
    offers = aside is not None and offers_value(aside.group(0), answer[: aside.start()])
    if not HEDGE_WORDS.search(answer) and not offers:
        answer = _ASIDE.sub("", answer) or answer
        restated = _RESTATEMENT.fullmatch(answer) or _SAID_AGAIN.fullmatch(answer)
        if restated and same(restated.group(1), restated.group(2)):
            answer = restated.group(1)  # "2 km (2000 m)", "$5, or 500 cents": one value
    chain = answer.split("=")
    if len(chain) > 1 and chain[-1].strip() and not re.search(r"[A-Za-z]", "".join(chain[:-1])):
        return chain[-1].strip()
    return answer
