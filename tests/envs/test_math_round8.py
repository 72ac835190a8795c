"""Round 8 of the math reader: asides, "or" in every language, counts, footnotes.

Each row is a response, a gold and what it must earn. The near misses are what a reader that
takes the last number pays: a number in an aside after the answer, a second value offered with
"or" in another language, the total of "3 out of 5", a footnote's marker.
"""

import pytest
from math_scoring import scores


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # an aside after the answer is not the answer, unless it offers another value
        ("She has 12 apples (3 of them red).", "12", True),
        ("She has 12 apples (3 of them red).", "3", False),
        ("He pays $20 (after a 10% discount).", "$20", True),
        ("He pays $20 (after a 10% discount).", "10\\%", False),
        ("So x = 4 (since 2·4 = 8).", "4", True),
        ("So x = 4 (since 2·4 = 8).", "8", False),
        ("The result is 3 (mod 7).", "3", True),
        ("The result is 3 (mod 7).", "7", False),
        ("x ≡ 3 (mod 7)", "7", False),
        ("Total: 12 apples (as of 2023).", "2023", False),
        ("It takes 1.5 hours (90 minutes).", "1.5 hours", True),
        ("It takes 1.5 hours (or 2 if it rains).", "2", False),
        ("It takes 1.5 hours (or 2 if it rains).", "1.5 hours", False),
        ("She has 12 apples (maybe 13).", "12", False),
        ("So the total is 15 (10 + 5).", "15", True),
        # "or" before the last number offers a second value, in any language
        ("Il faut 1,5 heure (ou 2 s'il pleut).", "2", False),
        ("Es dauert 1,5 Stunden (oder 2, falls es regnet).", "2", False),
        ("Tarda 1,5 horas (o 2 si llueve).", "2", False),
        ("Ci vogliono 12 minuti (o 15 se piove).", "15", False),
        ("Het duurt 1,5 uur (of 2 als het regent).", "2", False),
        ("Het duurt 1,5 uur (of 2 als het regent).", "1.5 hours", False),
        ("Займёт 12 минут (или 15, если дождь).", "15", False),
        ("需要12分钟（或者15分钟）。", "15", False),
        ("Il faut 12 minutes, ou 15 s'il pleut.", "15", False),
        ("Es dauert 12 Minuten, oder 15 bei Regen.", "15", False),
        ("Tarda 12 minutos, o 15 si llueve.", "15", False),
        ("Trwa to 12 minut (lub 15, jeśli pada).", "15", False),
        ("उत्तर 12 या 15 है", "15", False),
        # ... and "of" in English, "o" as an article, are no "or"
        ("He has a total of 15 apples.", "15", True),
        ("Tiene un total de 15 manzanas.", "15", True),
        # "3 out of 5" is the count, or the fraction when a chance is asked; never the 5
        ("3 out of 5 students passed.", "3", True),
        ("3 out of 5 students passed.", "5", False),
        ("So she scored 18 out of 20.", "18", True),
        ("So she scored 18 out of 20.", "20", False),
        ("The probability is 3 out of 5.", "3/5", True),
        ("The probability is 3 out of 5.", "5", False),
        # a footnote and its marker are never the answer
        ("The total distance is 150 km [1].\n\n[1] Assuming a constant speed.", "150 km", True),
        ("The total distance is 150 km [1].\n\n[1] Assuming a constant speed.", "1", False),
        ("So the total is 12.[1]", "12", True),
        ("So the total is 12.[1]", "1", False),
        ("The interval is [1, 4).", "[1, 4)", True),
    ],
)
def test_attack(text, gold, paid):
    assert scores(text, gold) is paid
