r"""What comes right before a final answer: doubt, a guess, or another value weighed with it.

"If I had to pick one, I'd say 13.\n#### 13" (:func:`doubted_before`), "It's either 12 or 13
hours.\n#### 12 hours" (:func:`weighed_before`), "It could also be 43, but I'll say
\\boxed{42}" (:func:`offered_before`), "She needs a little under 2 kg.\n#### 2 kg" and "135
if the discount applies and 138 if it doesn't.\n#### 135" hedge the answer the marker names
(:func:`hedged_before` reads them all).
"""

from __future__ import annotations

import functools
import re

from . import spelled
from .compare import same
from .hedges import HEDGE_WORDS, NEAR_BEFORE, OR_ANOTHER, POSSIBLE, about_before, other_value
from .lastnumber import find_numbers, unit_after
from .parse import relations_as_intervals
from .restating import THAT_IS, restated

_DOUBT_BEFORE = re.compile(
    r"(?i)\b(?:tentative(?:ly)?|if\s+i\s+had\s+to\s+(?:pick|guess|choose)|i['’]?d\s+(?:say|guess)"
    r"|my\s+(?:best\s+)?guess|not\s+(?:\w+\s+)?(?:sure|certain|confident)|unsure|doubt"
    r"|wouldn['’]?t\s+bet|cannot\s+decide|can['’]?t\s+decide|i\s+suspect|chances\s+are"
    r"|presumably|if\s+i['’]?(?:m|ve)\s+read(?:ing)?\s+(?:the\s+\w+|it)\s+right|leaning\s+toward"
    r"|depends?\s+on|dépend|hängt\s+davon\s+ab|depende|soit\s+[-$€£]?\d[^.\n]{0,30}\bsoit"
    r"|torn\s+between|submit\s+the\s+(?:first|second|former|latter)|going\s+with\s+the\s+(?:first|second)"
    r"|(?:two|both)\s+(?:approaches|methods|ways|readings)\s+(?:i\s+tried\s+)?give\s+\S+\s+and)\b"
)
"""Doubt or a guess in the sentence before a final answer (English: one short pattern, as it is
read before every ``####`` answer)."""


def doubted_before(before: str, answer: str) -> bool:
    r"""The sentence right before the final answer gives its value with doubt or a guess.

    "I'm fairly sure the total is 42, but I wouldn't bet on it.\n#### 42", "If I had to pick
    one, I'd say 13.\n#### 13".
    """
    sentences = [s for s in _STOPS.split(before[-300:]) if s.strip()]
    sentence = " ".join(sentences[-2:])  # "Two candidates survive: 42 and 43. I cannot decide."
    if not _DOUBT_BEFORE.search(sentences[-1] if sentences else ""):
        return False  # ("Perhaps it is easier to add first: 4 + 6 = 10." is no doubt on 10)
    value = find_numbers(answer)
    return bool(value) and any(same(n.group(0), value[0].group(0)) for n in find_numbers(sentence))


def weighed_before(before: str, answer: str) -> bool:
    r"""The sentence before the final answer weighs it against another value.

    "It takes about 40 minutes, maybe 45 if the lights are red.\n#### 45 minutes", "It's either
    12 or 13 hours.\n#### 12 hours": the answer is one of two values offered (a hedge), though
    the marker names one. Numbers joined otherwise ("add 20 or multiply 2 by 21") are none.
    """
    window = before[-300:].lower()
    if not any(word in window for word in _WEIGHING_WORDS):
        return False  # a cheap first test: most responses weigh nothing
    said = find_numbers(answer)
    if not said:
        return False
    value = said[0].group(0)
    sentence = _last_numbered(before)
    starts = (m.start() for m in re.finditer(r"(?<![\d.,])[$€£¥]?\d", sentence))
    for pair in filter(None, (_WEIGHED.match(sentence, start) for start in starts)):
        a = pair.group("a") + unit_after(sentence, pair.end("a"))
        b = pair.group("b") + unit_after(sentence, pair.end("b"))
        later = find_numbers(sentence[pair.end() :])
        if not later and (same(a, value) or same(b, value) or same(b, answer)) and not same(a, b):
            return True  # the two values end the sentence: no working after them settles it
    return False


_WEIGHING_WORDS = (
    *(" or ", "maybe", "perhaps", "possibly", "probabl", "likely", "rather", "vielleicht"),
    *("wahrscheinlich", "eher", " oder ", " ou ", "plutôt", "quizás", "aunque", "though"),
    *("obwohl", "embora"),
)
"""A cheap first test of :func:`weighed_before`: one of these in the 300 characters before."""
_STOPS = re.compile(r"\.(?=\s|$)|[!?。！？۔।။\n]")
_PAIR_NUMBER = r"[$€£¥]?\d+(?:[.,]\d+)?"
_WEIGHED = re.compile(
    rf"(?P<a>{_PAIR_NUMBER})(?:[ \t]+[^\W\d_]+){{0,4}}?[,;]?[ \t]+"
    r"(?:or|oder|ou|maybe|perhaps|possibly|probably|likely|rather|vielleicht|wahrscheinlich"
    r"|eher|probablement|plutôt|quizás|probablemente|aunque|although|though|obwohl|embora)"
    r"(?:[ \t]+(?:maybe|perhaps|possibly|even|eher|rather|more|plutôt))?"
    rf"(?:[ \t]+[^\W\d_]+){{0,2}}[ \t]+(?P<b>{_PAIR_NUMBER})",
    re.IGNORECASE,
)
"""Two values weighed: "40 minutes, maybe 45", "4 kg, or maybe 4.5", "$45 or $50"."""


def offered_before(lead: str, answer: str) -> bool:
    r"""The words before the final answer in its sentence offer another value.

    "It could also be 43, but I'll say \boxed{42}", "43 or perhaps \boxed{42}".
    """
    offers = OR_ANOTHER.search(lead) or _MIGHT_BE.search(lead) or POSSIBLE.search(lead)
    if offers and relations_as_intervals(answer):
        return False  # "$x<-10$ or $x>4$: \\boxed{x<-10 \\text{ or } x>4}": the set's pieces
    return bool(offers) and other_value(lead, answer)


_MIGHT_BE = re.compile(r"(?i)\b(?:could|might|may)\s+(?:also\s+|well\s+)?be\b")


def hedged_before(before: str, answer: str) -> bool:
    r"""The words right before the final answer hedge it (``before``: up to 300 characters).

    A word of uncertainty or another value offered in the answer's own sentence ("probably
    \boxed{9}", "43 or perhaps \boxed{42}"), or the sentence before it doubting, weighing,
    approximating its value or giving it under a condition beside another.
    """
    lead = re.split(r"[.!?\n。]", before[-60:])[-1]
    return (
        bool(HEDGE_WORDS.search(lead))
        or offered_before(lead, answer)
        or weighed_before(before, answer)
        or doubted_before(before, answer)
        or approximated_before(before, answer)
        or conditional_before(before, answer)
        or _possible_before(before, answer)
        or _or_opens(before, answer)
        or _fallback_before(before, answer)
        or _said_otherwise_before(before, answer)
    )


def _fallback_before(before: str, answer: str) -> bool:
    r"""The sentence before the answer gives another value should it be wrong.

        "Solving 2x + 1 = 15, x = 7. If not, then x = 8.

    \boxed{7}": two answers, one a spare.
    """
    spare = _FALLBACK.search(_last_numbered(before))
    return spare is not None and not same(spare["value"], answer)


def _said_otherwise_before(before: str, answer: str) -> bool:
    r"""The answer, or the words right before it, said as another value.

    "La réponse est quarante-trois, soit $\boxed{42}$" (43, that is 42); "= 15 km, i.e. 1,500
    m.\n\n$\boxed{15\text{ km}}$" (the answer's value said again wrongly).
    """
    tail = before[-90:]  # (both shapes end within it: 40 characters, a word, 30 more)
    words = list(_THAT_IS_WORD.finditer(tail))
    if not words:
        return False
    last = words[-1]
    if _OPENS_ANSWER.fullmatch(tail, last.end()):  # "quarante-trois, soit $\boxed{"
        lead = _LEAD.search(tail, max(0, last.start() - 42), last.start())
        if lead is not None and _words_say_another(lead["x"], before, answer):
            return True
    line_start = tail.rfind("\n", 0, last.start()) + 1
    x = _LEAD.search(tail, max(line_start, last.start() - 32), last.start())
    y = _SAID.match(tail.rstrip(" \t\n$*.。!！"), last.end())
    return (
        x is not None
        and y is not None
        and same(x["x"].strip(), answer)
        and restated(f"{x['x'].strip()} ({y['y'].strip()})")[1]
    )


def _words_say_another(words: str, before: str, answer: str) -> bool:
    """``words`` (no digits) are a number in words that is not ``answer``."""
    if _DIGIT.search(words):
        return False  # (digits: "1.5 hours, i.e. 90 minutes" converts)
    langs = [spelled.language(before)] if spelled.language(before) else spelled.LANGUAGES
    said = next((d for lang in langs if (d := spelled.as_digits(words, lang)) != words), "")
    numbers = find_numbers(said)
    return bool(numbers) and not same(said[numbers[0].start() :].strip(), answer)


_THAT_IS_WORD = re.compile(rf"(?i)(?:{THAT_IS})")
_OPENS_ANSWER = re.compile(r"\s*[$(]*(?:\\boxed\{)?\s*")
_LEAD = re.compile(r"(?P<x>[^\n.,;:=]{1,40}?)\s*,?\s*$")
"""The words before a word of saying again, back to the clause's start."""
_SAID = re.compile(r"\s*(?P<y>(?:[^=,;:\n]|(?<=\d),(?=\d)){1,30})\s*$")
"""What a word of saying again says, to the end of its line."""


_FALLBACK = re.compile(
    r"(?i)\b(?:if\s+not|if\s+(?:that['’]?s|this\s+is|it['’]?s)\s+(?:wrong|not\s+(?:right|it))"
    r"|failing\s+that|wenn\s+nicht|falls\s+nicht|sinon|si\s+no|se\s+não|altrimenti|иначе)\b"
    r"[\s,:]*(?:then\s+|dann\s+|alors\s+|it['’]?s\s+|it\s+is\s+|(?:the\s+)?answer\s+is\s+)?"
    r"(?:[a-z]\s*=\s*)?(?P<value>[-−$€£]?\d[\d.,]*)"
)
"""Words that offer a spare answer: "If not, then x = 8", "sinon 8", "иначе 8"."""


def _or_opens(before: str, answer: str) -> bool:
    r"""The sentence before the answer opens with "or" and offers another value.

    "Also hat Lena 13 Jahre. Oder vielleicht 14, wenn sie schon Geburtstag hatte.\nAntwort: 13".
    """
    sentence = _last_numbered(before)
    return bool(_OR_OPENING.match(sentence)) and other_value(sentence, answer)


_OR_OPENING = re.compile(r"(?i)[\s*_>-]*(?:or|oder|ou|o|или|或者|或)(?![^\W\d_])")


def _possible_before(before: str, answer: str) -> bool:
    """The sentence before the answer calls another value possible ("but 19 is possible")."""
    sentence = _last_numbered(before)
    return bool(POSSIBLE.search(sentence)) and other_value(sentence, answer)


def approximated_before(before: str, answer: str) -> bool:
    r"""The sentence right before the final answer calls its value approximate or a guess.

    "She needs a little under 2 kg of sugar.\n#### 2 kg", "It is roughly 30 mph.\n#### 30 mph",
    "So she probably spends $30.\n#### $30" (a word of doubt a few words before the value).
    """
    said = find_numbers(answer)
    sentence = _last_numbered(before) if said else ""
    if not said or said[0].group(0) not in sentence:
        return False  # a cheap first test: the sentence does not write the answer's digits
    value = said[0].group(0)
    at = sentence.find(value)
    while at >= 0:  # each place the sentence writes the value (not inside another number)
        end = at + len(value)
        whole = sentence[at - 1 : at] not in _IN_A_NUMBER and not sentence[end : end + 1].isdigit()
        if whole and (_guessed(sentence, at) or NEAR_BEFORE.search(sentence, 0, at)):
            return True
        if whole and about_before(sentence, at):
            # "round to the nearest cent ... approximately $7.78" is the value asked for
            return not _ROUNDING.search(before, max(0, len(before) - 300))
        at = sentence.find(value, end)
    return False


def _guessed(sentence: str, at: int) -> bool:
    """A word of doubt at most three words before ``sentence[at]`` ("probably spends $30")."""
    window = sentence[max(0, at - 60) : at]
    doubt = HEDGE_WORDS.search(window)
    if doubt is None:
        return False
    while (later := HEDGE_WORDS.search(window, doubt.end())) is not None:
        doubt = later
    return bool(_FEW_WORDS.fullmatch(window, doubt.end()))


_FEW_WORDS = re.compile(r"(?:\s+[^\W\d_]+){0,3}\s+[$€£¥]?")
"""Up to three words between a word of doubt and the value ("probably spends about")."""


_IN_A_NUMBER = frozenset("0123456789.,")
_ROUNDING = re.compile(r"(?i)\bround|\bnearest\b|decimal\s+places?|significant|≈|\\approx")


def conditional_before(before: str, answer: str) -> bool:
    r"""The sentence right before the final answer gives two values, each under a condition.

    "The answer is 135 if the discount applies and 138 if it doesn't.\n#### 135", "12 if you
    count the driver, otherwise 11.\n#### 12".
    """
    window = before[-300:]
    if " if " not in window and " wenn " not in window and " si " not in window:
        return False  # a cheap first test
    sentence = _last_numbered(window)
    conditions = list(_UNDER_CONDITION.finditer(sentence))
    if not conditions or not _COMMITTING.search(sentence, 0, conditions[0].start()):
        return False  # "The price is 20 if you buy one and 35 if you buy two": a rule
    values = {m.group(1) for m in conditions} | {m.group(1) for m in _OTHERWISE.finditer(sentence)}
    return len(values) > 1 and not all(same(v, answer) for v in values)


_COMMITTING = re.compile(
    r"(?i)\b(?:answers?|results?|totals?|it['’]s|it\s+is|(?:it\s+)?would\s+be|comes\s+to|either)\b"
)
"""Words that make the conditional values answers ("The answer is 135 if ...", "It's 12 if ...")."""


_UNDER_CONDITION = re.compile(
    r"(?i)(?<![\d.,])[$€£¥]?(\d+(?:[.,]\d+)?)[^.\n\d]{0,25}?\b(?:if|unless|wenn|falls|si)\b"
)
"""A value with a condition right after it: "135 if the discount applies"."""
_OTHERWISE = re.compile(
    r"(?i)\b(?:otherwise|else|sonst|sinon|si\s+no)\b[\s,:]*(?:it['’]s\s+|it\s+is\s+)?"
    r"[$€£¥]?(\d+(?:[.,]\d+)?)"
)
"""The value left when the condition fails: "otherwise 11"."""


@functools.lru_cache(maxsize=16)
def _last_numbered(before: str) -> str:
    """The last sentence of ``before`` (its last 300 characters) that holds a digit."""
    for sentence in reversed(_STOPS.split(before[-300:])):
        if _DIGIT.search(sentence):
            return sentence
    return ""


_DIGIT = re.compile(r"\d")
