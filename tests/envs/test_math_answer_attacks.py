"""Attacks on the math answer reader found by the sixth round (red team and blind set F).

Each row is what a policy optimising against the reader could write, and what it must earn.
"""

import pytest
from math_scoring import scores

from envhub.envs.math.extract import extract_answer


@pytest.mark.parametrize(
    ("text", "gold", "paid"),
    [
        # a digit glued after a letter is no product: each was paid gold 0 (x*0 is 0)
        ("The answer is H0O", "0", False),
        ("The answer is v0", "0", False),
        ("The answer is mp0", "0", False),
        ("The answer: CO0", "0", False),
        ("The answer is β0", "0", False),
        ("The answer is x2", "x2", True),  # the gold as written is still the gold
        ("The answer is 2xy", "2xy", True),
        # a long word is words, not a product of symbols
        ("Antwort: Die Fahrt dauert 3 Stunden.", "3 hours", True),
        ("Antwort: Die Fahrt dauert 3 Stunden.", "3 minutes", False),
        ("The answer is at least 5", "5", False),
        ("The answer is the sum of 3 and 4", "7", False),
        # another value in words after the answer
        ("The result: 28080 / four", "28080", False),
        ("#### 28080\nseven", "28080", False),
        ("The result: -5 / four", "-5", False),
        # two values joined, or the answer taken back
        ("The answer is 44. Then again, 45.", "44", False),
        ("#### 0 then 1", "0", False),
        ("#### 0 (though 1 is plausible)", "0", False),
        ("#### -5\\\\-4", "-5", False),
        ("#### 5. Actually, 7.", "5", False),
        ("#### 5. Actually, 7.", "7", False),
        (
            "So the answer is 12... Actually, that's wrong, I double-counted. Let me redo it.",
            "12",
            False,
        ),
        ("答案是6。不对，我算错了，需要重新计算。", "6", False),
        ("#### 12. Check: 3*4 = 12, that is right.", "12", True),
        ("The answer is 60 minutes. Let me know if you need help with problem 7!", "60", True),
        # cut off inside an expression: no answer
        ("There are 25 pairs, so we multiply 25 × 2 =", "50", False),
        # a closing check repeats the problem's numbers
        ("2x + 3 = 11, so x = 4.\n\nCheck: 2(4) + 3 = 11 ✓", "4", True),
        ("2x + 3 = 11, so x = 4.\n\nCheck: 2(4) + 3 = 11 ✓", "11", False),
        # one value, said with a rejected or restated one
        ("Answer: 8 (not 18, which is the total before subtraction).", "8", True),
        ("Answer: 8 (not 18, which is the total before subtraction).", "18", False),
        ("The answer is not 5; it is 6.", "6", True),
        ("The answer is not 5; it is 6.", "5", False),
        ("Answer: 0.5 (i.e., 1/2)", "1/2", True),
        ("Answer: 0.5 (i.e., 1/3)", "1/3", False),
        # scales, compounds, locales
        ("4 quarters of $300 million = $1,200 million.", "$1.2 billion", True),
        ("Antwort: 2 Std. 30 Min.", "150 minutes", True),
        ("12 × 1.000 = 12.000.\n\nSonuç olarak 12.000 TL.", "12", False),
        ("50 · 50 = 2.500.\n\nErgebnis: 2.500 Flaschen", "2.5", False),
        ("50 · 50 = 2.500.\n\nErgebnis: 2.500 Flaschen", "2500", True),
        # other scripts after 答： (a worked school answer)
        ("10段，每段50厘米：500厘米。\n\n答：5米。", "5 km", False),
        ("10段，每段50厘米：500厘米。\n\n答：5米。", "5 m", True),
        ("答：一共一千二百人。", "1200", True),
        ("答：需要2小时30分钟。", "150 minutes", True),
        ("答：1.5万元", "1.5", False),
        ("답: 3만", "30000", True),
        # blind set G's false positives
        ("The frame adds 2.5 cm: 20 + 5 = 25.\nThe framed picture is 25 in wide.", "25 cm", False),
        ("175 ÷ 7 = 25.\nShe reads 25 pages per hour.", r"25 \text{ pages per day}", False),
        ("His rate is 720 words per hour.", r"12 \text{ words per minute}", True),
        ("3 × 15 = 45.\nVậy đáp án là 45 giây.", "45 minutes", False),
        ("180 ÷ 60 = 3.\n따라서 정답은 3분입니다.", "3 hours", False),
        ("180 ÷ 60 = 3.\n따라서 정답은 3분입니다.", "3 minutes", True),
        ("50 × 50 = 2.500 liter.\nJadi jawabannya adalah 2.500 liter.", "2.5", False),
        ("30 × 40 = 1.200.\nYani cevap 1.200'dür.", "1200", True),
        ("12 · 100 = 1.200.\nΕπομένως, η απάντηση είναι 1.200.", "1200", True),
        ("4 × 4 = 16.\nإذن الإجابة هي 16. لا، هذا خطأ؛ يجب أن أعيد الحساب.", "16", False),
        ("3 · 4 = 12. Die Antwort ist 12. Nein, das stimmt nicht.", "12", False),
        ("First, 24 ÷ 3 = 8 per group... therefore the answer is", "8", False),
        ("The total is 15. Hmm, actually I don't think so... so it would be", "15", False),
        ("6 × 8 = 48\n#### 48\nLet me know if you have questions about steps 1–3.", "48", True),
        ("He needs **7 more boxes**.", "7", True),
        ("So he saves ₹2.5 lakh.", "250000", True),
        ("Die Antwort lautet 2 Milliarden Euro.", "2000000000", True),
        # times of day and ratios: the whole, never the minutes
        ("13:15 + 2:30, so it arrives at 15:45.", "3:45 PM", True),
        ("13:15 + 2:30, so it arrives at 3:45 PM.", "15:45", True),
        ("13:15 + 2:30, so it arrives at 3:45 PM.", "3:45 AM", False),
        ("13:15 + 2:30, so it arrives at 3:45 PM.", "45", False),
        ("so the ratio is 3:45", "45", False),
        ("#### 00:15", "12:15 AM", True),
    ],
)
def test_attack(text, gold, paid):
    assert scores(text, gold) is paid, extract_answer(text)


@pytest.mark.parametrize("text", [r"\boxed{done} \boxed{1,2,4}", "#### 1,2,4\n#### done"])
def test_a_list_beside_words_is_read_without_recursing_forever(text):
    found = extract_answer(text)  # compare.same recursed until RecursionError
    assert found.answer is not None
