"""Result-set comparison: does the model's result equal the gold query's?

The rules (documented in ``envhub/envs/sql/README.md``):

- **Order** matters only when the gold query orders its final result (``ORDER BY`` at the
  top level); otherwise rows compare as a multiset.
- **Duplicates** count: rows compare as a multiset, not a set, so a missing ``DISTINCT`` (or
  an extra one) is a different answer.
- **NULL** equals NULL (unlike in SQL), and only NULL.
- **Numbers** compare by value across int and float (``2`` equals ``2.0``); two floats are
  equal within ``rel_tol`` (1e-9) or ``abs_tol`` (1e-9), which absorbs summation-order noise
  (``AVG(x)`` against ``SUM(x) * 1.0 / COUNT(x)``) but not rounding (``ROUND(x, 2)`` is a
  different answer). Text never equals a number (``'5'`` is not ``5``); text compares exactly.
- **Column names** are ignored; **column order** is ignored too (as in Spider's execution
  match): the result matches when some permutation of the model's columns matches. The
  number of columns must be equal: an extra column is a different answer.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

Row = tuple[Any, ...]
REL_TOL = 1e-9
ABS_TOL = 1e-9
MAX_PERMUTATIONS = 2000
"""Column permutations tried at most (only those whose columns' values agree are tried)."""
GREEDY_LIMIT = 3000
"""Above this many rows the tolerant fallback matching is skipped (it is quadratic)."""


@dataclass(frozen=True)
class Verdict:
    """The outcome of a comparison."""

    match: bool
    reason: str
    """Why they differ (or ``"match"``), in words a user can act on."""


@dataclass(frozen=True)
class Tolerance:
    """Float tolerance of the comparison."""

    rel_tol: float = REL_TOL
    abs_tol: float = ABS_TOL

    def equal(self, a: Any, b: Any) -> bool:
        """Value equality under the rules of this module."""
        if a is None or b is None:
            return a is None and b is None
        a_num, b_num = _is_number(a), _is_number(b)
        if a_num or b_num:
            if not (a_num and b_num):
                return False
            if isinstance(a, int) and isinstance(b, int):
                return a == b
            fa, fb = float(a), float(b)
            if math.isinf(fa) or math.isinf(fb):
                return fa == fb
            return math.isclose(fa, fb, rel_tol=self.rel_tol, abs_tol=self.abs_tol)
        return type(a) is type(b) and a == b

    def rows_equal(self, a: Sequence[Any], b: Sequence[Any]) -> bool:
        """Element-wise equality of two equally long rows."""
        return len(a) == len(b) and all(self.equal(x, y) for x, y in zip(a, b, strict=True))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def sort_key(v: Any) -> tuple[int, Any]:
    """A total order over sqlite values; floats rounded so near-equal values sort together."""
    if v is None:
        return (0, 0)
    if _is_number(v):
        f = float(v)
        return (1, f if math.isinf(f) else float(f"{f:.6g}"))
    if isinstance(v, str):
        return (2, v)
    if isinstance(v, bytes):
        return (3, v)
    return (4, repr(v))


def _row_key(row: Sequence[Any]) -> tuple[tuple[int, Any], ...]:
    return tuple(sort_key(v) for v in row)


def multiset_equal(
    a: Sequence[Any], b: Sequence[Any], eq: Callable[[Any, Any], bool], key: Callable[[Any], Any]
) -> bool:
    """Equality of two multisets under a tolerant ``eq``.

    Fast path: sort both by ``key`` and compare pairwise. When that fails (a value near a
    rounding boundary can sort differently), fall back to greedy matching for small inputs.
    """
    if len(a) != len(b):
        return False
    if _exactly_equal_multisets(a, b):
        return True
    if not (_has_float(a) or _has_float(b)):
        return False  # tolerance only matters for floats: the exact answer stands
    sa, sb = sorted(a, key=key), sorted(b, key=key)
    if all(eq(x, y) for x, y in zip(sa, sb, strict=True)):
        return True
    if len(a) > GREEDY_LIMIT:
        return False
    unused = list(sb)
    for x in sa:
        for i, y in enumerate(unused):
            if eq(x, y):
                del unused[i]
                break
        else:
            return False
    return True


def _exactly_equal_multisets(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Exact multiset equality (``2 == 2.0``, ``None == None``), fast; False when unsure."""
    try:
        return Counter(a) == Counter(b)
    except TypeError:  # unhashable values
        return False


def _has_float(items: Sequence[Any]) -> bool:
    for item in items:
        if isinstance(item, float) or (
            isinstance(item, tuple) and any(isinstance(v, float) for v in item)
        ):
            return True
    return False


@dataclass(frozen=True)
class _Profile:
    """A cheap summary of a column: counts by kind and the numeric range."""

    counts: tuple[int, int, int, int]
    low: float | None
    high: float | None

    @classmethod
    def of(cls, column: Sequence[Any]) -> _Profile:
        nums = [float(v) for v in column if _is_number(v)]
        nulls = sum(v is None for v in column)
        texts = sum(isinstance(v, str) for v in column)
        return cls(
            (nulls, texts, len(nums), len(column) - nulls - texts - len(nums)),
            min(nums) if nums else None,
            max(nums) if nums else None,
        )

    def may_equal(self, other: _Profile, tol: Tolerance) -> bool:
        return (
            self.counts == other.counts
            and tol.equal(self.low, other.low)
            and tol.equal(self.high, other.high)
        )


def _candidate_permutations(
    gold: list[Row], pred: list[Row], ncols: int, tol: Tolerance
) -> Iterator[tuple[int, ...]]:
    """Column permutations ``p`` (gold column ``j`` <- pred column ``p[j]``) worth trying.

    Only pairs of columns holding the same multiset of values can be matched; the identity
    comes first when it is possible.
    """
    gcols = [[r[j] for r in gold] for j in range(ncols)]
    pcols = [[r[k] for r in pred] for k in range(ncols)]
    gprof, pprof = [_Profile.of(c) for c in gcols], [_Profile.of(c) for c in pcols]
    options = [
        [
            k
            for k in range(ncols)
            if gprof[j].may_equal(pprof[k], tol)
            and multiset_equal(gcols[j], pcols[k], tol.equal, sort_key)
        ]
        for j in range(ncols)
    ]
    for j, opts in enumerate(options):  # identity first
        if j in opts:
            opts.remove(j)
            opts.insert(0, j)
    chosen: list[int] = []
    used = [False] * ncols

    def walk(j: int) -> Iterator[tuple[int, ...]]:
        if j == ncols:
            yield tuple(chosen)
            return
        for k in options[j]:
            if not used[k]:
                used[k] = True
                chosen.append(k)
                yield from walk(j + 1)
                chosen.pop()
                used[k] = False

    yield from walk(0)


def compare_results(
    gold: Sequence[Row], pred: Sequence[Row], *, ordered: bool, tol: Tolerance | None = None
) -> Verdict:
    """Compare the model's rows with the gold rows.

    Args:
        gold: Rows of the gold query.
        pred: Rows of the model's query.
        ordered: Whether row order matters (the gold query orders at the top level).
        tol: Float tolerance; the module defaults when ``None``.

    Returns:
        Whether they match and, if not, why.
    """
    tol = tol or Tolerance()
    gold, pred = [tuple(r) for r in gold], [tuple(r) for r in pred]
    if not gold and not pred:
        return Verdict(True, "match (both empty)")
    if len(gold) != len(pred):
        return Verdict(False, f"expected {len(gold)} rows, got {len(pred)}")
    ncols = len(gold[0])
    if pred and len(pred[0]) != ncols:
        return Verdict(False, f"expected {ncols} columns, got {len(pred[0])}")
    if gold == pred if ordered else _exactly_equal_multisets(gold, pred):
        return Verdict(True, "match")  # the common case, without tolerance or permutations
    same_rows_other_order = False
    for tried, perm in enumerate(_candidate_permutations(gold, pred, ncols, tol), 1):
        permuted = [tuple(r[k] for k in perm) for r in pred]
        if ordered and all(tol.rows_equal(g, p) for g, p in zip(gold, permuted, strict=True)):
            return Verdict(True, "match")
        if multiset_equal(gold, permuted, tol.rows_equal, _row_key):
            if not ordered:
                return Verdict(True, "match")
            same_rows_other_order = True
        if tried >= MAX_PERMUTATIONS:
            break
    if same_rows_other_order:
        return Verdict(False, "same rows in a different order (the question asks for an order)")
    return Verdict(False, "different values")
