"""Result-set comparison rules: order, duplicates, NULLs, floats, types, column order."""

from envhub.envs.sql.compare import Tolerance, compare_results


def same(gold, pred, ordered=False, **kw):
    return compare_results(gold, pred, ordered=ordered, **kw).match


def test_row_order_ignored_unless_gold_orders():
    gold = [(1, "a"), (2, "b"), (3, "c")]
    shuffled = [(3, "c"), (1, "a"), (2, "b")]
    assert same(gold, shuffled)
    verdict = compare_results(gold, shuffled, ordered=True)
    assert not verdict.match and "order" in verdict.reason
    assert same(gold, list(gold), ordered=True)


def test_duplicates_count_as_a_multiset():
    assert not same([(1,), (1,), (2,)], [(1,), (2,)])
    assert not same([(1,), (1,), (2,)], [(1,), (2,), (2,)])
    assert same([(1,), (1,), (2,)], [(2,), (1,), (1,)])


def test_null_equals_null_only():
    assert same([(None, 1)], [(None, 1)])
    assert not same([(None,)], [(0,)])
    assert not same([(None,)], [("",)])
    assert not same([(0,)], [(None,)])


def test_float_tolerance_and_int_float_equality():
    assert same([(0.1 + 0.2,)], [(0.3,)])
    assert same([(2,)], [(2.0,)])
    assert same([(1e12 / 3,)], [(1e12 / 3 * (1 + 1e-12),)])
    assert not same([(3.14159,)], [(3.14,)])  # rounding is a different answer
    assert not same([(100.0,)], [(100.001,)])
    loose = Tolerance(rel_tol=1e-3)
    assert compare_results([(100.0,)], [(100.001,)], ordered=False, tol=loose).match


def test_text_never_equals_a_number_and_compares_exactly():
    assert not same([(5,)], [("5",)])
    assert not same([("abc",)], [("ABC",)])
    assert not same([("abc",)], [("abc ",)])
    assert same([(b"\x00\x01",)], [(b"\x00\x01",)])


def test_column_names_and_order_are_ignored():
    gold = [("Ana", 3), ("Ben", 5)]
    assert same(gold, [(5, "Ben"), (3, "Ana")])
    assert same(gold, [(3, "Ana"), (5, "Ben")], ordered=True)
    assert not same(gold, [(5, "Ana"), (3, "Ben")])  # values mixed across rows


def test_column_permutation_with_equal_columns():
    gold = [(1, 1, 2), (2, 2, 3)]
    assert same(gold, [(2, 1, 1), (3, 2, 2)])
    assert not same(gold, [(2, 1, 1), (3, 2, 3)])


def test_extra_or_missing_columns_and_rows_differ():
    assert compare_results([(1, "a")], [(1,)], ordered=False).reason.startswith("expected 2 col")
    assert compare_results([(1,)], [(1,), (2,)], ordered=False).reason.startswith("expected 1 row")
    assert same([], [])
    assert not same([(1,)], [])


def test_near_rounding_boundary_values_still_match():
    # 6-significant-digit sort keys differ, so the tolerant fallback must pair them.
    a = 1.2345649999999
    b = 1.2345650000001
    gold = [(a, "x"), (2.0, "y")]
    pred = [(2.0, "y"), (b, "x")]
    assert same(gold, pred)


def test_large_results_compare_quickly():
    import time

    gold = [(i, f"n{i}", i * 0.5) for i in range(10_000)]
    t = time.perf_counter()
    assert same(gold, list(reversed(gold)))  # exact multiset: the fast path
    assert same(gold, [(c, a, b) for a, b, c in reversed(gold)])  # columns permuted
    assert not same(gold, [(a, b, c + 1) for a, b, c in gold])
    assert time.perf_counter() - t < 3.0  # generous: the test machine is shared
