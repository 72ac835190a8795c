r"""What follows a final answer: a retraction, another value offered, a note, a doubt.

"#### 5. Actually, 7.", "\\boxed{5}. Wait, no: 7.", "It could also be 7.", "P.S. 43", "Note: if
the train is late, 200 minutes", "#### 42\n\n43" and "That's wrong, let me redo this." each
take back the answer or offer another (:func:`retracted`); a check of the answer ("Wait, let me
check: 3 × 4 = 12") and the same value said again are none. The vocabulary shared with the
reading of the answer itself is :mod:`envhub.envs.math.hedges`'.
"""

from __future__ import annotations

import re

from . import spelled
from .compare import same
from .conclusion import CONCLUSION, NOT, written_in
from .hedges import (
    ABOUT,
    ABOUT_AFTER,
    ALSO_WINDOW,
    CLAUSE_END,
    DOUBT,
    HEDGE_WORDS,
    TAKEN_BACK,
    Words,
    about_before,
    asked_or_undone,
    first_clause,
    offers_another,
    other_value,
)
from .lastnumber import REFERENCE, find_numbers, last_number, unit_after
from .restating import converted, dimension

_CORRECTION = Words(
    ascii=(
        r"\b(?:actually|wait|oops|correction|i\s+mean|(?:could|might|may)\s+(?:also\s+)?be"
        r"|kidding|scratch\s+that|on\s+second\s+thought|then\s+again|misread|misunderstood"
        r"|instead|rather|unless|otherwise|alternatively|if\s+(?:i|we|you|one)|final|result"
        r"|solution|(?:also|or|else|oder|ou)(?=(?:\s+[^\W\d_]+)?\s*[:=,]?\s*[-\u2212]?\d)"
        r"|(?:no|nein|non|nee|hapana)(?=\s*[,:;!.]?\s*[-\u2212]?\d)|subiri"
        r"|attendez|attends|en\s+fait|warte|moment\s+mal|eigentlich|espera|en\s+realidad"
        r"|pourrait|potrebbe\s+essere|poderia\s+ser|zou\s+(?:ook\s+)?\w*\s*kunnen\s+zijn"
        r"|hetkinen|i\s+get|spravne\s+je"
        r"|aspetta|wacht|eigenlijk|czekaj|bekle|tunggu|sebenarnya|khoan|espere|na\s+verdade"
        r"|hmm+|hold\s+on|nope|sorry|my\s+(?:mistake|bad)|however|on\s+reflection"
        r"|after\s+re-?checking|erratum|errata|edit|update|fix|corrected|typo|recomputed"
        r"|should\s+(?:be|say|read)|wrong|korrektur|quatsch|fehler|oups|perd[oó]n)\b"
        r"|\bk\w*nnte\s+(?:auch\s+)?\w*\s*sein\b"
    ),
    other=(
        r"\b(?:или(?=(?:\s+[^\W\d_]+)?\s*[:=,]?\s*[-\u2212]?\d)"
        r"|(?:нет|não)(?=\s*[,:;!.]?\s*[-\u2212]?\d)|podría\s+ser|могло\s+бы\s+быть"
        r"|может\s+быть|in\s+realtà|подожди|постойте?|на\s+самом\s+деле|właściwie|aslında"
        r"|thực\s+ra|ой|исправление|perdón)\b"
        r"|等等|等一下|不对|其实|待って|いや、|実は|잠깐|사실은|انتظر|في\s+الواقع|रुको|दरअसल"
        r"|不[，,]\s*是|应该是|應該是|更正|訂正"
        r"|الصحيح|درستش|सही\s+(?:उत्तर|जवाब)|আসলে|కాదు|várj|όχι|רגע|správně\s+je|הנכונה"
        r"|দাঁড়াও|দাঁড়াও"  # দাঁড়াও
    ),
)
"""Words after the final answer that may bring another one ("Actually, 7", "could also be 7",
"Just kidding, 7", "Then again, 7", "if I misread, 7", "Final: 7", "also 7", "else 7"), and
the same in the languages whose answers are read ("Attendez, non : 45", "Warte, 45", "等等，45")."""


_NAMED_CORRECT = re.compile(
    r"(?i)\b(?:the\s+)?(?:correct|right|real|actual|true)\s+(?:answer|total|result|value|count"
    r"|number|sum)\s+(?:is|would\s+be|should\s+be|=|:)\s*[$€£]?\s*(?P<value>[-−]?\d[\d.,]*\d|\d)"
)
"""A value named the correct one after the answer ("so the correct total is 43")."""
_CHOICE = re.compile(r"\(\s*([A-E])\s*\)|\b(?:option|choice|answer)\s+\(?([A-E])\b")


def _other_choice(clause: str, answer: str) -> bool:
    """``answer`` is a choice letter ("(C)") and ``clause`` names another one ("(E)")."""
    own = _CHOICE.search(answer)
    if own is None:
        return False
    letter = own.group(1) or own.group(2)
    return any((m.group(1) or m.group(2)) != letter for m in _CHOICE.finditer(clause))


def taken_back(after: str) -> bool:
    """What follows an answer doubts it or takes it back ("That's wrong. Let me redo this.")."""
    sentences = CLAUSE_END.split(after[:ALSO_WINDOW])
    return any(DOUBT.search(sentence) or TAKEN_BACK.search(sentence) for sentence in sentences)


def retracted(answer: str, after: str, before: str | None = None) -> bool:
    r"""The clause after the final answer takes it back, or adds another number.

    "#### 5. Actually, 7.", "\boxed{5}. Wait, no: 7.", "It could also be 7.": a correction
    or an alternative (:data:`_CORRECTION`) and, last in that clause, a number that is not
    the answer ("Wait, let me check: 3*4 = 12" after ``12`` is no retraction). ``before``,
    the response before the answer, tells a new value from one the working gave (None for a
    footnote's text, which has no response around it).
    """
    clause = first_clause(after)
    if _CORRECTION.search(clause) and not _CHECKING.search(clause) and other_value(clause, answer):
        return True
    if _CORRECTION.search(clause) and _other_choice(clause, answer):
        return True  # "\boxed{\text{(C)}}. Actually, it should be (E)"
    if asked_or_undone(answer, after):
        return True
    if _afterthought(answer, after[:ALSO_WINDOW]) or _lone_value(answer, after):
        return True  # "P.S. 43", "Note: if the train is late, 200 minutes", "#### 42\n\n43"
    if taken_back(after):
        return True  # "\boxed{42}. I'm not sure which one is intended.", "That's wrong."
    named = _NAMED_CORRECT.search(after, 0, ALSO_WINDOW)
    if named is not None and not same(named["value"], answer):
        return True  # "Verification: ... 6 × 7 + 1 = 43, so the correct total is 43."
    sentences = CLAUSE_END.split(after[:ALSO_WINDOW])
    if before is not None and _brings_new_value(sentences, answer, before):
        return True  # "Anmerkung: Bei Schaltjahren 43.", "注：若包括老师，则为43。"
    if any(_remark_hedges(sentence, answer, before or "") for sentence in sentences):
        return True  # "About 12, since the gauge isn't exact.", "A second method gave me 138"
    return any(
        (
            offers_another(sentence)
            or HEDGE_WORDS.search(sentence)
            or _WOULD_BE.search(sentence)
            or _IF_AFTER_VALUE.search(sentence)
            or _IF_BEFORE_VALUE.match(sentence)
            or _RESTATES.search(sentence)
            or _SAYS_ANOTHER.search(sentence)
        )
        and other_value(_roman_as_digits(sentence), answer)
        for sentence in sentences
    )


_AFTERTHOUGHT = Words(
    ascii=(
        r"(?:^|\n|\()[ \t>*_#-]*(?:notes?|n\.\s?b\.|p\.\s?(?:p\.\s?)?s\.?|addendum|footnote"
        r"|errat(?:um|a)|fe\s+de\s+erratas|rectification|correction|corrigendum|update|edit"
        r"|tl;?\s?dr|summary|alt(?:ernative)?|grader"
        r"|second\s+thoughts?|remarque|nota|anmerkung|hinweis|nachtrag|berichtigung)\b\W*"
    ),
    other=(
        r"(?:^|\n|\()[ \t>*_#-]*(?:修正|注意?|备注|注記|नोट|ملاحظة|примечание|поправка)\W*"
        r"|\n[ \t]*[¹²³⁴⁵⁶⁷⁸⁹]+[ \t]*"  # a footnote under its superscript mark
    ),
)
"""A note after the answer: "Note:", "P.S.", "Addendum:", "TL;DR —", "Rectification :", "修正："."""
_NOTE_OFFERS = re.compile(
    r"(?i)\b(?:if|when|unless|assuming|with|without|strictly\s+speaking|otherwise|counting"
    r"|including|excluding|wenn|falls|si|se|jika|kama)\b[^.\n]{0,80}?(?:[,:]|\bthen\b)\s*[-−$€£]?\d"
    r"|(?:अगर|यदि|если|如果|若|もし|만약|ถ้า)[^.\n।]{0,80}?(?:[,:，]|तो|то)?\s*[-−$€£]?\d"
    r"|\b(?:might|could|may)\s+(?:\w+\s+){0,2}[-−$€£]?\d|\bon\s+reflection\b"
)
"""A value a note offers under a condition ("if the train is late, 200 minutes", "strictly
speaking, 70", "अगर ... तो ४३") or as possible ("might read 520 g")."""
_LONE_VALUE = re.compile(r"[-\u2212$€£¥]?\d[\d.,/]*(?:\s*[^\W\d_]{1,12})?")


def _afterthought(answer: str, after: str) -> bool:
    """A note after the answer offers another value, at once or under a condition.

    "P.S. 43", "TL;DR — 19", "Note: if the train is late, 200 minutes", "Addendum: strictly
    speaking, 70"; "Note: each box holds 7 eggs." offers none.
    """
    for note in _notes(after):
        line_end = after.find("\n", note.end())
        body = after[note.end() : line_end if line_end >= 0 else len(after)]
        if not other_value(body, answer) and not _other_amount(body, answer):
            continue
        body = spelled.as_digits(body, spelled.language(body) or "en")  # "Twenty-eight if ..."
        alone = _LONE_VALUE.fullmatch(body.strip(" \t.)—–-:"))  # "P.S. 43", "TL;DR — 19"
        offers = _NOTE_OFFERS.search(body) or _IF_AFTER_VALUE.search(body) or offers_another(body)
        if alone or offers or HEDGE_WORDS.search(body) or _CORRECTION.search(body):
            return True
    return False


def _other_amount(text: str, answer: str) -> bool:
    """The last amount of ``text``, with its unit, is not ``answer`` ("5 mi" after "5 km")."""
    numbers = find_numbers(text)
    return bool(numbers) and not same(last_number(text, numbers)[0], answer)


def _notes(after: str) -> list[re.Match]:
    """The notes of :data:`_AFTERTHOUGHT` in ``after``."""
    found = list(_AFTERTHOUGHT.ascii.finditer(after))
    if not after.isascii():
        found += _AFTERTHOUGHT.other.finditer(after)
    return found


def _lone_value(answer: str, after: str) -> bool:
    r"""All that follows the answer is another value ("#### 42\n\n43", "#### 42\n\n四十三")."""
    rest = after.strip(" \t\n.*")
    return (
        bool(rest)
        and len(rest) <= 24
        and bool(_LONE_VALUE.fullmatch(rest))
        and not same(rest, answer)
    )


_IF_BEFORE_VALUE = re.compile(
    r"(?i)\W*(?:if|when|unless|assuming|counting|including|excluding|without|wenn|falls|si|se"
    r"|если|in\s+the\s+(?:unlikely\s+)?case|with|filled|under)\b[^.\n]{0,80}?(?:[,:]|\bit['’]?s|would\s+be)"
    r"\s*(?:closer\s+to\s+)?[-\u2212$€£]?\d"
)
"""A condition, then a value: "If the teacher is counted, 43." offers another answer."""
_RESTATES = re.compile(
    r"(?i)\b(?:in\s+(?:words|roman\s+numerals|digits|figures)|(?:also\s+)?written\s+(?:as|out)"
    r"|that\s+is|i\.\s?e\.|equivalently|in\s+other\s+words|en\s+lettres|in\s+Worten"
    r"|en\s+palabras|то\s+есть|прописью)\b"
)
"""Words that say the answer again in another form ("In words: forty-two", "In Roman numerals:
XLII", "also written as 3/4"): another value there is a second answer."""


def _roman_as_digits(text: str) -> str:
    """``text`` with its numbers in Roman numerals in digits ("In Roman numerals: XIII": 13)."""
    return spelled.ROMAN.sub(lambda m: spelled.roman_value(m.group(0)) or m.group(0), text)


_IF_AFTER_VALUE = re.compile(
    r"(?i)\d[^.\n\d]{0,25}?\b(?:if|when|unless|wenn|falls|si|se|если)\b|\d[^.\n\d]{0,10}?如果"
)
"""A value and a condition right after it: "(43 if counting the driver.)", another answer."""
_CHECKING = re.compile(r"(?i)\b(?:let\s+me\s+)?(?:check|verify|confirm)\w*\b|[✓✔]")
"""A check of the answer after it ("Wait, let me check: 3 × 4 = 12 ✓"): no correction."""
_WOULD_BE = re.compile(
    r"\b(?:if|unless|assuming|suppose|were)\b.*\b(?:answer|result|total|it|that)"
    r"(?:\s+would\s+be|'s|’s|\s+is|'d\s+be)\b"
    r"|\b(?:answer|result|total|it)\s+would\s+be\b.*\bif\b",
    re.IGNORECASE,
)
"""Another answer under another reading: "(If the boxes were not all full, the answer would be
36.)", "if Tom also counts himself, it would be 16"."""


_SAYS_ANOTHER = re.compile(
    r"(?i)\b(?:might|could|may|would)\s+(?:well\s+)?(?:say|read|give|list|accept|expect|mark)\b"
    r"|\b(?:possible|candidate|alternative)\s+(?:answers?|values?|results?|totals?)\s*"
    r"(?:[:=]|are\b|include\b)"
    r"|\banswer\s+key\b"
)
"""Words that put a value forward beside the answer: "An answer key that rounds differently
might say 100.", "Possible answers: 9, 8." (not "the smallest possible value")."""
_OTHER_WAY = re.compile(
    r"(?i)\b(?:second|another|other|different|alternative|third)\s+(?:method|approach|way"
    r"|calculation|computation|reading|interpretation|estimate|count|formula|attempt)s?\b"
)
"""Another way to the answer: "A second method gave me 138, but I'll go with 135."."""
_STATES = re.compile(
    r"(?i)\b(?:answer|total|result)\s+(?:is|was|would\s+be|comes\s+to)\s+[$€£]?\s*(\d[\d.,]*\d|\d)"
)
"""A new value stated as the answer after it: "so the total is 180"."""
_ARITHMETIC = re.compile(r"[=×÷*+/^]|\d\s*[-−x]\s*\d|\\(?:times|cdot|div|frac)")


def _remark_hedges(sentence: str, answer: str, before: str) -> bool:
    """A sentence after the answer approximates it, or sets a new value beside it.

    "About 12, since the gauge isn't exact." and "(In the region of 250 mL each.)" call the
    answer approximate; "A second method gave me 138", "(2.5 km by road; 2 km as the crow
    flies.)" and, after ``42``, "So Maria has 40 stickers left." give a value the working never
    reached as another result.
    """
    if not any(c.isdigit() for c in sentence):
        return False
    numbers = find_numbers(sentence)
    said = [n for n in numbers if same(n.group(0) + unit_after(sentence, n.end()), answer)]
    said = said or [n for n in numbers if same(n.group(0), answer)]
    if any(_approximated(sentence, n) for n in said):
        return True
    new = [n for n in numbers if n not in said and not written_in(n.group(0), before + answer)]
    if not new or _ARITHMETIC.search(sentence):
        return False
    if _OTHER_WAY.search(sentence):
        return True
    stated = _STATES.search(sentence)
    if stated and not same(stated.group(1), answer):
        return True  # "However, rereading the problem, ... so the total is 180."
    if said and _same_kind(sentence, new, answer):
        return True  # "(2.5 km by road; 2 km as the crow flies.)"
    return len(numbers) == 1 and bool(CONCLUSION.match(sentence)) and not NOT.search(sentence)


def _approximated(sentence: str, number: re.Match) -> bool:
    """A word of approximation right before or after ``number``: "About 12", "30 mph or so"."""
    return about_before(sentence, number.start()) or bool(ABOUT_AFTER.match(sentence, number.end()))


def _same_kind(sentence: str, new: list[re.Match], answer: str) -> bool:
    """One of the ``new`` values measures what ``answer`` measures (a unit's dimension)."""
    kind = dimension(answer)
    return kind is not None and any(
        dimension(n.group(0) + unit_after(sentence, n.end())) == kind for n in new
    )


def _brings_new_value(sentences: list[str], answer: str, before: str) -> bool:
    """After working, a sentence after the answer brings a value the working never wrote.

    Once a response has worked to its answer (two numbers or more before it), a number that
    is neither the answer nor one it wrote, in a sentence with no arithmetic, is another
    value put beside the answer, in any language: "Anmerkung: Bei Schaltjahren 43.", "注：
    若包括老师，则为43。", "Both 210 and 201 work.", "| B | 46 |". Givens said again ("She
    gave 18 of her 60.") and a check ("6 × 7 = 42") bring none.
    """
    if not any(c.isdigit() for sentence in sentences for c in sentence):
        return False  # a cheap first test: nothing after the answer holds a number
    worked = len(find_numbers(before[-ALSO_WINDOW:])) > 1
    if not worked and any(_ARITHMETIC.search(sentence) for sentence in sentences):
        return False  # the answer first, then its working: every number after it is new
    for sentence in sentences if worked else sentences[1:]:  # (not the answer's own sentence)
        if not any(c.isdigit() for c in sentence) or _ARITHMETIC.search(sentence):
            continue
        if _GIVEN_OR_SET_ASIDE.search(sentence) or _CHECKING.search(sentence) or "?" in sentence:
            continue  # "I used the 8 rows given in the problem", "such as 43", "by mistake"
        numbers = find_numbers(sentence)
        if not worked and (
            any(same(n.group(0), answer) for n in numbers) or not _ends_on(sentence, numbers)
        ):
            continue  # "#### 500\n\nShe saves $50 a month for 10 months, so $500.": the why
        if _rival(sentence, numbers, answer, before + answer):
            return True
    return False


def _ends_on(sentence: str, numbers: list[re.Match]) -> bool:
    """The sentence ends on its last number: "NB : avec le professeur, on arrive à 43."."""
    return bool(numbers) and not sentence[numbers[-1].end() :].strip(" \t.。)）*_!|")


def _rival(sentence: str, numbers: list[re.Match], answer: str, known: str) -> bool:
    """One of ``numbers`` of ``sentence``, alone, is a value beside ``answer`` that ``known`` lacks.

    Not a reference ("step 3"), a rejected value ("not 43", and 43 again after it), an
    approximation of the answer ("≈ 3.14159"), part of a name ("Python 3.12") nor a year. Two
    new values in one sentence are context, not a rival ("She can afford the $230 bike with
    $20 to spare.": the problem's givens, which the working never needed).
    """
    return len(_new_values(sentence, numbers, answer, known)) == 1


def _new_values(sentence: str, numbers: list[re.Match], answer: str, known: str) -> set[str]:
    """The values of ``numbers`` neither ``answer`` nor in ``known`` (see :func:`_rival`)."""
    set_aside, new = set(), set()
    for number in numbers:
        lead = sentence[max(0, number.start() - 16) : number.start()]
        version = "." in number.group(0) and _NAMED.search(lead)  # "Python 3.12"
        if REFERENCE.search(sentence, 0, number.start()) or _NOT_A_RIVAL.search(lead) or version:
            set_aside.add(number.group(0))
            continue
        if _YEAR.fullmatch(number.group(0)) or number.group(0) in set_aside:
            continue  # "It could not be 43, because 43 is odd."
        value = number.group(0) + unit_after(sentence, number.end())
        if same(value, answer) or same(number.group(0), answer) or converted(value, answer):
            continue
        if ABOUT.search(lead):
            continue  # "(about 93 miles)": the answer converted, roughly
        if not written_in(number.group(0), known):
            new.add(number.group(0))
    return new


_NOT_A_RIVAL = re.compile(
    r"(?:\b(?:not|no|nicht|pas|non|nie|не|isn['’]t|wasn['’]t)\s+(?:be\s+|equal\s+)?|≈\s*|\\approx\s*|approx\w*\.?\s+"
    r"|\b[A-Z]{2,}\s)$"
)
"""Right before a number after the answer, what makes it no rival value: a rejection ("not
43"), an approximation of the answer ("≈ 3.14159"), an acronym it is part of ("AMC 8")."""
_GIVEN_OR_SET_ASIDE = re.compile(
    r"(?i)\b(?:given|stated|from\s+the\s+problem|in\s+the\s+problem|by\s+mistake|originally"
    r"|such\s+as|for\s+example|e\.\s?g\.|(?:more|less|fewer)\s+than|for\s+comparison"
    r"|compared\s+(?:to|with)|already|\d+\s+(?:more|extra|fewer|less)\b"
    r"|(?:is|was|are)\s+(?:wrong|incorrect)|a\s+typo)\b"
)
_NAMED = re.compile(r"\b[A-Z][a-z]+\s$")
_YEAR = re.compile(r"1[89]\d\d|20\d\d")
