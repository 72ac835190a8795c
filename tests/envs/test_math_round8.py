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
        ("The answer is 15.[2]\n\n[2] Formula from Lemma 2.", "15", True),
        ("The answer is 15.[2]\n\n[2] Formula from Lemma 2.", "2", False),
        # a note on its own line after the answer restates a given
        (
            "24 − 6 = 18.\nSo 18 students remain.\n(The class originally had 24 students.)",
            "18",
            True,
        ),
        (
            "24 − 6 = 18.\nSo 18 students remain.\n(The class originally had 24 students.)",
            "24",
            False,
        ),
        ("So 18 students remain.\n\n(Or 19 if the teacher counts.)", "18", False),
        ("Answer: 10000 possible PINs (e.g. 1234).", "10000", True),
        ("Answer: 10000 possible PINs (e.g. 1234).", "1234", False),
        # a currency sign after the amount is its currency
        ("Three coffees at €5: 3 × 5 = 15.\nTotal: 15 £", "€15", False),
        ("Three coffees at €5: 3 × 5 = 15.\nTotal: 15 £", "£15", True),
        ("So it costs 3000₽.", "$3000", False),
        ("So it costs 3000 ₽.", "3000", True),
        # a correction, a doubt or a "maybe" in the response's language
        ("La réponse est 40. Attendez, non, j'ai oublié un paquet : c'est 45.", "40", False),
        ("La réponse est 40. Attendez, non, j'ai oublié un paquet : c'est 45.", "45", False),
        ("Antwort: 12. Warte, ich habe einen vergessen: 13.", "12", False),
        ("答案是12。等等，我漏了一个，是13。", "12", False),
        ("Ответ: 12. Подожди, я забыл один: 13.", "12", False),
        ("La respuesta es 12. Espera, olvidé uno: 13.", "12", False),
        ("Ergebnis: ungefähr 12 Äpfel, ich bin mir aber nicht sicher.", "12", False),
        ("答えは8かもしれない。", "8", False),
        ("Vastaus on ehkä 8.", "8", False),
        ("Antwort: 12. Ich bin mir sicher.", "12", True),
        ("Die Antwort ist 12. Eigentlich ganz einfach: 3 mal 4 ist 12.", "12", True),
        ("答案是12。因为3×4=12。", "12", True),
        # the long scale: a French, German or Spanish billion is 10^12
        ("4 × 500 milliards = 2 000 milliards.\nLa réponse est 2 billions.", "2000000000", False),
        ("4 × 500 milliards = 2 000 milliards.\nLa réponse est 2 billions.", "2000000000000", True),
        ("4 × 500 Milliarden = 2.000 Milliarden\nAntwort: 2 Billionen", "2000000000000", True),
        ("4 × 500 Milliarden = 2.000 Milliarden\nAntwort: 2 Billionen", "2000000000", False),
        ("La respuesta es 3 billones.", "3000000000", False),
        ("The answer is 2 billion.", "2000000000", True),
        ("A resposta é 2 bilhões.", "2000000000", True),
        # scale words of Indian languages, with their vowel signs
        ("कुल: २.५ लाख रुपये\nउत्तर: २.५ लाख", "2.5", False),
        ("कुल: २.५ लाख रुपये\nउत्तर: २.५ लाख", "250000", True),
        ("উত্তর: ৩ কোটি টাকা", "3", False),
        ("উত্তর: ৩ কোটি টাকা", "30000000", True),
        # an inequality is an interval, never its bound
        ("From 2x − 3 > 7 we get 2x > 10.\nSo x > 5.", "5", False),
        ("From 2x − 3 > 7 we get 2x > 10.\nSo x > 5.", "(5, \\infty)", True),
        ("So -3 < x <= 5.", "(-3, 5]", True),
        ("So -3 < x <= 5.", "5", False),
        ("Since 3 > 2, the answer is 7.", "7", True),
        # a last sentence that answers with no value
        ("Dividing 5 by 0 is impossible.\nSo the expression is undefined.", "0", False),
        (
            "Dividing 5 by 0 is impossible.\nSo the expression is undefined.",
            "\\text{undefined}",
            True,
        ),
        ("So x = 3 is extraneous, and there is no solution.", "3", False),
        ("So x = 3 is extraneous, and there is no solution.", "\\text{no solution}", True),
        ("The discriminant is 1 - 8 = -7 < 0, so there are no real solutions.", "-7", False),
        ("It would be undefined at x = 0, so the answer is 4.", "4", True),
        # a hedge word after the answer in its sentence, in any script
        ("So she has 12 apples, probably.", "12", False),
        ("#### 12\n\nProbably the easiest way was to multiply.", "12", True),
        ("The answer is 12. Maybe a faster way exists.", "12", True),
        ("مجموع = ۶ × ۶ = ۳۶\nاحتمالاً جواب ۳۶ است.", "36", False),
        ("एकूण विद्यार्थी = ३ × ६ = १८\nकदाचित उत्तर १८ असेल.", "18", False),
        ("மொத்த மாணவர்கள் = ௪ × ௬ = ௨௪\nவிடை ௨௪ ஆக இருக்கலாம்.", "24", False),
        ("કુલ વિદ્યાર્થીઓ = ૪ × ૬ = ૨૪\nકદાચ જવાબ ૨૪ છે.", "24", False),
        ("៥ × ៦ = ៣០\nចម្លើយប្រហែលជា ៣០ នាក់។", "30", False),
        ("၃ × ၄ = ၁၂\nအဖြေသည် ၁၂ ဖြစ်နိုင်သည်။", "12", False),
        ("تعداد کل = ۴ × ۵ = ۲۰\nفکر می‌کنم جواب ۲۰ باشد، ولی مطمئن نیستم.", "20", False),
        ("६ × ७ = ४२\nउत्तर: लगभग ४२, पर मुझे पक्का नहीं है।", "42", False),
        # an answer taken back, with or without a new one, after the last number too
        ("So she has 12 apples. That's wrong, let me redo this.", "12", False),
        ("۳ × ۱۶ = ۴۸\nپاسخ: ۴۸\nنه، اشتباه کردم؛ تخفیف را حساب نکردم.", "48", False),
        ("౭ × ౮ = ౫౬\nసమాధానం: ౫౬. కాదు, ఇది తప్పు, మళ్ళీ లెక్కిస్తాను.", "56", False),
        ("۸ × ۸ = ۶۴\nجواب: ۶۴۔ نہیں، یہ غلط ہے، دوبارہ گنتی کرنی ہوگی۔", "64", False),
        ("๖ × ๗ = ๔๒\nคำตอบคือ ๔๒ คน\nไม่ใช่ คำนวณผิด ต้องคิดใหม่", "42", False),
        ("٤ × ٩ = ٣٦ درهمًا.\nالإجابة: ٣٦\nعذرًا، نسيت ثمن القلم؛ الصحيح ٤٢.", "36", False),
        # a response cut off after its answer phrase has no answer
        ("6×7=42个苹果，再加上篮子里的，所以答案是", "42", False),
        # currencies and units of other scripts are never another currency or unit
        ("۳ × ۴۰۰۰ = ۱۲۰۰۰\nپاسخ: ۱۲۰۰۰ تومان", "12000 ریال", False),
        ("۳ × ۴۰۰۰ = ۱۲۰۰۰\nپاسخ: ۱۲۰۰۰ تومان", "12000", True),
        ("پانچ انڈے = ۵ × ۱۵ = ۷۵ روپے\nجواب: ۷۵ روپے", "$75", False),
        ("پانچ انڈے = ۵ × ۱۵ = ۷۵ روپے\nجواب: ۷۵ روپے", "75", True),
        ("ទិញ ២ ក្បាល = ៥០០០ រៀល។\nចម្លើយ៖ ៥០០០ រៀល", "$5000", False),
        ("2 + 3 = 5\nመልሱ 5 ኪሎ ሜትር ነው።", "5 m", False),
        ("2 + 3 = 5\nመልሱ 5 ኪሎ ሜትር ነው።", "5 km", True),
        ('סה"כ ₪1,250.\nהתשובה היא ₪1,250', "$1250", False),
        ('סה"כ ₪1,250.\nהתשובה היא ₪1,250', "1250", True),
        ("ஒரு பேனா ௧௫ ரூபாய்: ௧௫ × ௮ = ௧௨௦ ரூபாய்\nவிடை: ௧௨௦ ரூபாய்", "$120", False),
        ("ຊື້ ໓ ຖົງ: ໑໕໐໐໐ ກີບ\nຄຳຕອບ: ໑໕໐໐໐ ກີບ", "$15000", False),
        ("Премия = 3,5 тыс. руб.\nОтвет: 3,5 тыс. руб.", "3.5", False),
        ("Премия = 3,5 тыс. руб.\nОтвет: 3,5 тыс. руб.", "3500", True),
        ("५ × २५,००० = १,२५,०००\nअतः उत्तर ₹१,२५,००० है।", "125000", True),
        # set N: the continental thousands dot after "Respuesta final:", Swahili units before
        ("5 × 750 = 3.750 kg.\n\n**Respuesta final:** 3.750 kg", "3.75 kg", False),
        ("5 × 750 = 3.750 g.\n\n**Respuesta final:** 3.750 g", "3.75 kg", True),
        ("6 × 500 = mililita 3000, yaani lita 3.\n\nJibu ni mililita 3.", "3 L", False),
        ("6 × 500 = mililita 3000, yaani lita 3.\n\nJibu ni lita 3.", "3 L", True),
        ("速度 = 180 ÷ 3 = 60（千米/小时）\n\n答：每小时行60千米。", "60 km/h", True),
        ("速度 = 180 ÷ 3 = 60（千米/小时）\n\n答：每小时行60千米。", "60 km", False),
        ("速さ = 96 ÷ 2 = 48\n\n答えは時速48キロメートルです。", "48 km/h", True),
        ("รวม 2 ล้าน + 5 แสน = 2.5 ล้านบาท\n\nคำตอบคือ 2.5 ล้านบาท", "2500000", True),
        ("รวม 2 ล้าน + 5 แสน = 2.5 ล้านบาท\n\nคำตอบคือ 2.5 ล้านบาท", "2.5", False),
        # set P: units, scales and separators of other scripts
        ("الإجابة: ٢، ٣", "2, 3", True),
        ("الإجابة: ٢٥ درجة مئوية", "77 °F", True),
        ("الإجابة: ٢٥ درجة مئوية", "25", True),
        ("الإجابة: ٢٥ م²", "25 m^2", True),
        ("الإجابة: ٢٥ م²", "25 m", False),
        ("الإجابة: ٤٢ دولارًا", "$42", True),
        ("پاسخ: ۶۰ کیلومتر بر ساعت", "60 km/h", True),
        ("คำตอบคือ ๘๐ กม./ชม.", "80 km/h", True),
        ("उत्तर: ₹१.२ करोड़", "12000000", True),
        ("उत्तर: ₹१.२ करोड़", "1.2", False),
        ("La réponse est 1,5 milliard d'euros.", "1500000000", True),
        ("La respuesta es $1,250.50 pesos", "1250.5", True),
        ("Ответ: 2 га", "20000 m^2", True),
    ],
)
def test_attack(text, gold, paid):
    assert scores(text, gold) is paid
