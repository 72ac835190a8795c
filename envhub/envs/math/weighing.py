r"""What comes right before a final answer: doubt, a guess, or another value weighed with it.

"If I had to pick one, I'd say 13.\n#### 13" (:func:`doubted_before`), "It's either 12 or 13
hours.\n#### 12 hours" (:func:`weighed_before`) and "It could also be 43, but I'll say
\\boxed{42}" (:func:`offered_before`) hedge the answer the marker names.
"""

from __future__ import annotations

import re

from .compare import same
from .hedges import OR_ANOTHER, other_value
from .lastnumber import find_numbers, unit_after
from .parse import relations_as_intervals

_DOUBT_BEFORE = re.compile(
    r"(?i)\b(?:tentative(?:ly)?|if\s+i\s+had\s+to\s+(?:pick|guess|choose)|i['’]?d\s+(?:say|guess)"
    r"|my\s+(?:best\s+)?guess|not\s+(?:\w+\s+)?(?:sure|certain|confident)|unsure|doubt"
    r"|wouldn['’]?t\s+bet|cannot\s+decide|can['’]?t\s+decide|i\s+suspect|chances\s+are"
    r"|presumably|if\s+i['’]?(?:m|ve)\s+read(?:ing)?\s+(?:the\s+\w+|it)\s+right|leaning\s+toward"
    r"|depends?\s+on|dépend|hängt\s+davon\s+ab|depende|soit\s+[-$€£]?\d[^.\n]{0,30}\bsoit)\b"
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
    sentences = [s for s in _STOPS.split(before[-300:]) if any(c.isdigit() for c in s)]
    sentence = sentences[-1] if sentences else ""
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
    offers = OR_ANOTHER.search(lead) or _MIGHT_BE.search(lead)
    if offers and relations_as_intervals(answer):
        return False  # "$x<-10$ or $x>4$: \\boxed{x<-10 \\text{ or } x>4}": the set's pieces
    return bool(offers) and other_value(lead, answer)


_MIGHT_BE = re.compile(r"(?i)\b(?:could|might|may)\s+(?:also\s+|well\s+)?be\b")
