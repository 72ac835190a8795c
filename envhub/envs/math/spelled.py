"""Numbers written in words.

Three uses:

* :func:`words_value`: an answer that is a number in words (``twenty-five``, ``quarante-deux``,
  ``cuarenta y dos``, ``zweiundvierzig``, ``dertig``), for the parser; with a label after it,
  :func:`leading_words_value` ("quarantadue matite").
* :func:`as_digits`: the number words of running text written as digits, for the last-number
  rule and the hedges ("Il y a 7 paquets de 10 : soixante-dix bonbons." ends with 70, not 10;
  "(or forty-six if ...)" offers another value), in the response's language
  (:func:`language`).
* :func:`gold_in_words`: the gold's own value spelled in one of 26 languages that no reader
  here parses ("czterdzieści dwa jabłka" against 42), for the comparison.

`text2num <https://github.com/allo-media/text2num>`_ reads English, French, Spanish, German,
Dutch, Italian and Portuguese. What it would also rewrite is kept as written: ordinals
(``third`` is no 3, ``der dritte`` no ``3.``), a count of fractions (``three quarters``), a
scale word after digits (``2 million``), the words for one that are also articles or pronouns
(``one``, ``un``, ``ein``), a number that names a given ("each of the two days"), and times
("ten to eleven"). `num2words <https://github.com/savoirfairelinux/num2words>`_ spells the
gold for the other languages: only the gold's spelling is ever matched, so no value in words
is paid that is not the gold.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable
from fractions import Fraction
from functools import lru_cache

from num2words import num2words
from text_to_num import alpha2digit, text2num

from .numerals import number_words
from .spellings import extra_spellings
from .wordfractions import and_a_half, fraction_in_words

LANGUAGES = ("en", "fr", "es", "de", "nl", "it", "pt")
_STOPWORDS = {
    "de": "und der die das ist sind nicht mit von für auf insgesamt also ein eine hat",
    "fr": "et est sont les des une du avec pour donc il elle ils au sur chaque",
    "es": "el los las es son del con para por entonces tiene hay cada total",
    "it": "il che sono della gli per con è quindi ha ogni totale",
    "pt": "os são uma com para então tem não do da é cada",
    "nl": "het een zijn dus voor totaal van met en er heeft elke",
    "en": "the and is are so of to with for total that this we each then which has",
}
_STOPWORD_SETS = {lang: frozenset(words.split()) for lang, words in _STOPWORDS.items()}
_WORD = re.compile(r"[^\W\d_]+")
_SPELLED_WORD = re.compile(r"(?:[^\W\d_]|[\u0300-\u036f\u0900-\u0dff\u0e00-\u0eff\u1000-\u109f])+")
"""A word with its combining marks (to Python's regex, a vowel sign of Devanagari, Bengali or
Thai is no letter: ``बीस`` would be two words)."""


def language(text: str) -> str | None:
    """The language of ``text`` among :data:`LANGUAGES` by its common words.

    English on a tie, or when the text has any of its common words and no other language has
    more than one; None when the text has too few common words to tell.
    """
    words = [w.lower() for w in _WORD.findall(text[-3000:])]
    counts = {lang: sum(w in stop for w in words) for lang, stop in _STOPWORD_SETS.items()}
    best = max(counts, key=lambda lang: (counts[lang], lang == "en"))
    if counts[best] >= 2 and counts[best] > counts["en"]:
        return best
    return "en" if counts["en"] else None


_FALSE_FRIENDS = re.compile(r"(?i)\b(?:once|elf|cents?|sept|mil|miles)\b")
"""English words (and abbreviations) that are numbers in another language (Spanish ``once``
is 11, ``miles`` thousands): a text of no known language that holds one is not read for
numbers in words, and an answer that is one alone is not read in another language."""


def leading_words_value(text: str) -> tuple[Fraction, str] | None:
    """A number in words that starts ``text``, and the words after it ("quarantadue matite").

    The longest run of leading words that :func:`words_value` reads; None when the words after
    it hold another number or a word that joins one ("twelve or thirteen").
    """
    words = text.split()
    for cut in range(min(len(words), 8), 0, -1):
        value = words_value(" ".join(words[:cut]))
        if value is None:
            continue
        rest = words[cut:]
        if any(w.lower() in _JOINERS or words_value(w) is not None for w in rest):
            return None
        return value, " ".join(rest)
    return None


_JOINERS = frozenset("or and oder und ou et o y e of ili или أو".split())


def words_value(text: str) -> Fraction | None:
    """The value of ``text`` when it is one number in words, in any of :data:`LANGUAGES`.

    English first (:func:`~envhub.envs.math.numerals.number_words`: also ``a dozen``, ``three
    quarters``, ``one and a half``), Swahili, fractions in words of other languages
    (:mod:`~envhub.envs.math.wordfractions`: ``drei Viertel``); then the languages in which
    text2num reads it, which must agree on its value.
    """
    value = number_words(text)
    value = swahili_words(text) if value is None else value
    value = fraction_in_words(text) if value is None else value  # drei Viertel, две трети
    value = and_a_half(text) if value is None else value  # zweieinhalb, два с половиной
    if value is not None or _FALSE_FRIENDS.fullmatch(text.strip()) or not has_number_word(text):
        return value  # (most clauses after an answer, read at every hedge check, hold none)
    if text.strip().lower() in _SCALES:
        return None  # "million" after "1,200" is its scale, not another value
    values = set()
    for lang in LANGUAGES[1:]:
        try:
            values.add(Fraction(text2num(text.strip().lower(), lang)))
        except ValueError:
            continue
    if len(values) != 1 or _one_word_values().get(text.strip().lower(), values) != values:
        return None  # Danish "tres" is 60, Spanish "tres" 3: no language tells which
    return values.pop()


_SWAHILI_UNITS = dict(
    zip("sifuri moja mbili tatu nne tano sita saba nane tisa".split(), range(10), strict=True)
)
_SWAHILI_TENS = dict(
    zip(
        "kumi ishirini thelathini arobaini hamsini sitini sabini themanini tisini".split(),
        range(10, 100, 10),
        strict=True,
    )
)
_SWAHILI_SCALES = {"mia": 100, "elfu": 1000, "milioni": 10**6, "bilioni": 10**9}


def swahili_words(text: str) -> Fraction | None:
    """A number in Swahili words ("tisini na sita" 96, "mia tatu na hamsini" 350), else None.

    No library here reads Swahili, an MGSM language: its numbers are tens and units joined by
    ``na``, after ``mia`` (hundreds) and ``elfu`` (thousands) with their count.
    """
    words = [w for w in text.lower().replace(",", " ").split() if w != "na"]
    if not words or words[0] not in (*_SWAHILI_UNITS, *_SWAHILI_TENS, *_SWAHILI_SCALES):
        return None
    total, i = 0, 0
    while i < len(words):
        word = words[i]
        if word in _SWAHILI_SCALES:  # "mia tatu": 300, "elfu moja": 1000
            after = words[i + 1] if i + 1 < len(words) else ""
            count = _SWAHILI_UNITS.get(after) or _SWAHILI_TENS.get(after)
            if not count:
                return None
            total, i = total + count * _SWAHILI_SCALES[word], i + 2
            continue
        value = _SWAHILI_TENS.get(word, _SWAHILI_UNITS.get(word))
        if value is None:
            return None
        total, i = total + value, i + 1
    return Fraction(total)


_SWAHILI_WORD = "|".join([*_SWAHILI_UNITS, *_SWAHILI_TENS, *_SWAHILI_SCALES])
_SWAHILI_RUN = re.compile(rf"(?i)\b(?:{_SWAHILI_WORD})(?:\s+(?:na\s+)?(?:{_SWAHILI_WORD}))*\b")
_SWAHILI_CUE = re.compile(rf"(?i)\b(?:{'|'.join([*_SWAHILI_TENS, *_SWAHILI_SCALES])})\b")
"""A Swahili ten or scale: a run of Swahili number words in running text holds one (a unit
alone, "sita", "tano", is read only as a whole answer)."""


def _swahili_run(m: re.Match) -> str:
    value = swahili_words(m.group(0)) if _SWAHILI_CUE.search(m.group(0)) else None
    return m.group(0) if value is None else str(value)


@lru_cache(maxsize=1)
def _one_word_values() -> dict[str, set[Fraction]]:
    """The numbers 0-100 that one word spells in :data:`SPELLED_LANGUAGES` (``tres``: 60)."""
    spelled: dict[str, set[Fraction]] = {}
    for lang in SPELLED_LANGUAGES:
        for n in range(101):
            word = _spelled_in(n, lang)
            if word and _WORD.fullmatch(word):
                spelled.setdefault(word, set()).add(Fraction(n))
    return spelled


_SCALES = frozenset(
    "million millions milliard milliards billion billions mille mila cent cento cien ciento "
    "tausend hundert duizend honderd miljoen millón millones milhão milhões milione milioni".split()
)
_TOKEN = re.compile(r"[^\W_]+|\s+|[^\w\s]|_")
_INTEGER = re.compile(r"\d+")
_ONE = frozenset("one un une uno una ein eine einen einem einer een um uma".split())
_DETERMINERS = frozenset(
    "the these those its their his her our my your both all "
    "le la les ces ses leurs der die das den dem des diese el los las estos sus "
    "il lo gli i questi het deze o os as estes".split()
)
"""Words before a number that make it name something already given ("the two days")."""
_CLOCK_WORDS = frozenset("quarter half five ten twenty twenty-five".split())
_NEGATIVE = frozenset("negative minus moins menos meno menos negativ".split())
_FRACTION_WORDS = frozenset(
    "half halves third thirds quarter quarters fourth fourths fifth fifths eighth eighths "
    "demi demie tiers quart quarts medio media tercio tercios cuarto cuartos "
    "halb halbe hälfte drittel viertel helft derde kwart mezzo terzo terzi quarto quarti "
    "meio meia terço terços".split()
)


@lru_cache(maxsize=1)
def _number_tokens() -> tuple[frozenset[str], tuple[str, ...]]:
    """The words of the numbers up to 100 and of the scales in :data:`LANGUAGES`.

    And the longer of them, which longer compounds hold (``dreihundertzwei``).
    """
    values = [*range(101), *range(200, 1001, 100), 10**6]
    words = {
        w
        for lang in LANGUAGES
        for n in values
        for w in re.split(r"[\s\-‐]+", num2words(n, lang=lang).lower())
        if w
    }
    words |= {"dozen", "half", "quarter", "hour"}
    words |= {"septante", "huitante", "octante", "nonante"}  # Belgian and Swiss French
    return frozenset(words), tuple(sorted(w for w in words if len(w) >= 4))


def has_number_word(text: str) -> bool:
    """Whether ``text`` may hold a number in words.

    A cheap first test, so that text without one is never aligned (:func:`_as_digits`) nor
    read by text2num.
    """
    words, pieces = _number_tokens()
    return any(
        t in words or (len(t) > 8 and any(p in t for p in pieces))
        for t in _WORD.findall(text.lower())
    ) or bool(_SWAHILI_CUE.search(text))


def as_digits(text: str, lang: str | None) -> str:
    """``text`` with its numbers in words written as digits (see the module docstring).

    In ``lang``; when it is None (:func:`language` cannot tell), in the one language that
    reads a number in ``text``, or none when several do.
    """
    if _SWAHILI_CUE.search(text):  # "dola ishirini na saba": 27 (no library reads Swahili)
        text = _SWAHILI_RUN.sub(_swahili_run, text)
    if not has_number_word(text):
        return text
    if lang is not None:
        return _as_digits(text, lang)
    if _FALSE_FRIENDS.search(text):
        return text
    readings = {_as_digits(text, lang) for lang in LANGUAGES} - {text}
    return readings.pop() if len(readings) == 1 else text


_ENGLISH_PHRASES = {
    r"(?:a|one)\s+dozen\s+and\s+a\s+half": "18",
    r"half\s+a\s+dozen": "6",
    r"(?:a|one)\s+dozen": "12",
    r"(?:a|one)\s+quarter\s+of\s+an\s+hour": "15 minutes",
    r"three\s+quarters\s+of\s+an\s+hour": "45 minutes",
    r"half\s+an\s+hour": "30 minutes",
    r"an\s+hour\s+and\s+a\s+half": "90 minutes",
    r"one\s+and\s+a\s+half": "1.5",
    r"two\s+and\s+a\s+half": "2.5",
    r"three\s+and\s+a\s+half": "3.5",
}
_PHRASE = re.compile(r"(?i)\b(" + "|".join(_ENGLISH_PHRASES) + r")\b")


def _phrase(m: re.Match) -> str:
    return next(v for k, v in _ENGLISH_PHRASES.items() if re.fullmatch(k, m.group(0), re.I))


def _as_digits(text: str, lang: str) -> str:
    if lang == "en" and _PHRASE.search(text):  # a dozen, half an hour
        text = _PHRASE.sub(_phrase, text)
    tokens = _TOKEN.findall(text)
    pieces, done = [], 0
    for start, end in _runs(tokens):
        pieces.append("".join(tokens[done:start]))
        pieces.append(_run_as_digits(tokens, start, end, lang))
        done = end
    pieces.append("".join(tokens[done:]))
    return "".join(pieces)


MAX_RUN = 48
"""Tokens of words read at once: their alignment is quadratic in a run's length."""


def _runs(tokens: list[str]) -> list[tuple[int, int]]:
    """Index ranges of ``tokens`` that are words joined by blanks, hyphens and apostrophes."""
    runs, start = [], None
    for i, t in enumerate([*tokens, "\n"]):
        joins = start is not None and (t in ("-", "'", "’") or (t.isspace() and "\n" not in t))
        if t.isalpha() and start is None:
            start = i
        elif not t.isalpha() and not joins and start is not None:
            runs.extend((a, min(a + MAX_RUN, i)) for a in range(start, i, MAX_RUN))
            start = None
    return runs


def _run_as_digits(tokens: list[str], start: int, end: int, lang: str) -> str:
    """The words ``tokens[start:end]``, with the numbers :func:`_reads` allows as digits."""
    run = tokens[start:end]
    text = "".join(run)
    try:
        converted = alpha2digit(text, lang, threshold=0)
    except ValueError:  # a language text2num does not know
        return text
    if converted == text:
        return text
    after = _TOKEN.findall(converted)
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, run, after, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal" or not _reads(tokens, start + i1, start + i2, after[j1:j2]):
            out.extend(run[i1:i2])
            continue
        sign = len(out) >= 2 and out[-1].isspace() and out[-2].lower() in _NEGATIVE
        out[-2:] = ["-"] if sign else out[-2:]  # negative five: -5
        out.extend(after[j1:j2])
    return "".join(out)


def _reads(tokens: list[str], i1: int, i2: int, written: list[str]) -> bool:
    """Whether the words ``tokens[i1:i2]`` may be read as the one number ``written``."""
    words = "".join(tokens[i1:i2]).strip().lower()
    if len(written) != 1 or not _INTEGER.fullmatch(written[0]) or not words:
        return False
    if any(c.isdigit() for c in words) or words in _ONE:
        return False
    prev, prev2 = _words(reversed(tokens[max(0, i1 - 4) : i1]))
    following, following2 = _words(tokens[i2 : i2 + 4])
    if prev == "past" or (prev == "to" and prev2 in _CLOCK_WORDS):
        return False  # quarter to four, ten to eleven, half past three: a time of day
    if following in ("to", "past") and following2.isalpha():
        return False
    if prev[-1:].isdigit() or prev in _DETERMINERS:
        return False  # 2 million; "each of the two days" names a given
    if prev in ("below", "above", "sous", "bajo", "unter", "sotto", "onder"):
        return False  # 5 °C below zero: a temperature
    return following not in _FRACTION_WORDS


def _words(tokens: Iterable[str]) -> tuple[str, str]:
    """The first two tokens that are not blanks, in lower case ("" for none)."""
    found = [t.lower() for t in tokens if not t.isspace()] + ["", ""]
    return found[0], found[1]


SPELLED_LANGUAGES = (
    *("pl", "cs", "sk", "sl", "ru", "uk", "tr", "sv", "da", "no", "fi", "hu", "ro", "lt", "lv"),
    *("id", "vi", "ko", "ja", "th", "bn", "te", "kn", "fa", "he", "ar", "hi", "el"),
)
"""Languages whose number words text2num does not read, spelled by num2words and
:mod:`~envhub.envs.math.spellings` (gold-directed)."""
MAX_SPELLED = 10**7
_GOLD_JOINERS = frozenset(
    "or and lub albo i или и veya ve eller och tai sekä vagy sau arba ar atau dan hoặc và ya"
    " yahut yada czy bądź либо ataupun או أو 또는 혹은 hay nebo anebo".split()
)


def gold_in_words(text: str, value: int) -> str | None:
    """What follows ``value`` written in words at the start of ``text``, or None.

    For the languages of :data:`SPELLED_LANGUAGES`, whose number words no reader here parses,
    the gold's own value is spelled (num2words) and looked for: "czterdzieści dwa jabłka" against
    42 leaves ``jabłka``, a label. Only the gold's spelling is ever matched, so another value
    in words stays unpaid; the words after it may not join another value ("or", "i").
    """
    if not 0 <= value < MAX_SPELLED or any(c.isdigit() for c in text):
        return None
    plain = text.strip().lower()
    for lang in SPELLED_LANGUAGES:
        m = _spelling(value, lang).match(plain)
        if m is None:
            continue
        rest = plain[m.end() :].strip(" .,;:!。")
        words = _SPELLED_WORD.findall(rest)
        if words and words[0] in _number_words(lang):
            continue  # "on iki" is 12, not 10 and a label
        if _another_number(plain[: m.end()], words):
            continue  # "sto dwa" is 102, "dwa dzieścia" 20, "två miljoner" 2000000
        if not any(w in _GOLD_JOINERS for w in words) and len(words) <= 4:
            return rest
    return None


def _another_number(spelled: str, words: list[str]) -> bool:
    """The ``words`` after a spelled gold make it another number, in any language.

    One of them is a number, scale or decimal-point word of any language read here ("sto
    dwa", "dwa przecinek pięć"), or the first one ends the gold's last word ("dwa dzieścia").
    """
    every = _all_number_words()
    if any(w in every or w in _POINT_WORDS for w in words):
        return True
    glued = _SPELLED_WORD.findall(spelled)[-1:] + words[:1]
    return len(glued) == 2 and "".join(glued) in every


@lru_cache(maxsize=1)
def _all_number_words() -> frozenset[str]:
    """Every word of three letters or more that num2words spells 0-100 or a scale with."""
    words = _spelled_words([*range(101), *(k * 10**e for k in (1, 2) for e in (2, 3, 6, 9))])
    return frozenset(w for w in words if len(w) >= 3)


_POINT_WORDS = frozenset(
    "przecinek virgül koma phẩy komma pilkku целых virgola vírgula virgule coma point punto"
    " comma tečka čárka pont".split()
)
"""Words for the decimal point: "dwa przecinek pięć" is 2.5."""


def _spelled_in(value: int, lang: str) -> str:
    """num2words' spelling of ``value`` in ``lang``, lower-cased; "" where it has none.

    Its converters raise what they raise (Amharic's a ``TypeError`` from ``clean``): a
    spelling it cannot give matches nothing, and is never a checker error.
    """
    try:
        spelled = num2words(value, lang=lang).lower()
    except Exception:  # noqa: BLE001 - a converter's own failure
        return ""
    if lang == "da":  # modern Danish 60 is "tres" (halvtreds, 50, stays)
        return _DANISH_SIXTY.sub("tres", spelled)
    return spelled.replace("etttusen", "ettusen") if lang == "sv" else spelled


_DANISH_SIXTY = re.compile(r"(?<!halv)treds")
_LEADING_ONE = {"ru": "одна ", "uk": "одна ", "sv": "ettusen", "da": "ettusinde og "}
"""What num2words writes before a thousand that speech drops: "(одна) тысяча двести", "tusen"."""


def _spellings(value: int, lang: str) -> tuple[str, ...]:
    """Every spelling of ``value`` in ``lang``: num2words' and those it does not write."""
    spelled = _spelled_in(value, lang)
    forms = [spelled, *extra_spellings(value, lang)]
    one = _LEADING_ONE.get(lang)
    if one and 1000 <= value < 2000 and spelled.startswith(one):
        forms.append(
            ("tusen" if lang == "sv" else "tusind og " if lang == "da" else "")
            + spelled[len(one) :].lstrip()
        )
    if lang == "sv" and 1100 <= value < 2000:  # tolvhundrafemtio, 1250
        hundreds, rest = divmod(value, 100)
        forms.append(
            _spelled_in(hundreds, lang) + "hundra" + (_spelled_in(rest, lang) if rest else "")
        )
    return tuple(s for s in forms if s)


@lru_cache(maxsize=64)
def _number_words(lang: str) -> frozenset[str]:
    """The words ``lang`` writes numbers with (0-100, hundreds, thousands)."""
    values = [*range(101), *range(200, 1001, 100), 2000, 10**4, 10**5, 10**6, 10**9]
    return frozenset(
        w for n in values for spelled in _spellings(n, lang) for w in re.split(r"[\s\-‐]+", spelled)
    )


@lru_cache(maxsize=2048)
def _spelling(value: int, lang: str) -> re.Pattern:
    """``value`` in words in ``lang`` as a pattern that allows or drops blanks and hyphens."""
    forms = sorted({re.sub(r"[\s\-‐]+", "", s) for s in _spellings(value, lang)}, key=len)
    if not forms:
        return re.compile(r"(?!)")  # spells nothing: matches nothing
    each = ("".join(re.escape(c) + r"[\s\-‐]*" for c in letters) for letters in reversed(forms))
    if lang == "th":  # no blanks between words: a unit may follow, never another number part
        return re.compile(f"(?:{'|'.join(each)})(?!{_THAI_NUMBER_PARTS})")
    return re.compile(f"(?:{'|'.join(each)})" + r"(?![^\W\d_])")


_THAI_NUMBER_PARTS = "|".join(
    "ศูนย์ หนึ่ง เอ็ด สอง ยี่ สาม สี่ ห้า หก เจ็ด แปด เก้า สิบ ร้อย พัน หมื่น แสน ล้าน จุด".split()
)
"""The parts Thai numbers are written with (``สองร้อยห้าสิบ`` is 250; ``จุด`` its point)."""


ROMAN = re.compile(
    r"\b(?=[MDCLXVI]{2,}\b)M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})\b"
    r"(?<=[MDCLXVI]{2})"
)
"""A number in Roman numerals of two letters or more, in capitals (``LXXIII``; ``I``, ``cm`` and
``mm`` are words and units)."""
_ROMAN_DIGITS = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def roman_value(text: str) -> str | None:
    """``text`` as digits when it is one number in Roman numerals (``XLII``, ``Ⅻ``), else None.

    Two letters or more in capitals (a lone ``I``, ``V`` or ``C`` is a letter), or the Unicode
    numerals.
    """
    bare = text.strip().strip("$").strip()
    if bare and all("\u2160" <= c <= "\u217f" for c in bare):
        return str(int(sum(unicodedata.numeric(c) for c in bare)))
    if not ROMAN.fullmatch(bare):
        return None
    values = [_ROMAN_DIGITS[c] for c in bare]
    total = sum(-v if v < w else v for v, w in zip(values, [*values[1:], 0], strict=True))
    return str(total)


MIN_FOREIGN_WORD = 4
"""Letters of the shortest number word of another language counted as a number (shorter ones
are English words too: ``due``, ``sei``, ``pet``)."""


@lru_cache(maxsize=1)
def any_number_words() -> frozenset[str]:
    """Number words of every language read here (``setenta``, ``семьдесят``, ``yetmiş``).

    The words num2words spells 0-100, the hundreds and the scales with, in :data:`LANGUAGES`
    and :data:`SPELLED_LANGUAGES`, of :data:`MIN_FOREIGN_WORD` letters or more.
    """
    words = _spelled_words([*range(101), *range(200, 1001, 100), 10**6, 10**9])
    return frozenset(w for w in words if len(w) >= MIN_FOREIGN_WORD)


@lru_cache(maxsize=1)
def scale_words() -> frozenset[str]:
    """The words of :func:`any_number_words` that only scale a number.

    ``hundred``, ``milhão``, ``millions``, ``тысячи``: none of 1 to 99 holds them.
    """
    scales = [k * 10**e for k in (1, 2, 5) for e in (2, 3, 6, 9)]
    return frozenset(_spelled_words(scales) - _spelled_words(range(100)))


def _spelled_words(values: Iterable[int]) -> set[str]:
    """The words num2words spells ``values`` with, in every language read here."""
    words = set()
    for lang in dict.fromkeys((*LANGUAGES, *SPELLED_LANGUAGES)):
        for n in values:
            words.update(w for s in _spellings(n, lang) for w in _SPELLED_WORD.findall(s))
    return words
