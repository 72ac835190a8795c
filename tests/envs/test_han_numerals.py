"""Han numerals, circled numbers and units written in other scripts (``numerals.py``).

Each case is an attack or a miss found by a blind set: a reader that took ``1.5万`` for 1.5
paid gold 1.5; one that dropped ``米`` after ``5`` paid gold ``5 km``.
"""

import pytest

from envhub.envs.math import answers
from envhub.envs.math.latex import plain_digits
from envhub.envs.math.numerals import han_numbers


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("四十二", "42"),
        ("三百五十", "350"),
        ("一千二百人", "1200人"),
        ("一千零五", "1005"),
        ("两千元", "2000元"),
        ("十五", "15"),
        ("三千五", "3500"),  # spoken short: the next place down
        ("一万五", "15000"),
        ("一万两千", "12000"),
        ("二〇二四年", "2024年"),
        ("答案是四。", "答案是4。"),  # a lone digit that stands alone
        ("3万", "30000"),
        ("1.5万元", "15000元"),
        ("1億", "100000000"),
        ("1만 2천 원", "12000 원"),
        ("3만", "30000"),
        ("150千米", "150千米"),  # 千 of 千米 is the unit's prefix: 150 km, never 150000 m
        ("千二百円", "1200円"),
        ("三分之二", "(2/3)"),
        ("百分之五十", "(50/100)"),
        ("答案是负五。", "答案是-5。"),
    ],
)
def test_han_numerals_are_numbers(text, read):
    assert han_numbers(text) == read


@pytest.mark.parametrize(
    "word",
    ["一共", "这是一个问题", "一些", "万一", "千万不要", "十分重要", "第一", "三角形", "七八个"],
)
def test_words_that_hold_a_numeral_are_words(word):
    assert han_numbers(word) == word


def test_circled_numbers_are_digits_and_stay_apart():
    assert plain_digits("The answer is ⑫.") == "The answer is 12."
    assert plain_digits("①②③").split() == ["1", "2", "3"]


@pytest.mark.parametrize(
    ("pred", "gold", "same"),
    [
        ("45 секунд", "45 minutes", False),
        ("5 метров", "5 km", False),
        ("7 أمتار", "7 km", False),
        ("4 ग्राम", "4 kg", False),
        ("30ミリ", "30 cm", False),
        ("30ミリ", "3 cm", True),
        ("150角", "150 yuan", False),  # a jiao is a tenth of a yuan
        ("150角", "15 yuan", True),
        ("5斤", "5 kg", False),  # a jin is half a kilogram
        ("5斤", "2.5 kg", True),
        ("3万", "3", False),
        ("1.5万元", "1.5", False),
        ("1.5万元", "15000", True),
        ("三百円", "300", True),
        ("12,000원", "₩12,000", True),
        ("75 درهم", "AED 75", True),
        ("1500 руб", "1500 rubles", True),
        ("50 reais", "R$ 50", True),
        ("CHF 80.–", "80 CHF", True),
        ("1500 kg", "1.5 t", True),
    ],
)
def test_units_and_scales_of_other_scripts(pred, gold, same):
    assert answers.is_equivalent(pred, gold) is same


@pytest.mark.parametrize(
    ("pred", "gold", "same"),
    [
        ("one and a half", "1.5", True),
        ("two and three quarters", "11/4", True),
        ("negative five", "-5", True),
        ("half a dozen", "6", True),
        ("one hundred and five", "105", True),
        ("three and four", "7", False),  # two numbers, never their sum
        ("three and four", "34", False),
        ("one and", "1", False),
    ],
)
def test_numbers_in_words(pred, gold, same):
    assert answers.is_equivalent(pred, gold) is same
