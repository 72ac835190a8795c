"""Reading a model's answer and scoring it with reasoning-gym's own ``score_answer``.

The answer format is the one reasoning-gym's prompts ask for: ``<answer>...</answer>``.
``<think>`` blocks are dropped first (one never closed runs to the end: an ``<answer>``
inside it is not read); the answer is the text of the closed ``<answer>`` blocks
(found in linear time, :mod:`envhub.tags`). Then:

* no ``<answer>`` block: no answer, correctness 0;
* blocks that disagree (after trimming blanks) are a **hedge**: correctness 0, whatever the
  scorer would say of any one of them; the same answer repeated is not a hedge;
* an answer over :func:`answer_limit` characters is not scored (0): no generator's answer is
  that long, and some scorers are slow on huge text;
* a hedge inside one block earns 0: a word or sign offering alternatives that the gold lacks
  ("A or B", "maybe A", "A | B", "A vs B"), the gold with more of its kind beside it
  ("28080 / 44"), or a list of candidates of which one alone earns as much
  (:func:`_candidates`);
* a value too large to compute earns 0 before any scorer sees it (:func:`explosive`);
* the gold's text is a whole token: with a minus or ``not`` before it (a scorer that reads
  digits drops the sign) or glued to a letter, digit or sign (``√28080``, ``28080!``) it earns
  0, and so does text beyond the one answer that a scorer reading only the start of the answer
  reads (:data:`WHOLE_ANSWER`);
* a constant answer that is not the gold (``0``, ``nan``, ``true``: :data:`CONSTANTS`) earns
  0, and so does a partial credit no higher than what an answer made without solving earns on
  the task (:func:`constant_floor`: the constants, the gold's shape filled with one value,
  other tasks' golds; reasoning-gym's scorers pay a small credit for any answer, and some pay
  a constant a lot: ``nan`` solved every ``complex_arithmetic`` task, an all-zero grid earned
  0.955 on ``game_of_life``); generators whose partial credit such answers earn
  (``catalog.CLOSENESS_CREDIT``) are paid their full marks only;
* otherwise the generator's ``score_answer(answer, entry)`` gives correctness in [0, 1]. A
  scorer that raises on a strange answer scores it 0 (the model's answer, never a machine
  fault); the exception is named in the details.

``format`` is 1 when the message has exactly one non-empty ``<answer>`` block.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from envhub.envs.math.spelled import ROMAN, any_number_words
from envhub.tags import block_text, tag_blocks, without_thinking

from .evaluated import FUNCTIONS

MIN_ANSWER_LIMIT = 4_000
"""Characters of an answer always scored; longer golds allow four times their length."""


@dataclass(frozen=True)
class Reading:
    """What a message answers."""

    answer: str | None
    """The answer (the last block's text), or ``None`` without a closed ``<answer>`` block."""
    blocks: int
    hedged: bool


def read_answer(content: str) -> Reading:
    """The ``<answer>`` of a message, how many blocks it had and whether it hedges."""
    text = without_thinking(content)
    found = [block_text(text, b).strip() for b in tag_blocks(text, "answer") if b.closed]
    if not found:
        return Reading(None, 0, False)
    return Reading(found[-1], len(found), len(set(found)) > 1)


def answer_limit(gold: str | None) -> int:
    """The longest answer scored for a task whose gold is ``gold``."""
    return max(MIN_ANSWER_LIMIT, 4 * len(gold or ""))


def safe_score(
    scorer: Callable[[str | None, dict[str, Any]], Any], answer: str, entry: dict[str, Any]
) -> tuple[float, str | None]:
    """``scorer(answer, entry)`` clamped to [0, 1]; 0 and the error if it raises or is no number."""
    try:
        value = float(scorer(answer, entry))
    except Exception as e:  # noqa: BLE001 (a third-party scorer on the model's text)
        return 0.0, f"score_answer raised {type(e).__name__}: {str(e)[:200]}"
    if math.isnan(value):
        return 0.0, "score_answer returned NaN"
    return min(1.0, max(0.0, value)), None


def correctness(
    scorer: Callable[[str | None, dict[str, Any]], Any],
    reading: Reading,
    entry: dict[str, Any],
    *,
    floor: float = 0.0,
    full_only: bool = False,
    whole: re.Pattern[str] | None = None,
) -> tuple[float, str | None]:
    """Correctness of a reading (the rules in the module docstring) and why it is 0, if so.

    Args:
        scorer: The generator's ``score_answer``.
        reading: The message's answer (:func:`read_answer`).
        entry: The task as reasoning-gym's scorers read it (question, answer, metadata).
        floor: What a constant answer earns on this task (:func:`constant_floor`): a score
            no higher is not paid.
        full_only: Pay the scorer's full marks only (its partial credit is a constant's).
        whole: The form the whole answer must have, for a scorer that reads only its start
            (:data:`WHOLE_ANSWER`).
    """
    if reading.answer is None:
        return 0.0, "no <answer>...</answer> block"
    if reading.hedged:
        return 0.0, f"hedged: {reading.blocks} <answer> blocks that disagree"
    limit = answer_limit(entry.get("answer"))
    if len(reading.answer) > limit:
        return 0.0, f"the answer is {len(reading.answer)} characters, over {limit}"
    gold = str(entry.get("answer") or "")
    refused = (
        _alternatives(reading.answer, gold)
        or _constant(reading.answer, gold)
        or _negated(reading.answer, gold)
        or _not_whole(reading.answer, gold, whole)
        or (None if _normal(reading.answer) == _normal(gold) else explosive(reading.answer))
    )  # the gold's own text costs the scorer what the gold does
    if refused:
        return 0.0, refused
    value, why = safe_score(scorer, reading.answer, entry)
    listed = _candidates(scorer, reading.answer, entry, value) if value > 0 else None
    if listed:
        return 0.0, listed
    if value <= floor and value > 0:
        return 0.0, f"scored {value:.3g}, no more than a constant answer earns here ({floor:.3g})"
    if full_only and value < 1.0:
        return 0.0, f"scored {value:.3g}: this generator's partial credit is not paid"
    return value, why


_ALTERNATIVE = re.compile(
    r"\b(?:or|maybe|perhaps|possibly|probably|either|alternatively|otherwise|not\s+sure"
    r"|else|unless|vs|versus|ou|oder|oppure|eller|или|或者?|还是|または)\b"
    r"|\\(?:vee|lor)\b|[|∨]",
    re.IGNORECASE,
)
"""Words and signs that offer alternatives inside one answer ("A or B", "maybe A", "A vs B",
"A | B", "A ∨ B", "A oder B")."""


def _alternatives(answer: str, gold: str) -> str | None:
    """Why ``answer`` hedges with a word of :data:`_ALTERNATIVE` that the gold lacks, or None."""
    said = {" ".join(w.lower().split()) for w in _ALTERNATIVE.findall(answer)}
    meant = {" ".join(w.lower().split()) for w in _ALTERNATIVE.findall(gold)}
    extra = sorted(said - meant)
    return f"hedged: the answer offers alternatives ({extra[0]!r})" if extra else None


_NEGATION = r"(?:[-−–‒﹣－¬~!]|\b(?:minus|negative|negativ|negativo|moins|menos|meno|not)\b)"
"""A minus sign or word, or a negation, before a number (``-``, ``minus``, ``not``)."""


def _negated(answer: str, gold: str) -> str | None:
    r"""Why ``answer`` is the text of a gold with digits, with a minus or 'not' before it, or None.

    A scorer that reads the first run of digits drops the sign: ``-28080`` and ``not 28080``
    earned full marks for 28080 on ``gsm_symbolic`` (its pattern's ``\b-?`` cannot match a
    sign that starts the text).
    """
    said, meant = " ".join(answer.split()), " ".join(gold.split())
    if not any(c.isdigit() for c in meant):
        return None
    if re.search(_NEGATION + r"\s*\(?\s*" + re.escape(meant), said, re.IGNORECASE) is None:
        return None
    return "a minus or a negation before the gold's number: another value"


WHOLE_ANSWER: dict[str, re.Pattern[str]] = {
    "fraction_simplification": re.compile(
        r"\$?\s*(?:\\d?frac\s*\{\s*\d+\s*\}\s*\{\s*\d+\s*\}|\d+\s*/\s*\d+)\s*\$?",
        re.IGNORECASE,
    ),
}
"""Generators whose scorer reads the start of the answer and ignores the rest, and the form the
whole answer must have: ``fraction_simplification`` reads a leading ``\\frac{a}{b}``, so
``\\frac{79}{173}\\frac{1}{2}`` (another candidate) and ``\\frac{79}{173}^2`` earned full marks."""


def _not_whole(answer: str, gold: str, whole: re.Pattern[str] | None) -> str | None:
    """Why ``answer`` is not of the form ``whole`` that its scorer reads, or None."""
    if whole is None or whole.fullmatch(answer.strip()) or _is_gold(answer, gold):
        return None
    return "more than the one answer its scorer reads (it reads the start, ignores the rest)"


_PIECE = re.compile(r"[^\s,;/&|∨]+")
"""A piece of a list: text between blanks and separators (``, ; / & |``, tabs, lines)."""
MAX_PARTS = 16
"""Runs of a list each scored alone (:func:`_candidates`); a list of more is refused."""


def _candidates(scorer: Callable, answer: str, entry: dict[str, Any], value: float) -> str | None:
    r"""Why ``answer``, which earned ``value``, is a list of candidates with the gold in it.

    Many scorers read a prefix (the first number, the first fraction, moves up to the solved
    state) or pay for the gold anywhere inside the answer, so the gold followed by anything
    else earned full marks (``28080 / 44``, ``5 days 00:34:28``, ``[MOVES, OTHER]``). So an
    answer that is not the gold (:func:`_is_gold`) is refused when it holds:

    * the gold's text (case and blanks aside: ``9e99`` holds ``E9``) and earns only partial
      credit (reasoning-gym's default scorer pays ``len(gold)/len(answer)`` for that), or
      holds beside it more of what the gold is made of (letters, or a number in any form:
      digits, numerals of any script, Roman numerals, words): another candidate.
      ``x = 3`` for ``3`` is no list; ``3 4`` is;
    * more pieces (:data:`_PIECE`) of the gold's kind than the gold has, and a run of as many
      pieces as the gold has that alone earns ``value`` or more (``\frac{7}{9} 13/58``), or
      more runs than :data:`MAX_PARTS` (each scored alone was the check, so a list of 17
      went unchecked: ``(4.051 , -5.487), 100, 101, ...`` was paid in full).
    """
    gold = str(entry.get("answer") or "").strip()
    if not gold or _is_gold(answer, gold):
        return None
    rest = _beside(answer, gold)
    if rest is not None:
        if value < 1.0:
            return "hedged: the gold inside a longer answer (its partial credit is not paid)"
        if _kinds(rest) & _kinds(gold):
            return f"hedged: the gold and more beside it ({' '.join(rest.split())[:40]!r})"
        if _glued(answer, gold):
            return "the gold's text glued to a letter, digit or sign: another value"
    pieces, kinds = list(_PIECE.finditer(answer)), _kinds(gold)
    size = max(1, len(_PIECE.findall(gold)))
    if sum(1 for p in pieces if _kinds(p.group()) & kinds) <= size:
        return None
    starts = range(len(pieces) - size + 1)
    if len(starts) > MAX_PARTS:  # too many to score each: the list itself is the hedge
        return f"hedged: {len(pieces)} pieces where the gold has {size}, too many candidates"
    runs = [answer[pieces[i].start() : pieces[i + size - 1].end()] for i in starts]
    if any(safe_score(scorer, run, entry)[0] >= value for run in runs):
        return "hedged: a list of candidates, one of which alone earns as much"
    return None


BEFORE_TOKEN = frozenset("=:$€£¥₹([{\"'«“‘*#")
AFTER_TOKEN = frozenset(".,;:)]}\"'»”’*%")
"""What may touch the gold's text inside a longer answer, besides blanks: a label, a currency,
brackets, quotes, markdown's ``**``, a full stop, a percent sign."""


def _glued(answer: str, gold: str) -> bool:
    """Whether the gold's text in ``answer`` (case and blanks aside) is no whole token anywhere.

    A scorer that reads a number or a grid out of the text ignores what touches it: ``√28080``,
    ``28080!``, ``28080‰`` earned full marks for 28080 on ``gsm_symbolic``, a grid with ``!`` or
    ``j`` on its last cell on ``kakurasu``.
    """
    said, meant = " ".join(answer.split()), " ".join(gold.split())
    for found in re.finditer(re.escape(meant), said, re.IGNORECASE):
        before, after = said[found.start() - 1 : found.start()], said[found.end() : found.end() + 1]
        if before in ("", " ", *BEFORE_TOKEN) and after in ("", " ", *AFTER_TOKEN):
            return False
    return True


def _beside(answer: str, gold: str) -> str | None:
    """What ``answer`` holds beside the gold's text (case and blanks aside), or None without it."""
    said, meant = " ".join(answer.split()), " ".join(gold.split())
    found = re.compile(re.escape(meant), re.IGNORECASE)
    return found.sub(" ", said) if found.search(said) else None


_NUMBER_WORD = re.compile(
    r"\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen"
    r"|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty"
    r"|seventy|eighty|ninety|hundred|thousand|million|billion|half|twice|double)\b",
    re.IGNORECASE,
)
"""A number written in English words: another candidate beside a gold in digits (``28080 /
four``); other languages' in :func:`envhub.envs.math.spelled.any_number_words`."""
_WORD = re.compile(r"[^\W\d_]+")


def _has_number(text: str) -> bool:
    """Whether ``text`` writes a number, in any form.

    In digits or numerals of any script (``٧٣``, ``七十三``, ``Ⅻ``), in Roman numerals, or in
    words of any language the math checker knows.
    """
    if any(c.isnumeric() for c in text) or _NUMBER_WORD.search(text) or ROMAN.search(text):
        return True
    return not any_number_words().isdisjoint(w.lower() for w in _WORD.findall(text))


def _kinds(text: str) -> set[str]:
    """What ``text`` is made of: ``digit`` (a number, :func:`_has_number`), ``letter``."""
    digit = _has_number(text)
    letter = any(c.isalpha() for c in text)
    return {kind for kind, has in (("digit", digit), ("letter", letter)) if has}


CONSTANTS = (
    "", "0", "1", "-1", "0.0", "00", "-0", "2", "10", "0.5", "1e309", "nan", "inf", "-inf",
    "none", "null", "true", "false", "yes", "no", "[]", "{}", "a", "x", "1/2", "0/0",
)  # fmt: skip
"""Answers that some reasoning-gym scorers pay on tasks whose gold they are not (``nan``
solves ``complex_arithmetic``: the scorer computes ``exp(-nan)``; ``0`` earns 0.95 on
``time_intervals``); :func:`constant_floor` measures what they earn on a task."""
_NON_FINITE = re.compile(r"(?<![a-z])(?:nan|inf(?:inity)?)(?![a-z])", re.IGNORECASE)


def constant_floor(scorer: Callable, entry: dict[str, Any], others: Sequence[str] = ()) -> float:
    """The most partial credit an answer made without solving the task earns on it.

    The answers: the constants of :data:`CONSTANTS`, the gold's own shape filled with one
    value (:func:`shaped_constants`: an all-zero grid earned 0.95 on ``game_of_life``, ``D3``
    0.05 on ``tsumego``) and ``others``, the golds of other tasks of the generator; any that
    is this task's gold is left out. Full marks are not counted: a constant that solves the
    task is right (another task's board may solve this ``n_queens``), and a generator whose
    scorer pays a wrong constant in full is left out of the catalog
    (``catalog.WRONG_BUT_FULL``). NaN and infinities are left out: :func:`correctness` refuses
    them before any scorer.
    """
    gold = str(entry.get("answer") or "")
    tried = dict.fromkeys([*CONSTANTS, *shaped_constants(gold), *others])
    answers = [c for c in tried if not _is_gold(c, gold) and not _NON_FINITE.search(c)]
    scores = (safe_score(scorer, c, entry)[0] for c in answers)
    return max((s for s in scores if s < 1.0), default=0.0)


_LETTER = re.compile(r"[^\W\d_]")


def shaped_constants(gold: str) -> list[str]:
    """Answers in the gold's own shape that do not solve the task.

    Its digits all ``0``, all ``1``, its letters all ``a`` (``[[0,0],[0,0]]``, ``E0``, ``A9``
    for ``[[0,1],[1,0]]`` and ``E9``), and its first line alone (a legal first move that
    solves nothing earned 0.05 on ``tower_of_hanoi``).
    """
    letters = _LETTER.sub(lambda m: "A" if m.group().isupper() else "a", gold)
    first = gold.strip().split("\n", 1)[0]
    return [re.sub(r"\d", "0", gold), re.sub(r"\d", "1", gold), letters, first]


def _constant(answer: str, gold: str) -> str | None:
    """Why ``answer`` is a constant that is not the gold (or a NaN/infinity it lacks), or None."""
    if _NON_FINITE.search(answer) and not _NON_FINITE.search(gold):
        return "a non-finite value (nan, inf) that the gold is not"
    if _normal(answer) in CONSTANTS and not _is_gold(answer, gold):
        return f"the constant {_normal(answer)!r} is not the gold"
    return None


def _is_gold(answer: str, gold: str) -> bool:
    said, meant = _normal(answer), _normal(gold)
    if said == meant:
        return True
    try:
        return float(said) == float(meant)
    except ValueError:
        return False


def _normal(text: str) -> str:
    return " ".join(text.split()).strip().rstrip(".").lower()


def within_tolerance(answer: str | None, entry: dict[str, Any], tol: float = 1e-4) -> float:
    """``coin_flip``'s comparison without its credit for a prefix of the gold's digits.

    Its tolerance is relative here (reasoning-gym's is absolute, so ``0`` solved every task
    whose probability is below 1e-4).
    """
    try:
        said = float(Fraction(str(answer).replace(",", "")))
        meant = float(Fraction(str(entry["answer"]).replace(",", "")))
    except (ValueError, ZeroDivisionError):
        return 0.0
    return float(abs(said - meant) <= tol * abs(meant))  # relative: 0 is not 3e-05


OWN_SCORERS: dict[str, Callable[[str | None, dict[str, Any]], float]] = {
    "coin_flip": within_tolerance
}
"""Generators scored by envhub's comparison instead of their own ``score_answer``."""


MAX_EXPONENT = 10_000
"""The largest exponent an answer may hold, however it is written: a power (``x**3``), a shift,
an exponent computed from other numbers (``3**(9999*9999*99)``), a literal's e-notation
(``1e-5``; ``1e999999`` is refused), and the largest number a function is called on."""
MAX_DIGITS = 100_000
"""The most decimal digits any value in an answer may reach as it is computed (a symbol counts
as one digit): ``(9**9999)**9999`` would reach 95 million."""
MAX_LITERAL_DIGITS = 4_300
"""The longest run of digits an answer may hold: Python's own limit for reading an ``int``
(``sys.int_info.default_max_str_digits``), which sympy does not apply."""
_E_NOTATION = re.compile(r"(?<![^\W\d_])(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)[eE][+-]?(\d[\d_]*)")
"""A number in e-notation, in any script's digits (``float``, ``Decimal`` and ``Fraction`` read
``١e٩``) and with Python's ``_`` groups; not glued after a letter (``a1e2345`` is a word)."""
_LONG_DIGITS = re.compile(rf"\d[\d_]{{{MAX_LITERAL_DIGITS},}}")
_LOG2 = math.log10(2)
_SLACK = 1 + 1e-9
"""Rounding room when a bound computed through logarithms meets a limit: 10000 is 10000."""


def explosive(answer: str) -> str | None:
    """Why ``answer``, read as the expression some scorers evaluate, is too big to compute.

    sympy's ``parse_expr`` (``simple_integration``, ``countdown``) computes integer arithmetic
    and powers at once, and ``Fraction``/``Decimal``/sympy turn a literal's e-notation into an
    integer of that many digits: nine characters (``1e999999``) or an exponent computed from
    small numbers (``3**(9999*9999*99)``) held the verifier for minutes, in C, where no
    deadline reaches. So every value of the expression is bounded before any scorer sees it
    (:func:`_too_big`): exponents to :data:`MAX_EXPONENT`, values to :data:`MAX_DIGITS`
    digits, literals to :data:`MAX_LITERAL_DIGITS` digits. Text that is no Python expression
    is no hazard beyond its literals (None).
    """
    for match in _E_NOTATION.finditer(answer):
        digits = match.group(1).replace("_", "").lstrip("0") or "0"
        if len(digits) > len(str(MAX_EXPONENT)) or int(digits) > MAX_EXPONENT:
            return f"a number too large to evaluate (an e-notation exponent over {MAX_EXPONENT})"
    if _LONG_DIGITS.search(answer):
        return f"a number of more than {MAX_LITERAL_DIGITS} digits"
    try:
        tree = ast.parse(answer.replace("^", "**"), mode="eval")
    except (SyntaxError, ValueError, MemoryError):
        return None
    except RecursionError:
        return "the answer is nested too deeply to evaluate"
    return _too_big(tree.body)


def _too_big(root: ast.AST) -> str | None:
    """Why an expression reaches a value too large to compute (its :func:`_size`), or None.

    Bottom-up over the tree, without recursion: ``x+x+...+x`` is a tree as deep as it is long.
    """
    order, stack = [], [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(ast.iter_child_nodes(node))
    sizes: dict[ast.AST, float] = {}
    for node in reversed(order):  # every child before its parent
        size = _size(node, sizes)
        if isinstance(size, str):
            return size
        if size > MAX_DIGITS:
            return (
                f"a power too large to evaluate (a value of over {MAX_DIGITS} digits, or "
                f"exponents over {MAX_EXPONENT} in all)"
            )
        sizes[node] = size
    return None


def _size(node: ast.AST, sizes: dict[ast.AST, float]) -> float | str:
    """An upper bound on the decimal digits of ``node``'s value, or why it is refused.

    Digits of a literal (of its numerator and denominator: ``0.001`` has 3); a name (a symbol,
    ``pi``) counts as one; sums take the larger and a digit more, products and quotients add;
    a power multiplies its base's digits by the largest value its exponent may take, which
    must not pass :data:`MAX_EXPONENT` (``9**9**9``: the exponent ``9**9`` is refused). An
    elementary function (:data:`~.evaluated.FUNCTIONS`, which sympy leaves unevaluated on a
    number) is as large as its argument; any other call (``factorial``) may compute a value
    of ``n log n`` digits, on an argument up to :data:`MAX_EXPONENT`.
    """
    kids = [sizes[c] for c in ast.iter_child_nodes(node) if c in sizes]
    if isinstance(node, ast.Constant):
        return _literal_digits(node.value)
    if isinstance(node, ast.Name):
        return 1.0
    if isinstance(node, ast.Call):
        args = max((sizes[a] for a in (*node.args, *(k.value for k in node.keywords))), default=0)
        if isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
            return args  # sympy leaves exp(9999) unevaluated
        n = _magnitude(args)
        if n > MAX_EXPONENT * _SLACK:
            return f"a call on a number too large to evaluate (over {MAX_EXPONENT})"
        return n * math.log10(max(n, 10.0))  # as many digits as n! has, at most
    if not isinstance(node, ast.BinOp):
        return max(kids, default=0.0)
    left, right = sizes[node.left], sizes[node.right]
    if isinstance(node.op, (ast.Pow, ast.LShift)):
        exponent = _magnitude(right)
        if exponent > MAX_EXPONENT * _SLACK:
            return f"a power too large to evaluate (an exponent that may pass {MAX_EXPONENT})"
        return left * exponent if isinstance(node.op, ast.Pow) else left + exponent * _LOG2
    if isinstance(node.op, (ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.MatMult)):
        return left + right
    if isinstance(node.op, ast.RShift):
        return left
    return max(left, right) + _LOG2


def _magnitude(digits: float) -> float:
    """The largest value a number of ``digits`` digits may have (inf when it overflows)."""
    return 10.0**digits if digits < 300 else math.inf


def _literal_digits(value: Any) -> float:
    """The decimal digits of a literal: of its size and of its reciprocal (``1e-9`` has 9)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, complex)):
        return 0.0
    size = abs(value)
    if isinstance(value, int):
        return math.log10(size) if size else 0.0
    if not math.isfinite(size):  # past a float's range; e-notation is bounded in explosive()
        return float(MAX_EXPONENT)
    return abs(math.log10(size)) if size else 0.0
