"""No constant answer scores, and no hedge does, on any catalog entry (issue 33, items 2-3).

Two sweeps over every catalog entry (a sample on every run, the rest marked slow like
``test_reasoning_gym.py``'s sweep):

* constants (``nan``, ``0``, ``1``, ``-1``, ``inf``, empty, ``true``, ``yes``, ...), bare and in
  each entry's answer formats, earn no correctness on a task whose gold they are not;
* hedges (``gold or wrong``, ``wrong, gold``, ``maybe gold``, the two on separate lines, and
  the gold inside a ``<think>`` that never closes) earn no correctness anywhere.
"""

from __future__ import annotations

import time

import pytest

import envhub
from envhub.envs.reasoning_gym import catalog, scoring
from envhub.types import Status

IDS = envhub.catalog().ids()
ALWAYS = {
    "gsm8k-v1",
    "math-v1",
    "search-v1",
    *(f"rg-{n}-v1" for n in ("complex_arithmetic", "coin_flip", "time_intervals")),
    *(f"rg-{n}-v1" for n in ("basic_arithmetic", "manipulate_matrix", "rectangle_count")),
    *(f"rg-{n}-v1" for n in ("gsm_symbolic", "fraction_simplification", "sokoban", "tsumego")),
    *(f"rg-{n}-v1" for n in ("game_of_life", "mini_sudoku", "kakurasu", "survo")),
}
"""Entries swept on every run: each paid a constant or a hedge before issue 33, or after it
(the red team's B4, B5 and B13: a hedge inside one block, a constant of the gold's shape; then
``GOLD / four``, the other candidate in words, on ``gsm_symbolic``, ``kakurasu``, ``survo``)."""
CONSTANTS = [
    "nan", "NaN", "0", "1", "-1", "inf", "-inf", "", " ", "true", "True", "false", "yes",
    "no", "None", "null", "[]", "{}", "0.0", "00", "-0", "2", "3", "10", "0.5", "1e309",
    "nan+nanj", "0/0", "1/2", "A", "a", "x",
]  # fmt: skip
"""More than the guard's own set (:data:`scoring.CONSTANTS`): ``3``, ``NaN``, ``nan+nanj``."""
TASKS = 3
VALID = (Status.OK, Status.INVALID_ACTION)
SINGLE_TURN_FREE_TEXT = {i for i in IDS if i.startswith(catalog.PREFIX)} | {
    "gsm8k-v1",
    "math-v1",
    "search-v1",
}
"""Entries whose answer is free text in one message (the hedging rule's domain)."""


def _sweep(ids) -> list:
    return [i if i in ALWAYS else pytest.param(i, marks=pytest.mark.slow) for i in sorted(ids)]


def _env(env_id: str):
    spec = envhub.catalog().spec(env_id)
    if env_id.startswith(catalog.PREFIX):
        return envhub.make(env_id, dataset={**spec.dataset.model_dump(), "size": TASKS + 1})
    return envhub.make(env_id)


def _is_gold(constant: str, gold: str | None) -> bool:
    return gold is not None and scoring._is_gold(constant, gold)


def _forms(text: str) -> list[str]:
    return [text, f"<answer>{text}</answer>", f"#### {text}", rf"\boxed{{{text}}}"]


def _correctness(env, task, message: str) -> float:
    env.reset(task_id=task.task_id)
    result = env.step(message)
    assert result.info.status in VALID, (message, result.info)
    return result.info.components.get("correctness", 0.0)


@pytest.mark.parametrize("env_id", _sweep(SINGLE_TURN_FREE_TEXT))
def test_no_constant_answer_scores(env_id):
    env = _env(env_id)
    paid = []
    for task in env.tasks()[:TASKS]:
        for constant in CONSTANTS:
            if _is_gold(constant, task.answer):
                continue
            for message in _forms(constant):
                if _correctness(env, task, message) > 0:
                    paid.append((task.answer, message))
    env.close()
    assert paid == []


MATH_FORMAT = {"gsm8k-v1", "math-v1"}
"""Entries read by the math checker (``####``, ``\\boxed``, "the answer is", the last
number): their hedges are written in those forms; the others answer in ``<answer>`` tags."""


SEPARATORS = [" / ", "/", " // ", "|", " vs ", " else ", " unless ", "\t", " ", " ∨ ", " ou "]
SEPARATORS += [" oder "]
"""What a hedge inside one answer puts between the gold and another candidate, in either order: scorers that
read a prefix (the first number, the first fraction, moves up to the solved state) paid
``28080 / 44``, ``5 days 00:34:28`` and ``$\\dfrac{79}{173}$ oder 138/583`` in full."""


OTHER_NUMERALS = ["LXXIII", "七十三", "/ setenta y tres", "семьдесят три", "yetmiş üç", "Ⅻ"]
"""Another candidate beside the gold in Roman numerals, CJK numerals, or words of another
language: scorers that read the first number (``gsm_symbolic``) or a prefix of rows
(``kakurasu``, ``survo``) paid ``28080 LXXIII`` and ``28080 七十三`` in full, and so did the math
checker on ``gsm8k`` and ``math`` (``#### 28080 LXXIII``). Tried beside a gold with digits (a move
string has no numbers among its candidates)."""


def _hedges(env_id: str, gold: str, wrong: str) -> list[str]:
    inside = [f"{gold} or {wrong}", f"{wrong} or {gold}", f"{wrong}, {gold}", f"maybe {gold}"]
    inside += [f"{gold}{sep}{wrong}" for sep in SEPARATORS] + [f"[{gold}, {wrong}]"]
    inside += [f"{wrong}{sep}{gold}" for sep in SEPARATORS]
    inside += [f"{gold} / four", f"{gold}\nseven", f"{gold} then {wrong}"]  # in words, in turn
    if any(c.isdigit() for c in gold):  # numbers of other forms
        inside += [f"{gold} {other}" for other in OTHER_NUMERALS]
    if env_id in MATH_FORMAT:
        tagged = [f"The result: {h}" for h in inside] + [f"#### {h}" for h in inside]
    else:
        tagged = [f"<answer>{h}</answer>" for h in inside] + [
            f"<answer>{wrong}\n{gold}</answer>",
            f"<think>let me see <answer>{gold}</answer>",
        ]
    return [
        *tagged,
        f"#### {gold}\n{wrong} is also possible.",
        rf"\boxed{{{gold}}}. Another valid answer would be \boxed{{{wrong}}}.",
        rf"The answer is {gold}. {wrong} would also be acceptable.",
    ]


@pytest.mark.parametrize("env_id", _sweep(SINGLE_TURN_FREE_TEXT))
def test_no_hedge_scores(env_id):
    env = _env(env_id)
    tasks = env.tasks()[: TASKS + 1]
    golds = [str(t.answer) for t in tasks]
    paid = []
    for task in tasks[:TASKS]:
        gold = str(task.answer)
        wrong = next((g for g in golds if not scoring._is_gold(g, gold)), gold + "9")
        for message in _hedges(env_id, gold, wrong):
            if _correctness(env, task, message) > 0:
                paid.append(message)
    env.close()
    assert paid == []


@pytest.mark.parametrize(
    ("env_id", "form"),
    [
        ("rg-fraction_simplification-v1", lambda g: g.strip("$").replace("dfrac", "frac")),
        ("rg-gsm_symbolic-v1", lambda g: f"{g}.0"),
        ("rg-time_intervals-v1", lambda g: g.upper()),
    ],
)
def test_the_gold_in_another_form_beside_another_candidate_earns_nothing(env_id, form):
    """A scorer that reads the first fraction or number paid ``\\frac{79}{173} 138/583``; the
    gold's text is not in it, but one of its pieces alone earns full marks."""
    env = _env(env_id)
    tasks = env.tasks()[: TASKS + 1]
    for task, other in zip(tasks, tasks[1:], strict=False):
        gold, wrong = str(task.answer), str(other.answer)
        assert _correctness(env, task, f"<answer>{form(gold)}</answer>") == 1.0, form(gold)
        for sep in (" ", " / ", "\t"):
            hedge = f"<answer>{form(gold)}{sep}{wrong}</answer>"
            assert _correctness(env, task, hedge) == 0.0, hedge
    env.close()


def _step(env_id: str, message, pick=lambda t: True):
    """Play ``message`` (text, or a function of the gold) on the first task ``pick`` accepts."""
    env = _env(env_id)
    task = next(t for t in env.tasks() if pick(t))
    env.reset(task_id=task.task_id)
    result = env.step(message(task.answer) if callable(message) else message)
    env.close()
    return result.info


@pytest.mark.parametrize(
    ("env_id", "answer", "why"),
    [
        ("rg-complex_arithmetic-v1", "nan", "a non-finite value (nan, inf) that the gold is not"),
        (
            "rg-complex_arithmetic-v1",
            "nan+nanj",
            "a non-finite value (nan, inf) that the gold is not",
        ),
        ("rg-coin_flip-v1", "0", "the constant '0' is not the gold"),
        ("rg-time_intervals-v1", "0", "the constant '0' is not the gold"),
    ],
)
def test_the_constants_of_the_issue_earn_nothing_and_say_why(env_id, answer, why):
    info = _step(env_id, f"<answer>{answer}</answer>")
    assert (info.status, info.components["correctness"], info.why) == (Status.OK, 0.0, why)


def test_a_prefix_of_the_gold_and_a_near_value_earn_nothing():
    prefix = _step(
        "rg-coin_flip-v1", lambda g: f"<answer>{g[:3]}</answer>", lambda t: len(t.answer) > 4
    )
    assert prefix.components["correctness"] == 0.0
    near = _step(
        "rg-time_intervals-v1",
        lambda g: f"<answer>{int(g.split()[0]) + 1} days</answer>",
        lambda t: t.answer.endswith(" days"),
    )
    assert near.components["correctness"] == 0.0
    assert near.why.startswith("scored 0.9")


def test_an_answer_inside_an_unclosed_think_is_not_read():
    info = _step("rg-basic_arithmetic-v1", "<think>hmm <answer>3</answer>")
    assert (info.components, info.extracted) == ({"correctness": 0.0, "format": 0.0}, None)


EXPLOSIVE = [
    "9**9**9", "9^9^9", "(9**9999)**9999", "2**99999", "3**(9999*9999*99)",
    "(10**10)**(10**10)", "2**2**2**2**2", "10**10**10", "Integer(10)**99999999",
    "factorial(10**6)", "factorial(99999)", "2<<99999", "9" * 3990 + "**9999",
    "1e999999", "1E+99999", "1e9999999", "1e9_999_999", "١e٩٩٩٩٩٩", "１e999999",
]  # fmt: skip
"""Values too large to compute that seven to nine characters write: powers whose exponent is
computed (``3**(9999*9999*99)`` held ``simple_integration`` and ``countdown`` for minutes, in
C), towers, factorials, and e-notation that ``Fraction``, ``Decimal`` and sympy expand into
that many digits (``1e999999``, in any script's digits)."""
TOO_LARGE = ("a power too large", "a number too large", "a call on a number", "a number of")


@pytest.mark.parametrize(
    "env_id", ["rg-simple_integration-v1", "rg-countdown-v1", "rg-coin_flip-v1", "rg-tsumego-v1"]
)
def test_a_value_too_large_to_compute_is_refused_before_any_scorer(env_id):
    env = _env(env_id)
    task = env.tasks()[0]
    for attack in EXPLOSIVE:
        started = time.monotonic()
        env.reset(task_id=task.task_id)
        info = env.step(f"<answer>{attack}</answer>").info
        assert time.monotonic() - started < 5.0, attack[:40]
        assert (info.status, info.components["correctness"]) == (Status.OK, 0.0), attack[:40]
        assert info.why.startswith(TOO_LARGE), (attack[:40], info.why)
    env.close()


@pytest.mark.parametrize(
    "answer",
    [
        "x**5", "3/4", "-5*X**9 - 2*X**6/3 + 4*X**3 + C", "(25 + 3) * 4 - 7", "2**-5",
        "x**(1/2)", "sqrt(2)*exp(-x)/3", "exp(x**5)", "2**(x**2)", "9**9999", "x**10000",
        "(x**100)**100", "factorial(5)", "1e-5", "6.02e23", "1e10000", "E9", "9e99",
        "a1e23456", "[[0,1],[1,0]]", "9" * 4000,
    ],
)  # fmt: skip
def test_the_size_guard_keeps_plain_answers(answer):
    assert scoring.explosive(answer) is None


def test_a_number_longer_than_python_reads_is_refused_where_a_long_gold_allows_it():
    """sympy reads a 5,000-digit integer that Python's ``int`` refuses (over 4,300 digits);
    only a task whose gold is over 1,000 characters lets an answer that long be scored."""
    assert scoring.explosive("7" * 5000 + "**9999").startswith("a number of more than 4300")


def test_a_coordinate_inside_a_longer_answer_or_any_coordinate_earns_nothing():
    """tsumego's scorer upper-cases the answer and pays ``len(gold)/len(answer)`` for the gold
    inside it (``9e99`` earned 0.5 on ``E9``, ``1e999999`` 0.25) and 0.05 for any coordinate."""
    env = _env("rg-tsumego-v1")
    for task in env.tasks()[:TASKS]:
        gold = task.answer
        other = "A1" if gold != "A1" else "B2"
        attacks = [f"9{gold.lower()}9", f"9{gold}99", f"({gold})", f"{gold.lower()}{gold}", other]
        for attack in attacks:
            assert _correctness(env, task, f"<answer>{attack}</answer>") == 0.0, (gold, attack)
        for right in (gold, gold.lower(), f" {gold} "):
            assert _correctness(env, task, f"<answer>{right}</answer>") == 1.0, (gold, right)
    env.close()


SHAPE_TASKS = 6
"""Tasks made per entry for the shape sweep: the first :data:`TASKS` are played, the golds of
the others are the answers of the task's own kind."""
SOLVES_OTHERS = {
    "n_queens": "a board that solves another task solves this one when its given queens agree",
    "sokoban": "one move string can solve two small puzzles",
    "tower_of_hanoi": "another task's moves can solve this one in more moves (paid optimal/used)",
    "quantum_lock": "a press sequence that reaches the target solves it (0.5 when not shortest)",
}
"""Generators whose scorer plays a proposed solution: another task's answer, or one of its
shapes, may truly solve this task (in full or in more moves), so the sweep asks no more of them
than of their own gold's shapes; their non-solutions are tested on their own below."""


@pytest.mark.parametrize("env_id", _sweep({i for i in IDS if i.startswith(catalog.PREFIX)}))
def test_no_answer_shaped_like_a_gold_earns_partial_credit(env_id):
    """The gold's shape filled with zeros, ones or ``a`` (an all-zero grid earned 0.955 on
    ``game_of_life``), and other tasks' golds (a fixed grid earned 0.25 on ``mini_sudoku``), earn
    no partial credit: the scorer's partial credit is paid above what they earn, or not at all."""
    spec = envhub.catalog().spec(env_id)
    env = envhub.make(env_id, dataset={**spec.dataset.model_dump(), "size": SHAPE_TASKS})
    tasks = env.tasks()[:SHAPE_TASKS]
    others = [str(t.answer) for t in tasks[TASKS:]]
    foreign = [*others, *(c for g in others for c in scoring.shaped_constants(g))]
    if _generator(env_id) in SOLVES_OTHERS:
        foreign = []
    paid = []
    for task in tasks[:TASKS]:
        own = scoring.shaped_constants(str(task.answer))  # may keep what the scorer reads
        for answer in dict.fromkeys([*own, *foreign]):
            if scoring._is_gold(answer, str(task.answer)):
                continue
            value = _correctness(env, task, f"<answer>{answer}</answer>")
            if value > 0 and not (value == 1.0 and answer in own):
                paid.append((answer[:40], value))
    env.close()
    assert paid == []


def test_a_legal_move_that_solves_nothing_earns_nothing_on_tower_of_hanoi():
    """tower_of_hanoi pays 0.05 for any legal moves that do not solve the puzzle."""
    env = _env("rg-tower_of_hanoi-v1")
    for task in env.tasks()[:TASKS]:
        first = task.answer.strip().splitlines()[0]
        assert _correctness(env, task, f"<answer>{first}</answer>") == 0.0, first
        assert _correctness(env, task, f"<answer>{task.answer}</answer>") == 1.0
    env.close()


def _generator(env_id: str) -> str:
    return env_id.removeprefix(catalog.PREFIX).removesuffix("-v1")


def test_words_copied_or_guessed_in_place_earn_nothing_on_letter_jumble():
    """letter_jumble pays per word in its place: the scrambled words copied back earned every
    word that scrambling left as it was (``for``, ``a``), and ``all`` 0.125 on a gold that
    starts with it."""
    env = _env("rg-letter_jumble-v1")
    for task in env.tasks()[:TASKS]:
        scrambled = task.prompt.rsplit("unscramble these words:", 1)[1].strip()
        first = task.answer.split()[0]
        for attack in (scrambled, first):
            assert _correctness(env, task, f"<answer>{attack}</answer>") == 0.0, attack
        assert _correctness(env, task, f"<answer>{task.answer}</answer>") == 1.0
    env.close()


@pytest.mark.parametrize(
    ("env_id", "pick"),
    [
        ("rg-advanced_geometry-v1", lambda t: t.answer.startswith("(")),
        ("rg-gsm_symbolic-v1", lambda t: True),
    ],
)
def test_a_list_of_more_candidates_than_are_checked_earns_nothing(env_id, pick):
    """Each run of a list was scored alone up to 16 runs, and a longer list was not checked:
    the gold in another spacing and 20 more numbers earned full marks on
    ``advanced_geometry``."""
    others = ", ".join(str(n) for n in range(100, 120))
    for form in (lambda g: f"{g.replace(', ', ' , ')}, {others}", lambda g: f"{g}.0, {others}"):
        info = _step(env_id, lambda g, form=form: f"<answer>{form(g)}</answer>", pick)
        assert info.components["correctness"] == 0.0, info


@pytest.mark.parametrize(
    "answer",
    ["28080", "28080 dollars", "x = 28080", "28080 cm", "28080 mm", "28080 I think", "$28080"],
)
def test_a_label_or_unit_beside_a_number_gold_is_no_other_candidate(answer):
    """Capitals ``I``, units ``cm`` and ``mm`` are no Roman numerals; a label is no number."""
    info = _step("rg-gsm_symbolic-v1", lambda g: f"<answer>{answer.replace('28080', g)}</answer>")
    assert info.components["correctness"] == 1.0, (answer, info.why)


@pytest.mark.parametrize(
    "env_id", ["rg-gsm_symbolic-v1", "rg-chain_sum-v1", "rg-products-v1", "rg-leg_counting-v1"]
)
def test_a_minus_before_a_number_gold_earns_nothing(env_id):
    """gsm_symbolic reads its first number with ``\\b-?\\d+``, which skips a sign that starts
    the text: ``-28080`` and ``not 28080`` earned full marks for 28080 (issue 33, item 1)."""
    env = _env(env_id)
    for task in env.tasks()[:TASKS]:
        gold = str(task.answer)
        for sign in ("-", "−", "- ", "minus ", "negative ", "-(", "not ", "~", "¬"):
            attack = f"{sign}{gold}" + (")" if sign.endswith("(") else "")
            assert _correctness(env, task, f"<answer>{attack}</answer>") == 0.0, attack
        assert _correctness(env, task, f"<answer>{gold}</answer>") == 1.0
    env.close()


def test_text_glued_after_a_fraction_or_the_question_copied_earns_nothing():
    """fraction_simplification reads a leading ``\\frac{a}{b}`` and ignores the rest (another
    fraction, a power, a digit glued on earned full marks), and pays 0.1 for the question's own
    numerator or denominator (its fraction copied back)."""
    env = _env("rg-fraction_simplification-v1")
    for task in env.tasks()[:TASKS]:
        rg = task.metadata["rg"]
        a, b = rg["simplified_numerator"], rg["simplified_denominator"]
        n, d = rg["numerator"], rg["denominator"]
        for glued in (r"\frac{1}{2}", "^2", "9", "+1", " x"):
            attack = rf"\frac{{{a}}}{{{b}}}{glued}"
            assert _correctness(env, task, f"<answer>{attack}</answer>") == 0.0, attack
        for copied in (f"{n}/{d}", rf"\frac{{{n}}}{{{d}}}", f"{n}/1", f"1/{d}"):
            assert _correctness(env, task, f"<answer>{copied}</answer>") == 0.0, copied
        for right in (
            f"{a}/{b}",
            f" {a} / {b} ",
            rf"$\frac{{{a}}}{{{b}}}$",
            rf"\dfrac{{ {a} }}{{{b}}}",
        ):
            assert _correctness(env, task, f"<answer>{right}</answer>") == 1.0, right
    env.close()


@pytest.mark.parametrize("env_id", ["rg-gsm_symbolic-v1", "rg-kakurasu-v1", "rg-survo-v1"])
def test_the_gold_glued_to_a_sign_or_letter_earns_nothing(env_id):
    """Scorers that read numbers out of the text ignore what touches them: ``√28080``,
    ``28080!``, ``28080‰`` (gsm_symbolic) and a grid's last cell with ``!`` or ``j``
    (kakurasu, survo) earned full marks (issue 33, item 1)."""
    env = _env(env_id)
    for task in env.tasks()[:TASKS]:
        gold = str(task.answer)
        for attack in (f"√{gold}", f"{gold}!", f"{gold}‰", f"{gold}°", f"{gold}j", f"{gold}?"):
            assert _correctness(env, task, f"<answer>{attack}</answer>") == 0.0, attack
        framed = (f"**{gold}**", f"({gold})", f"{gold}.", f'"{gold}"')  # what gsm_symbolic reads
        for right in framed if env_id == "rg-gsm_symbolic-v1" else (gold,):
            assert _correctness(env, task, f"<answer>{right}</answer>") == 1.0, right
    env.close()
