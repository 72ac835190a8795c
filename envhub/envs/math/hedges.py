r"""Hedges: a response that offers more than one final answer, or doubts the one it gives.

A hedged response earns no correctness, even against a list gold, and no format point
(:attr:`envhub.envs.math.extract.Extraction.hedged`). Read around the final answer that
:mod:`envhub.envs.math.extract` found, a hedge is:

* a word of uncertainty on the answer or right before it in its sentence (``maybe``,
  ``perhaps``, ``probably``, ``either``, ``alternatively``, ``not sure``, ``I guess``, and the
  same in the languages whose answer statements are read: :data:`HEDGE_WORDS`);
* two values side by side or joined by a word of choice (``44 0``, ``44 vs 0``, ``44 oder 0``,
  ``44 ∨ 0``), or another number after ``or``/``otherwise``/``maybe`` in the clause right after
  the answer (``\boxed{32}, or maybe 31``), or doubt there ("but I might have miscounted")
  (:func:`is_hedged`);
* the answer taken back, or another value offered as also possible, after it ("#### 5.
  Actually, 7.", "#### 5. 7 is also acceptable.": :mod:`envhub.envs.math.remarks`), and doubt
  or another value weighed with it right before it (:mod:`envhub.envs.math.weighing`);
* for the ``last_number`` rule, a value listed right before the last number (``31 or 32``,
  ``(4, \infty), \frac{4}{5}``, ``28080 104``: :func:`last_number_hedged`);
* an aside after a stated answer that offers another value ("15 (though 16 is plausible)":
  :func:`offers_value`).

The same value said again in another form ("$5, or 500 cents") is no hedge
(:func:`envhub.envs.math.compare.same`). Two committed answers that disagree ("The answer is
5. ... #### 7") are found where the statements are read
(:mod:`envhub.envs.math.extract`).
"""

from __future__ import annotations

import re
import sys

from . import spelled
from .compare import same
from .lastnumber import REFERENCE, find_numbers, last_number, tidy, unit_after
from .parse import relations_as_intervals
from .restating import restated
from .spelled import words_value
from .units import measure


class Words:
    """Words of many languages, one pattern searched in two parts (case-insensitive).

    Python's regex engine tries every alternative at every position, so a pattern of words in
    30 languages costs tens of microseconds on a sentence. An ASCII text can only match the
    ``ascii`` part (the ``other`` part needs a letter outside ASCII), so that part alone is
    searched there.
    """

    def __init__(self, ascii: str, other: str) -> None:
        # an ASCII word starts after no letter: the engine skips the insides of words (twice
        # as fast on running text; every alternative starts at a word's edge anyway)
        self.ascii = re.compile(rf"(?<![a-z])(?:{ascii})", re.IGNORECASE)
        self.other = re.compile(other, re.IGNORECASE)

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match | None:
        """The first match of the ``ascii`` part, else (in a text not ASCII) of the other."""
        found = self.ascii.search(text, pos, endpos)
        if found is None and not text.isascii():
            found = self.other.search(text, pos, endpos)
        return found


HEDGE_WORDS = Words(
    ascii=(
        r"\b(?:maybe|perhaps(?!\s+(?:un)?surprising)|possibly|probably|either(?!\s+way)"
        r"|alternatively|or\s+so|not\s+sure|unsure|i\s+guess|unless"
        r"|not\s+(?:\w+\s+)?(?:sure|certain|confident)"
        # the same in the languages whose answer statements are read (statements._ANSWER_IS)
        r"|vielleicht|wahrscheinlich|eventuell|probablement|tal\s+vez|probablemente|posiblemente"
        r"|forse|probabilmente|talvez|provavelmente|misschien|waarschijnlijk|wellicht|chyba"
        r"|prawdopodobnie|muhtemelen|belki|galiba|bzw|beziehungsweise|luultavasti|kanskje|poate"
        r"|probabil|mungkin|barangkali|labda|pengine|kanske|siguro|marahil|vermutlich|sanirim"
        r"|my\s+(?:best\s+)?guess|tentative(?:ly)?|if\s+i\s+had\s+to\s+(?:pick|guess|choose)"
        r"|i['’]?d\s+(?:rather\s+)?(?:say|guess)|troligen|troligtvis|sannolikt|presumably"
        r"|i\s+suspect|chances\s+are|vermoedelijk|supongo|my\s+gut|closer\s+to|nearer\s+to"
        r"|(?:first|second|another|other)\s+(?:method|approach|reading)"
        r"|i['’]?ll\s+(?:say|go\s+with)|my\s+first\s+(?:pass|attempt|try)"
        r"|(?:other|alternative)\s+(?:answers|values|results)"
        r"|in\s+practice)\b"
        r"|(?<!equally\s)(?<!more\s)(?<!less\s)(?<!as\s)\b(?:most\s+)?likely"
        r"(?=\s*,|\s+(?:the\s*)?$|\s+(?:the\s+)?(?:answer|result|total|it|this|that)\b"
        r"|\s+(?:be\s+)?[-\u2212$\d\\])"
        r"|\b(?:some(?:where|thing)\s+(?:from|between|around|like|near)|anywhere\s+(?:from|between))\b"
        r"|\b(?:might|could|may)\s+be\s+(?:about\s+|around\s+)?[-\u2212$\d\\]"  # "might be 42"
        r"|\bnot\s+100\s*%\s+(?:sure|certain)"
        r"|\\(?:vee|lor)(?![a-zA-Z])|\d\s*\|\s*\d"  # 31 \vee 32, 31 | 32: alternatives
        r"|\(\s*(?:or|otherwise)\b"  # 32 (or 31)
    ),
    other=(
        r"\b(?:quizás?|möglicherweise|peut-être|peut\s+être|может\s+быть|наверное|возможно"
        r"|아마도?|może|ehkä|talán|valószínűleg|võib-olla|možná|måske|có\s+lẽ|можливо|förmodligen"
        r"|μάλλον|мабуть|sanırım)\b"
        r"|ربما|يحتمل|शायद|かもしれ|ஒருவேளை|இருக்கலாம்|ምናልባት|احتمالا|कदाचित|सायद|કદાચ|ອາດຈະ"
        r"|ប្រហែល|ဖြစ်နိုင်|হয়তো|হয়তো"  # হয়তো, both ways
        r"|也许|可能|大概|たぶん|多分|おそらく|恐らく|不太确定|不确定|সম্ভবত|নিশ্চিত\s+নই|على\s+الأرجح"
        r"|لست\s+متأكد|బహుశా|తెలియదు|บางที|อาจจะ|น่าจะ|ไม่แน่ใจ|شاید|אולי|כנראה|ίσως|πιθανόν"
        r"|غالباً|غالبا|것\s*같|정도일|ထင်ပါတယ်|ထင်တယ်|ምናልባትም|ალბათ|შეიძლება|գուցե|հավանաբար"
        r"|నా\s+అంచనా"
    ),
)
OR_ANOTHER = re.compile(
    r"\b(?:or|otherwise|maybe|perhaps|possibly|probably|alternatively|oder|ou|или|أو|या)\b"
    r"[^.\n]{0,40}?\d",
    re.IGNORECASE,
)
_ALSO = re.compile(
    r"\b(?:also|too|as\s+well|another|alternative(?:ly)?|equally|besides|else)\b",
    re.IGNORECASE,
)
_ACCEPTABLE = re.compile(
    r"\b(?:possible|acceptable|valid|correct|right|works?|fine|answers?|solutions?|options?"
    r"|plausible|reasonable|defensible|arguable|justifiable|sensible|admits?|in\s+play"
    r"|reasonably|arrive"
    r"|possibilit(?:y|ies)|candidates?|fits?|holds?|applies|satisf(?:y|ies))\b",
    re.IGNORECASE,
)
"""With :data:`_ALSO`: a sentence after the final answer offering another value as also
possible ("7 is also possible", "another valid answer is 7"): a hedge
(:func:`envhub.envs.math.remarks.retracted`)."""
_NUMBER_THEN_BLANK = r"(?<![\d.,/_^{])\d+(?:\.\d+)?[ \t]+"
"""A number (not the tail of another: ``1,5``, ``x_2``, ``10^{3}``) and only blanks after it:
the first of two values side by side (:data:`_SIDE_BY_SIDE`, :data:`_OR_BEFORE`)."""
_OR_WORD = (
    r"\b(?:or|oder|ou|oppure|lub|albo|nebo|eller|veya|atau|hoặc|или|або"
    r"|otherwise|else|sonst|sinon|altrimenti|senão|иначе)\b"
    r"|或者?|または|또는|아니면|หรือ|أو|או|否则|否則|அல்லது|অথবা|లేదా|ಅಥವಾ|किंवा|ወይም|သို့မဟုတ်|ან|կամ"
)
"""The word "or" of the languages whose answers are read; the short ones that are also other
words ("o", "of", "या", Swahili "au") only after a number, in :data:`_OR_BEFORE`."""
_OR_BEFORE = re.compile(
    rf"(?:{_OR_WORD})(?!\s+[A-Za-z]\s*=)[^.,;\n]{{0,12}}$"
    r"|\d[^.;\n\d]{0,40}(?:\b[oOή]|\bau|(?:^|\s)(?:या|یا)|[(,]\s*of)\s+$"  # "12 (o 15 si llueve)"
    r"|(?:[)\]}]|\\infty)\s*(?:[,;/|∨]+|\b(?:vs|versus|else|ou|oder)\b)?\s*$"
    rf"|{_NUMBER_THEN_BLANK}$",  # "28080 104", "5 -3": two numbers side by side
    re.IGNORECASE,
)
r"""Right before the last number: an "or" in any language, a listed interval or tuple, or
another number: ``(-\infty, 4) or \frac{4}{5}``, ``(4, \infty), \frac{4}{5}`` and ``28080 104``
offer two answers. The last number is a whole token here (spaced thousands, ``1 000``, are
one), so any number before it with only blanks between is another value; inside one answer
:data:`_SIDE_BY_SIDE` must leave ``1 000`` alone."""
ALSO_WINDOW = 600
"""Characters after the final answer searched for another value offered as also possible."""
_SENTENCE_END = re.compile(r"[.!?。！？۔।။\n]")
CLAUSE_END = re.compile(r"\.(?=\s|$)|\n|[。！？]")


def is_hedged(answer: str, after: str) -> bool:
    """True when the final answer, or what follows it in its sentence, offers another one.

    ``after`` is the text right after the answer; only its first clause is read. "or" and the
    same value again ("$5, or 500 cents") is a restatement, not a second answer; a doubt
    ("but I might have miscounted") is a hedge.
    """
    if relations_as_intervals(answer):
        return False  # "x < -10 \\text{ or } x > 4": one set, in two pieces
    answer = _TEXT_WRAP.sub(r" \1", answer)  # "42 \\text{ or thereabouts}": the words
    if _inexact(answer, after) or asked_or_undone(answer, after):
        return True  # "about 42", "42 (to within 2)", "Is the answer 42?", "42. Ei, odota: 43."
    if HEDGE_WORDS.search(answer) or DOUBT.search(answer) or "?" in answer:
        return True  # "48?", "48?? I'm not confident", "42, but I may have misread"
    aside = _ASIDE_AFTER.match(after)
    if aside is not None and restated(answer + aside.group(0))[1]:
        return True  # "\\boxed{12} (a dozen and a half)": another value, said again
    if aside is not None and _doubting(aside.group(0)):
        return True  # "#### 8000 (I think)", "#### 126 (give or take one)"
    equals = _EQUALS_AFTER.match(after)
    if equals is not None and not same(equals.group(1), answer):
        return True  # "\\boxed{\\frac{3}{4}} = 0.34": another value, said equal
    if _chain_disagrees(answer, after):
        return True  # "\\boxed{\\frac{1}{2}}, i.e. 0.5 = 50% = \\frac{5}{100}": one link is not
    if _SIDE_BY_SIDE.search(answer) or _VERSUS.search(answer) or _joined_by_a_word(answer, after):
        return True  # "44 0", "44 vs 0", "44 else 0", "36 sau 63": two values, whatever joins them
    if _LINE_BREAK.search(answer) and "&" not in answer and "begin" not in answer:
        return True
    aside = ASIDE.search(answer)
    if aside is not None and offers_value(aside.group(0), answer[: aside.start()]):
        return True  # "#### 0 (though 1 is plausible)"
    clause = first_clause(after)
    worded = words_value(_LEADING_JOINER.sub("", clause))
    if worded is not None and not same(str(worded), answer):
        return True  # "28080 / four", "#### 28080\nseven": another value, in words
    numbers = find_numbers(answer)
    if numbers and BOUND.search(answer, max(0, numbers[-1].start() - 30), numbers[-1].start()):
        return True  # "не менее 42", "at least 3 kg": a bound, not a value
    if numbers and BOUND_AFTER.match(answer + after[:40], numbers[-1].end()):
        return True  # "42 or more", "42 at most"
    if numbers and _number_follows(answer[numbers[-1].end() :]) and not _said_again(answer):
        return True  # "28080 LXXIII", "28080 / setenta y tres", "28080 Ⅻ": two values
    last_word = answer.rsplit(maxsplit=1)
    if len(last_word) == 2 and numbers and _numeral(last_word[1].strip(".,;:!?)]}*")):
        return True  # "(-\infty, 4) \cup (5, \infty) Ⅻ"
    leading = spelled.leading_words_value(_LEADING_JOINER.sub("", clause))
    if leading is not None and _scale_opens(clause):
        leading = None  # "1,5 Millionen Euro": the value's own scale
    if worded is None and leading is None and _number_follows(clause):
        return True  # "#### 28080\nсемьдесят три" (not "#### 12\nDoce manzanas")
    if leading is not None and not same(str(leading[0]), answer):
        return True
    other = OR_ANOTHER.search(clause)
    if other and not same(tidy(_JOINER_WORD.sub("", clause[other.start() :], 1)), answer):
        return True
    if HEDGE_WORDS.search(_SENTENCE_END.split(after[:200], maxsplit=1)[0]):
        return True  # "12 apples, probably.", "၁၂ ဖြစ်နိုင်သည်": a hedge word after it
    return bool(DOUBT.search(clause))


def _scale_opens(clause: str) -> bool:
    """``clause`` opens with a scale word ("Millionen Euro", "thousand"): the value's own."""
    first = clause.split(maxsplit=1)
    return bool(first) and first[0].strip(".,;:").lower() in spelled.scale_words()


def _doubting(aside: str) -> bool:
    """An aside right after the answer doubts or approximates it.

    "(I think)", "(est.)", "(give or take one)", "(approximately)", "(±1)"; not "(about 3.1
    miles)", a conversion.
    """
    inner = aside.strip().strip("()")
    return bool(
        HEDGE_WORDS.search(inner)
        or DOUBT.search(inner)
        or _THINK.search(inner)
        or ABOUT.search(inner)
        or BOUND_AFTER.match(" " + inner)
        or "±" in inner
        or bool(_TWO_READINGS.search(inner))
    )


_TWO_READINGS = re.compile(
    r"(?i)^[^\d]*[^\W\d_]+\s*,?\s+(?:or|oder|ou|o|или)\s+[^\W\d_]+[^\d]*$"
    r"|\bCI\b|confidence\s+interval|\bbetween\s+[-−]?\d[\d.,]*\s+and\s+[-−]?\d"
)
"""An aside that names two readings with no number ("(km or miles)", "(dollars or euros)") or
a range ("(95% CI: 15 to 17)", "(i.e., between 59 and 61)")."""


_ASIDE_AFTER = re.compile(r"[\s$}]*\([^()\n]{1,60}\)")
_TEXT_WRAP = re.compile(r"\\(?:text|mathrm|textrm|mbox)\s*\{([^{}]*)\}")
_QUESTION = re.compile(r"[\s*_$)\]}]*(?:[?？؟\u037e]|;\s*$|인가요|입니까|ですか|か[。？?]|吗|嗎)")
"""A question right after the value ("Is the answer 42?", "٤٢؟", "42인가요?", Greek "42;")."""
_THINK = re.compile(r"(?i)\bI\s+(?:think|believe|guess)\b")
"""Doubt inside the answer itself: "\\boxed{42 \\text{, I think}}"."""
_INTERJECTION = re.compile(
    r"[\s.*]*[^\W\d_]{1,10}\s*[,，、]\s*(?:[^\W\d_]+\s*[,:，：]?\s*){0,2}[-−$€£]?\d"
)
"""A short word and a comma, then another value, right after the answer: "Ei, odota: 43",
"Nie, jednak 13", "Hapana, ni 13", "아니, 43" (a retraction in any language)."""
_EQUALS_AFTER = re.compile(
    r"(?i)[\s$}]*(?:=|,?\s*(?:i\.\s?e\.|that\s+is),?)\s*\$?\s*([-\u2212]?\d+(?:[.,]\d+)*)"
    r"(?![.,]\d|\d|\.\.|…)\s*\$?\s*(?:[.,;]|$|\n)"
)
"""``= value`` or ", i.e. value" right after the answer, ending its clause (not ``= 3 × 4``, nor
``= 0.333...``)."""
_CHAIN_AFTER = re.compile(
    r"(?i)[\s$}]*(?:=|,?\s*(?:i\.\s?e\.|that\s+is),?)\s*(?P<chain>[^\n;=]{1,80}(?:=[^\n;=]{1,80})+?)"
    r"\s*(?:[.;](?=\s|$)|\n|$)"
)


def _chain_disagrees(answer: str, after: str) -> bool:
    """A chain of values said equal to the answer right after it holds another value."""
    chain = _CHAIN_AFTER.match(after) if "=" in after[:160] else None
    if chain is None:
        return False
    links = [link.strip(" $") for link in chain["chain"].split("=")]
    return any(re.search(r"\d", link) and not same(link, answer) for link in links)


_SIDE_BY_SIDE = re.compile(_NUMBER_THEN_BLANK + r"(?!\d{3}(?![\d/]))\d+(?:\.\d+)?(?![\d./])")
"""Two numbers with only a space between them, anywhere in an answer (``44 0``; not ``1 000``
nor ``2 1/2``)."""
_VERSUS = re.compile(
    r"\d\s*(?:\\(?:text|mathrm|textrm)\{\s*)?(?:\b(?:vs\.?|versus|else|then|oder|ou|или|或)(?:\s|\})|∨)"
    r"\s*\}?\s*[-−$\\]?\d",
    re.I,
)
"""Two values joined by a word of choice (``44 vs 0``, ``0 then 1``, ``44 oder 0``, ``44 ∨ 0``)."""
_JOINED = re.compile(
    r"(?<![\d.,])\d+(?:[.,]\d+)?\s+(?P<word>[^\s\d.,;:!?()\[\]{}=+*/<>|$€£¥%&^_\\-]{1,6})\s+"
    r"[-−$€£¥]?\d+(?:[.,]\d+)?\s*[.。]?\s*$"
)
_NOT_JOINERS = frozenset(
    ["of", "in", "by", "x", "per", "times", "over", "mal", "de", "di", "sur", "von", "из", "на"]
    + ["and", "und", "et", "y", "e", "и"]
)
_LABEL_END = re.compile(r"[:：៖]\s*[*$]*\s*$")
_LINE_ENDS = re.compile(r"[\s.。!$*}]*(?:\n|$)")
"""Words between two numbers that make one value of them ("1 in 4", "3 over 4", "5 by 6")."""


def _joined_by_a_word(answer: str, after: str) -> bool:
    """The answer ends on two numbers joined by a word that is no unit, in any language.

    "36 sau 63", "69 vai 96", "Erantzuna: 40 edo 44", "24 හෝ 25", alone or after a label, and
    nothing after them on their line: the word "or" of a language not listed. "1 in 4", "5 ft
    6", "2 Millionen 300", "1 giờ 30 phút" and "2, 4 and 6" are one value (or a list).
    """
    joined = _JOINED.search(answer, max(0, len(answer) - 40))
    if joined is None or not _LINE_ENDS.match(after):
        return False
    if answer[: joined.start()].strip(" *$") and not _LABEL_END.search(answer, 0, joined.start()):
        return False  # "The difference between 40 and 45 is 5.": a sentence, not two answers
    word = joined.group("word").lower()
    return (
        any(c.isalpha() for c in word)
        and word not in _NOT_JOINERS
        and word not in spelled.scale_words()
        and measure(word) is None
    )


_LINE_BREAK = re.compile(r"\d\s*\\\\\s*[-−]?\d")
"""Two values on two lines of an answer (``-5 \\ -4``; a matrix's rows are one answer)."""
_LEADING_JOINER = re.compile(r"^[\s/|,;:&+~-]*(?:(?:or|and|else|then|oder|ou|o|или)\b\s*)?", re.I)
ASIDE = re.compile(
    r"(?:(?<=\S)\s+|(?<=[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]))"  # no space in CJK text
    r"\([^()]*(?:[^\W\d_]{2}|\b[a-z]\.[a-z]\.)[^()]*\)\s*$"
)
"""An aside in brackets, with words, after an answer: "32 apples (16 pairs)", "(e.g. 1234)"."""
_JOINER_WORD = re.compile(r"^\W*\w+\s*")
DOUBT = Words(
    ascii=(
        r"\b(?:might|may|could)\s+have\s+(?:mis\w*|made|got|gotten|confused|swapped|misread|mixed)"
        r"|\b(?:might|may|could)\s+be\s+(?:wrong|off|mistaken|incorrect)|\bmiscount\w*"
        r"|\bwouldn['’]?t\s+bet|\bconfidence\s*[:=]?\s*(?:low|medium|moderate)\b"
        r"|\b(?:unverified|unconfirmed|unchecked|not\s+(?:yet\s+)?(?:verified|checked))\b"
        r"|\bif\s+i\s+(?:haven['’]?t|didn['’]?t)\s+(?:made|miscalculated|slipped|miscounted)"
        r"|\bpas\s+(?:tout\s+a\s+fait\s+)?certaine?\b|\bje\s+peux\s+me\s+tromper"
        r"|\bsofern\s+ich\s+mich\s+nicht\s+(?:vertan|verrechnet|geirrt)|\bsauf\s+erreur"
        r"|\bsalvo\s+(?:error(?:es)?|errori|engano)|\bmodulo\s+(?:arithmetic\s+)?slips"
        r"|\bassuming\s+my\s+arithmetic|\bif\s+i['’]?(?:ve|m)\s+(?:read|reading)\s+(?:the\s+\w+|it)\s+right"
        r"|\bi['’]?d\s+wager|\bi['’]?m\s+(?:about\s+)?\d{1,2}\s*%\s+sure|\bnot\s+pinned\s+down"
        r"|(?<![\d.])\d{1,2}(?:\.\d+)?\s*%\s+(?:confident|sure|certain|likely)\b"  # 40% confident
        r"|\bfirst\s+approximation|\b(?:lower|upper)\s+bound\b|\bneeds?\s+a\s+recheck"
        r"|\bcheck\s+failed|\bif\s+i['’]?m\s+not\s+mistaken|\bunless\s+i['’]?m\s+mistaken"
        r"|\bwenn\s+ich\s+mich\s+nicht\s+irre|\bsi\s+no\s+me\s+equivoco|\bse\s+non\s+(?:mi\s+)?sbaglio"
        r"|\bsi\s+je\s+ne\s+me\s+trompe|\bals\s+ik\s+me\s+niet\s+vergis|\b(?:kalau|jika)\s+tidak\s+salah"
        r"|\bhvis\s+jeg\s+ikke\s+tar\s+feil|\bom\s+jag\s+inte\s+misstar\s+mig|\bjos\s+en\s+erehdy"
        r"|\bfingers\s+crossed|\bdon['’]?t\s+quote\s+me|\btodo\b|\(\s*est(?:\.|imated?)\s*\)"
        r"|\bthis\s+is\s+a\s+guess|\bpending\s+verification|\bno\s+longer\s+sure|\bseems\s+just\s+as"
        r"|\bsomething\s+is\s+off|\bnot\s+trust\b|\barithmetic\s+slip|\bohne\s+Gewahr"
        r"|\bgrob\s+geschatzt|\ba\s+verifier|\bcreo\b|\bacho\s+eu|\bdenk\s+ik"
        r"|\bherhalde|\bsi\s+no\s+me\s+equivoqu|\bwenn\s+ich\s+mich\s+nicht\s+verrechnet"
        r"|\bignore\s+the\s+above|\bi['’]?m\s+torn\s+between|\berrei\s+a\s+conta"
        r"|\bdepends\s+on\s+(?:whether|if|how)\b|\bdon['’]?t\s+trust\s+(?:that|this|it|the|my)\b"
        r"|\b(?:gives?|yields?)\s+(?:a\s+)?(?:slightly\s+)?different\s+(?:total|answer|result|value)"
        r"|\bconfidence\s*[:=]?\s*[1-8]?\d\s*%|\b(?:cannot|can['’]?t)\s+decide\b"
        r"|\bnie\s+jestem\s+(?:\w+\s+)?pew"
        r"|\bnot\s+(?:\w+\s+)?(?:sure|certain|confident)"
        r"|\bunsure\b|(?<!\bno\s)(?<!without\s)(?<!beyond\s)\bdoubt"
        r"|\b(?:nicht\s+(?:ganz\s+)?sicher|no\s+(?:estoy|estar)\s+(?:muy\s+)?segur[oa]"
        r"|non\s+(?:sono\s+)?(?:del\s+tutto\s+)?sicur[oa]|niet\s+(?:helemaal\s+)?zeker"
        r"|nie\s+jestem\s+pew(?:ien|na|ny)|tidak\s+yakin|ikke\s+(?:helt\s+)?sikker|en\s+ole\s+varma"
        r"|sina\s+uhakika|sijui|posso\s+ter\s+errado|puedo\s+haberme\s+equivocado"
        r"|ich\s+k\w+nnte\s+mich\s+irren|potrei\s+sbagliar\w*)\b"
    ),
    other=(
        r"\b(?:pas\s+(?:tout\s+à\s+fait\s+)?sûre?"
        r"|não\s+(?:tenho\s+certeza|estou\s+(?:muito\s+)?segur[oa])"
        r"|не\s+(?:совсем\s+)?уверен[аы]?|не\s+(?:зовсім\s+)?впевнен\w*|emin\s+değilim|không\s+chắc"
        r"|podría\s+estar\s+equivocad[oa]"
        r"|inte\s+(?:helt\s+)?säker)\b|לא\s+בטוח|לא\s+בטוחה"
        r"|確かではない|自信がない|확실하지|自信がありません|مطمئن\s+نیستم|یقین\s+نہیں|पक्का\s+नहीं"
        r"|確かではありません|確信がありません|నమ్మకం\s+లేదు|ఖచ్చితంగా\s+తెలియదు"
        r"|확신할\s*수\s*없|لست\s+متأكد|নিশ্চিত\s+নই"
        r"|если\s+я\s+не\s+ошиб|自信はありません|(?<=\d)吧|吧[。.]?$"
        r"|不太确定|不确定|確信はありません|أخطأت|اشتباه\s+کرده\s+باشم|ייתכן\s+שטעיתי|שטעיתי"
        r"|hata\s+yapm[ıi]ş\s+olabilirim|где-то\s+ошиб|ошибся|ошиблась|помилився|помилилася"
        r"|यकीन\s+नहीं|निश्चित\s+नहीं|खात्री\s+नाही|သေချာမသိ|သေချာမ\S*ဘူး|உறுதியாக\s+தெரியவில்லை"
        r"|se\s+não\s+me\s+engano|jeśli\s+się\s+nie\s+mylę|yanılmıyorsam|如果我没(?:算)?错"
        r"|間違っていなければ|틀리지\s*않았다면|अगर\s+मैं\s+गलत\s+नहीं|αν\s+δεν\s+κάνω\s+λάθος"
        r"|nếu\s+tôi\s+không\s+nhầm|ถ้าไม่ผิด|если\s+не\s+ошибаюсь|ha\s+nem\s+tévedek"
        r"|pokud\s+se\s+nemýlím|dacă\s+nu\s+mă\s+înșel|إن\s+لم\s+أكن\s+مخطئ|אם\s+אני\s+לא\s+טועה"
        r"|[🤔🤷]|ツ|кажется|à\s+vérifier|ohne\s+Gewähr|grob\s+geschätzt"
    ),
)
"""Doubt about the answer just given, in the languages whose answers are read: a hedge."""


TAKEN_BACK = Words(
    ascii=(
        r"\b(?:that|this|it)(?:'s|\u2019s|\s+is|\s+was)\s+(?:wrong|incorrect|not\s+right)"
        r"|\bI\s+(?:made\s+(?:a|an)\s+(?:mistake|error)|was\s+wrong|miscalculated|forgot)\b"
        r"|\blet\s+me\s+(?:redo|recalculate|recompute|start\s+over)|\bscratch\s+that"
        r"|\b(?:das|es)\s+ist\s+falsch|\bc'est\s+faux|\bje\s+me\s+suis\s+tromp"
        r"|\bme\s+equivoqu|\b(?:das\s+)?stimmt\s+nicht|\bn'est\s+pas\s+(?:juste|correct)"
        r"|\bno\s+es\s+correcto|\bdat\s+klopt\s+niet|\bsi\s+sahihi|\bwait,?\s+no\b"
        r"|\b(?:salah|sbagliato|fout|pomyli\w*|forkert|feil|fel|gresit|spatne)\b|\bnicht\s+richtig"
        r"|\b(?:verrechnet|verzählt|me\s+he\s+equivocado|je\s+me\s+suis\s+trompée?)\b"
        r"|\bhabe?\s+mich\s+geirrt\b"
        r"|\bpas\s+correct|\bnej,?\s+vent|\bei\s+taida\s+olla\s+oikein|\bspletl\s+jsem\s+se"
        r"|\bmali\s+pala|\btamang\s+sagot|\b(?:can['’]?t|cannot)\s+be\s+right"
        r"|\beso\s+esta\s+mal|\besta\s+errado"
        r"|\bi\s+don['’]?t\s+think\s+(?:that|this|it)(?:['’]s|\s+is)\s+(?:right|correct)"
        r"|\b(?:no\s+(?:me\s+)?cuadra|ne\s+colle\s+pas|stimmt\s+(?:was|etwas)\s+nicht"
        r"|doesn['’]?t\s+add\s+up)\b|^\W*or\s+is\s+it\b"
    ),
    other=(
        r"\beso\s+está\s+mal|\bнеправильно|\bневерно|\bя\s+ошиб|\bè\s+sbagliato"
        r"|\bestá\s+errado|\byanlış|\bsai\s+rồi|\bbłąd\b"
        r"|(?:هذا|هناك)\s+خطأ|أخطأت|गलत|틀렸|不对|错了|算错|重新计算|間違|やり直|違います|違う|計算し直|väärin|hibás"
        r"|greșit|špatně|неправильн|невірн|не\s+так|לא\s+נכון|טעות|טעיתי|elszámoltam|λάθος"
        r"|اشتباه\s+کردم|غلط\s+(?:است|ہے)|తప్పు|ผิด|தவறு|ভুল|ખોટું|चूक|ຜິດ|ខុស|မှား|ስህተት"
        r"|틀린\s*것\s*같|δεν\s+πάει\s+καλά|не\s+сходится|对不上|不太对"
    ),
)
"""The answer just given taken back ("Actually, that's wrong", "不对，我算错了"), with or without
another value: a hedge (a response that retracts its answer has none)."""


def first_clause(after: str) -> str:
    """The clause right after an answer; a line holding only a joiner ("or") runs on."""
    after = after[:300].lstrip(" \t\n*$}).,;:。．，")
    stop = CLAUSE_END.search(after)
    if stop is not None and _JOINER_LINE.fullmatch(after[: stop.start()]):
        more = len(after) - len(after[stop.end() :].lstrip())  # "or" alone, then blank lines
        rest = CLAUSE_END.search(after, more)
        return after[: rest.start()] if rest else after
    return after[: stop.start()] if stop else after


_JOINER_LINE = re.compile(r"\s*(?:or|else|also|otherwise|alternatively|maybe|perhaps)\s*", re.I)


def _inexact(answer: str, after: str) -> bool:
    r"""The answer calls itself approximate or doubtful, as ``≈ 42`` does.

    "about 42", "etwa 42 Eier", "大约42", "42 (to within 2)", ``42^{+1}_{-1}``, "42
    (approximately)", "\boxed{42 \text{, I think}}", and a question mark ending it (Greek "42;").
    """
    numbers = find_numbers(answer)
    if numbers and _approximate(answer, after, numbers):
        return True
    if APPROXIMATE.search(answer) or APPROXIMATE.match(after):
        return True
    return bool(_THINK.search(answer)) or answer.rstrip().endswith((";", "\u037e", "؟", "？"))


def _approximate(answer: str, after: str, numbers: list[re.Match]) -> bool:
    """A word of approximation before or after the answer's value, or a tolerance after it."""
    start = numbers[-1].start()
    if len(numbers) > 1 and answer[numbers[-2].end() : start] in (",", "."):
        start = numbers[-2].start()  # "15,50": one value
    if about_in_answer(answer, start):
        return True  # "about 42", "più o meno 15,50 €", "takriban mayai 350"
    rest = answer[numbers[-1].end() :]
    if ABOUT_AFTER.match(rest) or ABOUT_AFTER.match(rest[1:]):
        return True  # "42 내외", "42个左右", "42개쯤" (a counter word may come between)
    return bool(TOLERANCE.search(answer + after[:30], numbers[0].end()))


def asked_or_undone(answer: str, after: str) -> bool:
    """A question mark right after the answer, or a short interjection and another value.

    "Is the answer 42?", "هل الجواب ٤٢؟", "42인가요?"; "#### 42. Ei, odota: 43.", "Svar: 12. Nej,
    vänta, 13.", "답은 42. 아니, 43." (a retraction in any language).
    """
    if _QUESTION.match(after):
        return True
    return bool(_INTERJECTION.match(after)) and other_value(first_clause(after), answer)


APPROXIMATE = re.compile(
    r"(?i)\s*(?:\\text\s*\{\s*)?\(\s*(?:approx(?:imately|\.)?|roughly|about|circa|ca\.)\s*\)"
)
"""An answer that calls itself approximate, ``42 (approximately)``: not the exact value."""
_NEAR = (
    r"(?:just|slightly|a\s+(?:bit|touch|hair|tad))\s+(?:under|over|below|above|shy\s+of"
    r"|(?:less|more)\s+than)"
)
NEAR_BEFORE = re.compile(rf"(?i)\b{_NEAR}\s*[$€£¥]?$")
"""A value told as a little over or under ("just under 3.5 miles"): no value, however rounded."""
_MONEY_BETWEEN = r"(?:\s*(?:[$€£¥₹₺₩]|R\$|US\$|CHF|Rs\.?|Rp\.?|TL|zł|Kč))?\s*$"
ABOUT = Words(
    ascii=(
        r"(?<!\\)\b(?:about|approx(?:imately|\.)?|roughly|around|nearly|almost|circa|ca\.|etwa"
        r"|ungef[aä]hr|rund|knapp|schätzungsweise|so\s+um\s+die|environ|aproximadamente"
        r"|alrededor\s+de|cerca\s+de|unos|unas|m[aá]s\s+o\s+menos|approssimativamente|quasi"
        r"|all['’]incirca|pi[uù]\s+o\s+meno|uns|umas|por\s+volta\s+de|ongeveer|zo['’]n|okolo"
        r"|oko[lł]o|mniej\s+wi[eę]cej|korulbelul|yaklasik|asagi\s+yukari|omkring|ungefar|cirka|noin"
        r"|kb\.|asi|zhruba|priblizn[eě]|priblizno|aproximativ|sekitar|kira-kira|takriban|khoang"
        r"|humigit-kumulang|sennilega|verjetno|circiter|c\.|quelque|ruim|in\s+the\s+(?:neighbou?rhood|region)\s+of"
        r"|on\s+the\s+order\s+of|close\s+to|a\s+little\s+(?:under|over)|upwards\s+of|a\s+good"
        r"|gut|gute|"
    )
    + _NEAR
    + ")"
    + _MONEY_BETWEEN
    + r"|~\s*$",
    other=(
        r"(?:około|körülbelül|yaklaşık|aşağı\s+yukarı|ungefär|přibližně|približno|khoảng|около"
        r"|приблизительно|примерно|приблизно|почти|где-то|порядка|حوالي|حدود|تقريباً|تقريبا|تقريبًا|בערך|לערך"
        r"|περίπου|लगभग|करीब|सुमारे|লগভগ|প্রায়|ਲਗਭਗ|લગભગ|ପ୍ରାୟ|சுமார்|సుమారు|ಸುಮಾರು|ഏകദേശം"
        r"|ประมาณ|ປະມານ|ប្រហែល|约|大约|大約|大概|差不多|估计|約|およそ|약|environ|à\s+peu\s+près"
        r"|più\s+o\s+meno|más\s+o\s+menos|تقریباً|تقریبا|დაახლოებით|[≃≒≅∼]|(?:大约|大概|约|大約)(?:[是为有要花用]|需要|需|花了|用了|要花))"
    )
    + _MONEY_BETWEEN,
)
"""A word right before the value that makes it approximate ("about 42", "etwa 42", "大约42",
"około 12", "about $3,750"): like ``≈ 42``, no exact answer."""


def about_before(text: str, at: int) -> bool:
    """A word of approximation (:data:`ABOUT`) ends right before ``text[at]``, a number's start."""
    return bool(ABOUT.search(text[max(0, at - 40) : at]))


def about_in_answer(answer: str, at: int) -> bool:
    """In an answer, a word of approximation before its value ``answer[at]``, a noun between.

    "about 42"; Swahili "takriban mayai 350" (about eggs 350) names the thing first.
    """
    if about_before(answer, at):
        return True
    noun = _NOUN_BEFORE.search(answer, max(0, at - 30), at)
    return noun is not None and about_before(answer, noun.start())


_NOUN_BEFORE = re.compile(r"[^\W\d_]{3,}\s+$")


ABOUT_AFTER = re.compile(
    r"(?:\s*[$€£¥₹%]|\s+[^\W\d_]{1,10}\.?)?\s*,?\s*(?:左右|前後|ぐらい|くらい|程度|쯤|내외|정도|ခန့်|上下|more\s+or\s+less|or\s+so|give\s+or\s+take"
    r"|roughly\s+speaking|más\s+o\s+menos|à\s+peu\s+près|più\s+o\s+meno|mais\s+ou\s+menos"
    r"|civarı|civarında|или\s+около\s+того)"
)
"""A word right after the value that makes it approximate ("42个左右", "42個ぐらい", "42개쯤")."""
TOLERANCE = re.compile(
    r"(?i)\s*(?:\((?:to\s+)?within\s+[^()]{1,20}\)|\^\s*\{?\s*\+|or\s+thereabouts|-ish\b)"
    r"|\bwithin\s+(?:±|\+/-|plus\s+or\s+minus\s+)\s*\d"
)
"""A tolerance after the value: "42 (to within 2)", ``42^{+1}_{-1}``, "42-ish" (``42 \\pm 1`` is
read as the two values 41 and 43)."""
BOUND_AFTER = re.compile(
    r"(?i)['’]?(?:d|t)[ae]n\s+(?:büyük|küçük|fazla|az)\b"  # Turkish "42'den büyük"
    r"|(?:\s*[^\W\d_]{1,12}){0,2}?\s*,?\s*(?:or\s+(?:more|less|fewer|greater|above|below)"
    r"|(?:oder|ou|o)\s+(?:mehr|weniger|plus|moins|más|menos|mais)"
    r"|at\s+(?:most|least|the\s+most)|and\s+(?:up|above|more)|or\s+so|give\s+or\s+take"
    r"|or\s+thereabouts|plus\s+or\s+minus)\b|\s*(?:以上|以下|未満|超|이상|이하|미만|초과|±|(?:\S+\s+)?على\s+(?:الأكثر|الأقل))"
)
"""Words of a bound after a number: "42 or more", "42 apples at most", "42 and up", "64, give
or take", "42以上", "42 이상", "42'den büyük", "42 oder mehr"."""
BOUND = re.compile(
    r"(?i)(?:\b(?:at\s+(?:least|most)|(?:no\s+)?(?:more|less|fewer|greater)\s+than|mindestens"
    r"|höchstens|mehr\s+als|weniger\s+als|au\s+(?:moins|plus)|plus\s+de|moins\s+de"
    r"|al\s+(?:menos|máximo)|más\s+de|menos\s+de|almeno|pelo\s+menos|no\s+máximo|mais\s+de"
    r"|не\s+(?:менее|более|меньше|больше)|менее|более|минимум|максимум|hooguit|ten\s+minste"
    r"|minstens|upwards\s+of|a\s+lo\s+sumo|como\s+m[aá]ximo|no\s+m[aá]s\s+de|على\s+الأقل"
    r"|como\s+mucho|no\s+m[ií]nimo|como\s+m[ií]nimo"
    r"|कम\s+से\s+कम|अधिकतम)\s+"
    r"|just\s+(?:under|over|below|above)\s+|(?:under|over|below|above)\s+"
    r"|至少|最多|不少于|不超过|超过|少なくとも|最低|최소|최대)[$€£¥₹]?$"
)
"""Words of a bound right before a number ("at least 3 kg", "не менее 42", "至少5"): the
number is no answer's value."""


def offers_another(sentence: str) -> bool:
    """The sentence offers a value as also possible ("7 is also acceptable", "19 is possible")."""
    return bool(_ALSO.search(sentence) and _ACCEPTABLE.search(sentence)) or bool(
        POSSIBLE.search(sentence)
    )


POSSIBLE = re.compile(
    r"(?i)\d\s+(?:is|are|would\s+be|seems?)\s+(?:also\s+|equally\s+|quite\s+)?"
    r"(?:possible|plausible|defensible|an?\s+option)\b"
)


def other_value(clause: str, answer: str) -> bool:
    """The last value of ``clause`` is another value than ``answer`` ("4.2 × 10¹" is 42)."""
    spans = _MATH_SPAN.findall(clause) if "$" in clause or "\\(" in clause else []
    if spans and same(next(filter(None, spans[-1])), answer):
        return False  # "Equivalently, $x^2+6x-27$": the answer's expression, said again
    clause = spelled.as_digits(clause, spelled.language(clause) or "en")  # "or forty-six"
    found = [n for n in find_numbers(clause) if not REFERENCE.search(clause, 0, n.start())]
    if not found:
        return False
    last, _ = last_number(clause, found)
    if last != found[-1].group(0) and unit_after(clause, found[-1].end()):
        return not same(last, answer)  # "20 mph" after "20 km/h": another value, unit and all
    return not (same(found[-1].group(0), answer) or same(last, answer))


_MATH_SPAN = re.compile(r"\$([^$]{1,200})\$|\\\((.{1,200}?)\\\)")
"""A math span of a sentence: ``$x^2+6x-27$``, ``\\(2\\sqrt{13}\\)``."""


def last_number_hedged(text: str, last: re.Match, restated: bool) -> bool:
    """The answer of the ``last_number`` rule, the number ``last`` of ``text``, is hedged.

    It is read in its sentence (on its line, up to 200 characters before it). A last number
    that only restates the amount before it (``restated``, "2 hours, or 120 minutes") is
    hedged by a word of uncertainty there only; any other also by another value in the
    clause after it, one offered as also possible, or one listed right before it
    (:data:`_OR_BEFORE`: ``31 or 32``, a listed interval, ``28080 104``). A decimal comma's
    two halves (``1,5 Millionen``) are one number.
    """
    at = last.start()
    halves = _DECIMAL_COMMA_BEFORE.search(text, max(0, at - 24), at)
    if halves is not None:
        at = halves.start()
    start = text.rfind("\n", 0, at) + 1
    sentence = text[max(start, at - 200) : at]
    if restated:
        return bool(HEDGE_WORDS.search(sentence))
    clause = CLAUSE_END.split(sentence)[-1] + first_clause(text[last.end() :])
    later = text[last.end() : last.end() + ALSO_WINDOW]
    return (
        is_hedged(sentence + text[at : last.end()], text[last.end() :])
        or offers_another(clause)
        or bool(_BETWEEN.search(sentence, max(0, len(sentence) - 60)))  # "between 5 and 6"
        or bool(_OR_BEFORE.search(sentence, max(0, len(sentence) - 80)))  # it ends the sentence
        or bool(TAKEN_BACK.search(later))  # "So 12 apples. That's wrong, let me redo this."
        or bool(BOUND.search(text, max(0, last.start() - 30), last.start()))  # "at least 3 kg"
    )


_DECIMAL_COMMA_BEFORE = re.compile(r"(?<![\d,.])\d+,$")
"""The whole part of a decimal comma before the last number (``1,`` of ``1,5``), which
``last_number`` reads as one number."""
_BETWEEN = re.compile(
    r"(?i)(?:\bbetween|\bentre|\bzwischen|между|بين)\s+[-\u2212$€£]?\d[\d.,]*"
    r"(?:\s*[^\W\d_]+)?\s*(?:and|et|und|y|e|и|و|-|–)\s*[$€£]?$"
)
"""A range before the last number: "between 5 and 6 hours", "ما بين ٥ و ٦"."""
_OFFERS = re.compile(
    r"\b(?:also|too|though|although|plausible|likely|possible|alternatively|or|otherwise|could"
    r"|might|may|if|else|oder|falls|ou|si|o|lub|или|если|correct|correction|corrected|should"
    r"|typo|think|with|including|counting|instead|rather|actually|really|hoặc|atau|veya|eller"
    rf"|albo|nebo|або|oppure|voire)\b|如果|{_OR_WORD}|[가-힣]+(?:하|이|라)면(?=\s)|단\s*[,，]",
    re.IGNORECASE,
)
"""Words in an aside that offer its number as another answer: "15 (though 16 is plausible)".
Dutch "of" (or) only where it opens the aside or a clause: in English it is "3 of them red"."""
_DUTCH_OR = re.compile(r"(?i)(?:^|,)\s*of\b")


def _number_follows(text: str) -> bool:
    """``text``, what follows an answer's value, opens with another number in any form.

    In Roman numerals (``LXXIII``, ``Ⅻ``), Han digits (``七十三``) or the words of any language
    num2words spells (``setenta``, ``семьдесят``, ``yetmiş``); a scale (``2 Millionen``, ``3
    hundred``, ``1,5 milhão``: :func:`~envhub.envs.math.spelled.scale_words`) is the same
    number's.
    """
    first = _LEADING_JOINER.sub("", text).split(maxsplit=1)
    if not first:
        return False
    token = first[0].strip(".,;:!?)]}*")
    word = token.lower().split("-")[0]  # forty-three, quarante-trois
    return _numeral(token) or (
        word in spelled.any_number_words() and word not in spelled.scale_words()
    )


def _said_again(answer: str) -> bool:
    """``answer`` is a value and the same in words or numerals after it ("42 / forty-two")."""
    main, other = restated(answer)
    return main != answer and not other


def _numeral(token: str) -> bool:
    """``token`` is a number in Roman numerals (``LXXIII``, ``Ⅻ``; ``CM`` is a unit) or Han."""
    roman = spelled.ROMAN.fullmatch(token) and measure(token.lower()) is None
    return bool(roman) or token[:1] in _OTHER_NUMERALS


_OTHER_NUMERALS = frozenset("ⅠⅡⅢⅣⅤⅥⅦⅧⅨⅩⅪⅫⅬⅭⅮⅯⅰⅱⅲⅳⅴⅵⅶⅷⅸⅹⅺⅻ一二三四五六七八九两〇零")


def offers_value(aside: str, answer: str) -> bool:
    """An aside offers another value: a cue word and a number that is not the answer again.

    "15 (though 16 is also plausible)" offers 16; "3,50 € (also 350 Cent)" says 3,50 € again.
    """
    found = find_numbers(spelled.as_digits(aside, spelled.language(aside) or "en"))
    if not found or not (_OFFERS.search(aside) or _DUTCH_OR.search(aside.strip("() "))):
        return False
    said = found[-1].group(0) + unit_after(found[-1].string, found[-1].end())
    return not same(said, answer.strip())
