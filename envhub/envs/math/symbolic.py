r"""The sympy half of the checker. It runs only inside killable worker processes.

:mod:`envhub.envs.math.answers` sends two parsed answers (:mod:`envhub.envs.math.parse` trees) to
:func:`judge` through the worker pool (:mod:`envhub.envs.math.pool`) with a per-call CPU budget,
so a comparison that hangs sympy (a huge expansion, a pathological ``simplify``) costs one
worker restart, never a stuck server. The worker also runs under an address-space limit
(:func:`envhub.envs.math.pool.init_worker`).

Values are built from the already validated Python text by walking its syntax tree into sympy
objects (numbers become exact ``Integer``/``Rational``; no ``eval`` of arbitrary text).

Equality rules, in order: identical objects; for numbers, exact equality of rationals, else a
50-digit numeric check backed by ``simplify``; for expressions with symbols, a numeric probe at
fixed points (different at any point: not equal), then ``simplify(a - b) == 0``, then agreement
at every probe point.

Rounding: a decimal is its exact value, so a truncated decimal of an irrational (``3.14159``
for ``\pi``) is a different number. The exceptions are in :func:`_allowance`: a gold answer
written as a decimal is a rounded value, and an exact irrational prediction that rounds to it
at its own precision matches it (``\sqrt{17}`` for ``4.1231056``, ``\sqrt{2}`` for ``1.41``
but not ``1.42``); a task whose data states a ``tolerance`` accepts a prediction within that
absolute distance where either side is written as a decimal (never two exact values).
Numbers carry their units (:mod:`envhub.envs.math.units`).

What envhub cannot read or decide goes to math-verify (:mod:`envhub.envs.math.library`), except
numbers and lists, tuples and intervals of numbers, where envhub's verdict is final
(math-verify rounds to 6 digits by default, which the rule above forbids; where it decides,
:func:`envhub.envs.math.library.rounding_digits` tells it how far to round). Errors: a gold
answer that no parser can evaluate is ``gold_error``; a prediction sympy chokes on (the errors
in :func:`model_errors`) is the model's wrong answer;
anything else is a bug and propagates (the caller reports it, it is never a reward).
"""

from __future__ import annotations

import ast
import random
import re
import string
from fractions import Fraction
from functools import lru_cache
from typing import Any, NamedTuple

from .compare import matching, quick_compare
from .library import DIFFERENT, EQUAL, GOLD_ERROR  # noqa: F401 (re-exported)
from .parse import Answer, Equation, Expr, Items, Seq, Text, Union
from .units import scales


def warm() -> None:
    """Import sympy, math-verify and the parts they load lazily (a no-op the second time)."""
    import sympy

    x = _to_sympy("x")
    sympy.simplify(_to_sympy("(x+1)**2") - x**2 - 2 * x - 1 + _to_sympy("sqrt(2)/2"))
    from . import library

    library.verdict("\\frac{1}{2}", "x \\le 3", gold_read_by_envhub=True, tolerance=None)


def model_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that sympy raises on a value it cannot handle (never on a checker bug)."""
    from sympy.core.sympify import SympifyError
    from sympy.polys.polyerrors import BasePolynomialError

    return (
        ValueError,
        TypeError,
        ArithmeticError,
        NotImplementedError,
        RecursionError,
        MemoryError,
        SympifyError,
        BasePolynomialError,
    )


def judge(
    pred: str,
    gold: str,
    pred_ans: Answer | None,
    gold_ans: Answer | None,
    tolerance: float | None = None,
) -> str:
    """Compare a prediction with a gold answer: ``equal``, ``different`` or ``gold_error: ...``.

    ``pred_ans``/``gold_ans`` are envhub's parses (None where envhub's parser failed). envhub's
    rules run first; what they cannot decide goes to math-verify.
    """
    if gold_ans is not None:
        try:
            _build(gold_ans)
        except model_errors():  # envhub's sympy side cannot build it: let math-verify try
            gold_ans = None
    if gold_ans is not None and pred_ans is not None:
        try:
            _build(pred_ans)
            same = _equal(pred_ans, gold_ans, tolerance)
            final = _numbers(pred_ans, gold_ans)
        except model_errors():  # the prediction's value is what sympy cannot handle
            same = final = False
        if same:
            return EQUAL
        if final or (isinstance(gold_ans, Expr) and gold_ans.unit and isinstance(pred_ans, Expr)):
            return DIFFERENT  # math-verify drops units: it would credit 5m for 5 km
    from . import library

    if _HUGE_EXPONENT.search(pred) or (pred_ans is None and _explosive(pred)):
        return DIFFERENT  # math-verify would compute 10**54634634634 in C, past any timer
    return library.verdict(
        pred,
        gold,
        gold_read_by_envhub=gold_ans is not None,
        tolerance=tolerance,
        pred_read_by_envhub=pred_ans is not None,
    )


_HUGE_EXPONENT = re.compile(r"\d\s*[eE]\s*[-+]?\s*\d{4,}")
"""Scientific notation with an exponent of four digits or more: no real answer, and a value
math-verify would build digit by digit."""


_GROWTH = re.compile(r"\\Gamma|\\binom|\\dbinom|\\prod|\\sum|!|\^|\\uparrow|factorial")
_BIG = re.compile(r"\d{5,}|10\s*\^\s*\{?\s*(?:\d{2,}|[5-9])|\d\s*\^\s*\{?\s*\d{3,}")


def _explosive(text: str) -> bool:
    r"""A prediction envhub cannot read that asks math-verify for a giant computation.

    ``\Gamma(10^{7})``, ``(10^{10})!``, ``\binom{10^{8}}{5 \cdot 10^{7}}``: a fast-growing
    operation beside a number of five digits or more (or a power of ten past ``10^4``, or a
    three-digit exponent). sympy would build the value in C, where no timer can stop it; an
    answer so large is no real final answer, so it is a wrong one, decided at once.
    """
    return bool(_GROWTH.search(text) and _BIG.search(text))


def _numbers(pred: Answer, gold: Answer) -> bool:
    r"""Both sides are numbers, or lists, tuples or intervals of numbers.

    envhub's verdict on them is final: math-verify rounds to 6 places, which would credit
    ``1.414214`` for ``\sqrt{2}`` inside a tuple or list (the rounding rules forbid it), and
    reads an interval ``(-\infty, 3]`` as its last number ``3``. Of different kinds (a number
    and an interval), they are different answers.
    """
    if type(pred) is not type(gold):
        return _numeric(pred) and _numeric(gold)
    if isinstance(pred, Items) and len(pred.items) != len(gold.items):  # type: ignore[union-attr]
        return False  # a repeated element: math-verify compares them as sets
    return _numeric(pred) and _numeric(gold)


def _numeric(ans: Answer) -> bool:
    if isinstance(ans, Expr):
        return not _to_sympy(ans.py).free_symbols
    if isinstance(ans, (Items, Seq)):
        return all(_numeric(item) for item in ans.items)
    if isinstance(ans, Union):
        return all(_numeric(part) for part in ans.parts)
    return False


# ---------------------------------------------------------------- building sympy objects


@lru_cache(maxsize=1)
def _namespace() -> dict[str, Any]:
    import sympy

    ns: dict[str, Any] = {c: sympy.Symbol(c) for c in string.ascii_letters}
    ns.update(
        E=sympy.E,
        I=sympy.I,
        pi=sympy.pi,
        oo=sympy.oo,
        sqrt=sympy.sqrt,
        root=sympy.root,
        sin=sympy.sin,
        cos=sympy.cos,
        tan=sympy.tan,
        cot=sympy.cot,
        sec=sympy.sec,
        csc=sympy.csc,
        asin=sympy.asin,
        acos=sympy.acos,
        atan=sympy.atan,
        log=sympy.log,
        exp=sympy.exp,
        Abs=sympy.Abs,
        factorial=sympy.factorial,
    )
    return ns


@lru_cache(maxsize=4096)
def _to_sympy(py: str) -> Any:
    """Sympy value of validated Python text, with exact numbers."""
    import sympy

    ns = _namespace()

    def build(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return sympy.Rational(ast.get_source_segment(py, node) or str(node.value))
        if isinstance(node, ast.Name):
            return ns[node.id]
        if isinstance(node, ast.UnaryOp):
            v = build(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp):
            a, b = build(node.left), build(node.right)
            ops = {
                ast.Add: lambda: a + b,
                ast.Sub: lambda: a - b,
                ast.Mult: lambda: a * b,
                ast.Div: lambda: a / b,
                ast.Pow: lambda: a**b,
            }
            return ops[type(node.op)]()
        if isinstance(node, ast.Call):
            return ns[node.func.id](*[build(a) for a in node.args])  # type: ignore[attr-defined]
        raise ValueError(f"unsupported construct in {py!r}")

    return build(ast.parse(py, mode="eval").body)


def _build(ans: Answer) -> None:
    """Build every value of an answer (raises when sympy cannot)."""
    if isinstance(ans, (Expr, Equation)):
        _to_sympy(ans.py)
    elif isinstance(ans, (Items, Seq)):
        for item in ans.items:
            _build(item)
    elif isinstance(ans, Union):
        for part in ans.parts:
            _build(part)


# ---------------------------------------------------------------- equality


def _equal(pred: Answer, gold: Answer, tolerance: float | None) -> bool:
    full_double = isinstance(pred, Expr) and pred.decimal and _significant(pred.py) >= FLOAT_DIGITS
    quick = quick_compare(pred, gold) if tolerance is None and not full_double else None
    if quick is not None:
        return quick
    if isinstance(pred, Expr) and isinstance(gold, Expr):
        return _leaf_equal(pred, gold, tolerance)
    if isinstance(pred, Equation) and isinstance(gold, Equation):
        return _equation_equal(_to_sympy(pred.py), _to_sympy(gold.py))
    if isinstance(pred, Seq) and isinstance(gold, Seq):
        if (pred.left, pred.right, len(pred.items)) != (gold.left, gold.right, len(gold.items)):
            return False
        return all(_equal(p, g, tolerance) for p, g in zip(pred.items, gold.items, strict=True))
    if isinstance(pred, Union) and isinstance(gold, Union):
        return _union_equal(pred, gold)
    if isinstance(pred, Items) and isinstance(gold, Items):
        table = [[_equal(p, g, tolerance) for g in gold.items] for p in pred.items]
        return matching(table)
    return isinstance(pred, Text) and pred == gold


def _leaf_equal(pred: Expr, gold: Expr, tolerance: float | None) -> bool:
    both = scales(pred.unit, gold.unit)
    if both is None:
        return False  # 6 kg is not 6 m
    a, b = _scaled(pred.py, *both[0]), _scaled(gold.py, *both[1])
    if a.free_symbols or b.free_symbols:  # 2 h beside 2h: a one-letter unit is a variable
        a, b = _as_written(pred), _as_written(gold)
    near = _allowance(pred, gold, tolerance)
    if pred.percent == gold.percent:
        return _expr_equal(a, b, near)
    if pred.unit or gold.unit:
        return False  # 5% is not $5
    pct, other = (a, b) if pred.percent else (b, a)
    return _expr_equal(other, pct, near) or _expr_equal(other, pct / 100, near)


def _scaled(py: str, factor: Fraction, offset: Fraction) -> Any:
    """The sympy value of ``py`` in base units: times the unit's factor, plus its offset."""
    import sympy

    value = _to_sympy(py)
    if factor != 1:
        value = value * sympy.Rational(factor.numerator, factor.denominator)
    return value if offset == 0 else value + sympy.Rational(offset.numerator, offset.denominator)


def _as_written(ans: Expr) -> Any:
    """The value with a one-letter unit read as the variable it may be (``2 h`` -> ``2*h``)."""
    value = _to_sympy(ans.py)
    return value * _namespace()[ans.unit.letter] if ans.unit and ans.unit.letter else value


class Near(NamedTuple):
    """How far a prediction may be from the gold: within either distance (None: not at all)."""

    absolute: float | None
    relative: float | None
    """A fraction of the gold's size."""


def _allowance(pred: Expr, gold: Expr, tolerance: float | None) -> Near:
    r"""The rounding rules: approximation only where a written decimal may be a rounding.

    * the task's ``tolerance`` (absolute, as its data states it) when either side is written
      as a decimal: ``3.14159`` for ``\pi``; two exact values never (``\pi`` is not ``3``);
    * a gold written as a decimal is rounded: an exact irrational prediction matches when it
      rounds to it at the gold's own precision (half a unit in its last place, relative to the
      number written, so ``1.5 \times 10^{-7}`` allows ``5 \times 10^{-9}``);
    * a decimal of :data:`FLOAT_DIGITS` significant digits is a double printed in full.
    """
    absolute = tolerance if tolerance is not None and (pred.decimal or gold.decimal) else None
    relative = None
    if pred.value is None and not pred.decimal:
        relative = _rounded(gold)
    elif pred.decimal and _significant(pred.py) >= FLOAT_DIGITS:
        relative = 1e-14
    return Near(absolute, relative)


MIN_ROUNDED_DIGITS = 2
"""Significant digits a decimal gold needs to be read as a rounding of an exact value."""
FLOAT_DIGITS = 15
"""A decimal with this many significant digits is a double printed in full, not a rounding."""


def _significant(py: str) -> int:
    """Most significant digits in one decimal literal of ``py``."""
    literals = re.findall(r"\d*\.\d+", py)
    return max((len(m.replace(".", "").lstrip("0")) for m in literals), default=0)


def _rounded(gold: Expr) -> float | None:
    r"""Half a unit in the last place of a gold that is one decimal number, relative to it.

    ``1.41`` -> 0.005 / 1.41; None when the gold is not one rational decimal (``2.5\pi``), or
    has one significant digit: ``0.5`` is no rounding of ``\pi/6`` (0.52), ``0.9`` none of
    ``\sqrt{3}/2`` (0.87); a band of a tenth of the value is a guess's, not a rounding's.
    """
    literals = re.findall(r"\d*\.\d+", gold.py)
    if not gold.decimal or gold.value is None or len(literals) != 1:
        return None
    if _significant(literals[0]) < MIN_ROUNDED_DIGITS:
        return None
    written = Fraction(literals[0])
    half = Fraction(1, 2 * 10 ** len(literals[0].split(".")[1]))
    return float(half / written) if written else None


def _expr_equal(a: Any, b: Any, near: Near | None = None) -> bool:
    """``a == b``; for numbers, also within the distances of ``near``."""
    import sympy

    if a == b:
        return True
    if a.has(sympy.oo, -sympy.oo, sympy.zoo) or b.has(sympy.oo, -sympy.oo, sympy.zoo):
        return False
    diff = a - b
    if diff == 0:
        return True
    if not diff.free_symbols:
        gap = abs(complex(diff.evalf(50)))
        if near is not None and _within(gap, b, near):
            return True
        if a.is_Rational and b.is_Rational:
            return False
        scale = max(1, abs(complex(b.evalf(30))))
        if gap > 1e-12 * scale:
            return False
        return sympy.simplify(diff) == 0 or gap <= 1e-40 * scale
    gaps = _probe(diff, b)
    if any(g > 1e-9 for g in gaps):
        return False
    if sympy.simplify(diff) == 0:
        return True
    return len(gaps) >= 3


def _within(gap: float, gold: Any, near: Near) -> bool:
    if near.absolute is None and near.relative is None:
        return False
    allowed = max(near.absolute or 0.0, (near.relative or 0.0) * abs(complex(gold.evalf(30))))
    return gap <= allowed * (1 + 1e-9)


def _probe(diff: Any, ref: Any) -> list[float]:
    """Relative gaps of ``diff`` at fixed pseudo-random points (undefined points skipped)."""
    symbols = sorted(diff.free_symbols, key=str)
    rng = random.Random(1234)
    gaps = []
    for _ in range(5):
        point = {s: rng.uniform(0.3, 2.7) for s in symbols}
        try:
            d = complex(diff.subs(point).evalf(30))
            r = complex(ref.subs(point).evalf(30)) if ref.free_symbols else complex(ref)
        except (TypeError, ValueError, ZeroDivisionError):
            continue
        if d != d or r != r:  # nan
            continue
        gaps.append(abs(d) / max(1.0, abs(r)))
    return gaps


def _equation_equal(d1: Any, d2: Any) -> bool:
    """``l1 = r1`` vs ``l2 = r2``: the same equation up to a non-zero factor."""
    import sympy

    if _expr_equal(d1, d2, None) or _expr_equal(d1, -d2, None):
        return True
    if d2 == 0:
        return False
    ratio = sympy.simplify(d1 / d2)
    return bool(ratio.is_number and ratio != 0)


def _union_equal(pred: Union, gold: Union) -> bool:
    import sympy

    def as_set(u: Union) -> Any:
        if any(len(p.items) != 2 or not all(isinstance(e, Expr) for e in p.items) for p in u.parts):
            raise ValueError("an interval has exactly two ends")
        return sympy.Union(
            *[
                sympy.Interval(
                    _to_sympy(p.items[0].py),
                    _to_sympy(p.items[-1].py),
                    p.left == "(",
                    p.right == ")",
                )
                for p in u.parts
            ]
        )

    return bool(as_set(pred) == as_set(gold))
