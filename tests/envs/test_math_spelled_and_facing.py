"""Round 7 of the math reader: numbers in words, times, angles, feet and pence.

Each row is a response, a gold and what it must earn: the class's correct answers are paid,
and its near misses (another value, unit or reading) are not.
"""

import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from math_scoring import scores

from envhub.envs.math.answers import facing, is_equivalent
from envhub.envs.math.extract import extract_answer
from envhub.envs.math.spelled import as_digits, gold_in_words, language, words_value


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # a number in words after the last digits is the answer, in the response's language
        ("She had 3 bags, so twelve apples.", "12", True),
        ("She had 3 bags, so twelve apples.", "3", False),
        ("Il y a 7 paquets de 10 : soixante-dix bonbons.", "70", True),
        ("Il y a 7 paquets de 10 : soixante-dix bonbons.", "10", False),
        ("Er zijn 5 dozen met 6 eieren: dertig eieren.", "30", True),
        ("Er zijn 5 dozen met 6 eieren: dertig eieren.", "6", False),
        ("The result is negative five.", "-5", True),
        ("The result is negative five.", "5", False),
        # ... unless it names a given, a fraction, a scale or an article
        ("So each friend gets 8 cookies, one for each of the two days.", "8", True),
        ("So he walks 5 km, a third of the way.", "5", True),
        ("He paid $3 million, two thirds of it cash.", "3000000", True),
        ("She has 3 apples. The last one is red.", "3", True),
        # an answer in words, in six languages, with a unit
        ("Réponse : quarante-deux", "42", True),
        ("La respuesta es cuarenta y dos.", "42", True),
        ("La respuesta es veintidós.", "22", True),
        ("La réponse est quatre-vingts.", "80", True),
        ("La réponse est quatre-vingts.", "4", False),
        ("Antwort: zweiundvierzig", "42", True),
        ("Answer: twenty-eight dollars", "\\$28", True),
        ("Answer: twenty-eight dollars", "28 €", False),
        ("Answer: two weeks", "14 days", True),
        ("Answer: two weeks", "2 days", False),
        # another value in words after the answer hedges, in any of those languages
        ("#### 42\nquarante-trois", "42", False),
        # times of day in Chinese, Japanese and Korean; a bare time facing one
        ("答：下午3点45分", "3:45 PM", True),
        ("答：下午3点45分", "3:45 AM", False),
        ("答：下午3点45分", "15:45", True),
        ("午後3時半です。\n答え：午後3時半", "15:30", True),
        ("정답: 오후 3시 45분", "15:45", True),
        ("答：3点", "3", True),  # an hour alone may be points: left as written
        ("Answer: 10:50", "10:50 AM", True),
        ("Answer: 10:50", "10:50 PM", False),
        ("Answer: 3:45", "3:45 PM", False),  # on the 24-hour clock, 3:45 is in the morning
        ("Answer: 2:4", "1:2", True),  # no time of day beside it: a ratio still
        # degrees facing radians
        ("Answer: 30°", "\\frac{\\pi}{6}", True),
        ("Answer: $30^\\circ$", "\\frac{\\pi}{6}", True),
        ("Answer: 60°", "\\frac{\\pi}{6}", False),
        ("Answer: π/2 rad", "90°", True),
        ("Answer: π/3 rad", "90°", False),
        ("Answer: 30", "\\frac{\\pi}{6}", False),  # a bare number is no angle in degrees
        # feet and inches with primes, below zero, pence, newtons, French durations
        ("He was 5 ft 10 in and grew 4 in.\nHe is now 6'2\".", "74 inches", True),
        ("He was 5 ft 10 in and grew 4 in.\nHe is now 6'2\".", "2", False),
        ("Answer: 6′2″", "6 ft 2 in", True),
        ("3 − 8 = −5, so the temperature fell to 5 °C below zero.", "-5", True),
        ("3 − 8 = −5, so the temperature fell to 5 °C below zero.", "5", False),
        ("Four buns at 85p: 4 × 85 = 340p.\n\nAnswer: 340p", "£3.40", True),
        ("So it costs 240p.", "£2.40", True),
        ("So it costs 240p.", "$2.40", False),
        ("The answer is 2p + 1.", "2p+1", True),  # algebra, not pence
        ("F = ma = 3 kg × 4 m/s² = 12 N.\n\nThe answer is 12 N.", "12", True),
        ("The answer is 12 N.", "12 kg", False),
        ("The answer is 1.2 kN.", "1200 N", True),
        ("Le trajet dure 1 h 45 puis 45 minutes.\n**Réponse :** 2 h 30", "150 minutes", True),
        ("Le trajet dure 1 h 45 puis 45 minutes.\n**Réponse :** 2 h 30", "230 minutes", False),
        ("Réponse : 1,2 million d'euros", "1200000", True),
        ("Réponse : 1,2 million d'euros", "1.2", False),
        # a label may name a thing with digits in it; a product may not hide in one
        ("The answer is 6 molecules of CO2.", "6", True),
        ("The answer is 6 molecules of CO2.", "2", False),
        ("The answer is 3 bags of rice.", "3", True),
        ("The answer is 6 times x.", "6", False),
        ("The answer is 6 bags of x.", "6", False),
        ("The answer is 5 cm2.", "5", False),
        # blind sets H and I (round 7): false positives they found
        ("The total latency is 1.2 µs.", "1.2 ms", False),
        ("Answer: 15 $", "€15", False),
        ("Total: CHF 50", "€50", False),
        ("Odpověď: 2 minuty.", "2 hours", False),
        ("Svar: 3 minuter.", "3 hours", False),
        ("Svar: 3 minuter.", "3 minutes", True),
        ("Sonuç olarak 45 dakika sürer.", "45 seconds", False),
        ("Odpowiedź: postoje trwają 3 godziny.", "3 minutes", False),
        ("Ang sagot ay 3 oras.", "3 minutes", False),
        ("Ang sagot ay 3 oras.", "3 hours", True),
        ("Відповідь: 5 метрів.", "5 cm", False),
        ("پاسخ: ۵ کیلوگرم", "5 g", False),
        ("คำตอบคือ ๔๕ นาที", "45 seconds", False),
        ("คำตอบคือ ๔๕ นาที", "45 minutes", True),
        ("答：一共5斤米。", "5 kg", False),
        ("答：一共5斤米。", "2.5 kg", True),
        ("1, 2, 3, ..., 100", "100", False),
        ("She ends with 15 apples. This is the same method as in Exercise 12.", "12", False),
        ("She ends with 15 apples. This is the same method as in Exercise 12.", "15", True),
        ("She has 18 apples, as computed in steps 1–3.", "3", False),
        ("Depending on traffic, the drive takes between 3-5 hours.", "5", False),
        ("উত্তর সম্ভবত ১৮ ডলার, তবে আমি নিশ্চিত নই।", "18", False),
        ("الإجابة على الأرجح ٥، لكنني لست متأكدًا.", "5", False),
        ("答案可能是42，也可能是48，我不太确定。", "42", False),
        ("6 × 7 = 42, so the answer is 42. I'm not 100% sure, though.", "42", False),
        ("উত্তর: ১৮।\nনা, ভুল হয়েছে। উত্তর: ২০।", "20", False),
        ("The volume is π².", "\\pi^2", True),
        ("A ∩ B = {2}.", "\\{2\\}", True),
        ("A ∩ B = {2}.", "\\{3\\}", False),
        ("The acceleration is $g = 9.8$ m/s².", "9.8 m/s^2", True),
        ("**Answer: 2 km**, or possibly 2.5 km if she takes the longer path.", "2 km", False),
        ("12 × 3 = 36. Luego restamos los que", "36", False),  # cut off: no answer
        ("So she has 36 apples", "36", True),
        ("#### 42\n\n(If the boxes were not all full, the answer would be 36.)", "42", False),
        ("#### 15\n\nNote: if Tom also counts himself, it would be 16.", "15", False),
        ("#### 4\n\nCheck: if x = 4, then 2x+3 would be 11.", "4", True),
        ("Antwort: Sie hat zweiundvierzig Bonbons.", "42", True),
        ("La risposta è quarantadue matite.", "42", True),
        ("La réponse est quatre-vingt-dix-sept.", "97", True),
        ("La respuesta es 1,5 millones de entradas.", "1500000", True),
        ("Odpowiedź: 1,2 miliona sztuk.", "1200000", True),
        ("Jadi jawabannya adalah Rp 2,5 juta.", "2500000", True),
        ("Jadi jawabannya adalah Rp 25.000.", "$25000", False),
        ("Vậy đáp án là 2,5 triệu đồng.", "2500000", True),
        ("So the temperature was minus 5 degrees Celsius.", "-5 °C", True),
        ("So the temperature was minus 5 degrees Celsius.", "5 °C", False),
        ("The gift card is worth $5, or 500 cents.", "$5", True),
        ("La réponse est 15 h 45.", "3:45 PM", True),
        ("La réponse est 2 heures et 30 minutes.", "150 minutes", True),
        ("Each of the 6 tables seats 7.\n6 × 7 = 42\n**42**", "42", True),
        ("Of 8 slices, 5 were eaten, so ⁵⁄₈ of the pizza was eaten.", "\\frac{5}{8}", True),
        ("The answer is 𝑥² + 6𝑥 − 27", "x^2 + 6x - 27", True),
        ("Counting carefully gives 7 — not 8, since one was counted twice.", "8", False),
        ("答：下午3点45分到达。", "15:45", True),
        ("So she used a dozen eggs.", "12", True),
        ("She bakes three dozen cookies.", "36", True),
        ("So it opens at **11 a.m.**", "11:00 AM", True),
        ("So it opens at **11 a.m.**", "11:00 PM", False),
        ("**Answer: 500 g** of nuts in total.", "0.5 kg", True),
        ("4500 / 250 = 18 months, or **1.5 years**.", "18 months", True),
        ("Antwort: x = 3 und x = 5", "3, 5", True),
        ("La respuesta es 0,25, o sea 1/4.", "0.25", True),
        ("所以总数是42。", "42", True),  # a number after a Han word is no glued token
        ("总共有x72个", "72", False),
        # the gold spelled in a language no reader here parses (num2words), and nothing else
        ("Odpowiedź: czterdzieści dwa jabłka.", "42", True),
        ("Odpowiedź: czterdzieści trzy jabłka.", "42", False),
        ("Odpowiedź: czterdzieści dwa lub czterdzieści trzy.", "42", False),
        ("Ответ: сорок два карандаша.", "42", True),
        ("Ответ: сорок два метра.", "42 m", True),
        ("Ответ: сорок два метра.", "42 km", False),
        ("Odpowiedź: trzy godziny.", "3 hours", True),
        ("Odpowiedź: trzy godziny.", "3 minutes", False),
        ("Sonuç olarak on iki kalemi olur.", "12", True),
        ("Sonuç olarak on iki kalemi olur.", "10", False),  # "on" alone is 10
        ("Jadi jawabannya adalah dua belas permen.", "2", False),
        ("Vậy đáp án là bốn mươi hai quả táo.", "42", True),
        ("정답은 오십 개입니다.", "50", True),
        # blind set J (round 7)
        ("Het antwoord is 12 mijl.", "12 km", False),
        ("Jadi, jawabannya adalah 6 mililiter.", "6 L", False),
        ("So the tank holds 240 L, but I might have mixed up the dimensions.", "240 L", False),
        ("Đáp án có lẽ là 15.", "15", False),
        ("Відповідь: можливо 8.", "8", False),
        ("پاسخ شاید ۱۲۵ کیلومتر باشد.", "125", False),
        (
            "Final answer: 40 minutes. If she stops for coffee, it's 50 minutes.",
            "40 minutes",
            False,
        ),
        ("**Answer:** 45\n\n(or forty-six if Tom's chair is counted)", "45", False),
        ("**Answer:** 45\n\nWait, let me check: nine times five is forty-five.", "45", True),
        ("La réponse est deux mille cinq cents euros.", "2500", True),
        ("La réponse est 360 centimes.", "3.60 €", True),
        ("La risposta è 75 cl.", "750 mL", True),
        ("Ответ: 60 км/ч", "60 km/h", True),
        ("Ответ: 60 км/ч", "60 m/s", False),
        ("La risposta è 20 metri quadrati.", "20 m^2", True),
        ("The intersection point is (2, 3).", "(2, 3)", True),
        ("x is in [1, 4).", "(1, 4)", False),
        ("So it lasts one and a half hours.", "90 minutes", True),
        ("La respuesta es las 15:45.", "3:45 PM", True),
        # blind set M (round 7)
        ("Step 2: So far she has spent $24 on books and", "24", False),  # cut off
        ("So she spends 320p, or £3.20.", "£3.20", True),
        ("Le train arrive à 15 h 45.", "15:45", True),
        ("Le train arrive à 15 h 45.", "45", False),
        ("Antwort: Jedes Kind bekommt 2,5 kg Äpfel.", "2.5 kg", True),
        ("Antwort: Die Fahrt dauert 2,5 Stunden.", "150 minutes", True),
        ("La réponse est 1/4 ou 0,25.", "0.25", True),
        ("La réponse est 1/4 ou 0,3.", "0.25", False),
        ("Therefore, the average speed is $\\boxed{5 \\mathrm{~m} / \\mathrm{s}}$.", "5 m/s", True),
        ("پاسخ: ۱۲۵ هزار تومان", "125000", True),
        ("الإجابة: ١٥ ألف ريال", "15000", True),
        ("答：晚上的气温是零下5℃。", "-5 °C", True),
        ("答：晚上的气温是零下5℃。", "5 °C", False),
        # blind set L (round 7)
        ("The boat travels 5 nautical miles.", "5 miles", False),
        ("Total: R$ 45,00", "\\$45", False),
        ("Antwort: 20 Grad Fahrenheit", "20 °C", False),
        ("The defect rate is 5‰.", "5\\%", False),
        ("The defect rate is 5‰.", "0.5\\%", True),
        ("Antwort: 1.250 (oder 1.200, falls man die Kinder nicht zählt).", "1250", False),
        ("התשובה היא אולי 42.", "42", False),
        ("So she has $180 saved by June 30.", "30", False),
        ("So she has $180 saved by June 30.", "$180", True),
        ("She has 12 apples and then she buys", "12", False),  # cut off
        ("So she has 12 apples left over in her basket", "12", True),
        # blind set K (round 7)
        ("\\boxed{44 \\text{ vs } 0}", "0", False),
        ("Δt = 500 ns, which in microseconds is \\boxed{0.5\\ \\mu\\text{s}}", "500 ns", True),
        ("After mixing, the room is at 25℃.", "298.15 K", True),
        ("U = IR = 2 A × 6 Ω = 12 V", "12 V", True),
        ("U = IR = 2 A × 6 Ω = 12 V", "12 kV", False),
        ("The answer is 1/2, i.e. 0.5.", "0.5", True),
        ("下午3点45分到达。", "15:45", True),
        ("午後3時半に到着します。", "15:30", True),
        ("오후 3시 45분에 도착합니다.", "3:45 PM", True),
    ],
)
def test_attack(text, gold, paid):
    assert scores(text, gold) is paid


def test_a_text_of_no_known_language_reads_no_false_friend():
    """``once`` is 11 in Spanish, ``elf`` in German, ``cent`` 100 in French."""
    assert language("Once more.") is None
    assert as_digits("Once more.", None) == "Once more."
    assert as_digits("Each cent counts.", language("Each cent counts.")) == "Each cent counts."
    assert words_value("once") is None
    assert words_value("quarante-deux") == 42
    assert words_value("the answer") is None


@pytest.mark.parametrize(
    "text",
    [
        "5 abc " + "a" * 900 + "1" * 300 + "!",  # a label with a digit: was cubic in its length
        "5 " + "ab " * 300 + "x1 y!",
        "5 " + "a/" * 400 + "!",
        "x. " + "-".join(["a"] * 400) + " 5.",  # a cut-off sentence: was exponential in its words
        "x. " + "'".join(["ab"] * 400) + " ,",
    ],
)
def test_hostile_words_after_a_number_are_read_in_linear_time(text):
    """The unit-or-label reader and the cut-off rule have no nested ambiguous repetition."""
    thread = threading.Thread(target=scores, args=(text, "5"), daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "reading took over 10 s: a regular expression backtracks"


def test_facing_rewrites_only_beside_its_counterpart():
    assert facing("10:50", "10:50 AM") == "650 clock"
    assert facing("10:50", "1:5") == "10:50"
    assert facing("30°", "\\pi/6") == "\\frac{30 \\pi}{180}"
    assert facing("30°", "0.5") == "30°"


_VOCABULARY = (
    "one two twelve twenty forty-two hundred thousand million a dozen half quarter third and or "
    "the of minus negative once elf cent sept mil miles un une deux mille cinq cents quatre-vingt "
    "dix-sept cuarenta y dos ciento zweiundvierzig tausend dertig quarantadue duzentas e cinquenta "
    "czterdzieści dwa lub on iki dua belas сорок два 오십 bốn mươi hai apples km hours . , : ( ) 7 "
    "42 3.5 1,000 #### \\boxed{ } Answer: La réponse est Antwort: 答："
).split()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_VOCABULARY), max_size=40), st.sampled_from(["42", "12", "0"]))
def test_number_words_never_crash_the_reader(words, gold):
    """Any mix of number words, false friends and answer markers is read without an error."""
    text = " ".join(words)
    found = extract_answer(text)
    if found.answer:
        is_equivalent(found.answer, gold)
    assert as_digits(text, language(text)) is not None
    words_value(text)
    for n in (0, 7, 42, 2500, 10**6):
        gold_in_words(text, n)
