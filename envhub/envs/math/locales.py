r"""Which way a response writes its numbers: ``1.234,5`` (continental) or ``1,234.5``.

``1.250`` is one and a quarter in English and twelve hundred and fifty in German, French,
Spanish, Italian, Portuguese or Dutch. Nothing in the number says which; the response around
it does. :func:`continental` reads that evidence, and :func:`english_notation` rewrites an
answer of such a response the way the parser reads numbers (``1.250`` -> ``1250``, ``1,5`` ->
``1.5``, ``(1,5; 2)`` -> ``(1.5, 2)``).

The evidence, in order:

1. its arithmetic: the first sum or product that holds one way only (``3 × 5.000 = 15.000``
   is continental, ``6 × 250 = 1,500`` English, whatever the language: Mexico writes 1,500);
2. the answer is introduced in one of those languages ("Antwort:", "La réponse est", "La
   respuesta es", "A resposta é", "La risposta è", "Het antwoord is", "Ответ:");
3. the response's numbers: one written only the continental way (``1.234,5``,
   ``1.234.567``, ``2,50 €``, ``10 €``) and none written only the English way (``1,234.5``,
   ``1,234,567``, ``2.5``, ``$10``);
4. its words: at least three function words of those languages and more of them than
   English ones.

Without evidence a response is English: ``1.250`` stays 1.25.
"""

from __future__ import annotations

import re
from fractions import Fraction

ANSWER_WORDS = {
    "antwort": "antw",
    "antwoord": "antw",
    "r[ée]ponse": "ponse",
    "respuesta": "respu",
    "resposta": "respo",
    "risposta": "rispo",
    "lösung": "lösung",
    "solución": "soluci",
    "soluzione": "soluzi",
    "oplossing": "oplos",
    "ответ": "ответ",
    "решение": "решени",
    "odpowiedź": "odpowied",
    "odpověď": "odpov",
    "відповідь": "відповід",
    "svar(?:et)?": "svar",
    "wynik": "wynik",
    "cevap": "cevap",
    "sonuç": "sonu",
    "yanıt": "yanıt",
    "ergebnis": "ergebn",
    "r[ée]sultat": "sultat",
    "resultado": "resulta",
    "risultato": "risulta",
    "resultaat": "resulta",
    "jawa(?:ban|pan)(?:nya)?": "jawa",
    "đáp\\s+(?:án|số)": "đáp",
    "απάντηση": "απάντηση",
}
"""The words that introduce an answer ("answer", "solution", "result") in the languages that
write numbers the continental way (German, Dutch, French, Spanish, Portuguese, Italian,
Russian, Polish, Turkish, Indonesian, Vietnamese, Greek), each a regular expression, with a
part of it that the word holds once lower-cased (a fast first test before the regular
expression). The one list of them: a statement in one of these languages is evidence here
(:func:`continental`), and :mod:`envhub.envs.math.statements` reads the answer it states."""
ANSWER_WORD = "|".join(ANSWER_WORDS)
""":data:`ANSWER_WORDS` as one alternation."""
IS_WORDS = "ist|is|est|es|é|è|to|olarak|adalah|là|είναι|lautet|är|er"
""""Is" after an answer word in those languages and English ("Antwort ist", "la réponse est",
"odpowiedź to", "sonuç olarak")."""
_STATEMENT = re.compile(
    rf"(?:{ANSWER_WORD})(?:\s+(?:final|finale|finales|définitive|definitiva|finaal))?\**\s*"
    rf"(?:{IS_WORDS}|:|=)(?![^\W\d_])|(?:{ANSWER_WORD})\s+(?=\d)",
    re.IGNORECASE,
)
_CONTINENTAL_NUMBER = re.compile(
    r"(?<![\d.,])\d{1,3}(?:\.\d{3})+,(?:\d{1,2}|\d{4,})(?![\d.,])"  # 1.234,5 (,567: a list?)
    r"|(?<![\d.,])\d{1,3}(?:\.\d{3}){2,}(?![\d.,])"  # 1.234.567
    r"|\d\s*(?:€|₺|TL(?![A-Za-z])|₫|đồng|VND)|\bRp\.?\s*\d"  # 10 €, 12.000 TL, Rp 2.500, 45.000 ₫
)
_MONEY_GROUPS = re.compile(
    r"(?:(?<![^\W\d_])[$€£¥₹₩]|R\$|\bRp\.?|\bRs\.?)\s*[1-9]\d{0,2}(?P<mark>[.,])\d{3}"
    r"(?![\d.,])(?!\s*\$)"  # ($0.875$, $1.850$: LaTeX's math, no money)
)
"""An amount after its currency sign with one separator before three digits ("$1,850", "R$
1.850"): a thousands separator, so it tells the notation. (After the amount, three decimals
may be a unit price: "Ein Liter kostet 1,599 €".)"""
_ENGLISH_NUMBER = re.compile(
    r"(?<![\d.,])\d{1,3}(?:,\d{3})+\.\d+(?![\d.,])"  # 1,234.5
    r"|(?<![\d.,])\d{1,3}(?:,\d{3}){2,}(?![\d.,])"  # 1,234,567
    r"|(?<![\d.,])\d+\.\d{1,2}(?![\d.,])"  # 2.5, 0.75
    r"|[$£]\s*\d"  # $10
)
_WORD = re.compile(r"[^\W\d_]+")
_CONTINENTAL_WORDS = frozenset(
    # German, French, Spanish, Italian, Portuguese, Dutch: words English does not share
    "und der die das ist sind insgesamt wir es ergibt beträgt mit von für auf zusammen "
    "zu je im den dem ein eine einen jeder jede kostet "
    "et est sont donc les une des nous du avec pour soit au chaque "
    "los las el es entonces tiene con para una del cada cuesta "
    "il che sono quindi della gli ogni "
    "os são então uma com custa "
    "het een zijn dus voor totaal elke kost de la le è en".split()
)
_ENGLISH_WORDS = frozenset(
    "the and is are so of to with for total that this we each then which".split()
)
TAIL = 3000
"""Characters from the end of the response read for evidence."""


def continental(text: str) -> bool:
    """True when ``text`` writes numbers the continental way (see the module docstring)."""
    text = text[-TAIL:]
    worked = _worked_out(text)
    if worked is not None:  # "2.400 g + 600 g = 3.000 g" holds only as 2400 + 600 = 3000
        return worked  # (first: "6 × 250 = 1,500" in Mexican Spanish is English notation)
    grouped = _MONEY_GROUPS.search(text)
    if grouped is not None:  # "$1,850 por semana": money has no third decimal
        return grouped.group("mark") == "."
    if _STATEMENT.search(text):
        return True
    if _CONTINENTAL_NUMBER.search(text):
        return not _ENGLISH_NUMBER.search(text)
    words = [w.lower() for w in _WORD.findall(text)]
    ours = sum(w in _CONTINENTAL_WORDS for w in words)
    theirs = sum(w in _ENGLISH_WORDS for w in words)
    return ours >= 3 and ours > theirs and not _ENGLISH_NUMBER.search(text)


def _worked_out(text: str) -> bool | None:
    """Which way the response's arithmetic holds: True continental, False English, None either.

    The first sum or product that holds one way only decides (``3 × 5.000 = 15.000``).
    """
    for m in _WORKING.finditer(text):
        a, op, b, c = m.groups()
        readings = [_holds(op, *(_read(n, way) for n in (a, b, c))) for way in ("en", "eu")]
        if readings[0] != readings[1]:
            return readings[1]
    return None


_NUM = r"\d{1,3}(?:[.,]\d{3})+|\d+(?:[.,]\d+)?"
_WORKING = re.compile(
    rf"(?<![\d.,])({_NUM})[^\S\n]*(?:[a-zA-Zµ]{{1,3}}[^\S\n]*)?([+×x*·])[^\S\n]*({_NUM})"
    rf"[^\S\n]*(?:[a-zA-Zµ]{{1,3}}[^\S\n]*)?=[^\S\n]*({_NUM})(?![\d]|[.,]\d)"
)
"""A sum or product with its result, units allowed after the numbers: ``3 × 5.000 = 15.000``."""


def _read(number: str, way: str) -> Fraction | None:
    """``number`` read the English way (``1,234.5``) or the continental way (``1.234,5``)."""
    thousands, point = (",", ".") if way == "en" else (".", ",")
    try:
        return Fraction(number.replace(thousands, "").replace(point, "."))
    except ValueError:  # 1.234.567 the English way: no number
        return None


def _holds(op: str, a: Fraction | None, b: Fraction | None, c: Fraction | None) -> bool:
    if a is None or b is None or c is None:
        return False
    return (a + b if op == "+" else a * b) == c


_DOT_GROUPS = re.compile(r"(?<![\d.,])\d{1,3}(?:\.\d{3})+(?![\d.])")
_COMMA_DECIMAL = re.compile(r"(?<![\d,.])(\d+),(\d+)(?![\d,]|\.\d)")  # never 1,250.50


_SPACE_GROUPS = re.compile(r"(?<![\d.,])\d{1,3}(?: \d{3})+(?=,\d)")


def english_notation(answer: str) -> str:
    """A continental answer's numbers written the English way (``1.234,5`` -> ``1234.5``).

    Dots or spaces between groups of three digits are dropped (``12 345,6``), a comma between
    digits becomes the decimal point, and a ``;`` that separates items becomes ``,``
    (``(1,5; 2)``).
    """
    out = _DOT_GROUPS.sub(lambda m: m.group(0).replace(".", ""), answer.replace("{,}", ","))
    out = _SPACE_GROUPS.sub(lambda m: m.group(0).replace(" ", ""), out)
    decimals = _COMMA_DECIMAL.search(out) is not None
    out = _COMMA_DECIMAL.sub(r"\1.\2", out)
    if decimals and ";" in out:
        out = out.replace(";", ",")
    return out


LONG_SCALE = re.compile(r"\b(?:billions?|Billion)\b")
"""A "billion" that a French or German response means as 10**12 (the long scale)."""


def long_scale(answer: str) -> str:
    """A continental answer's "billion" read on the long scale: ``2 billions`` is 2 * 10**12."""
    return LONG_SCALE.sub("trillion", answer)
