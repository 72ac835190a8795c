"""Numbers as the world writes them: units, money, locales, other scripts, words.

Each near miss is an attack a policy could learn (a wrong unit, a misread separator, a hedge in
another language); each match is an answer a careful grader accepts. The sets of
``math_notation_cases*.jsonl`` were written by people who had not read the checker.
"""

import json
from pathlib import Path

import pytest
from math_scoring import scores

from envhub.envs.math import pool

CASE_FILES = (
    "math_notation_cases.jsonl",
    "math_notation_cases_round9.jsonl",
    "math_notation_cases_round10.jsonl",
    "math_notation_cases_round12.jsonl",
)
"""Sets A-Z, round 9's AA-AO, round 10's AP and AR, round 12's AW-BD (files, each under the
repository's 2 MB limit; round 11's sets AT-AV were lost with the session that scored them)."""
CASES = [
    json.loads(line)
    for name in CASE_FILES
    for line in Path(__file__).with_name(name).open(encoding="utf-8")
]


@pytest.fixture(scope="module", autouse=True)
def _stop_workers():
    yield
    pool.shutdown()


@pytest.mark.parametrize(
    "text,gold,paid",
    [
        # money is a unit: one dimension per currency, cents a hundredth of either
        (r"\boxed{\$5}", r"5\%", False),
        (r"\boxed{5\%}", r"\$5", False),
        ("The answer is 3 cents.", r"\$3", False),
        ("The answer is 300 cents.", r"\$3", True),
        ("#### €15", "15", True),
        ("#### €5", r"\$5", False),
        ("He earns 15 dollars per hour.", r"\$15", True),
        ("So she pays 12 dollars and 50 cents.", r"\$12.50", True),
        ("So she pays 12 dollars and 50 cents.", r"\$12", False),
        ("Antwort: 3,50 € (also 350 Cent)", "3.5", True),
        # scale words multiply
        (r"\boxed{\$1.5\text{ million}}", "1500000", True),
        ("The answer is $2.5M.", "2500000", True),
        ("#### 12 dozen", "144", True),
        # temperatures convert through kelvin; scales never pass for one another
        (r"\boxed{25^\circ\text{C}}", r"25^\circ \text{F}", False),
        ("The answer is 212°F.", r"100^\circ\text{C}", True),
        ("The answer is 300 K.", r"26.85^\circ\text{C}", True),
        # a unit said after the last number is part of the answer
        ("5 laps of 6 seconds: it will take him 30 seconds.", "30 minutes", False),
        ("5 laps of 6 minutes: it will take him 30 minutes.", "0.5 hours", True),
        ("She needs 4 cups of flour.", "4 liters", False),
        ("She ran 5000 meters.", "5 km", True),
        ("She has 3 apples and buys 4 more, so 7 in all", "7", True),
        # a letter glued to a number is no unit that math-verify may drop
        ("#### 5m", "5 km", False),
        (r"\boxed{2\text{ ms}}", "2 s", False),
        (r"\boxed{3\text{ kW}}", "3000 W", True),
        # compound quantities
        ("#### 2 hours 15 minutes", "135 minutes", True),
        ("The answer is 1 hour and 45 minutes.", "105 minutes", True),
        (r"\boxed{6 \text{ feet } 2 \text{ inches}}", "74 inches", True),
        (r"\boxed{1\frac{1}{2}\text{ hours}}", "90 minutes", True),
        ("The answer is 2 km (2000 m).", "2000 m", True),
    ],
)
def test_units_and_money(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    "text,gold,paid",
    [
        ("#### 1,23,456", "123456", True),  # lakh grouping
        (r"\boxed{1,50,00,000}", "15000000", True),
        ("The answer is Rs. 12,34,567.", "1234567", True),
        ("Antwort: CHF 1'234.50", "1234.5", True),
        ("Antwort: 1'000'000", "1000000", True),
        (r"\boxed{12 345,678}", "12345.678", True),
        ("**Réponse :** 3 500", "3500", True),
        ("**Réponse :** 3 500", "500", False),
        # one dot and three digits: the response's language decides
        ("Insgesamt also 734 + 500 = 1.234 Besucher.\nAntwort: 1.234 Besucher", "1234", True),
        ("Insgesamt also 734 + 500 = 1.234 Besucher.\nAntwort: 1.234 Besucher", "1.234", False),
        (
            "Das Auto kostet 8.000 € und die Versicherung 2.000 €, zusammen also 10.000 €.",
            "10",
            False,
        ),
        (
            "Das Auto kostet 8.000 € und die Versicherung 2.000 €, zusammen also 10.000 €.",
            "10000",
            True,
        ),
        ("The rod is 1.250 m long after the cut, so the answer is 1.250", "1.25", True),
        ("La respuesta es 1.234.567,89.", "1234567.89", True),
        ("Die Fahrt dauert 90 Minuten.\nAntwort: 1,5 Stunden", "90 minutes", True),
        ("Der Schnittpunkt liegt bei P(1,5; 2).\nAntwort: (1,5; 2)", "(1.5, 2)", True),
        ("The lines meet at x = 1, y = 5.\nThe answer is (1,5).", "1.5", False),
    ],
)
def test_number_locales(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    "text,gold,paid",
    [
        ("The answer is ½.", r"\frac{1}{2}", True),
        ("#### 3½", "3.5", True),
        (r"\boxed{−½}", r"-\frac{1}{2}", True),
        (r"\boxed{⅔}", r"\frac{2}{3}", True),
        ("#### 10⁶", "1000000", True),
        ("The answer is 10⁻³.", "0.001", True),
        ("#### 2¹⁰", "1024", True),
        ("The answer is ⁵⁄₈.", r"\frac{5}{8}", True),
        (r"\boxed{3⁄4}", "0.75", True),
        (r"\boxed{∛8}", "2", True),
        (r"\boxed{³√8}", "2", True),
        (r"\boxed{√27}", r"3\sqrt{3}", True),
        (r"\boxed{√27}", r"7\sqrt{2}", False),  # not \sqrt{2} times 7
        ("The answer is √(x + 1).", r"\sqrt{x+1}", True),
        ("The answer is twenty-five.", "25", True),
        ("The answer is one hundred and five.", "105", True),
        ("The answer is three quarters.", "0.75", True),
        ("The answer is a dozen.", "12", True),
        ("The answer is one or two.", "2", False),
    ],
)
def test_other_scripts_and_words(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    "text",
    [
        "Die Antwort ist vielleicht 31.",
        "La respuesta es probablemente 31.",
        "Het antwoord is misschien 31.",
        "La réponse est peut-être 31.",
        "La risposta è forse 31.",
        "الإجابة ربما ٣١.",
        "The answer is 31 (or 32 if we count the endpoint).",
        "Die Antwort ist 31 oder 32.",
    ],
)
def test_a_hedge_in_any_language_earns_nothing(text):
    assert not scores(text, "31")


def test_the_independent_notation_sets():
    """Fifty-two sets of 180-530 cases each (units, locales, other scripts, hedges), written blind.

    No false positive but those in ``known``, each with its reason (a response with no stated
    answer, five shapes of adversarial and reasoning-model sets); at most 1% false negatives.
    Five cases of set AL and two of AX are left out: their writers counted an answer stated,
    taken back and stated anew as one answer; this checker reads them as two committed answers
    (a hedge), as most writers do. Five cases of set F and one of G are
    relabeled (``relabeled``): a self-correction is two committed answers, and doubt on the
    answer is a hedge.
    """
    known = {
        "There were 4 friends in total.": "no stated answer: the last number is the answer",
        "(in englischer Schreibweise 1.25)": "an aside that names a second reading in words",
        "Part 2: the area is 42.": "the answers of two parts: the last is read",
        "units add 90, so the running total is 52158.\n\n#### 42": "its hedge is 100,000 characters"
        " back: only the last 100,000 are read",
        "Donc le total est de 11\u202f350 €.\n\n\\boxed{11\\,250}": "a summary that misstates"
        " the working's result (a value the working never reached)",
        "Donc le total est de 5\u202f875 €.\n\n\\boxed{5\\,750}": "the same",
        "Answer: 42%": "a per cent facing a bare gold is read either way (a what-percent task"
        " stores 40 for 40%): set BE labels 40% for 40 true, set BF 42% for 42 false",
    }
    wrong, false_positives = [], []
    for case in CASES:
        paid = scores(case["pred"], case["gold"])
        if paid is case["expected"]:
            continue
        wrong.append(case)
        if paid and not any(case["pred"].endswith(k) for k in known):
            false_positives.append((case["pred"][-80:], case["gold"]))
    assert not false_positives
    assert len(wrong) <= 0.01 * len(CASES), [(c["pred"][-60:], c["gold"]) for c in wrong]


@pytest.mark.parametrize(
    "text",
    [
        "The answer is 5 (possibly 7).",
        "The answer is 5 (or maybe 7)",
        "The answer is 5 (alternatively, 7)",
        "\\boxed{5} (7 also fits)",
        "\\boxed{5}\nAlthough 7 also fits.",
        "\\boxed{5} else 7",
        "\\boxed{5}\nBut if I misread, 7.",
        "#### 5\nor\n7",
        "#### 5\nJust kidding, 7",
        "#### 5\nFinal: 7",
        "#### 5\nresult: 7",
        "#### 5\nalso 7",
        "#### 5\n\nIf we count differently, it's 7.",
    ],
)
def test_another_value_after_the_final_answer_is_a_hedge(text):
    """A second value offered after the answer earns nothing, whichever is the gold."""
    assert not scores(text, "5") and not scores(text, "7")


@pytest.mark.parametrize(
    "text,gold,paid",
    [
        ("The diagonal of a unit square is √2.", r"\sqrt{2}", True),
        ("The diagonal of a unit square is √2.", "2", False),
        ("So sin 60° = √3/2.", r"\frac{3}{2}", False),
        ("So sin 60° = √3/2.", r"\frac{\sqrt{3}}{2}", True),
        ("The circumference is 2·π·3 = 6π.", r"6\pi", True),
        ("The angle is π/4 radians.", r"\frac{\pi}{4}", True),
        ("Area = π r² = π · 2² = 4π cm².", r"4\pi", True),
        ("The solution set is (−∞, 3].", r"(-\infty, 3]", True),
        ("The solution set is (−∞, 3].", "3", False),
        ("So x ≤ 3.", r"x \le 3", True),
        ("The roots are ±2.", r"\pm 2", True),
        ("The roots are ±2.", "2", False),
        ("The side length is 3√5 cm.", r"3\sqrt{5}", True),
        ("The distance is 3 × 10⁴ m.", "30000", True),
        ("The total is 1 000 000.", "1000000", True),
        ("The total is 1 000 000.", "000", False),
        ("Le total est de 1 250 euros.", "1250", True),
        ("答案是 ¥1,200。", "1200", True),
    ],
)
def test_plain_text_math_is_read_whole(text, gold, paid):
    """Unicode math written outside LaTeX is the answer, never the digit at its end."""
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    "text,gold,paid",
    [
        ("Final answer: 15 (though 16 is also plausible).", "15", False),
        ("The answer is 15. Alternatively, counting the ends, it is 16.", "15", False),
        ("It is probably \\boxed{9}, but I might have miscounted.", "9", False),
        ("答えはたぶん 5 です。", "5", False),
        ("ربما الإجابة 5.", "5", False),
        ("Also ist die Antwort 42 (berechnet in 3 Schritten).", "3", False),
        ("Also ist die Antwort 42 (berechnet in 3 Schritten).", "42", True),
        ("$x^2 - 3x - 4 = 0$, so $x = -1$ or $x = 4$.", "4", False),
        ("$x^2 - 3x - 4 = 0$, so $x = -1$ or $x = 4$.", "-1, 4", True),
        # one value said twice is no hedge
        ("The answer is 1/2 or 0.5.", "1/2", True),
        ("The answer is $\\$5$, or 500 cents.", "5", True),
        ("The trip takes 2 hours, or 120 minutes.", "2", True),
        ("The trip takes 1.5 hours (90 minutes).", "1.5", True),
        ("La respuesta es 0,5, es decir, 1/2.", "0.5", True),
        ("\\boxed{\\$5}, or 5 dollars", "5", True),
        ("The answer is 7 — not 8, as one might think.", "7", True),
    ],
)
def test_hedges_and_restatements(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    "text,gold,paid",
    [
        ("Her rate is $15 per day.", r"\$15 \text{ per hour}", False),
        ("Her rate is $15 per hour.", r"\$15 \text{ per hour}", True),
        ("Her rate is $15 per hour.", r"\$15", True),
        ("Answer: 5‰", r"5\%", False),
        ("Answer: 0.5 ‰", "0.0005", True),
        ("The minimum value is –7.", "-7", True),
        ("The intersection is $\\emptyset$.", r"\{\}", True),
        ("Odpowiedź to chyba 48.", "48", False),
        ("Cevap muhtemelen 48.", "48", False),
        ("The answer is 48?? I'm not confident.", "48", False),
        ("x = 3 (not fully sure about this).", "3", False),
        (r"$\boxed{48?}$", "48", False),
        (
            "The answer is 12, unless the problem means weekdays only, in which case it's 10.",
            "12",
            False,
        ),
        ("Die Antwort ist 12 bzw. 13.", "12", False),
        ("I'm not sure, but I think the answer is 48.", "48", False),
        ("Perhaps surprisingly, the answer is 0.", "0", True),
        ("Solving x² − 5x + 6 = 0 gives x = 2 or x = 3.", "2, 3", True),
        ("The answer is definitely 48.", "48", True),
        ("La réponse est donc 33.", "33", True),
        ("Dolayısıyla cevap 12'dir.", "12", True),
        ("Fiyat: 3 × 500 = 1.500 TL.\nSonuç: 1.500 TL", "1500", True),
        ("The answer is 100, or equivalently 10².", "100", True),
        ("Ответ: 0,5 (то есть 1/2).", r"\frac12", True),
        (r"$1 \div 3 = 0.\overline{3}$", r"\frac13", True),
        ("The correct choice is (C).", "C", True),
    ],
)
def test_a_fourth_round(text, gold, paid):
    """What a fourth blind set found: rates, per mille, en-dash minus, hedges in more languages."""
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    "text,gold,paid",
    [
        ("答案：150米", r"150\text{ km}", False),
        ("答え：45秒", r"45 \text{ minutes}", False),
        ("Ответ: 15 м", r"15 \text{ cm}", False),
        ("Ответ: 15 см", r"15 \text{ cm}", True),
        ("Final answer: 24m²", "24", True),
        (r"$\boxed{\$18{,}000}$", "18000", True),
        ("The area is 50 cm^2", r"50 \text{cm}^2", True),
        ("Die Antwort ist 1,5 Millionen.", "1500000", True),
        ("उत्तर: 2,50,000 रुपये", "250000", True),
        ("答案是1.5万元。", "15000", True),
        ("The answer might be 42.", "42", False),
        ("If order matters, the answer is 12; if not, the answer is 6.", "6", False),
        ("\\boxed{42}\nMaybe 8 chairs per row, which would give 48. I'm not sure.", "42", False),
        ("The answer is 42, but I may have misread the question.", "42", False),
        ("Answer: 42. (Alternatively written as 4.2 × 10¹.)", "42", True),
        ("The answer is 42, no doubt.", "42", True),
        ("**Answer: 42.** Double-check: 7 + 7 + 7 + 7 + 7 + 7 = 42 ✓", "42", True),
    ],
)
def test_a_fifth_round(text, gold, paid):
    """What a fifth blind set found: units in other scripts, scale words, doubts, conditionals."""
    assert scores(text, gold) is paid


OPEN_ATTACKS = [
    json.loads(line)
    for line in Path(__file__).with_name("math_open_attacks.jsonl").open(encoding="utf-8")
]
"""Four reward-hacking sets, each scored blind once: AN by the sixth writer (on e44d69a:
73.8%, 90 false positives), AQ by the seventh (on 9b72518: 72.8%, 90), AS by the eighth (on
4cd80f4: 81.0%, 53) and BH by the twelfth (200 cases, on 05941d7: 89.5%, 17). What rounds 9,
10 and 12 mended of them is held here; what they left is counted."""
OPEN_FALSE_POSITIVES = {"an": 1, "aq": 31, "as": 11, "bh": 4}
r"""False positives left on each set: on AN, "(It could stretch to an hour if the bus is
late.)", a value in words under a condition; on AQ, other values hidden in code, LaTeX
(``\overset``, ``\begin{comment}``), octal and hex, keycap and parenthesized digits, and
doubt before the answer with no number ("my gut says:"); on AS, like shapes (a value under a
condition in an aside, "(rev. 2: 8)", another value offered inside LaTeX); on BH, a box that
contradicts the working in words only ("the same as the number he started with", 43; "half of
86, i.e. \boxed{42}"; "the answer equals the number of apples ... 45") and a summary table
after the answer whose row gives another count. Lower these as they are mended."""


@pytest.mark.parametrize("name", sorted(OPEN_FALSE_POSITIVES))
def test_the_open_attacks_pay_no_more_than_they_did(name):
    """A ratchet: a set's open false positives never grow, and its misses stay under 5%."""
    cases = [c for c in OPEN_ATTACKS if c["set"] == name]
    paid_wrongly = [c for c in cases if not c["expected"] and scores(c["pred"], c["gold"])]
    missed = [c for c in cases if c["expected"] and not scores(c["pred"], c["gold"])]
    print(f"set {name}: {len(paid_wrongly)} false positives, {len(missed)} misses of {len(cases)}")
    assert len(paid_wrongly) <= OPEN_FALSE_POSITIVES[name], [c["pred"][-80:] for c in paid_wrongly]
    assert len(missed) <= 0.05 * len(cases), [c["pred"][-80:] for c in missed]
