"""The guarded executor against hostile queries: nothing is written, nothing hangs.

Each hostile query is asserted to be refused (or to fail harmlessly) and the database file's
sha256 to be unchanged; runaway queries are interrupted near their deadline.
"""

import sqlite3
import threading
import time

import pytest

from envhub.envs.sql import executor
from envhub.envs.sql.builder import BuiltinDatabases, sha256_file
from envhub.envs.sql.executor import (
    QueryError,
    QueryRefused,
    QueryTimeout,
    open_readonly,
    run_query,
)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return BuiltinDatabases(tmp_path_factory.mktemp("sqlcache")).path("store")


@pytest.fixture()
def checksum(db):
    before = sha256_file(db)
    yield before
    assert sha256_file(db) == before, "the database file changed"


def run(db, sql, timeout_s=1.0, max_rows=100):
    return run_query(db, sql, timeout_s=timeout_s, max_rows=max_rows)


def test_honest_query_runs(db, checksum):
    result = run(db, "SELECT COUNT(*) AS n FROM customers")
    assert result.rows == [(300,)] and result.columns == ("n",) and not result.truncated


HOSTILE = {
    "insert": "INSERT INTO customers (customer_id, first_name, last_name, city, country, "
    "signup_date) VALUES (9999, 'x', 'y', 'z', 'w', '2020-01-01')",
    "update": "UPDATE products SET price = 0",
    "delete": "DELETE FROM orders",
    "drop": "DROP TABLE orders",
    "create": "CREATE TABLE evil (a)",
    "temp_table": "CREATE TEMP TABLE evil (a)",
    "temp_view": "CREATE TEMP VIEW v AS SELECT 1",
    "alter": "ALTER TABLE customers ADD COLUMN evil TEXT",
    "attach": "ATTACH DATABASE '{tmp}/attached.db' AS evil",
    "detach": "DETACH DATABASE main",
    "vacuum_into": "VACUUM INTO '{tmp}/copy.db'",
    "vacuum": "VACUUM",
    "pragma_writable_schema": "PRAGMA writable_schema = ON",
    "pragma_journal": "PRAGMA journal_mode = WAL",
    "pragma_read": "PRAGMA table_info(customers)",
    "pragma_function": "SELECT * FROM pragma_table_info('customers')",
    "load_extension": "SELECT load_extension('/tmp/evil.so')",
    "begin": "BEGIN IMMEDIATE",
    "savepoint": "SAVEPOINT s",
    "reindex": "REINDEX",
    "analyze": "ANALYZE",
    "explain": "EXPLAIN SELECT 1",
    "cte_delete": "WITH x AS (SELECT 1) DELETE FROM orders",
    "cte_insert": "WITH x AS (SELECT 1) INSERT INTO categories SELECT 99, 'evil' FROM x",
    "replace": "REPLACE INTO categories VALUES (1, 'evil')",
    "two_statements": "SELECT 1; DROP TABLE orders",
    "two_statements_no_space": "SELECT 1;DELETE FROM orders;",
    "create_trigger": "CREATE TRIGGER t AFTER INSERT ON orders BEGIN DELETE FROM orders; END",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_statements_are_refused(db, checksum, tmp_path, name):
    sql = HOSTILE[name].format(tmp=tmp_path)
    with pytest.raises(QueryRefused):
        run(db, sql)
    assert list(tmp_path.iterdir()) == [], "a file was created"


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_authorizer_alone_refuses_what_text_checks_would(db, checksum, tmp_path, name):
    """Defence in depth: even past the text checks, the connection refuses every write."""
    sql = HOSTILE[name].format(tmp=tmp_path)
    if name.startswith("two_statements"):
        sql = sql.split(";")[1]
    if name == "explain":
        pytest.skip("EXPLAIN of a SELECT only reads; the text check refuses it")
    conn = open_readonly(db)
    try:
        with pytest.raises(sqlite3.Error):
            conn.execute(sql).fetchall()
    finally:
        conn.close()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT length(randomblob(500000000))",
        "SELECT length(zeroblob(500000000))",
        "SELECT length(printf('%.*c', 2000000000, 'x'))",  # 20 s in plain sqlite
        "SELECT length(format('%.*c', 2000000000, 'x'))",
        "SELECT length(printf('%2000000000d', 1))",
        # quadratic trim: 11 s in plain sqlite with 100 kB strings
        "SELECT length(trim(replace(hex(zeroblob(9990)), '0', 'a'), "
        "replace(hex(zeroblob(600)), '0', 'b') || 'a'))",
        "SELECT trim(randomblob(10000), randomblob(600))",
        "SELECT replace(hex(zeroblob(9000)), '0', 'a') LIKE '%' || "
        "replace(hex(zeroblob(5000)), '0', 'a') || 'b'",
    ],
)
def test_single_expensive_calls_fail_fast_or_finish_fast(db, checksum, sql):
    start = time.monotonic()
    try:
        run(db, sql)
    except QueryError:
        pass
    assert time.monotonic() - start < 0.5


def test_safe_replacements_keep_sqlite_semantics(db):
    rows = run(
        db,
        "SELECT printf('%5.2f|%s|%d|%%', 3.14159, 'ab', 7), format('%-3s|', 'x'), "
        "trim('xxhixx', 'x'), ltrim('abcab', 'ab'), rtrim('abcbb', 'b'), "
        "trim(12300, '0'), trim(NULL, 'a'), trim('  pad  ')",
    ).rows
    assert rows == [(" 3.14|ab|7|%", "x  |", "hi", "cab", "abc", "123", None, "pad")]


def test_errors_in_model_sql_are_query_errors(db):
    with pytest.raises(QueryError):
        run(db, "SELECT FROM WHERE nonsense")
    with pytest.raises(QueryError):
        run(db, "SELECT no_such_column FROM customers")


@pytest.mark.parametrize(
    "sql",
    [
        "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT MAX(x) FROM r",
        "SELECT COUNT(*) FROM order_items a, order_items b, order_items c",
        "SELECT a.first_name FROM customers a, customers b, customers c ORDER BY random() LIMIT 1",
        "WITH RECURSIVE r(s) AS (SELECT 'a' UNION ALL SELECT s || 'a' FROM r WHERE length(s) < "
        "19000) SELECT COUNT(*) FROM r a, r b",
        # many expensive calls per row: each is bounded, the deadline falls between rows
        "SELECT COUNT(*) FROM customers a, customers b WHERE "
        + " OR ".join(
            f"(a.customer_id || b.customer_id || replace(hex(zeroblob(9000)), '0', 'a')) "
            f"LIKE '%{'a' * 90}b{i}'"
            for i in range(20)
        ),
    ],
)
def test_runaway_queries_are_interrupted_near_the_deadline(db, checksum, sql):
    start = time.monotonic()
    with pytest.raises(QueryTimeout):
        run(db, sql, timeout_s=0.5)
    assert time.monotonic() - start < 2.0


def test_row_cap_truncates_an_endless_result(db, checksum):
    result = run(
        db,
        "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x FROM r",
        max_rows=50,
    )
    assert len(result.rows) == 50 and result.truncated
    assert result.rows[-1] == (50,)


def test_missing_database_is_unavailable_not_a_query_error(tmp_path):
    with pytest.raises(executor.DatabaseUnavailable):
        run(tmp_path / "nope.sqlite", "SELECT 1")
    assert not (tmp_path / "nope.sqlite").exists()


def test_concurrent_queries_from_many_threads(db, checksum):
    errors: list[BaseException] = []
    results: list[int] = []

    def work(i):
        try:
            if i % 4 == 0:
                with pytest.raises(QueryTimeout):
                    run(db, "SELECT COUNT(*) FROM order_items a, order_items b", timeout_s=0.3)
            elif i % 4 == 1:
                with pytest.raises(QueryRefused):
                    run(db, "DELETE FROM orders")
            else:
                results.append(run(db, "SELECT COUNT(*) FROM orders").rows[0][0])
        except BaseException as e:  # noqa: BLE001 (a thread's failure, collected and asserted after the join)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not errors and results == [1500] * 8


def test_long_query_text_is_refused(db):
    with pytest.raises(QueryRefused, match="characters"):
        run(db, "SELECT 1" + " " * executor.MAX_SQL_CHARS)


WIDE_ROWS = (
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r LIMIT 10001) SELECT "
    + ", ".join(f"replace(hex(zeroblob(9990)), '0', 'x') AS c{k}" for k in range(60))
    + " FROM r"
)
"""10,001 rows x 60 columns x 20 kB: 12 GB if fetched whole (issue 17, point 4)."""

_MEASURE = """
import sys
from envhub.envs.sql.executor import QueryFailed, run_query
def peak_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) // 1024
before = peak_mb()
try:
    run_query(sys.argv[1], sys.argv[2], timeout_s=2.0, max_rows=10_000)
    outcome = "ran"
except QueryFailed as e:
    outcome = e.kind
print(outcome, peak_mb() - before)
"""


def test_wide_row_memory_bomb_is_stopped_at_the_fetch_cap(db, checksum):
    """The peak resident memory of a fresh process running the bomb grows by far less than
    the result (before the byte cap: ~1-2.4 GB until the 2 s deadline)."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(db), WIDE_ROWS],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    outcome, grown_mb = out.stdout.split()
    assert outcome == "too_large"
    assert int(grown_mb) < 100, f"peak memory grew by {grown_mb} MB"


def test_fetch_cap_counts_bytes_not_rows(db):
    sql = "SELECT replace(hex(zeroblob(500)), '0', 'x') FROM orders"  # 1,500 rows of 1 kB
    assert len(run_query(db, sql, timeout_s=1.0, max_rows=10_000).rows) == 1500
    with pytest.raises(executor.QueryTooLarge, match="100,000 bytes"):
        run_query(db, sql, timeout_s=1.0, max_rows=10_000, max_result_bytes=100_000)
