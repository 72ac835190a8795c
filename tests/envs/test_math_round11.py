"""Round 11 of the math reader: units, number locales and other scripts, blind once more.

Each row is a response, a gold and what it must earn. The attacks are the classes three new
blind sets (``math_notation_cases_round11.jsonl``: units and money, locales and scripts, a
realistic mix) had paid or missed on the tree of the day: a value called probable or "just
under" in the sentence before the marker, an about-word before a noun that comes first, a
wrong conversion in an aside, a retraction written without accents. The look-alikes are
honest: the value said again, a pound that is money, a scale after a decimal comma.
"""

import re

import pytest
from math_scoring import scores

from envhub.envs.math import hedges, remarks, statements


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # a word of doubt or of a near bound a few words before the value, the sentence before
        ("6 tickets at $5 = $30.\nSo she probably spends $30.\n#### $30", r"\$30", False),
        ("Sie zahlt wahrscheinlich 30 €.\nAntwort: 30 €", "30", False),
        (
            "The loop is 5.6 km ≈ 3.48 miles.\nSo the run is just under 3.5 miles.\n#### 3.5 miles",
            "3.5 miles",
            False,
        ),
        ("#### slightly more than 12", "12", False),
        ("Perhaps it is easier to add first: 4 + 6 = 10.\n#### 10", "10", True),
        ("Maybe 4 of them are red, so 12 - 4 = 8.\n#### 8", "8", True),
        ("So the run is 3.5 miles.\n#### 3.5 miles", "3.5 miles", True),
        # approximation in the answer, wherever the language puts the noun or the verb
        ("Jibu: takriban mayai 350.", "350", False),
        ("Jibu: mayai 350.", "350", True),
        ("答：大约需要3小时。", "3 hours", False),
        ("答：需要3小时。", "3 hours", True),
        ("الإجابة: تقريباً ٨٤ قلماً.", "84", False),
        (r"\boxed{\frac{3}{8}} \text{ (approximately)}", r"\frac{3}{8}", False),
        # an aside that converts wrongly is a second value; a right one says the answer again
        ("#### $12.50 (1,205 cents)", r"\$12.50", False),
        ("#### $12.50 (1,250 cents)", r"\$12.50", True),
        ("Réponse : 72 (voire 81).", "72", False),
        # taken back after the answer, in words an ASCII text writes
        ("#### 32\n\nActually, wait. That can't be right.", "32", False),
        ("Resposta: 60 m². Ops, errei a conta.", "60", False),
        ("Respuesta: 12. Eso esta mal.", "12", False),
        # a pound may be money; a scale word after a decimal comma is the value's own
        ("She spent 25 pounds on lunch that week.", "£25", True),
        ("#### £25", "25 pounds", True),
        ("#### 25 pounds", r"\$25", False),
        ("#### 25 lb", "£25", False),
        ("Der Umsatz beträgt 1,5 Millionen Euro.", "€1,500,000", True),
        ("Der Umsatz beträgt 1,5 Millionen Euro.", "€1,500", False),
        # a check of the answer states no value; two boxes with a retraction between are no list
        ("The total is 42.\nSo the answer is confirmed.\n#### 42", "42", True),
        ("So the answer is 42. So the answer is correct.", "42", True),
        (r"\boxed{-1} Hmm, that's not right. \boxed{1}", "1", False),
        (r"\boxed{-1} That's not right. \boxed{1}", "-1", False),
        # the answer said again in another form is the same answer; another value is a second
        (r"So $f(x) = \boxed{x^2+6x-27}$. Equivalently, $(x+9)(x-3)$.", "x^2+6x-27", True),
        (r"The answer is $(x+9)(x-3)$. Equivalently, $x^2+6x-27$.", "(x+9)(x-3)", True),
        (r"So $f(x) = \boxed{x^2+6x-27}$. Equivalently, $(x+9)(x-2)$.", "x^2+6x-27", False),
        (r"So $f(x) = \boxed{x^2+6x-27}$. Equivalently, $(x+9)(x-2)$.", "(x+9)(x-2)", False),
        (
            r"\boxed{\frac{1}{x-1}-\frac{1}{x+1}}, that is, $\frac{2}{x^2-1}$.",
            r"\frac{2}{x^2-1}",
            True,
        ),
        (
            r"\boxed{\frac{1}{x-1}-\frac{1}{x+1}}, that is, $\frac{2}{x^2+1}$.",
            r"\frac{2}{x^2-1}",
            False,
        ),
    ],
)
def test_what_a_careful_grader_reads(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # which way a response writes its numbers: money after its sign has no third decimal
        (
            "Pedro gana $1,850 por semana. En 4 semanas gana 4 × 1,850 = 7,400 pesos.\n"
            "Gasta 2,150 pesos en renta, así que le quedan 7,400 − 2,150 = 5,250.\n"
            "La respuesta es 5,250 pesos.",
            "5250",
            True,
        ),
        ("Ein Liter kostet 1,500 Euro.\nAntwort: 1,500 Euro", "1.5", True),
        (
            "Der Verlag druckt 5 Auflagen zu je 1.500 Exemplaren.\n5 · 1.500 = 7.500\n\\boxed{7.500}",
            "7.5",
            False,
        ),
        (
            "Der Verlag druckt 5 Auflagen zu je 1.500 Exemplaren.\n5 · 1.500 = 7.500\n\\boxed{7.500}",
            "7500",
            True,
        ),
        # spaced thousands in LaTeX, scales of other scripts and orders, signs in words
        (r"Ответ: $\boxed{86\ 400}$", "86400", True),
        ("উত্তর: ১২ লক্ষ টাকা", "1200000", True),
        ("Jibu: shilingi milioni 3", "3000000", True),
        ("Jibu: shilingi milioni 3", "3", False),
        ("Jumla ni shilingi elfu 5", "5000", True),
        ("La respuesta es 7 °C bajo cero.", "-7", True),
        ("La respuesta es 7 °C bajo cero.", "7", False),
        ("Cevap: eksi 9 derece", "-9", True),
        ("답: 영하 7도", "-7", True),
        ("答：需要两个半小时。", "2.5 hours", True),
        ("答え：4分の3", r"\frac{3}{4}", True),
        ("答え：3分の4", r"\frac{3}{4}", False),
        ("उत्तर: रु. ८०", "80", True),
        ("उत्तर: रु. ८०", "90", False),
        ("Het antwoord is 150 seconden.", "2.5 minutes", True),
        ("Ответ: 12 долларов 50 центов.", r"\$12.50", True),
        ("Ответ: 12 долларов 50 центов.", r"\$12.05", False),
        # number words num2words does not write: Hindi, Korean native counts, Czech tens first
        ("उत्तर: बीस", "20", True),
        ("उत्तर: बीस", "21", False),
        ("उत्तर: पच्चीस हज़ार", "25000", True),
        ("답: 스물네 개", "24", True),
        ("답: 스물네 개", "42", False),
        ("Odpověď: dvaačtyřicet", "42", True),
        ("Odpověď: dvaačtyřicet", "24", False),
        # a compound duration joined by the word "and" of more languages, or Arabic's glued و
        ("Zajmie to 5 godzin i 30 minut.", "5.5 hours", True),
        ("Zajmie to 5 godzin i 30 minut.", "5 hours", False),
        ("الجواب: 5 ساعات و30 دقيقة", "5.5 hours", True),
        ("Cevap: 5 saat ve 30 dakika", "5.5 hours", True),
        ("Jawaban: 5 jam dan 30 menit", "5.5 hours", True),
        ("Svar: 5 timmar och 30 minuter", "5.5 hours", True),
        # money groups: a sign before three digits after one mark; LaTeX's $…$ is no dollar
        ("Total: $1,850 for the trip.", "1850", True),
        (r"The probability is $0.875$.", "0.875", True),
    ],
)
def test_locales_scripts_and_scales(text, gold, paid):
    assert scores(text, gold) is paid


def _alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of a pattern, and those of a group that spans one whole."""
    out, depth, start, in_class, i = [], 0, 0, False, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c in "()":
            depth += 1 if c == "(" else -1
        elif c == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
        i += 1
    out.append(pattern[start:])
    whole = [re.fullmatch(r"\\b\(\?:(.*)\)\\b", alt, re.S) for alt in out]
    return [
        a
        for alt, m in zip(out, whole, strict=True)
        for a in (_alternatives(m.group(1)) if m else [alt])
    ]


@pytest.mark.parametrize("module", [hedges, remarks, statements])
def test_the_words_of_other_scripts_hold_a_letter_outside_ascii(module):
    """``Words.other`` is searched only in a text that is not ASCII: an ASCII word there is
    never found in an ASCII response ("Ops, errei a conta" was paid so)."""
    for name, words in vars(module).items():
        if isinstance(words, hedges.Words):
            ascii_only = [a for a in _alternatives(words.other.pattern) if a.isascii()]
            assert not [a for a in ascii_only if re.search(r"[a-z]{3}", a)], name
