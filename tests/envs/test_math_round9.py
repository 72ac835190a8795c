"""Round 9 of the math reader: temperature changes, Tamil and Ethiopic numerals, Danish 60, tables.

Each row is a response, a gold and what it must earn. The near misses are the false positives
the last blind sets left: a rise of 10 °C converted to 50 °F as if it were a reading, Tamil
``௰௨`` read as its digit 2, Danish ``tres`` (60) read as Spanish 3, and a summing-up table's
last cell read instead of the conclusion before it.
"""

import pytest
from math_scoring import scores


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # a change of temperature converts without the scales' zeros
        ("Answer: the temperature rose by 50 °F.", "10 °C", False),
        ("Answer: the temperature rose by 18 °F.", "10 °C", True),
        ("Answer: it dropped by 68 °F", "20 °C", False),
        ("Answer: it dropped by 36 °F", "20 °C", True),
        ("It fell by 9 degrees Fahrenheit.", "5 °C", True),
        ("A drop of 41 °F.", "5 °C", False),
        ("The change in temperature is $\\boxed{18^\\circ F}$.", "10 °C", True),
        ("The change in temperature is $\\boxed{50^\\circ F}$.", "10 °C", False),
        ("The difference is 10 °C.", "10 °C", True),
        ("The temperature rose by 10 °C.", "10", True),
        ("The temperature rose by 10 °C.", "50 °F", False),
        # a reading still converts with them
        ("The temperature rose to 50 °F.", "10 °C", True),
        ("It is 50 °F outside.", "10 °C", True),
        ("It is 18 °F outside.", "10 °C", False),
        # Tamil numerals of tens, hundreds, thousands; Ethiopic numerals
        ("விடை: ௰௨", "12", True),
        ("விடை: ௰௨", "2", False),
        ("விடை: ௨௰௩", "23", True),
        ("விடை: ௨௰௩", "203", False),
        ("விடை: ௨௲௫௱௰", "2510", True),
        ("விடை: ௧௨", "12", True),
        ("6 நாற்காலிகள், 2 வரிசைகள்.\n\nவிடை: ௰௨", "2", False),
        ("መልሱ ፳፭ ነው።", "25", True),
        ("መልሱ ፳፭ ነው።", "5", False),
        ("መልሱ: ፲፪", "12", True),
        ("መልሱ: ፳፻፳፫", "2023", True),
        ("መልሱ: ፻፳፫", "123", True),
        ("መልሱ: ፫፼፭፻", "30500", True),
        ("መልሱ: ፲፪ ወይም ፲፫", "12", False),
        # Danish "tres" is 60; Spanish "tres" 3
        ("Der er 3 kasser med 20 æbler i hver.\n3 · 20 = 60.\nSvaret er tres æbler.", "60", True),
        ("Der er 3 kasser med 20 æbler i hver.\n3 · 20 = 60.\nSvaret er tres æbler.", "3", False),
        ("Svaret er toogtres.", "62", True),
        ("La respuesta es tres manzanas.", "3", True),
        ("La respuesta es tres.", "3", True),
        # a table after the conclusion sums up the working
        (
            "So she bought 7 items.\n\n| Item | Qty | Cost |\n|---|---|---|\n| Pens | 4 | $6 |\n"
            "| Notebooks | 3 | $9 |\n| **Total** | **7** | **$15** |",
            "7",
            True,
        ),
        (
            "So she bought 7 items.\n\n| Item | Qty | Cost |\n|---|---|---|\n| Pens | 4 | $6 |\n"
            "| Notebooks | 3 | $9 |\n| **Total** | **7** | **$15** |",
            "$15",
            False,
        ),
        (
            "Here it is:\n\n| Item | Cost |\n|---|---|\n| Pens | $6 |\n| **Total** | **$15** |",
            "$15",
            True,
        ),
        ("| Case | Answer |\n|---|---|\n| with tax | 44 |\n| without tax | 42 |", "42", False),
        ("| Step | Value |\n|---|---|\n| Bought | 42 |\n| **Answer** | **40** |", "40", True),
    ],
)
def test_attack(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # the same value said again another way is one answer; another value is a hedge
        ("#### ४२ (forty-three)", "42", False),
        ("#### ४२ (forty-two)", "42", True),
        ("#### 42 (quarante-trois)", "42", False),
        ("#### 42 (quarante-deux)", "42", True),
        ("#### 42 (٤٢)", "42", True),
        ("#### 42 (٤٣)", "42", False),
        ("#### 90 min (1.5 h)", "90 minutes", True),
        ("#### 90 min (2 h)", "90 minutes", False),
        ("The film runs 2.5 hours (2 hours 50 minutes).", "150 minutes", False),
        ("The film runs 2.5 hours (2 hours 30 minutes).", "150 minutes", True),
        ("#### 42 / forty-three", "42", False),
        ("#### 42 / forty-two", "42", True),
        ("#### 42\n\n(In words: forty-four.)", "42", False),
        ("#### 42\n\n(In words: forty-two.)", "42", True),
        ("The answer is 12. In Roman numerals: XIII.", "12", False),
        ("The answer is 12. In Roman numerals: XII.", "12", True),
        ("\\boxed{0.75}, also written as $\\frac{3}{5}$", "0.75", False),
        ("\\boxed{0.75}, also written as $\\frac{3}{4}$", "0.75", True),
        ("The answer is 1.500 (that is, one thousand five hundred).", "1.5", False),
        ("The answer is 1.500 (that is, one thousand five hundred).", "1500", True),
        ("Ответ: 10 соток, то есть 1000 м².", "1000 m²", True),
        ("She has 12 apples (3 of them red).", "12", True),
        ("He earns $20 (3 hours of work).", "$20", True),
        ("答案是51.60元 (5,160 分)。", "51.60", True),
        # other hedges: "most likely", a range, a condition, a footnote's condition
        ("Most likely the answer is 42.", "42", False),
        ("The answer is likely 42.", "42", False),
        (
            "Each outcome is equally likely, so the probability is \\boxed{\\frac{1}{6}}.",
            "1/6",
            True,
        ),
        ("The most likely sum is 7.", "7", True),
        ("Somewhere from 40 to 45 marbles.", "45", False),
        ("It takes between 5 and 6 hours.", "6 hours", False),
        ("إذن يحتاج العامل ما بين ٥ و ٦ ساعات.", "6", False),
        ("The difference between 40 and 45 is 5.", "5", True),
        ("If Tom is counted, 42; otherwise 41.", "41", False),
        ("#### 42\n\n[^1]: If the teacher is counted, 43.", "42", False),
        ("#### 42\n\n[^1]: The teacher is not counted.", "42", True),
        ("Final answer: 42. (Though 48 is also plausible.)", "42", False),
        (
            "Das Ergebnis ist 1.000 Schrauben; wahrscheinlich eher 1.200.\nAntwort: 1.200",
            "1200",
            False,
        ),
        ("غالباً جواب ۴۸ ہے۔", "48", False),
        ("답은 3만 원 정도일 것 같습니다.", "30000", False),
        ("답은 3만 원입니다.", "30000", True),
        ("အဖြေက ၁၅ လို့ ထင်ပါတယ်၊ ဒါပေမယ့် သေချာမသိပါ။", "15", False),
        ("விடை ௧௬ அல்லது ௧௮", "18", False),
        ("उत्तर: ४८ (मला खात्री नाही)", "48", False),
        ("答：每天能赚１８美元（或者２０美元）。", "18", False),
        # a self-correction is two committed answers, in every language read
        ("جواب ۲۰ است. نه، صبر کنید، اشتباه کردم: ۵ × ۵ = ۲۵. جواب درست ۲۵ است.", "25", False),
        ("উত্তর ২৮। না, দাঁড়াও, আবার হিসাব করি: ৭ × ৫ = ৩৫। তাই উত্তর ৩৫।", "35", False),
        ("جواب ۳۲ ہے۔ نہیں، ٹھہریں: ۱۸ + ۱۶ = ۳۴۔ صحیح جواب ۳۴ ہے۔", "34", False),
        ("အဖြေ - ၂၄။ မဟုတ်ဘူး၊ ခဏနေပါ၊ ပြန်တွက်ရင် ၆ × ၅ = ၃၀။ အဖြေ - ၃၀", "30", False),
        (
            "답은 64입니다. 아니, 잠깐만요. 다시 계산하면 8 × 9 = 72이므로 답은 72입니다.",
            "72",
            False,
        ),
        ("جواب ۴۸ ہے۔", "48", True),
        ("তাই উত্তর ৩৫।", "35", True),
        ("အဖြေ - ၃၀", "30", True),
        ("답은 72입니다.", "72", True),
        ("उत्तर ४८ है।", "48", True),
        # a name is no value; a rejected value is no second answer
        ("Final answer: see Table 42.", "42", False),
        ("The answer is in Figure 3.", "3", False),
        ("La réponse est 7 — pas 8.", "7", True),
        ("Die Antwort ist 7, nicht 8.", "7", True),
        ("La réponse est 7 — pas 8.", "8", False),
    ],
)
def test_said_again_or_hedged(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        ("2x + 3 = 11, so 2x = 8 and x = 4.\nCheck: 2(4) + 3 = 11 ✓", "4", True),
        ("So x = 2 or x = 3.", "2, 3", True),
        (
            "Cada camiseta cuesta $250 y compra 6: 6 × 250 = 1,500.\nRespuesta: $1,500 pesos",
            "1500",
            True,
        ),
        (
            "Cada camiseta cuesta $250 y compra 6: 6 × 250 = 1,500.\nRespuesta: $1,500 pesos",
            "1.5",
            False,
        ),
        ("答：汽车的速度是每秒20米。", "72 km/h", True),
        ("答：汽车的速度是每秒20米。", "20 km/h", False),
        ("答：汽车的速度是每小时20千米。", "20 km/h", True),
        ("คำตอบคือ 5,000 มิลลิลิตร", "5 L", True),
        ("答え：１５００ｍ", "1.5 km", True),
        ("The answer is 6m.", "6 m", True),
        ("The answer is 2x.", "2 m", False),
        ("答：需要两小时十五分钟。", "135 minutes", True),
        ("这是一个问题。答案是5。", "5", True),
        ("The solution set is $x < -10$ or $x > 4$.", "(-\\infty, -10) \\cup (4, \\infty)", True),
        ("$\\boxed{x<-10 \\text{ or } x>4}$", "(-\\infty, -10) \\cup (4, \\infty)", True),
        ("$\\boxed{x<-10 \\text{ or } x>5}$", "(-\\infty, -10) \\cup (4, \\infty)", False),
        ("$\\boxed{2 \\le x < 5}$", "[2, 5)", True),
        ("$\\boxed{2 < x < 5}$", "[2, 5)", False),
        ("Jadi, total harga yang harus dibayar adalah Rp12.500.", "12500", True),
        ("Jadi, harga motor itu Rp15,5 juta.", "15500000", True),
        ("Vậy tổng số tiền là 45.000 đồng.", "45000", True),
        ("Cevap: %25", "25", True),
        ("Απάντηση: 120 λεπτά", "2 hours", True),
        ("The answer is 2π.", "2\\pi", True),
        ("الجواب: ٥ درجات تحت الصفر", "-5", True),
        ("الجواب: ٥ درجات تحت الصفر", "5", False),
        ("答：每天能赚１８美元（卖出９个鸡蛋）。", "18", True),
        ("したがって、太郎は全部で４２枚のカードを配りました（６枚ずつ７人分）。", "42", True),
        (
            "3 × 5.000 = 15.000\nJadi, jawabannya Rp15.000.\nIngat, harga satu buku Rp5.000.",
            "15000",
            True,
        ),
    ],
)
def test_read_right(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        (
            "4 · 90 = 360.\nИтак, Маша потратила 360 рублей, купив 4 тетради по 90 рублей.",
            "360",
            True,
        ),
        (
            "4 · 90 = 360.\nИтак, Маша потратила 360 рублей, купив 4 тетради по 90 рублей.",
            "90",
            False,
        ),
        (
            "12 × Rp3.000 = Rp36.000.\nJadi Budi mendapat Rp36.000 dari menjual 12 buku.",
            "36000",
            True,
        ),
        (
            "12 × 50 = 600.\nKwa hiyo Amina alipata shilingi 600 kwa kuuza machungwa 12.",
            "600",
            True,
        ),
        ("٨ × ١٢ = ٩٦.\nإذن يكسب خالد ٩٦ دولاراً في اليوم مقابل ٨ ساعات عمل.", "96", True),
        ("१२ × ८ = ९६ टाका।\nअतः वह ९६ रुपये कमाता है, प्रतिदिन १२ रुपये की दर से।", "96", True),
        # no conclusion, a hedge, an equation or a time in the last sentence: the rule stands aside
        (
            "90 ÷ 60 = 1.5.\n\nSo it takes 1.5 hours, or maybe 2 hours if they take a break.",
            "1.5 hours",
            False,
        ),
        (
            "90 ÷ 60 = 1.5.\n\nSo it takes 1.5 hours, or maybe 2 hours if they take a break.",
            "2 hours",
            False,
        ),
        ("19:30 + 2:45 = 22:15\n\nSo it ends at 22:15.", "22:15", True),
        ("3 × 4 = 12.\nSo after 12 days she has 40 apples.", "40", True),
        ("3 × 4 = 12.\nShe spent 12 dollars on 4 books.", "4", True),
    ],
)
def test_the_result_before_its_givens(text, gold, paid):
    """A conclusion that states the working's result, then the givens it came from."""
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # a note after the answer that offers another value, at once or under a condition
        ("#### ٤٢\n\nP.S. 𝟒𝟑", "42", False),
        ("Answer: 18\n\nTL;DR — 19", "18", False),
        ("#### 14\n\n(Second thoughts: 15.)", "14", False),
        ("La réponse est 42.\n\nRectification : 43.", "42", False),
        ("La respuesta es 42.\n\nFe de erratas: 43.", "42", False),
        ("#### ٤٢\n\n修正：四十三", "42", False),
        ("The answer is 36.\n\nNote: if the question means full dozens only, 24.", "36", False),
        ("The answer is 72.\n\nAddendum: strictly speaking, 70.", "72", False),
        ("#### 12\n\nFootnote: 12 assumes no breakage; with breakage, 11.", "12", False),
        ("#### ४२\n\nनोट: अगर शिक्षक को गिनें तो ४३।", "42", False),
        ("#### 500 g\n\nP.S. The scale might read 520 g.", "500 g", False),
        ("#### 27\n\nP.P.S. Twenty-eight if the jar was full at the start.", "27", False),
        ("#### 75\n\nNote: 75 = 3 × 25, consistent with the three 25-minute sessions.", "75", True),
        ("#### 42\n\nNote: each box holds 7 eggs.", "42", True),
        # another value alone after the answer, or said equal to it
        ("#### 42\n\n四十三", "42", False),
        ("#### 42\n\n43", "42", False),
        ("#### 42\n\n42", "42", True),
        ("\\boxed{\\frac{3}{4}} = 0.34", "\\frac{3}{4}", False),
        ("\\boxed{\\frac{3}{4}} = 0.75", "\\frac{3}{4}", True),
        ("\\boxed{\\frac{1}{3}} = 0.333...", "\\frac{1}{3}", True),
        ("\\boxed{12} = 3 \\times 4", "12", True),
        ('#### 42\n\n```json\n{"answer": 43}\n```', "42", False),
        ('#### 42\n\n```json\n{"answer": 42}\n```', "42", True),
        (
            "The answer is 64.\n\n| Quantity | Value |\n|---|---|\n| Final answer | 65 |",
            "64",
            False,
        ),
        ("| Answer | Explanation |\n|---|---|\n| 42 | six times seven |", "42", True),
        ("#### 99\n\n\\iffalse 100 \\fi", "99", False),
        ("#### 99\n\n\\iffalse 99 \\fi", "99", True),
        ("#### 13\n\nThat said, 14 is also defensible.", "13", False),
        # doubt, guesses and bounds in more forms and languages
        ("I'm fairly sure the total is 42, but I wouldn't bet on it.\n#### 42", "42", False),
        ("If I had to pick one, I'd say 13.\n#### 13", "13", False),
        ("Возможно, проще сначала сложить: 4 + 6 = 10. Ответ: 10.", "10", True),
        ("Tentative answer: 88", "88", False),
        ("Answer: 81\n\nConfidence: low", "81", False),
        ("#### 256 (unverified)", "256", False),
        ("The answer is 64, give or take a couple.", "64", False),
        ("It takes upwards of 8 hours.", "8", False),
        ("Het antwoord is hooguit 7.", "7", False),
        ("Het antwoord is ten minste 5.", "5", False),
        ("答えは42以上です。", "42", False),
        ("답은 42 이상입니다.", "42", False),
        ("الإجابة: على الأقل ٤٢", "42", False),
        ("उत्तर: कम से कम ४२", "42", False),
        ("Svaret är troligen 45.", "45", False),
        ("Risposta: 3,14 (oppure 3,15)", "3.14", False),
        ("პასუხი ალბათ 42.", "42", False),
        ("Պատասխանը գուցե 42 է։", "42", False),
        # an aside or a rejected value on a #### line
        ("#### 45 minutes (3 of them late)", "45 minutes", True),
        ("#### 12 cm, not 12 mm", "12 cm", True),
        ("#### 7 — not 8", "7", True),
        ("#### 42 — não tenho certeza.", "42", False),
        ("Die Antwort ist 1.250, nicht 1.520.", "1250", True),
        ("الإجابة هي ٤٢، وليست ٤٣.", "42", True),
        ("42 — forty-two — is the answer.", "42", True),
    ],
)
def test_what_follows_the_answer(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        (
            "$2x + 3 = 11$, so $x = 4$.\n\nCheck: $2(4) + 3 = 12$, not 11, so $x = 4$ is wrong. Let me redo this.",
            "4",
            False,
        ),
        ("$2x + 3 = 11$, so $x = 4$.\n\nCheck: $2(4) + 3 = 11$ ✓", "4", True),
        ("Each box weighs 500 g, so 4 boxes weigh 2000 g or 2 kg.", "2 kg", True),
        ("Each box weighs 500 g, so 4 boxes weigh 2000 g or 3 kg.", "2 kg", False),
        ("Elle vend 9 œufs à 2 $ : 9 × 2 = 18.\nDonc Janet gagne 18 $ par jour.", "18", True),
        ("合計：１００円 × ５ ＝ ５００円\n答え：￥５００", "500", True),
    ],
)
def test_checks_currency_signs_and_restatements(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # MGSM's languages: the result named, then the givens; Swahili numbers and units
        (
            "15 × 3 = 45 $.\n\nJanet verdient also 45 Dollar pro Tag, wenn sie 15 Eier zu je 3 Dollar verkauft.",
            "45",
            True,
        ),
        (
            "9 × 980 = 8.820 Euro.\n\nDie Schule zahlt also 8.820 Euro für 9 Stühle zu je 980 Euro.",
            "8820",
            True,
        ),
        (
            "Cada silla cuesta 4.000 euros y la escuela compra 12 sillas.\n12 × 4.000 = 48.000 euros.\n\nLa escuela paga 48.000 euros en total por 12 sillas de 4.000 euros.",
            "48000",
            True,
        ),
        (
            "6 × 643 = 3\u202f858 euros.\n\nL’école paie donc 3\u202f858 euros pour 6 chaises à 643 euros.",
            "3858",
            True,
        ),
        (
            "১০ × ৫ = ৫০ ডলার।\n\nসুতরাং, জ্যানেট প্রতিদিন ৫০ ডলার আয় করে, কারণ সে ৫ ডলার দরে ১০টি ডিম বিক্রি করে।",
            "50",
            True,
        ),
        (
            "౯ × ౫ = ౪౫ డాలర్లు.\n\nకాబట్టి, జానెట్ రోజుకు ౪౫ డాలర్లు సంపాదిస్తుంది, ఎందుకంటే ఆమె ౯ గుడ్లను అమ్ముతుంది.",
            "45",
            True,
        ),
        ("Kwa hiyo, jibu ni thelathini.", "30", True),
        ("Kwa hiyo, jibu ni tisini na sita.", "96", True),
        ("Jibu ni mia tatu na hamsini.", "350", True),
        ("Jibu: mayai arobaini na mbili.", "42", True),
        ("Jibu ni kumi na mbili.", "21", False),
        (
            "9 × 3 = 27.\n\nKwa hiyo, Janet anapata dola ishirini na saba au thelathini na sita kila siku.",
            "36",
            False,
        ),
        (
            "9 × 3 = 27.\n\nKwa hiyo, Janet anapata dola ishirini na saba au thelathini na sita kila siku.",
            "27",
            False,
        ),
        ("Il y a 12 pommes au total.", "12", True),
        ("Jibu: maili 240", "240 km", False),
        ("Kwa hiyo, jibu ni maili 240.", "240 miles", True),
        ("Kwa jumla anahitaji saa 90.", "90 minutes", False),
        # doubt and retraction in German, Japanese and Telugu
        ("Antwort: 11,25. Moment, nein – ich habe mich verrechnet, es sind 11,75.", "11.25", False),
        ("答えは５３だと思いますが、確かではありません。", "53", False),
        ("నా అంచనా ప్రకారం సమాధానం ౧౭, కానీ నాకు పూర్తి నమ్మకం లేదు.", "17", False),
    ],
)
def test_the_languages_of_mgsm(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        ("#### 45 minutes (half an hour)", "45 minutes", False),
        ("#### 45 minutes (three quarters of an hour)", "45 minutes", True),
        ("\\boxed{12} (a dozen and a half)", "12", False),
        ("\\boxed{18} (a dozen and a half)", "18", True),
        ("\\boxed{12} (3 of them red)", "12", True),
        (
            "Obtenemos $x = 1{,}5$ e $y = 2$.\n\nLa solución es $\\boxed{(1{,}5;\\ 2)}$.",
            "(1.5, 2)",
            True,
        ),
    ],
)
def test_words_and_braced_commas_said_again(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # an approximate value is no exact answer, in any language (like "≈ 42")
        ("Antwort: etwa 42 Eier.", "42", False),
        ("答：大约42个。", "42", False),
        ("Odpowiedź: około 12", "12", False),
        ("Cevap: yaklaşık 12", "12", False),
        ("Roughly 42.", "42", False),
        ("\\boxed{42 \\text{ or thereabouts}}", "42", False),
        ("The answer is 42 (to within 2).", "42", False),
        ("\\boxed{42^{+1}_{-1}}", "42", False),
        ("So $x = \\sqrt{2} \\approx 1.414$.", "\\sqrt{2}", True),
        ("Roughly 3.3 hours; more precisely 10/3 hours.", "\\frac{10}{3}", True),
        ("Listing the roots: $\\boxed{1 \\pm i}$.", "1 + i, 1 - i", True),
        # a question, a retraction after a short word in any language, doubt, a guess
        ("Is the answer 42?", "42", False),
        ("هل الجواب ٤٢؟", "42", False),
        ("Η απάντηση είναι 42\u037e", "42", False),
        ("Svar: 12. Nej, vänta, 13.", "12", False),
        ("Odpowiedź: 12. Nie, jednak 13.", "12", False),
        ("Vastaus on 12. Ei, vaan 13.", "13", False),
        ("답은 42. 아니, 43.", "42", False),
        ("#### 42. Ei, odota: 43.", "42", False),
        ("#### 42\nalt: 43", "42", False),
        ("#### 42\nP.S. On reflection, 43.", "42", False),
        ("#### 5 km\n(Grader: 5 mi is also fine.)", "5 km", False),
        ("\\boxed{42 \\text{, I think}}", "42", False),
        ("42, if I haven't made an arithmetic slip.", "42", False),
        ("#### 42\nConfidence: 50%", "42", False),
        ("Two candidates survive: 42 and 43. I cannot decide between them.\n#### 42", "42", False),
        ("The answer is\n42\n\nor\n\n43", "42", False),
        ("پاسخ: ۴۲ ან ۴۳", "43", False),
        ("Prоbably 42.", "42", False),
        ("#### 42₈", "42", False),
        ("**Odpowiedź:** 41. Nie jestem jednak pewien, czy dobrze policzyłem.", "41", False),
        ("**답:** 41. 하지만 계산이 맞는지 확신할 수 없습니다.", "41", False),
        ("**الإجابة:** 33. لكنني لست متأكدًا من صحة الحساب.", "33", False),
        ("উত্তর: ৪৬।\n\nতবে আমি পুরোপুরি নিশ্চিত নই যে এটি সঠিক।", "46", False),
        (
            "**Final answer:** 115\n\nHmm, on second thought, I don't think that's right.",
            "115",
            False,
        ),
        ("Serían 1.250 euros, aunque podrían ser 1.100.\n\n\\boxed{1.250}", "1250", False),
        # a summary that states another result than the final marker
        (
            "217 - 153 = 64.\n217 - 120 = 97.\n\nPutting it together, the result is 97.\n#### 64",
            "64",
            False,
        ),
        ("७२ + ५२ = १२४।\n७२ − ५२ = २०।\n\nइसलिए १२४ सेब बचे हैं।\n\n\\boxed{२०}", "20", False),
        ("217 - 153 = 64.\n\nPutting it together, the result is 64.\n#### 64", "64", True),
        ("So 50 is $\\boxed{20}$ percent of 250.", "20", True),
        ("So by morning it was 5 °C below zero.\n\n**Answer:** 5 °C below zero", "-5 °C", True),
        # units no table had: their own size, or their own dimension
        ("The gem weighs 5 carats.", "5 g", False),
        ("The gem weighs 5 carats.", "1 g", True),
        ("The horse is 15 hands tall.", "60 in", True),
        ("The tank holds 5 barrels.", "5 gallons", False),
        ("The lattice spacing is 5 Å.", "0.5 nm", True),
        ("It weighs 11 stone.", "11 lb", False),
        # honest shapes: a check, a rejected value, a restatement
        ("Tom has $8 and spends $3, so he has $5 left, or 500 cents.", "$5", True),
        ("คำตอบคือ ๑๔๐ (140) แท่ง", "140", True),
        ("Not 40 — the cracked eggs still count, so the answer is 42.", "42", True),
    ],
)
def test_round_nine_late(text, gold, paid):
    assert scores(text, gold) is paid


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        ("**Answer:** about $3,750", "3750", False),
        ("Antwoord: ongeveer € 2.110", "2110", False),
        ("Resposta: cerca de R$ 2.270", "2270", False),
        ("Kwa hiyo, jibu ni takriban 5,730.", "5730", False),
        ("La risposta è più o meno 15,50 €.", "15.5", False),
        ("答：42个左右。", "42", False),
        ("답: 42개쯤", "42", False),
        ("答え：42前後", "42", False),
        ("उत्तर: सुमारे ४५२", "452", False),
        ("Respuesta: a lo sumo 42 personas.", "42", False),
        ("La réponse est 42, sauf erreur de ma part.", "42", False),
        ("Ответ: 42, если я не ошибся.", "42", False),
        ("答：１４１。不过我不太确定。", "141", False),
        ("Cevap: 63. Yine de bir yerde hata yapmış olabilirim.", "63", False),
        ("Відповідь: 215. Ні, стривайте, я помилився — правильно 220.", "215", False),
        ("I suspect the answer is 32.\n#### 32", "32", False),
        ("Soit 42, soit 43 : cela dépend de l'arrondi.\nRéponse : 42", "42", False),
        ("#### 216\n\n[alt]: # (234)", "216", False),
        ("#### 216\n\n[alt]: # (216)", "216", True),
        ("$\\boxed{\\frac{3}{8}}$, i.e. $0.35$.", "\\frac{3}{8}", False),
        ("$\\boxed{\\frac{3}{8}}$, i.e. $0.375$.", "\\frac{3}{8}", True),
        ("**정답:** 1,410만 원", "14100000", True),
        ("எனவே விடை 1,050 கிராம்.", "1.05 kg", True),
        ("Ответ: 42 рубля.", "42", True),
        ("The possible values are 2, 4 and 6.", "2, 4, 6", True),
        (
            "\\boxed{42} is the answer; any other value, such as 43, violates the constraint.",
            "42",
            True,
        ),
    ],
)
def test_the_last_blind_round(text, gold, paid):
    assert scores(text, gold) is paid


def test_a_semicolon_after_the_answer_is_no_question():
    r"""Only a Greek question mark (or a ``;`` ending the text) asks: "\boxed{12}; 3 each"."""
    assert scores("So $\\boxed{12}$; each box holds 3.", "12")
    assert not scores("Η απάντηση είναι 42\u037e", "42")
