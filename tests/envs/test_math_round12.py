"""Round 12 of the math reader: three more blind sets (units and money AW, locales, scripts and
number words AX, a realistic mix AY), each scored once on the tree of its day.

Each row is a response, a gold and what it must earn; the attacks are the classes the sets
paid or missed, each with an honest look-alike.
"""

import pytest
from math_scoring import scores


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # a word that is a scale in one language and a unit in another is never dropped
        ("5 putaran × 0,7 = 3,5\n\nJadi jaraknya 3,5 mil.", "3.5 km", False),
        ("5 putaran × 0,7 = 3,5\n\nJadi jaraknya 3,5 mil.", "3.5", False),
        ("En total son 3,5 mil.", "3500", True),
        ("Toplam 12 bin lira.", "12000", True),
        # a temperature below zero without its scale is that temperature, no angle
        ("The temperature at night is 5 degrees below zero.", r"-5^\circ C", True),
        ("The temperature at night is 5 degrees below zero.", "5", False),
        ("The temperature at night is 5 °F below zero.", r"-5^\circ C", False),
        # the half of the day in words after a time of day
        ("The movie ends at 7:30 in the evening.", "7:30 PM", True),
        ("The movie ends at 7:30 in the evening.", "7:30 AM", False),
        ("The train leaves at 8 in the morning.", "8:00 AM", True),
        ("Le film finit à 7:30 du soir.", "19:30", True),
        ("The bell rings at 12:15 at night.", "12:15 AM", True),
        # a word of rate before the amount: per minute, per hour
        (
            "240リットルを60分で入れるので、240 ÷ 60 = 4。\n\n答え：毎分4リットル",
            "4 liters per minute",
            True,
        ),
        ("答え：毎分4リットル", "4 liters", False),
        ("45 km yolu 3 saatte gidiyor: 45 ÷ 3 = 15\n\nCevap: saatte 15 kilometre", "15 km/h", True),
        ("Cevap: saatte 15 kilometre", "15 km", False),
        ("정답: 시속 60km", "60 km/h", True),
        # a thought never closed states no answer
        ("<think>\n18 × 7 = 126; 126 × 5 = 630.\nSo the answer is 630.", "630", False),
        ("<think>\n18 × 7 = 126; 126 × 5 = 630.\n</think>\nThe answer is 630.", "630", True),
        # a check of the answer, then a conclusion with a value of its own
        (
            "Books: 1/3 of the remainder = 50. Remaining: 150 − 50 = 100.\n\n"
            "Verification: 100 + 50 + 100 = 250 ✓\n\nAmy has **$100** left.",
            "100",
            True,
        ),
        ("So x = 4.\n\nCheck: 2(4) + 3 = 11 ✓\n\nThis matches the given 11.", "4", True),
        ("So x = 4.\n\nCheck: 2(4) + 3 = 11 ✓\n\nThis matches the given 11.", "11", False),
        # one value for each letter facing a point
        (r"**Final Answer:** $x = 1,\ y = 2$", "(1, 2)", True),
        (r"**Final Answer:** $y = 2$, $x = 1$", "(1, 2)", True),
        (r"**Final Answer:** $x = 2,\ y = 1$", "(1, 2)", False),
        (r"**Final Answer:** $x = 1,\ x = 2$", "(1, 2)", False),
        # retracted in words of more languages: still two committed answers
        ("Antwort: 48.\n\nNein, ich habe mich geirrt: 6 · 7 = 42.", "48", False),
        ("الجواب: ٤٨\n\nلا، هناك خطأ: ٦ × ٧ = ٤٢.", "48", False),
    ],
)
def test_what_a_careful_grader_reads(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # fractions in words of other languages: the count, then the part
        ("Antwort: drei Viertel", r"\frac{3}{4}", True),
        ("Ответ: две трети.", r"\frac{2}{3}", True),
        ("Ответ: две трети.", r"\frac{3}{2}", False),
        ("Resposta: três quartos.", r"\frac{3}{4}", True),
        ("Resposta: três quartos.", "3", False),
        ("Réponse : deux tiers", r"\frac{2}{3}", True),
        # number words num2words does not write as people do
        ("Svar: treoghalvtreds elever.", "53", True),
        ("Svar: treoghalvtreds elever.", "63", False),
        ("Ответ: тысяча двести пятьдесят рублей.", "1250", True),
        ("Ответ: тысяча двести пятьдесят рублей.", "1200", False),
        ("Svar: tolvhundrafemtio kronor.", "1250", True),
        ("Svar: tolvhundrafemtio kronor.", "1200", False),
        ("Απάντηση: σαράντα δύο καρέκλες.", "42", True),
        ("Απάντηση: σαράντα δύο καρέκλες.", "2", False),
        ("Απάντηση: χίλια διακόσια πενήντα ευρώ", "1250", True),
        ("Réponse : huitante bouteilles.", "80", True),
        ("Réponse : huitante bouteilles.", "8", False),
        ("The answer is three and three-quarters pizzas.", "3.75", True),
        ("The answer is three and three-quarters pizzas.", "3", False),
        ("उत्तर: 1500 मिलीलीटर", "1.5 liters", True),
        ("उत्तर: 1500 मिलीलीटर", "1500 liters", False),
    ],
)
def test_number_words_of_more_languages(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # a spare answer offered before the final one, should it be wrong
        ("Solving 2x + 1 = 15, x = 7. If not, then x = 8.\n\n\\boxed{7}", "7", False),
        ("x = 7. Sinon, x = 8.\n\nRéponse : 7", "7", False),
        ("Solving 2x + 1 = 15, x = 7. If not, recheck: 2(7)+1 = 15.\n\n\\boxed{7}", "7", True),
        # a denial states no answer, in any language
        ("答案不是42。", "42", False),
        ("Ответ: не 42.", "42", False),
        ("Die Antwort ist nicht 42.", "42", False),
        ("La réponse n'est pas 42.", "42", False),
        ("It is not 42.", "42", False),
        ("There are not 42 chairs but 40.", "40", True),
        ("It is not 41; it is 42.", "42", True),
        # a confidence under certainty is doubt
        ("Answer: 42\n\nSelf-rating: 40% confident; 60% it's 43.", "42", False),
        ("The discount is 40% and the total 42.\nAnswer: 42", "42", True),
        # an aside after a decimal comma, or after a currency sign, says the value again or not
        ("Die Fahrt dauert 2,5 Stunden (150 Minuten).", "2.5 hours", True),
        ("Die Fahrt dauert 2,5 Stunden (160 Minuten).", "2.5 hours", False),
        ("Antwort: 2,5 Stunden (160 Minuten)", "2.5 hours", False),
        ("Sie zahlt 12,50 € (1205 Cent).", "12.50", False),
        ("Antwort: 12,50 € (1205 Cent)", "12.50", False),
        ("Antwort: 12,50 € (1250 Cent)", "12.50", True),
        ("She pays €12.50 (1205 cents).", "12.50", False),
        # a letter's power in plain text is the expression, never its last operands
        ("f(x) = x^2 + 1", "x^2+1", True),
        ("f(x) = x^2 + 1", "3", False),
        ("The result: x^2 + 6x - 27 Ⅻ", "x^2+6x-27", False),
    ],
)
def test_the_attacks_of_set_ba(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # a fraction is never a count of per cent
        ("As a percentage the fraction is 0.75%.\n\n**Answer: 0.75%**", r"\frac{3}{4}", False),
        ("**Answer: 75%**", r"\frac{3}{4}", True),
        ("**Answer: 50%**", "50", True),
        # a bound is no value, in any language
        ("至少有 42 个，确切数字无法确定。\n\n**答案：至少 42**", "42", False),
        ("Antwort: mindestens 42", "42", False),
        # an aside with another amount of the same kind is a second answer
        ("**Answer: 42 km (26 km by road)**", "42 km", False),
        ("The distance is 42 km (26 km by road).", "42 km", False),
        ("**Answer: 42 km (about 26 miles)**", "42 km", True),
        ("The film runs 2.5 hours (2 hours 30 minutes).", "150 minutes", True),
        ("She earned $20 (3 hours of work).", r"\$20", True),
        # a total row of the table right before the answer commits to its value
        (
            "| Shelf | Boxes |\n|---|---|\n| A | 20 |\n| B | 25 |\n| **Total** | **45** |\n\n"
            "**Answer: 42**",
            "42",
            False,
        ),
        (
            "| Shelf | Boxes |\n|---|---|\n| A | 20 |\n| B | 22 |\n| **Total** | **42** |\n\n"
            "**Answer: 42**",
            "42",
            True,
        ),
        # amounts in words joined by "and", a half in one word, dollars by their country
        ("**Respuesta: dos horas y media**", "2.5 hours", True),
        ("**Réponse : deux heures et demie**", "2.5 hours", True),
        ("**Antwort: zweieinhalb Stunden**", "2.5 hours", True),
        ("**Ответ: два с половиной часа**", "2.5 hours", True),
        ("Antwort: anderthalb Stunden", "2.5 hours", False),
        ("**Answer: twelve dollars and fifty cents**", r"\$12.50", True),
        ("**Answer: twelve or thirteen**", "12", False),
        ("**答え：12.50米ドル**", r"\$12.50", True),
        ("**Ответ: 12,50 долларов США**", r"\$12.50", True),
        ("The total is 12.50 US dollars.", r"\$12.50", True),
        ("The total is 12.50 US dollars.", "12.50 €", False),
        # a time of day in words
        ("**Answer: quarter to four in the afternoon**", "3:45 PM", True),
        ("**Answer: quarter to four in the afternoon**", "3:45 AM", False),
        ("Antwort: halb acht abends", "19:30", True),
    ],
)
def test_the_attacks_of_set_bc(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # LaTeX's escaped dollar after a currency's letters (a gold as datasets write it)
        ("Total: 5 × 2,47 = 12,35\n\nResposta: R$ 12,35", r"R\$12.35", True),
        ("Total: 5 × 2,47 = 12,35\n\nResposta: R$ 1.235", r"R\$12.35", False),
        # a fraction of a scale in words is that fraction of it, never the scale
        ("Final answer: a quarter of a million dollars.", "250000", True),
        ("Final answer: a quarter of a million dollars.", "1000000", False),
        ("The answer is half a million.", "500000", True),
        # a box taken back, then another value stated: two committed answers
        (
            "Counting the lattice points, we get $\\boxed{4}$.\n\nActually, it should be $5$, "
            "since we forgot the endpoint $(4, 8)$. So the answer is $5$.",
            "5",
            False,
        ),
        (
            "The value is $18$, so the answer is $\\boxed{\\text{(C)}}$.\n\n"
            "Actually, it should be (E), since the problem asks for the sum of the digits.",
            r"\text{(C)}",
            False,
        ),
        # a choice letter with its value facing the letter; a label after an exact value
        (r"So the correct option is $\boxed{\textbf{(C)}\ 18}$.", r"\text{(C)}", True),
        (r"So the correct option is $\boxed{\textbf{(E)}\ 18}$.", r"\text{(C)}", False),
        (r"$\boxed{(C) \text{ or } (E)}$", r"\text{(C)}", False),
        (r"$\boxed{36\pi \text{ cubic units}}$", r"36\pi", True),
        (r"$\boxed{36\pi \text{ cubic units}}$", "36", False),
        ("Jibu: milioni moja", "1000000", True),
    ],
)
def test_the_misses_of_sets_bb_and_bd(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # small print, struck or hidden HTML holds a second value; a power in <sup> is one
        ("Total: \\$13.50 <sup><sub>12.50</sub></sup>", r"\$12.50", False),
        ("Total: \\$13.50 <sup><sub>12.50</sub></sup>", r"\$13.50", False),
        ('#### 42 <span style="display:none">43</span>', "42", False),
        ("The answer is <b>42</b>.", "42", True),
        ("The area is 25 m<sup>2</sup>.", "25 m^2", True),
        # a value named the correct one after the answer
        (
            "Answer: $42$\n\nVerification: recounting row by row gives $6 \\times 7 + 1 = 43$, "
            "so the correct total is 43.",
            "42",
            False,
        ),
        ("#### 42\n\nCheck: 6 x 7 = 42, so the correct total is 42.", "42", True),
        # "or" of any language in an aside; a bound after the number
        ("정답: 42 (아니면 43)", "42", False),
        ("Cevap: 42'den büyük herhangi bir sayı.", "42", False),
        ("The answer is 42 or more.", "42", False),
        ("答案：42以上", "42", False),
        ("The answer is forty-two (42).", "42", True),
        ("The answer is forty-two (43).", "42", False),
        # tenths in Japanese, the half of the day before a time, Thai words glued to a unit
        ("18 ÷ 30 = 0.6\nつまり6割です。\n答え：6割", r"60\%", True),
        ("答え：6割5分", r"65\%", True),
        ("উত্তর: বিকেল ৩:৪৫", "3:45 PM", True),
        ("উত্তর: বিকেল ৩:৪৫", "3:45 AM", False),
        ("คำตอบ: สองร้อยห้าสิบบาท", "250", True),
        ("คำตอบ: สองร้อยห้าสิบเอ็ดบาท", "250", False),
        ("คำตอบ: ๑๒.๕๐ ดอลลาร์", r"\$12.50", True),
        ("Antwort: Viertel vor vier am Nachmittag", "3:45 PM", True),
    ],
)
def test_the_attacks_of_set_bf_and_misses_of_be(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # set BG's misses: pounds and pence, ¥ for yen or yuan, ringgit, km/sa, clocks with h
        ("3 × £2.80 = £8.40\n\nShe pays **8 pounds and 40 pence**.", "£8.40", True),
        ("3 × £2.80 = £8.40\n\nShe pays **8 pounds and 40 pence**.", "£8.04", False),
        ("答：一共需要 350 元。", "¥350", True),
        ("答え：350円", "¥350", True),
        ("Answer: $350", "¥350", False),
        ("Jumlah = 5 × RM2.50 = RM12.50\n\n**Jawapan: RM12.50**", "RM12.50", True),
        ("Jumlah = 5 × RM2.50 = RM12.50\n\n**Jawapan: RM12.50**", r"\$12.50", False),
        ("**Cevap: 80 km/sa**", "80 km/h", True),
        ("13h15 + 2h30 = 15h45\n\n**O trem chega às 15h45.**", "3:45 PM", True),
        ("13h15 + 2h30 = 15h45\n\n**O trem chega às 15h45.**", "3:45 AM", False),
        ("**Ответ: в 15:45.**", "3:45 PM", True),
        ("So the answer is **XIV** (fourteen).", "14", True),
        ("So the answer is **XIV** (fifteen).", "14", False),
        (r"Written in Roman numerals, the answer is $\boxed{\text{XIV}}$", "14", True),
        ("d = √(3 + 9) = √12 = 2√3\n\n**d = 2√3**", r"2\sqrt{3}", True),
        # set BH's attacks: a share is no count of per cent, pi with degrees, words before a box
        (r"The fraction of red marbles is 9/20.\n\n$\boxed{0.45\%}$", "0.45", False),
        (r"$\boxed{45\%}$", "0.45", True),
        (r"$\boxed{\frac{\pi}{6}^{\circ}}$", r"\frac{\pi}{6}", False),
        ("La réponse est quarante-trois, soit $\\boxed{42}$.", "42", False),
        ("La réponse est quarante-deux, soit $\\boxed{42}$.", "42", True),
        ("Total = 5 km + 10 km = 15 km, i.e. 1,500 m.\n\n$\\boxed{15\\text{ km}}$", "15 km", False),
        ("Total = 5 km + 10 km = 15 km, i.e. 15,000 m.\n\n$\\boxed{15\\text{ km}}$", "15 km", True),
        ("1.5 hours, i.e. \\boxed{90 \\text{ minutes}}", "90 minutes", True),
        (r"$\boxed{\frac{1}{2}}$, i.e. 0.5 = 50% = $\frac{5}{100}$.", r"\frac{1}{2}", False),
        (r"$\boxed{\frac{1}{2}}$, i.e. 0.5 = 50%.", r"\frac{1}{2}", True),
        ("Jawaban: 0,25 (yaitu 1/5)", "0.25", False),
        ("Jawaban: 0,25 (yaitu 1/4)", "0.25", True),
        ("**Answer:** \\$12.50 (twelve dollars and five cents)", r"\$12.50", False),
        ("**Answer:** \\$12.50 (twelve dollars and fifty cents)", r"\$12.50", True),
        ("Odpowiedź: 12,50 $ (czyli 12 dolarów i 5 centów)", r"\$12.50", False),
        (
            "Hence the minimum value is $\\boxed{2}$.¹\n\n¹ Strictly speaking, x must be an "
            "integer greater than 1, so the minimum actually attained is 5/2.",
            "2",
            False,
        ),
        (
            "6 × 7 = 42. The answer is 42.\n\nP.S. Rechecking, we forgot the 2 loose items: "
            "6 × 7 + 2 = 44, so it's actually 44.",
            "42",
            False,
        ),
        ("답: 10 (단, 순서를 고려하면 20)", "10", False),
        (
            "**Respuesta final:** 42\n\nFinal answer (English summary): after checking "
            "x + y = 14 again, y = 8, so the product xy equals 48.",
            "42",
            False,
        ),
        ("Final answer (rounded): 42", "42", True),
    ],
)
def test_the_misses_of_set_bg_and_attacks_of_bh(text, gold, paid):
    assert scores(text, gold) is paid
