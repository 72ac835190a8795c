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
from functools import lru_cache

from .compare import quick_compare, read
from .hedges import (
    APPROXIMATE,
    ASIDE,
    BOUND,
    DOUBT,
    HEDGE_WORDS,
    TOLERANCE,
    about_in_answer,
    offers_value,
)
from .lastnumber import (
    MINUS_WORD,
    MONTHS,
    REFERENCE,
    UNIT_BEFORE,
    find_numbers,
    last_number,
    tidy,
    unit_said_after,
)
from .locales import ANSWER_WORD, ANSWER_WORDS, IS_WORDS, english_notation
from .numerals import CJK_CLOCK, PER_TIME_LEAD
from .parse import Answer, Expr, Items, Seq, Text
from .restating import restated, rival_amount

_EASTERN_WORDS = (
    *("答案", "答え", "정답", "उत्तर", "答", "답"),
    *("উত্তর", "సమాధానం", "คำตอบ", "پاسخ", "תשובה", "jibu", r"ang\s+sagot", "sagot"),
    *(
        "vastaus",
        "válasz",
        "جواب",
        "အဖြေ",
        "விடை",
        r"vastaus\s+on(?=\s)",
    ),  # (its stem is "vastaus")
)
""""Answer" in Chinese, Japanese, Korean, Hindi, Bengali, Telugu, Thai, Persian, Hebrew,
Swahili, Tagalog, Finnish, Hungarian, Urdu and Persian, Burmese and Tamil (before 是, は, 은,
है, คือ, "ni", "ay", a colon or a number: "جواب ۳۲ ہے", "অতএব উত্তর ২৮।", "အဖြေ - ၂၄";
the one-character 答 and 답 of a worked school answer only before a colon: "答：5米。")."""
_ARABIC_WORDS = ("الإجابة", "الجواب")
_EASTERN_WORD = "|".join(w if len(w) > 1 else rf"{w}(?=\s*[:：]|은)" for w in _EASTERN_WORDS)
_ARABIC_WORD = "|".join(_ARABIC_WORDS)
_ANSWER_IS = re.compile(
    rf"(?:answer|correct\s+(?:choice|option)|{ANSWER_WORD}|{_EASTERN_WORD})"
    r"(?:\s+(?:final|finale|finales|définitive|definitiva|finaal|final[ae]|نهایی|النهائية))?"
    r"(?:\s*\([^()\n]{1,40}\)(?=\s*[:：]))?"  # "Final answer (English summary):"
    rf"[\"']?\s*(?:(?:{IS_WORDS}|ni|ay)(?![^\W\d_])|是|は|은|है|คือ|:|：|=|\|(?=\s*\**[-−+$€£¥\d\\(]))\s*[:：]?\s*"
    rf"|(?:{ANSWER_WORD}|{_EASTERN_WORD})\s*(?:[-–]\s*)?\s(?=[-−+$€£¥₹\\\d(\[])"  # "die Antwort 42"
    rf"|(?:{_ARABIC_WORD})\s*(?:هي|:)?\s*",
    re.IGNORECASE,
)
"""A statement of the answer ("the answer is", "Final answer:", ``"answer": 43``, ``| Final
answer | 65 |``, "Antwort:", "La réponse est",
"La respuesta es", "A resposta é", "La risposta è", "Het antwoord is", "Ответ:", "答案是",
"الإجابة"; not a word ending in "answer", which :func:`find_statements` checks: a leading ``\b``
made the scan 4 times slower)."""
_ANSWER_STEMS = (
    "answer",
    "choice",
    "option",
    *(w.rsplit("+", 1)[-1] for w in _EASTERN_WORDS),
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
    r"(?<!\bRs)(?<!\bFr)(?<!रु)"  # Rs. 50, Fr. 1'250, रु. 80: the currency's abbreviation
    r"(?:(?<!Std|Min|Sek|hrs|min|sec|i\.e|e\.g)\.(?=[\s*]|$)|\.(?=$|[\s*](?![ \t]*\d)))"
    r"|\n|[。！？।။۔።]|\s+(?:because|since|which|as|denn|weil|car|porque|perché|omdat)\b"
    r"|;\s+(?=if\b|otherwise\b)|\s*#{3,}",
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


def find_statements(text: str) -> tuple[tuple[int, str], ...]:
    """Each "the answer is ..." statement: where it starts, and the answer it states.

    Read once per text (the final answer's rule and the hedge check both ask).
    """
    lower = text.lower()
    if not any(stem in lower for stem in _ANSWER_STEMS):
        return ()  # a fast first test: most last-number responses state nothing
    return _statements(text)


@lru_cache(maxsize=8)
def _statements(text: str) -> tuple[tuple[int, str], ...]:
    return tuple(_each_statement(text))


def _each_statement(text: str) -> Iterator[tuple[int, str]]:
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
        answer = tidy((answer[: stop.start()] if stop else answer).strip(" |*}\"'"))
        if answer and not _JUDGED.fullmatch(answer):
            yield m.start(), answer


_JUDGED = re.compile(
    r"(?i)(?:(?:indeed|now|thus|also|therefore)\s+)?(?:confirmed|correct|right|verified|checked"
    r"|consistent|valid|reasonable|plausible|sensible|as\s+(?:follows|expected|above|before)"
    r"|below|above|bestätigt|richtig|korrekt|correcte?|correcta|corretta|confirmée?|confirmada"
    r"|подтвержден[ао]?|верн[ыо]й?|正确|正しい)[.!]?"
)
"""What a check says of the answer ("So the answer is confirmed."): no value stated."""


MAX_CANDIDATES = 64
"""More distinct explicit answers than this is a hedge outright (no list answer is so long),
and so are this many "the answer is" statements beside a final ``####`` or box."""


def contradicted(text: str, finals: list[str]) -> bool:
    r"""A committed answer stated elsewhere ("The answer is 5.") differs from the final ones.

    A statement under a hypothesis ("if the answer is 5", "suppose", "check whether") is not
    committed; one that cannot be read, or not decided exactly (``\sqrt{2}`` beside
    ``1.414``), is given the benefit of the doubt.
    """
    stated, supposed = set(), []
    for count, (start, answer) in enumerate(find_statements(text)):
        if count == MAX_CANDIDATES:
            return True  # no single answer is stated so many times: read no further
        (supposed.append if _hypothetical(text, start) else stated.add)(stated_value(answer))
    if len(supposed) > 1 and not stated:  # "if order matters, 12; if not, the answer is 6"
        stated.update(supposed[:-1])
    return any(contradicts(a, finals) for a in stated)


def _hypothetical(text: str, start: int) -> bool:
    """A word of :data:`_HYPOTHESIS` in the 40 characters before ``start``, same sentence."""
    clause = re.split(r"[.\n]", text[max(0, start - 40) : start].lower())[-1]
    return not _HYPOTHESIS.isdisjoint(re.findall(r"[a-z]+", clause))


def contradicts(statement: str, finals: list[str]) -> bool:
    """``statement`` is decisively none of ``finals``.

    It is read whole and, of a chain (``6*7 = 42``), as its last value: either may match.
    """
    whole = ASIDE.sub("", statement) or statement
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


_SURELY = re.compile(
    r"\s*,?\s*(?:no\s+doubt(?:\s+about\s+it)?|for\s+sure|definitely|certainly|of\s+course)\W*$",
    re.IGNORECASE,
)
_SUFFIX = re.compile(
    r"(?<=\d)['’][^\W\d_]{1,4}$|(?<=\S)(?:です|でした|である|だ|입니다|이다|예요|이에요)$"
    r"|(?<=\S)\s+(?:है|ہے|است|ነው)$"  # Hindi, Urdu, Persian, Amharic "is" after the value
)
_REJECTED = re.compile(
    r"\s*(?:—|–|--|,|;|\(|،)\s*(?:and\s+|but\s+|а\s+|et\s+|y\s+|e\s+|und\s+|en\s+)?"
    r"(?:not|nicht|pas|non|no|niet|не|não|وليست|وليس|ليست|ليس)\s+(?=[-−$€£¥₹]?\d)(?:[^.]|\.(?=\d))*$"
    r"|\s*(?:,|،|;)\s*[$€£¥₹]?\d[\d.,]*\s*(?:değil|नहीं|নয়)\s*[.।]?\s*$",
    re.IGNORECASE,
)
"""A rejected value after the answer: "7 — not 8, as one might think", "8 (not 18, which ...",
"7, nicht 8", "7 — pas 8", "50, а не 60", "30 et non 33", "84, 80 değil", "₹325, ₹335 नहीं"
(a value: "42 — não tenho certeza" is doubt, not a rejection)."""
_NOT_THIS_BUT = re.compile(
    r"not\s+[^;,]+[;,]\s*(?:but\s+)?(?:it(?:'s|’s|\s+is)\s+|rather\s+)?(.+)", re.IGNORECASE
)
"""A rejected value before the answer: "not 5; it is 6", "not 5, but 6"."""


def stated_value(answer: str) -> str:
    """The value a statement gives.

    Without an aside ("32 apples (16 pairs)") unless the aside offers another answer ("5 (or 6
    if ...)", kept so that it is read as a hedge) or restates it ("2 km (2000 m)"), and of a
    chain of numbers its last value ("3 ÷ 2 = 1.5" states ``1.5``).
    """
    bold, _, after_bold = answer.strip().strip("*").partition("**")
    if after_bold and not re.search(r"\d", after_bold) and not HEDGE_WORDS.search(after_bold):
        answer = bold  # "**Answer: 500 g** of nuts in total": the bold part
    elif after_bold.lstrip().startswith("("):
        answer = bold + after_bold  # "**XIV** (14)": the aside is read as one
    clock = CJK_CLOCK.search(answer)
    if clock is not None and (clock.group("mer") or clock.group("m") or clock.group("half")):
        return clock.group(0)  # "下午3点45分到达": the time of day
    answer = _REJECTED.sub("", answer) or answer  # "7 — not 8"
    rejected_first = _NOT_THIS_BUT.fullmatch(answer)
    if rejected_first is not None:
        answer = rejected_first.group(1)  # "not 5; it is 6"
    answer = _SUFFIX.sub("", answer)  # Turkish "12'dir", "3,5'tir": the number
    answer = _SURELY.sub("", answer) or answer  # "42, no doubt"
    answer, plain = _without_aside(answer)
    if plain:
        answer = _amount_in_words(answer)  # "Die Fahrt dauert 3 Stunden": 3 Stunden
    chain = answer.split("=")
    if len(chain) > 1 and chain[-1].strip() and not re.search(r"[A-Za-z]", "".join(chain[:-1])):
        return chain[-1].strip()
    return answer


_PLAIN_NUMBER = re.compile(r"[-−]?[$€£¥]?\d[\d.,]*%?")


def marked_value(answer: str) -> str:
    """The value of a ``####`` answer: without a rejected value or an aside that offers none.

    "#### 12 cm, not 12 mm" is 12 cm, "#### 45 minutes (3 of them late)" 45 minutes.
    """
    if _PLAIN_NUMBER.fullmatch(answer):
        return answer  # "#### 42": nothing to drop (most answers)
    return _without_aside(_REJECTED.sub("", answer) or answer)[0]


def _without_aside(answer: str) -> tuple[str, bool]:
    """``answer`` without an aside that offers no other value; whether it hedges in no way.

    An aside that says the value again goes ("2 km (2000 m)", "$5, or 500 cents"); one that
    says another stays, to be read as a hedge ("42 (forty-three)", "5 (or 6 if ...)").
    """
    aside = ASIDE.search(answer)
    offers = aside is not None and (
        offers_value(aside.group(0), answer[: aside.start()])
        or rival_amount(aside.group(0), answer[: aside.start()])  # "42 km (26 km by road)"
    )
    hedge = HEDGE_WORDS.search(answer) or DOUBT.search(answer) or APPROXIMATE.search(answer)
    if hedge or TOLERANCE.search(answer) or offers:  # "42 (to within 2)" stays to hedge
        return answer, False
    said, other = restated(answer)
    if said == answer and not other:
        return tidy(ASIDE.sub("", answer)) or answer, True  # "5 km** (about 3.1 miles)": 5 km
    return (answer, False) if other else (said, True)


_CURRENCY_LEAD = re.compile(
    r"\b(?:CHF|EUR|USD|GBP|JPY|INR|CNY|Rs|Rp|SEK|NOK|DKK|PLN|TL|S?Fr)\.?\s*$"
)
_WORDS_BEFORE = re.compile(r"(?:[^\W\d_]+[\s'’,:]*)+")
_BOUND_WORDS = re.compile(
    r"(?i)\b(?:at\s+(?:least|most)|more|less|fewer|greater|over|under|up\s+to|not|no|nicht|pas"
    r"|mindestens|höchstens|mehr|weniger|plus|moins|más|menos|più|meno|mais|не|менее|более)\b"
    r"|至少|最多|以上|以下|超过|不到|不是|以内|未満"
)
"""Words that make the number after them a bound or a negation ("at least 5", "not 5")."""


_RATE_LEAD = re.compile(rf"(?i)(?:{PER_TIME_LEAD})\s*$")
_MONTH_LAST = re.compile(rf"\b{MONTHS}\.?\s*$")


def _amount_in_words(answer: str) -> str:
    """The amount a sentence states ("Die Fahrt dauert 3 Stunden", "一共1200人", "需要2小时30分钟").

    Only a statement that is words and then one amount: the words before the first number
    are dropped when what follows them reads as a value (a compound amount, ``2 h 30 min``,
    included), or when the statement holds that one number only; never after words of a bound
    ("at least 5") and never when the words alone would be the answer.
    """
    lead = _WORDS_BEFORE.match(answer)
    if lead is None or lead.end() == len(answer) or _BOUND_WORDS.search(lead.group(0)):
        return answer
    if BOUND.search(lead.group(0)) or about_in_answer(lead.group(0), lead.end()):
        return answer  # "hooguit 7", "etwa 42", "takriban mayai 350"
        return answer
    rate = _RATE_LEAD.search(lead.group(0))
    if rate is not None:
        return answer[rate.start() :]  # "速度是每小时60公里": the speed, 每小时60公里
    if _MONTH_LAST.search(lead.group(0)):
        return answer  # "March 15": a date, not the amount 15
    if REFERENCE.search(lead.group(0)):
        return answer  # "see Table 42": a name, not the amount 42
    if not re.search(r"[^\W\d_]{2}|[\u4e00-\u9fff]", lead.group(0)):
        return answer  # "x 5": a symbol, not words (one Han character is a word: 共)
    if lead.group(0)[-1].isalpha() and lead.group(0)[-1] < "\u2e80":
        return answer  # "A1", "x72": a digit glued to a letter (Han text has no spaces: 一共1200)
    said = read(answer)
    if not (isinstance(said, str) or _prose(said)):
        return answer  # x = 5, \frac{1}{2} apples: a value already
    rest = answer[lead.end() :]
    if MINUS_WORD.search(lead.group(0)):  # "气温是零下5℃": below zero
        rest = "-" + rest
    unit = UNIT_BEFORE.search(lead.group(0))
    if unit is not None:  # "Jibu ni kilomita 12": 12 km
        rest = f"{rest} {unit_said_after(unit)}"
    currency = _CURRENCY_LEAD.search(lead.group(0))
    if currency is not None:  # "Total: CHF 50": the code is the amount's
        rest = currency.group(0).strip() + " " + rest
    if isinstance(read(english_notation(rest)), Expr):  # one value, never a list (3 and 4)
        return rest
    numbers = find_numbers(rest)
    return last_number(rest, numbers)[0] if len(numbers) == 1 else answer
