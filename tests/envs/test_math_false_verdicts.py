"""Issue 22, point 8: verdicts the math checker got wrong, each written as the failing case.

False positives are attacks: a response a policy could learn to write that must earn nothing
(rounding stretched to a different value, a different unit, a second committed answer).
False negatives are right answers that must earn full correctness (digits of other scripts,
interval notation beside inequalities, ``\\pm``, converted units, a decimal comma).
Each goes through the whole check the environment runs: extraction, hedging, equivalence.
"""

import pytest
from cpu_time import cpu_seconds
from math_scoring import scores

from envhub.envs.math import pool
from envhub.envs.math.answers import is_equivalent
from envhub.envs.math.extract import extract_answer, format_score
from envhub.envs.math.latex import plain_digits


@pytest.fixture(scope="module", autouse=True)
def _stop_workers():
    yield
    pool.shutdown()


# ---------------------------------------------------------------- false positives: rounding


def _read(text: str) -> None:
    """What the environment does with every response: find the answer, score its format."""
    extract_answer(text)
    format_score(text, "boxed")


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        (r"\sqrt{2}", "1.42"),  # 1.4142 is within one unit of 1.42, but rounds to 1.41
        (r"\sqrt{2}", "1.5"),  # within one unit of the last digit: was credited
        (r"\pi", "3.2"),
        (r"\sqrt{2}", "1.0"),
        (r"\frac{\sqrt{2}}{100}", r"1.5 \times 10^{-7}"),  # an absolute 0.1 was 10^6 too wide
    ],
)
def test_an_exact_answer_must_round_to_a_decimal_gold_at_its_own_precision(pred, gold):
    assert not scores(rf"\boxed{{{pred}}}", gold)


@pytest.mark.parametrize(
    ("pred", "gold", "tolerance"),
    [
        (r"\pi", "3", 0.2),  # an exact answer is never credited against an exact gold
        (r"\sqrt{2}", "1", 0.5),
        (r"\sqrt{10}", r"\pi", 0.1),
        (r"\frac{22}{7}", r"\pi", 0.01),
        (r"(\pi, 1)", "(3, 1)", 0.2),
    ],
)
def test_a_task_tolerance_never_makes_two_exact_values_equal(pred, gold, tolerance):
    assert not scores(rf"\boxed{{{pred}}}", gold, tolerance)


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("1.414214", r"\sqrt{2}"),
        ("(1.414214, 1)", r"(\sqrt{2}, 1)"),  # inside a tuple math-verify rounds to 6 digits
        (r"1.414214, -1.414214", r"\sqrt{2}, -\sqrt{2}"),
        ("0.333333", r"\frac{1}{3}"),
        ("(0.333333, 2)", r"(\frac{1}{3}, 2)"),
        # notation only math-verify reads: it rounds a decimal to 6 places unless told
        ("x_1 = 1.414214", r"\sqrt{2}"),
        (r"\approx 1.414214", r"\sqrt{2}"),
        ("1.414214", r"x_1 = \sqrt{2}"),
        ("(1.414214; 1)", r"(\sqrt{2}; 1)"),
        ("0.333333", r"\binom{1}{1}/3"),
    ],
)
def test_an_exact_gold_never_accepts_an_approximation(pred, gold):
    assert not scores(rf"\boxed{{{pred}}}", gold)


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("x_1 = 0.5", r"x_1 = \frac{1}{2}"),
        ("(0.5; 1)", r"(\frac12; 1)"),
        ("x_1 = 1.4142135623730951", r"x_1 = \sqrt{2}"),  # a double printed in full
    ],
)
def test_an_exact_decimal_still_passes_where_math_verify_reads_it(pred, gold):
    assert scores(rf"\boxed{{{pred}}}", gold)


@pytest.mark.parametrize(
    ("pred", "gold", "tolerance"),
    [
        (r"\sqrt{2}", "1.41", None),  # the gold is rounded; the exact answer rounds to it
        (r"\sqrt{2}", "1.4", None),
        (r"\pi", "3.1", None),
        (r"\sqrt{17}", "4.1231056", None),
        (r"-\sqrt{2}", "-1.41", None),
        (r"\frac{\sqrt{2}}{10^{7}}", r"1.4 \times 10^{-7}", None),
        ("3.14159", r"\pi", 1e-5),  # a decimal prediction within the task's tolerance
        ("3.14", "3.1416", 0.01),
        ("(0.33, 2)", r"(\frac{1}{3}, 2)", 0.01),
    ],
)
def test_rounding_that_the_rules_allow_still_passes(pred, gold, tolerance):
    assert scores(rf"\boxed{{{pred}}}", gold, tolerance)


def test_the_environment_applies_the_task_tolerance_only_to_a_written_decimal():
    import envhub
    from envhub.types import Message, Task

    env = envhub.make("math")
    task = Task(task_id="t", prompt="?", answer="3", metadata={"tolerance": 0.2})
    for response, correct in ((r"\boxed{\pi}", 0.0), (r"\boxed{3.1}", 1.0), (r"\boxed{3}", 1.0)):
        components, _ = env.score(task, Message(role="assistant", content=response))
        assert components["correctness"] == correct, response


# ---------------------------------------------------------------- false positives: units


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("6 m", "6 cm"),
        ("6 km", "6 cm"),
        (r"6\text{ km}", r"6\text{ cm}"),
        (r"6 \mathrm{mm}", "6 cm"),
        ("6 kg", "6 g"),
        ("6 kg", "6 m"),  # another dimension altogether
        ("6 hours", "6 minutes"),
        ("6 years", "6 months"),
        (r"5 \text{ cm}^2", r"5 \text{ m}^2"),
        (r"5 \text{ cm}^2", r"5 \text{ cm}"),  # an area is not a length
        ("60 km/h", "60 mph"),
        ("6 meters tall", "6 cm"),
        ("200 cm", "200 m"),
    ],
)
def test_a_different_unit_is_a_different_answer(pred, gold):
    assert not scores(rf"The length is \boxed{{{pred}}}.", gold)
    assert not scores(f"#### {pred}", gold)


# ---------------------------------------------------------------- false positives: hedges


@pytest.mark.parametrize("gold", ["5", "7"])
@pytest.mark.parametrize(
    "text",
    [
        "The answer is 5. Let me double-check the second step. Final answer: 7",
        "The answer is 5.\nHmm, I dropped a term.\n#### 7",
        r"The answer is 5. On reflection the total is \boxed{7}.",
        "Answer: 5\n\nWait, recompute.\n\\boxed{7}",
        r"So the answer is $5$. Recounting, $\boxed{7}$.",
        "#### 7\nso the answer is 5.",
        "The answer is ٥. Final answer: 7",  # the conflict survives another script
        "The answer is 5 apples. Final answer: 7 apples",
        r"The answer is Friday. \boxed{Monday}",
    ],
)
def test_two_conflicting_committed_answers_are_a_hedge(text, gold):
    found = extract_answer(text)
    assert found.hedged, found
    assert not scores(text, gold)
    assert format_score(text, "hash") == format_score(text, "boxed") == 0.0


@pytest.mark.parametrize("gold", ["5", "7"])
@pytest.mark.parametrize(
    "text",
    [
        "#### 5\n\nActually, it's 7.",
        r"\boxed{5}. Wait, no: 7.",
        "The answer is 5.\n\nHmm, actually 7.",
        "#### 5\nThe answer could also be 7.",
        r"\boxed{5}. Oops, I mean $7$.",
    ],
)
def test_a_final_answer_taken_back_right_after_is_a_hedge(text, gold):
    assert extract_answer(text).hedged
    assert not scores(text, gold)


@pytest.mark.parametrize(
    "text",
    [
        "#### 12\nWait, let me double check: 3*4 = 12. Yes.",
        r"\boxed{12}. Actually, 3 \cdot 4 is indeed 12.",
        "#### 12\nIt could be checked another way, and it is 12 again.",
    ],
)
def test_a_check_after_the_final_answer_is_not_a_retraction(text):
    assert scores(text, "12")


@pytest.mark.parametrize(
    ("text", "gold"),
    [
        ("If the answer is 5, the sum would be odd; it is not. Final answer: 7", "7"),
        ("Suppose the answer is 5. Then 5 + 2 = 8, too big. So \\boxed{7}", "7"),
        ("The answer is the sum of both counts. 3 + 4 = 7.\n#### 7", "7"),
        ("So the answer is 6*7 = 42.\n#### 42", "42"),
        (r"The answer is $\boxed{7}$.", "7"),
        ("The answer is 7. Indeed, the answer is 7.0.\n#### 7", "7"),
        ("Final Answer: The final answer is $8$. I hope it is correct.", "8"),
        ("The answer is not obvious at first. Final answer: 7", "7"),
        (
            r"The answer is $x-2y+z-1=0$. Final Answer: The final answer is $x-2y+z-1=0$.",
            "x-2y+z-1=0",
        ),
        ("The answer is 2 m. In centimetres: \\boxed{200 cm}", "2 m"),
        ("So the answer is reasonable.\n#### 7", "7"),
        ("We must show the answer is 5 or less. It is 4. #### 4", "4"),
    ],
)
def test_one_answer_stated_in_several_places_is_not_a_hedge(text, gold):
    assert not extract_answer(text).hedged
    assert scores(text, gold)


def test_many_conflicting_statements_stay_bounded():
    texts = [
        "".join(f"The answer is {i}. " for i in range(5000)) + r"\boxed{7}",
        "the answer is 1. " * 6000 + "#### 7",
        "the answer is " * 50000 + r"\boxed{7}",
    ]
    for text in texts:
        found = extract_answer(text)
        assert cpu_seconds(_read, text) < 2.0
        assert found.hedged or not scores(text, "7")


# ---------------------------------------------------------------- false negatives: digits


@pytest.mark.parametrize(
    "text",
    [
        r"\boxed{１２３}",  # fullwidth
        r"\boxed{١٢٣}",  # Arabic-Indic
        r"\boxed{۱۲۳}",  # Extended Arabic-Indic (Persian, Urdu)
        "\\boxed{1\u200d23}",  # zero-width joiner
        "\\boxed{1\u200b2\u200b3}",  # zero-width space
        "#### １２３",
        "The answer is ١٢٣.",
        "so in all 1\u200b23",  # the last-number rule reads it whole, not as 23
        "#### \u2066123\u2069",  # direction isolates
        r"\boxed{１２３ \text{ cm}}",
    ],
)
def test_digits_of_any_script_and_invisible_characters_are_read(text):
    assert scores(text, "123")


@pytest.mark.parametrize(
    ("pred", "gold"),
    [("١٢٫٥", "12.5"), ("１２．５", "12.5"), ("－３", "-3"), ("٣١", "31"), ("x²", "x^2")],
)
def test_other_scripts_keep_their_value(pred, gold):
    assert is_equivalent(pred, gold)
    assert not is_equivalent(pred, "13")


def test_digits_of_other_scripts_still_hedge():
    assert extract_answer("it is ٣١ or ٣٢").hedged or not scores("it is ٣١ or ٣٢", "32")
    assert extract_answer("#### ٣٢ or ma\u200bybe ٣١").hedged


@pytest.mark.parametrize(
    "text",
    ["١" * 100_000, "\u200b" * 100_000, "".join(map(chr, range(0x4E00, 0x4E00 + 100_000)))],
    ids=["arabic-digits", "zero-width", "distinct-characters"],
)
def test_reading_other_scripts_stays_linear(text):
    assert cpu_seconds(_read, text) < 1.0


def test_superscripts_are_powers_not_digits():
    assert plain_digits("x² + ١") == "x² + 1"
    assert is_equivalent("x²", "x^2")
    assert not is_equivalent("x²", "x2")


# ---------------------------------------------------------------- false negatives: notation


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("(2, 5]", r"2 < x \le 5"),
        (r"2 < x \le 5", "(2, 5]"),
        (r"x \in (2, 5]", r"2 < x \le 5"),
        (r"5 \ge x > 2", "(2, 5]"),
        (r"x > 2 \text{ and } x \le 5", "(2, 5]"),
        (r"x > 2 \land x \le 5", "(2, 5]"),
        ("(2, 5]", r"\{x \mid 2 < x \le 5\}"),
        ("[3, \\infty)", r"x \ge 3"),
        ("(-\\infty, 3)", r"3 > x"),
    ],
)
def test_interval_notation_matches_the_inequality(pred, gold):
    assert scores(rf"\boxed{{{pred}}}", gold)


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("(2, 5)", r"2 < x \le 5"),
        ("[2, 5]", r"2 < x \le 5"),
        (r"x > 2 \text{ and } x > 5", "(2, 5]"),
        (r"x > 2 \text{ and } y \le 5", "(2, 5]"),
        (r"\{y \mid 2 < x \le 5\}", "(2, 5]"),
    ],
)
def test_a_different_interval_stays_different(pred, gold):
    assert not scores(rf"\boxed{{{pred}}}", gold)


@pytest.mark.parametrize(
    "pred",
    [
        r"x = 1 \pm \sqrt{2}",
        r"1 \pm \sqrt 2",
        r"x = \frac{2 \pm \sqrt{8}}{2}",
        "1 ± \\sqrt{2}",
        r"1 \mp \sqrt{2}",
    ],
)
def test_plus_minus_is_the_two_roots(pred):
    assert scores(rf"\boxed{{{pred}}}", r"1+\sqrt{2}, 1-\sqrt{2}")
    assert not scores(rf"\boxed{{{pred}}}", r"1+\sqrt{2}")  # one root is not both


def test_plus_minus_binds_as_a_sign():
    assert is_equivalent(r"1 \pm 2 + 3", "6, 2")


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ("200 cm", "2 m"),
        (r"200\text{ cm}", r"2\text{ m}"),
        ("2000 g", "2 kg"),
        ("90 min", "1.5 hours"),
        ("2 years", "24 months"),
        ("60 mph", "60 miles per hour"),
        ("500 cm^2", "0.05 m^2"),
        ("1 L", "1000 mL"),
        ("1 L", r"1000 \text{ cm}^3"),
        ("12 inches", "1 foot"),
        ("6", "6 cm"),  # a bare number is in the gold's unit
        ("6 cm", "6"),
        (r"\frac{h}{2}", r"\frac{1}{2} h"),  # a one-letter unit may be a variable
    ],
)
def test_a_converted_unit_is_the_same_answer(pred, gold):
    assert scores(rf"\boxed{{{pred}}}", gold)


@pytest.mark.parametrize(
    ("pred", "gold", "equal"),
    [
        ("3,5", "3.5", True),  # one comma, not before three digits: a decimal comma
        ("3{,}5", "3.5", True),
        ("-3,5", "-3.5", True),
        ("0,25", r"\frac14", True),
        (r"12,5\%", r"12.5\%", True),
        ("x = 3,5", "3.5", True),
        (r"3,5 \text{ cm}", "3.5 cm", True),
        ("0,500", "0.5", True),  # 0,500 cannot be thousands
        ("1234,567", "1234.567", True),  # nor can 1234,567
        ("1,000", "1000", True),  # three digits after the comma: thousands
        ("1,000", "1", False),
        ("3,500", "3.5", False),
        ("3, 5", "3.5", False),  # a space after the comma: a list
        ("3,5", "3, 5", True),  # facing a list it is the list
        ("3,5", "35", False),
        ("1.000,5", "1000.5", True),  # dots between thousands, then a decimal comma
        ("1.000,500", "1000.5", False),  # 1.000 and 500 may be a list: not read as one number
        ("3,14", r"\pi", False),  # a decimal is its exact value
    ],
)
def test_the_decimal_comma_rule(pred, gold, equal):
    assert scores(rf"\boxed{{{pred}}}", gold) is equal
