"""The guarded executor: run one untrusted SELECT against a sqlite file, and nothing else.

sqlite runs in the server's own process, so the guards are sqlite's own and they are layered:

1. **Text checks** before sqlite sees the query: exactly one statement, and it must start with
   ``SELECT``, ``WITH`` or ``VALUES`` (``EXPLAIN``, ``PRAGMA``, ``VACUUM``... are refused).
2. **A read-only connection**: ``file:<path>?mode=ro`` URI, no implicit transactions.
3. **An authorizer** (``set_authorizer``) that allows only what a query needs (``SELECT``,
   column reads, function calls, recursive CTEs) and refuses everything else: writes, DDL
   (temporary tables included), transactions, savepoints, ``ATTACH``/``DETACH`` (which is
   also how ``VACUUM INTO`` writes a copy, even on a read-only connection), ``PRAGMA``
   statements and the ``pragma_*`` table functions, and the ``load_extension`` function.
4. **Limits** (``setlimit``): no attached databases at all, strings and blobs of at most
   ``max_value_bytes`` (20 kB by default: ``randomblob(1e9)`` fails at once), ``LIKE``
   patterns of at most 100 characters, bounded SQL length. Extension loading stays disabled
   (Python never enables it unless asked).
5. **A deadline** enforced by a progress handler checked every 100 virtual-machine
   instructions: a runaway query (infinite recursive CTE, cross joins) is interrupted inside
   sqlite and reported as :class:`QueryTimeout`. One function call is never interrupted, so
   the value limit above bounds each call's work and :mod:`envhub.envs.sql.safefuncs` replaces the
   functions that are slow even so (``printf``'s repeat, ``trim`` with a character set).
6. **A row cap**: at most ``max_rows`` rows are fetched; more is reported as ``truncated``.
7. **A byte cap on fetching**: rows are fetched one by one and the bytes of their values
   counted; past ``max_result_bytes`` (16 MB) fetching stops and the rows are dropped
   (:class:`QueryTooLarge`). Without it, 10,001 rows of 60 columns of 20 kB grew the server
   by 2 GB before the deadline struck. Inside sqlite a query's memory is bounded already: a
   record (a row in a sorter or a temporary table) is at most ``max_value_bytes`` long, and
   sorters and temporary tables spill to temporary files beyond the page cache (measured:
   sorts, ``DISTINCT``, ``UNION``, windows and materialized CTEs over a million 20 kB values
   peak under 30 MB of resident memory until their deadline).

What is not covered: the temporary disk space a query fills before its deadline; one row
fetched beyond the cap (at most 2,000 columns of ``max_value_bytes``); an overshoot of the
deadline by up to ~100 expensive function calls (about a second in the worst case found);
and sqlite bugs themselves. Each call opens its own connection, so any number of threads may
call :func:`run_query` at once.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import safefuncs, sqltext

PROGRESS_OPS = 100
"""Virtual-machine instructions between two deadline checks (costs ~15% of query time)."""
MAX_VALUE_BYTES = 20_000
"""Largest string or blob a query may build or read. It bounds the work of one function call
(which the deadline cannot interrupt): ``replace``/``instr`` on such strings take ~15 ms."""
MAX_LIKE_PATTERN = 100
"""Longest ``LIKE``/``GLOB`` pattern (pattern matching costs length x pattern)."""
MAX_SQL_CHARS = 20_000
"""Longest query text accepted."""
MAX_RESULT_BYTES = 16_000_000
"""Most bytes of values one query may fetch (strings and blobs counted by length, other values
as 8 bytes). A wide result (10,000 rows of 60 columns of 20 kB is 12 GB) is stopped at this
cap while it is fetched, so a query holds at most this much plus one row in the server."""
ALLOWED_LEADING = frozenset({"SELECT", "WITH", "VALUES"})
DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
_ALLOWED_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE})

Row = tuple[Any, ...]


class QueryFailed(Exception):
    """The query did not produce a result; ``kind`` says why."""

    kind = "error"


class QueryError(QueryFailed):
    """sqlite rejected or failed the query (syntax error, unknown column, value too big)."""

    kind = "error"


class QueryRefused(QueryFailed):
    """The guards refused the query (not a single SELECT, or an operation it may not do)."""

    kind = "refused"


class QueryTooLarge(QueryFailed):
    """The result holds more bytes than the fetch cap (``max_result_bytes``)."""

    kind = "too_large"


class QueryTimeout(QueryFailed):
    """The query ran past its deadline and was interrupted inside sqlite."""

    kind = "timeout"


class DatabaseUnavailable(Exception):
    """The database file is missing or cannot be opened: an infrastructure problem."""


@dataclass(frozen=True)
class QueryResult:
    """The result of one query."""

    columns: tuple[str, ...]
    """Column names, as sqlite reports them (ignored by the comparison)."""
    rows: list[Row] = field(default_factory=list)
    truncated: bool = False
    """True when the query had more than ``max_rows`` rows; ``rows`` holds the first ones."""
    elapsed_s: float = 0.0


def _authorize(
    action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None
) -> int:
    if action in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() not in DENIED_FUNCTIONS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def check_query_text(sql: str) -> None:
    """Refuse anything but exactly one ``SELECT``/``WITH``/``VALUES`` statement.

    Raises:
        QueryRefused: Empty, too long, several statements, or another kind of statement.
    """
    if len(sql) > MAX_SQL_CHARS:
        raise QueryRefused(f"query is {len(sql)} characters; at most {MAX_SQL_CHARS} allowed")
    stmts = sqltext.statements(sql)
    if not stmts:
        raise QueryRefused("no SQL statement found")
    if len(stmts) > 1:
        raise QueryRefused(f"exactly one statement allowed, got {len(stmts)}")
    keyword = sqltext.leading_keyword(sql)
    if keyword not in ALLOWED_LEADING:
        shown = keyword or stmts[0][0].text[:20]
        raise QueryRefused(f"only a SELECT query is allowed, got {shown!r}")


def open_readonly(
    db_path: str | Path, *, max_value_bytes: int = MAX_VALUE_BYTES
) -> sqlite3.Connection:
    """Open ``db_path`` read-only with the authorizer, limits and safe functions installed.

    Raises:
        DatabaseUnavailable: The file does not exist or sqlite cannot open it.
    """
    path = Path(db_path).resolve()
    if not hasattr(sqlite3.Connection, "setlimit"):
        raise DatabaseUnavailable(
            "the SQL guards need sqlite3.Connection.setlimit "
            "(Python 3.11 or newer); refusing to run untrusted SQL"
        )
    if not path.is_file():
        raise DatabaseUnavailable(f"database file {path} does not exist")
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as e:
        raise DatabaseUnavailable(f"cannot open database {path}: {e}") from e
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, MAX_LIKE_PATTERN)
    conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_CHARS * 4)
    conn.setlimit(sqlite3.SQLITE_LIMIT_TRIGGER_DEPTH, 1)
    conn.set_authorizer(_authorize)
    safefuncs.install(conn)
    return conn


def run_query(
    db_path: str | Path,
    sql: str,
    *,
    timeout_s: float,
    max_rows: int,
    max_value_bytes: int = MAX_VALUE_BYTES,
    max_result_bytes: int = MAX_RESULT_BYTES,
) -> QueryResult:
    """Run one untrusted query under every guard and fetch at most ``max_rows`` rows.

    Args:
        db_path: The sqlite file.
        sql: The query text (one statement; a trailing ``;`` is fine).
        timeout_s: Wall-clock deadline for preparing, running and fetching.
        max_rows: Row cap; one more row is read to tell whether the result was cut.
        max_value_bytes: Largest string or blob the query may build or read.
        max_result_bytes: Most bytes of values fetched (see :data:`MAX_RESULT_BYTES`).

    Returns:
        The columns and rows.

    Raises:
        QueryRefused: The text checks or the authorizer refused the query.
        QueryTimeout: The deadline passed; sqlite was interrupted.
        QueryTooLarge: The rows fetched hold more than ``max_result_bytes``.
        QueryError: sqlite reported any other error.
        DatabaseUnavailable: The database cannot be opened.
    """
    check_query_text(sql)
    conn = open_readonly(db_path, max_value_bytes=max_value_bytes)
    start = time.monotonic()
    deadline = start + timeout_s
    fired = [False]

    def progress() -> int:
        if time.monotonic() > deadline:
            fired[0] = True
            return 1
        return 0

    conn.set_progress_handler(progress, PROGRESS_OPS)
    try:
        cursor = conn.execute(sql)
        columns = tuple(d[0] for d in cursor.description or ())
        rows = _fetch_bounded(cursor, max_rows + 1, max_result_bytes)
    except (sqlite3.Error, sqlite3.Warning) as e:  # Python 3.10 warns on two statements
        raise _classify(e, fired[0] or time.monotonic() > deadline, timeout_s) from None
    finally:
        conn.close()
    return QueryResult(
        columns=columns,
        rows=[tuple(r) for r in rows[:max_rows]],
        truncated=len(rows) > max_rows,
        elapsed_s=time.monotonic() - start,
    )


def _fetch_bounded(cursor: sqlite3.Cursor, max_rows: int, max_bytes: int) -> list[Row]:
    """Fetch up to ``max_rows`` rows, counting the bytes of their values as they come.

    Raises:
        QueryTooLarge: The rows fetched so far hold more than ``max_bytes``; they are dropped
            at once, so the memory a query holds is bounded by the cap plus one row.
    """
    rows: list[Row] = []
    size = 0
    for row in cursor:
        size += sum(len(v) if isinstance(v, (str, bytes)) else 8 for v in row)
        if size > max_bytes:
            fetched = len(rows) + 1
            rows.clear()
            raise QueryTooLarge(
                f"the result holds more than {max_bytes:,} bytes after {fetched:,} rows; "
                "select fewer or shorter columns, or aggregate"
            )
        rows.append(row)
        if len(rows) >= max_rows:
            break
    return rows


def _classify(exc: Exception, late: bool, timeout_s: float) -> QueryFailed:
    text = str(exc)
    if late and "interrupt" in text:
        return QueryTimeout(f"query ran past its {timeout_s:g} s deadline and was interrupted")
    if "not authorized" in text or "too many attached" in text:
        return QueryRefused(f"operation not allowed ({text}); only read-only SELECT queries run")
    if "one statement" in text:
        return QueryRefused("exactly one statement allowed")
    return QueryError(text)


def format_table(
    result: QueryResult, *, max_cell: int = 80, header: Sequence[str] | None = None
) -> str:
    """Render a result as a small text table (pipe separated) for the model to read."""
    cols = list(header or result.columns)
    lines = [" | ".join(cols)]
    for row in result.rows:
        cells = []
        for v in row:
            s = "NULL" if v is None else (v.hex() if isinstance(v, bytes) else str(v))
            cells.append(s if len(s) <= max_cell else s[: max_cell - 3] + "...")
        lines.append(" | ".join(cells))
    n = len(result.rows)
    if result.truncated:
        lines.append(f"({n} rows shown; the result has more rows)")
    else:
        lines.append(f"({n} row{'s' if n != 1 else ''})")
    return "\n".join(lines)
