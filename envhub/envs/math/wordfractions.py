"""Fractions in words in other languages than English: ``drei Viertel``, ``две трети``.

English fractions (``three quarters``) are :func:`envhub.envs.math.numerals.number_words`';
these are the count, in words of the language (read by text2num, or a table for Russian),
then the word of the part: ``deux tiers`` 2/3, ``tres cuartos`` 3/4, ``un quinto`` 1/5,
``zwei Drittel`` 2/3, ``tre quarti`` 3/4, ``três quartos`` 3/4, ``drie vierde`` 3/4, ``три
четверти`` 3/4. A part word alone (``cuarto``: also a room, ``quinto``: fifth) is none. And a
count and a half said as one word or phrase: ``zweieinhalb``, ``anderthalb``, ``два с
половиной``, ``полтора``.
"""

from __future__ import annotations

import re
from fractions import Fraction

from text_to_num import text2num

_PARTS = {
    "de": "Halbe 2 Drittel 3 Viertel 4 Fünftel 5 Sechstel 6 Siebtel 7 Achtel 8 Neuntel 9"
    " Zehntel 10 Zwölftel 12 Hundertstel 100",
    "fr": "demi 2 demis 2 tiers 3 quart 4 quarts 4 cinquième 5 cinquièmes 5 sixième 6"
    " sixièmes 6 septième 7 septièmes 7 huitième 8 huitièmes 8 neuvième 9 neuvièmes 9"
    " dixième 10 dixièmes 10 centième 100 centièmes 100",
    "es": "medio 2 medios 2 tercio 3 tercios 3 cuarto 4 cuartos 4 quinto 5 quintos 5 sexto 6"
    " sextos 6 séptimo 7 séptimos 7 octavo 8 octavos 8 noveno 9 novenos 9 décimo 10"
    " décimos 10",
    "pt": "meio 2 meios 2 terço 3 terços 3 quarto 4 quartos 4 quinto 5 quintos 5 sexto 6"
    " sextos 6 sétimo 7 sétimos 7 oitavo 8 oitavos 8 nono 9 nonos 9 décimo 10 décimos 10",
    "it": "mezzo 2 mezzi 2 terzo 3 terzi 3 quarto 4 quarti 4 quinto 5 quinti 5 sesto 6 sesti 6"
    " settimo 7 settimi 7 ottavo 8 ottavi 8 nono 9 noni 9 decimo 10 decimi 10",
    "nl": "derde 3 derden 3 vierde 4 vierden 4 kwart 4 vijfde 5 vijfden 5 zesde 6 zesden 6"
    " zevende 7 zevenden 7 achtste 8 achtsten 8 negende 9 negenden 9 tiende 10 tienden 10",
    "ru": "половина 2 половины 2 треть 3 трети 3 третей 3 четверть 4 четверти 4 четвертей 4"
    " пятая 5 пятых 5 шестая 6 шестых 6 седьмая 7 седьмых 7 восьмая 8 восьмых 8"
    " девятая 9 девятых 9 десятая 10 десятых 10",
}
_PART_OF = {
    lang: {w.lower(): int(n) for w, n in zip(*[iter(words.split())] * 2, strict=True)}
    for lang, words in _PARTS.items()
}
_RUSSIAN_COUNTS = dict(
    zip("одна две три четыре пять шесть семь восемь девять".split(), range(1, 10), strict=True)
)
_GERMAN_ONE = frozenset({"ein", "eine", "einen", "einem"})
_SHAPE = re.compile(r"(?P<count>[^\W\d_]+(?:[\s-][^\W\d_]+)*?)[\s-]+(?P<part>[^\W\d_]+)")


_ALL_PARTS = frozenset(w for parts in _PART_OF.values() for w in parts)


def fraction_in_words(text: str) -> Fraction | None:
    """The fraction ``text`` is in words of a language of :data:`_PARTS`, or None."""
    text = text.strip().lower()
    if len(text) > 60 or text.rpartition(" ")[2] not in _ALL_PARTS:
        return None  # (most text read here is no fraction: a cheap first test)
    shape = _SHAPE.fullmatch(text)
    if shape is None:
        return None
    values = set()
    for lang, parts in _PART_OF.items():
        part = parts.get(shape["part"])
        count = _count(shape["count"], lang) if part else None
        if count:
            values.add(Fraction(count, part))
    return values.pop() if len(values) == 1 else None


_AND_A_HALF = re.compile(r"(?P<count>[^\W\d_]+?)einhalb|(?P<ru>[^\W\d_]+)\s+с\s+половиной")
_ONE_AND_A_HALF = frozenset({"anderthalb", "eineinhalb", "полтора", "полторы"})


def and_a_half(text: str) -> Fraction | None:
    """A count and a half in one phrase: ``zweieinhalb`` 5/2, ``два с половиной`` 5/2."""
    text = text.strip().lower()
    if text in _ONE_AND_A_HALF:
        return Fraction(3, 2)
    m = _AND_A_HALF.fullmatch(text)
    if m is None:
        return None
    count = _count(m["count"], "de") if m["count"] else _RUSSIAN_WHOLE.get(m["ru"])
    return count + Fraction(1, 2) if count else None


_RUSSIAN_WHOLE = dict(
    zip(
        "один два три четыре пять шесть семь восемь девять десять".split(),
        range(1, 11),
        strict=True,
    )
)


def _count(words: str, lang: str) -> int | None:
    """The count before the part word: ``drei``, ``deux``, ``две``; None if it is none."""
    if lang == "ru":
        return _RUSSIAN_COUNTS.get(words)
    if lang == "de" and words in _GERMAN_ONE:
        return 1
    try:
        return text2num(words, lang)
    except ValueError:
        return None
