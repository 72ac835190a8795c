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
* a hedge inside one block earns 0: a word offering alternatives that the gold lacks ("A or
  B", "maybe A"), or a list of candidates longer than the gold with the gold inside it;
* a constant answer that is not the gold (``0``, ``nan``, ``true``: :data:`CONSTANTS`) earns
  0, and so does a score no higher than what those constants earn on the task (reasoning-gym's
  scorers pay a small credit for any answer, and some pay a constant a lot: ``nan`` solved
  every ``complex_arithmetic`` task); generators whose partial credit a constant earns
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
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from envhub.tags import block_text, tag_blocks, without_thinking

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
) -> tuple[float, str | None]:
    """Correctness of a reading (the rules in the module docstring) and why it is 0, if so.

    Args:
        scorer: The generator's ``score_answer``.
        reading: The message's answer (:func:`read_answer`).
        entry: The task as reasoning-gym's scorers read it (question, answer, metadata).
        floor: What a constant answer earns on this task (:func:`constant_floor`): a score
            no higher is not paid.
        full_only: Pay the scorer's full marks only (its partial credit is a constant's).
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
        or explosive(reading.answer)
    )
    if refused:
        return 0.0, refused
    value, why = safe_score(scorer, reading.answer, entry)
    if value > 0 and _candidates(scorer, reading.answer, entry, value):
        return 0.0, "hedged: a list of candidates with the gold (or one that earns as much) in it"
    if value <= floor and value > 0:
        return 0.0, f"scored {value:.3g}, no more than a constant answer earns here ({floor:.3g})"
    if full_only and value < 1.0:
        return 0.0, f"scored {value:.3g}: this generator's partial credit is not paid"
    return value, why


_ALTERNATIVE = re.compile(
    r"\b(?:or|maybe|perhaps|possibly|probably|either|alternatively|otherwise|not\s+sure)\b"
    r"|\\(?:vee|lor)\b",
    re.IGNORECASE,
)
"""Words that offer alternatives inside one answer ("A or B", "maybe A")."""


def _alternatives(answer: str, gold: str) -> str | None:
    """Why ``answer`` hedges with a word of :data:`_ALTERNATIVE` that the gold lacks, or None."""
    said = {" ".join(w.lower().split()) for w in _ALTERNATIVE.findall(answer)}
    meant = {" ".join(w.lower().split()) for w in _ALTERNATIVE.findall(gold)}
    extra = sorted(said - meant)
    return f"hedged: the answer offers alternatives ({extra[0]!r})" if extra else None


_PARTS = re.compile(r"\s*(?:[,;\n]|\s(?:and|&)\s)\s*", re.IGNORECASE)
MAX_PARTS = 16
"""Parts of a list each scored alone (:func:`_candidates`)."""


def _parts(text: str) -> list[str]:
    return [_normal(p) for p in _PARTS.split(text.strip()) if p.strip()]


def _candidates(scorer: Callable, answer: str, entry: dict[str, Any], value: float) -> bool:
    r"""``answer`` is a list of candidates: longer than the gold, with the gold inside it.

    The gold inside it: as text (``3`` in ``3, 4``), as a run of its parts (``wrong\ngold``
    for a grid), or as one part that alone earns ``value`` or more. An answer in the gold's
    own shape ("1, 2, 3" for ``1, 2, 3``) is never split; one that merely contains the gold
    and earns full marks (``x = 3``) is no list.
    """
    gold_text = str(entry.get("answer") or "").strip()
    parts, gold = _parts(answer), _parts(gold_text)
    if value < 1.0 and gold_text and gold_text in answer and answer.strip() != gold_text:
        return True  # reasoning-gym's default scorer pays len(gold)/len(answer) for this
    if len(parts) <= max(1, len(gold)):
        return False
    runs = (parts[i : i + len(gold)] for i in range(len(parts) - len(gold) + 1))
    if gold and any(run == gold for run in runs):
        return True
    return len(parts) <= MAX_PARTS and any(
        safe_score(scorer, part, entry)[0] >= value for part in parts
    )


CONSTANTS = (
    "", "0", "1", "-1", "0.0", "00", "-0", "2", "10", "0.5", "1e309", "nan", "inf", "-inf",
    "none", "null", "true", "false", "yes", "no", "[]", "{}", "a", "x", "1/2", "0/0",
)  # fmt: skip
"""Answers that some reasoning-gym scorers pay on tasks whose gold they are not (``nan``
solves ``complex_arithmetic``: the scorer computes ``exp(-nan)``; ``0`` earns 0.95 on
``time_intervals``); :func:`constant_floor` measures what they earn on a task."""
_NON_FINITE = re.compile(r"(?<![a-z])(?:nan|inf(?:inity)?)(?![a-z])", re.IGNORECASE)


def constant_floor(scorer: Callable, entry: dict[str, Any]) -> float:
    """The most that a constant of :data:`CONSTANTS` other than the gold earns on this task.

    NaN and infinities are left out: :func:`correctness` refuses them before any scorer.
    """
    gold = str(entry.get("answer") or "")
    others = [c for c in CONSTANTS if not _is_gold(c, gold) and not _NON_FINITE.search(c)]
    return max((safe_score(scorer, c, entry)[0] for c in others), default=0.0)


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
"""The largest literal exponent (or shift) an answer may hold: ``x**3`` is an answer,
``9**9**9`` (seven characters that sympy's ``parse_expr`` evaluates for minutes) is not."""


def explosive(answer: str) -> str | None:
    """Why ``answer``, read as the expression reasoning-gym's scorers evaluate, is too big.

    Scorers such as ``simple_integration``'s hand the answer to sympy's ``parse_expr``, which
    computes integer powers at once: a power tower (``9**9**9``, ``9^9^9``), nested exponents
    or shifts whose product is over :data:`MAX_EXPONENT` (``(9**9999)**9999``), or a call on
    such a number (``factorial(99999)``) would run for minutes. Text that is no Python
    expression is no hazard (None).
    """
    try:
        tree = ast.parse(answer.replace("^", "**"), mode="eval")
    except (SyntaxError, ValueError, MemoryError):
        return None
    except RecursionError:
        return "the answer is nested too deeply to evaluate"
    if _reach(tree.body) > MAX_EXPONENT:
        return "a power too large to evaluate (a tower, or exponents over 10000 in all)"
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and any(_number(a) > MAX_EXPONENT for a in node.args):
            return "a call on a number too large to evaluate"
    return None


def _reach(root: ast.AST) -> float:
    """The product of the exponents of nested powers under ``root`` (a tower: infinite).

    Bottom-up over the tree, without recursion: ``x+x+...+x`` is a tree as deep as it is long.
    """
    order, stack = [], [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(ast.iter_child_nodes(node))
    reach: dict[ast.AST, float] = {}
    holds_power: dict[ast.AST, bool] = {}
    for node in reversed(order):  # every child before its parent
        children = list(ast.iter_child_nodes(node))
        holds_power[node] = _is_power(node) or any(holds_power[c] for c in children)
        if not _is_power(node):
            reach[node] = max((reach[c] for c in children), default=1.0)
        elif holds_power[node.right]:
            reach[node] = math.inf
        else:
            exponent = _number(node.right) if _number(node.right) >= 0 else 1.0
            reach[node] = max(1.0, exponent) * reach[node.left]
    return reach[root]


def _number(node: ast.AST) -> float:
    """The size of a numeric literal (``-5`` too); -1 for anything else."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _number(node.operand)
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return -1.0
    return abs(float(value)) if math.isfinite(value) else math.inf


def _is_power(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Pow, ast.LShift))
