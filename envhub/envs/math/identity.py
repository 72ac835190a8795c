"""Whether two expressions in letters are one rational function, decided without sympy.

A response may say its answer again in another form ("$x^2+6x-27$. Equivalently, $(x+9)(x-3)$");
the hedge rules (:func:`envhub.envs.math.compare.same`) must tell that from a second answer
without sympy's cost. Two rational functions that agree at random points are equal but with
negligible chance (Schwartz-Zippel), so :func:`identical` evaluates both exactly, with
:class:`fractions.Fraction`, at points drawn afresh in each process (a response cannot aim at
them). Only the four operations, integer powers and integers are evaluated: anything else
(``sqrt``, ``sin``, a decimal) is undecided here, and so is a value that grows past a bound.
"""

from __future__ import annotations

import ast
import random
from fractions import Fraction

_POINTS = 3
_MAX_TEXT = 240
_MAX_EXPONENT = 24
_MAX_BITS = 4096
_DRAW = random.Random()


class _Undecided(Exception):
    """The expression holds what this evaluator does not read, or grows too large."""


def identical(a: str, b: str) -> bool | None:
    """Whether ``a`` and ``b`` (Python text of :class:`~envhub.envs.math.parse.Expr`) are one.

    True: one rational function of their letters; False: they differ at a point; None:
    undecided (numbers alone, a function, a decimal, a value too large).
    """
    if len(a) > _MAX_TEXT or len(b) > _MAX_TEXT:
        return None
    try:
        trees = ast.parse(a, mode="eval").body, ast.parse(b, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None
    letters = sorted(_names(trees[0]) | _names(trees[1]))
    if not letters:
        return None  # numbers: compare.quick_compare's work
    for _ in range(_POINTS):
        point = {name: Fraction(_DRAW.randrange(1_000, 1_000_000), 7) for name in letters}
        try:
            if _value(trees[0], point) != _value(trees[1], point):
                return False
        except (_Undecided, ZeroDivisionError, RecursionError):
            return None
    return True


def _names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _value(node: ast.AST, point: dict[str, Fraction]) -> Fraction:
    if isinstance(node, ast.Name):
        return point[node.id]
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return Fraction(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _value(node.operand, point)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp):
        return _bounded(_binary(node, point))
    raise _Undecided


def _binary(node: ast.BinOp, point: dict[str, Fraction]) -> Fraction:
    left = _value(node.left, point)
    if isinstance(node.op, ast.Pow):
        exponent = _value(node.right, point)
        if exponent.denominator != 1 or abs(exponent) > _MAX_EXPONENT:
            raise _Undecided
        return left ** int(exponent)
    right = _value(node.right, point)
    if isinstance(node.op, ast.Add):
        return left + right
    if isinstance(node.op, ast.Sub):
        return left - right
    if isinstance(node.op, ast.Mult):
        return left * right
    if isinstance(node.op, ast.Div):
        return left / right
    raise _Undecided


def _bounded(value: Fraction) -> Fraction:
    if max(value.numerator.bit_length(), value.denominator.bit_length()) > _MAX_BITS:
        raise _Undecided
    return value
