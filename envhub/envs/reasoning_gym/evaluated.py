"""Answers that a reasoning-gym scorer would run as code: only plain math and literals pass.

Some of reasoning-gym's scorers evaluate the model's text. ``string_insertion``,
``spiral_matrix``, ``binary_matrix`` and ``n_queens`` call Python's ``eval`` on it (to read a
list), and ``simple_integration`` and ``countdown`` call sympy's ``parse_expr``, which is
``eval`` too, with every builtin in reach. Unguarded, an answer runs what it likes in the
verifier's process (``__import__('os').system(...)`` did), and a sympy call does the task's
work for the model: ``integrate(f, x) + C`` was paid full marks on ``simple_integration``,
and ``diff(x**9999, x, 9999)`` held a thread for 45 s.

So before such a scorer sees an answer, the answer must be:

* for ``eval`` (:data:`LITERAL`): a Python literal (numbers, strings, lists, tuples), the kind
  of value the scorer means to read, or one of the task's golds (those scorers compare the
  text first; ``n_queens`` lists every valid board in ``metadata.valid_answers``);
* for ``parse_expr`` (:data:`EXPRESSION`): arithmetic on numbers and names, with calls only to
  the elementary functions of :data:`FUNCTIONS`. No attribute, subscript, string, keyword,
  lambda or comprehension; no name that starts with ``_``.

Anything else is refused with :class:`UnsafeAnswer`, which the scorer's wrapper
(:func:`guarded`) raises in place of scoring: :func:`~.scoring.safe_score` turns it into
correctness 0 with the reason in the details. ``tests/envs/test_evaluated_answers.py`` probes
every catalog entry with answers that would import a module if evaluated, so a scorer that
starts evaluating text in a later reasoning-gym is caught.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

LITERAL = "literal"
EXPRESSION = "expression"

EVALUATES: dict[str, str] = {
    "binary_matrix": LITERAL,
    "n_queens": LITERAL,
    "spiral_matrix": LITERAL,
    "string_insertion": LITERAL,
    "countdown": EXPRESSION,
    "simple_integration": EXPRESSION,
}
"""Generators whose ``score_answer`` evaluates the answer, and what it expects to read."""

FUNCTIONS = frozenset(
    """sin cos tan cot sec csc asin acos atan acot asec acsc sinh cosh tanh coth sech csch
    asinh acosh atanh exp log ln sqrt cbrt Abs abs sign""".split()
)
"""Functions an answer evaluated by sympy may call: the elementary ones."""

_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.Mod, ast.FloorDiv)
_LITERAL_NODES = (ast.Expression, ast.Constant, ast.List, ast.Tuple, ast.Load, ast.UnaryOp)
_LITERAL_NODES += (ast.USub, ast.UAdd)
_EXPRESSION_NODES = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp)
_EXPRESSION_NODES += (ast.Call, ast.Tuple, ast.USub, ast.UAdd, *_OPERATORS)


class UnsafeAnswer(ValueError):
    """An answer that a scorer would run as code, and what in it is refused."""


def hazard(answer: str, kind: str) -> str | None:
    """Why ``answer`` must not reach a scorer that evaluates it as ``kind``, or None."""
    source = answer.replace("^", "**") if kind == EXPRESSION else answer
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return f"not a plain {kind}: the scorer would evaluate it as code"
    allowed = _LITERAL_NODES if kind == LITERAL else _EXPRESSION_NODES
    for node in ast.walk(tree):
        if not isinstance(node, allowed):
            return f"{type(node).__name__} in an answer that the scorer evaluates as code"
        if isinstance(node, ast.Name) and node.id.startswith("_"):
            return f"the name {node.id!r} in an answer that the scorer evaluates as code"
        if isinstance(node, ast.Constant) and kind == EXPRESSION and isinstance(node.value, str):
            return "a string in an answer that the scorer evaluates as code"
        if isinstance(node, ast.Call) and not _elementary(node):
            return f"a call to {ast.unparse(node.func)!r}: only {', '.join(sorted(FUNCTIONS))}"
    return None


def _elementary(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id in FUNCTIONS and not call.keywords


def guarded(
    scorer: Callable[[str | None, dict[str, Any]], Any], kind: str
) -> Callable[[str | None, dict[str, Any]], Any]:
    """``scorer``, refusing what it must not evaluate (:class:`UnsafeAnswer`).

    Refused: an answer that is none of the task's golds and is a :func:`hazard` for ``kind``.
    """

    def score_answer(answer: str | None, entry: dict[str, Any]) -> Any:
        if answer is not None and answer.strip() not in _golds(entry):
            why = hazard(answer, kind)
            if why:
                raise UnsafeAnswer(why)
        return scorer(answer, entry)

    return score_answer


def _golds(entry: dict[str, Any]) -> set[str]:
    """The texts a scorer matches before it evaluates: the gold, and any listed valid answer."""
    valid = (entry.get("metadata") or {}).get("valid_answers") or []
    return {str(g).strip() for g in [entry.get("answer") or "", *valid]}
