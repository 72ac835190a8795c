"""The sympy half of the checker. It runs only inside killable worker processes.

:mod:`envs.math.answers` sends two parsed answers (:mod:`envs.math.parse` trees) to
:func:`compare` through a ``pebble`` process pool with a per-call timeout, so a comparison that
hangs sympy (a huge expansion, a pathological ``simplify``) costs one worker restart, never a
stuck server. The worker also runs under an address-space limit (:func:`init_worker`).

Values are built from the already validated Python text by walking its syntax tree into sympy
objects (numbers become exact ``Integer``/``Rational``; no ``eval`` of arbitrary text).

Equality rules, in order: identical objects; for numbers, exact equality of rationals, else a
50-digit numeric check backed by ``simplify`` (a value written with a decimal point may match
an irrational one to a relative 1e-6); for expressions with symbols, a numeric probe at fixed
points (different at any point: not equal), then ``simplify(a - b) == 0``, then agreement at
every probe point.
"""

from __future__ import annotations

import ast
import random
import resource
import string
from functools import lru_cache
from typing import Any

from .compare import matching, quick_compare
from .parse import Answer, Equation, Expr, Items, Seq, Text, Union

EQUAL, DIFFERENT, GOLD_ERROR = "equal", "different", "gold_error"


def init_worker(memory_bytes: int | None) -> None:
    """Pool initializer: cap the address space, import sympy and warm the caches.

    The cap is ``memory_bytes`` on top of what the forked worker already maps: a worker forked
    from a large process (a trainer with torch loaded) starts out with its parent's mappings.
    """
    if memory_bytes:
        try:
            with open("/proc/self/statm") as f:
                mapped = int(f.read().split()[0]) * resource.getpagesize()
        except OSError:
            mapped = 0
        cap = mapped + memory_bytes
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    warm()


def warm() -> None:
    """Import sympy and the parts ``simplify`` loads lazily (a no-op the second time)."""
    import sympy

    x = _to_sympy("x")
    sympy.simplify(_to_sympy("(x+1)**2") - x**2 - 2 * x - 1 + _to_sympy("sqrt(2)/2"))


def ping() -> str:
    """A no-op task used to wait until a worker is up."""
    return "pong"


def compare(pred: Answer, gold: Answer) -> str:
    """Compare two parsed answers; returns ``equal``, ``different`` or ``gold_error: ...``."""
    try:
        _build(gold)
    except Exception as e:  # the gold answer is validated text: any failure is its fault
        return f"{GOLD_ERROR}: {type(e).__name__}: {e}"
    try:
        return EQUAL if _equal(pred, gold) else DIFFERENT
    except Exception:  # sympy failing on the prediction means it cannot be judged equal
        return DIFFERENT


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


def _equal(pred: Answer, gold: Answer) -> bool:
    quick = quick_compare(pred, gold)
    if quick is not None:
        return quick
    if isinstance(pred, Expr) and isinstance(gold, Expr):
        return _leaf_equal(pred, gold)
    if isinstance(pred, Equation) and isinstance(gold, Equation):
        return _equation_equal(_to_sympy(pred.py), _to_sympy(gold.py))
    if isinstance(pred, Seq) and isinstance(gold, Seq):
        return all(_equal(p, g) for p, g in zip(pred.items, gold.items, strict=True))
    if isinstance(pred, Union) and isinstance(gold, Union):
        return _union_equal(pred, gold)
    if isinstance(pred, Items) and isinstance(gold, Items):
        table = [[_equal(p, g) for g in gold.items] for p in pred.items]
        return matching(table)
    return isinstance(pred, Text) and pred == gold


def _leaf_equal(pred: Expr, gold: Expr) -> bool:
    a, b = _to_sympy(pred.py), _to_sympy(gold.py)
    decimal = pred.decimal or gold.decimal
    if pred.percent == gold.percent:
        return _expr_equal(a, b, decimal)
    pct, other = (a, b) if pred.percent else (b, a)
    return _expr_equal(other, pct, decimal) or _expr_equal(other, pct / 100, decimal)


def _expr_equal(a: Any, b: Any, decimal: bool) -> bool:
    import sympy

    if a == b:
        return True
    if a.has(sympy.oo, -sympy.oo, sympy.zoo) or b.has(sympy.oo, -sympy.oo, sympy.zoo):
        return False
    diff = a - b
    if diff == 0:
        return True
    if not diff.free_symbols:
        if a.is_Rational and b.is_Rational:
            return False
        scale = max(1, abs(complex(b.evalf(30))))
        gap = abs(complex(diff.evalf(50)))
        if decimal:
            return gap <= 1e-6 * scale
        if gap > 1e-12 * scale:
            return False
        return sympy.simplify(diff) == 0 or gap <= 1e-40 * scale
    gaps = _probe(diff, b)
    if any(g > 1e-9 for g in gaps):
        return False
    if sympy.simplify(diff) == 0:
        return True
    return len(gaps) >= 3


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

    if _expr_equal(d1, d2, False) or _expr_equal(d1, -d2, False):
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
