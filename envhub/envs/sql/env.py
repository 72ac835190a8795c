"""Text-to-SQL on sqlite: the single-answer environment ``sql``.

The model sees a database schema and a question and answers with one SQLite query, in a
```` ```sql ```` fenced block (the last one counts; without one, the whole message is taken as
the query). ``format`` is 1 when the answer is one ``SELECT`` (or ``WITH``/``VALUES``)
statement in such a block, whether or not it runs; ``executes`` is 1 when it runs. The
verifier runs the model's query and the gold query under the guards of
:mod:`envhub.envs.sql.executor` and compares the result sets with :mod:`envhub.envs.sql.compare`.

Statuses: a model query that is refused, fails or returns the wrong rows is a wrong answer
(``ok``, ``correctness`` 0): it is the model's doing and worth learning from. A model query
that runs past its deadline is ``timeout``, and one whose result holds more than
``max_result_bytes`` is ``invalid_action`` (fetching stops at the cap). A gold query that is
missing, fails, runs past its own deadline or returns more than ``max_rows`` rows is a broken
gold, ``env_error`` (the task's data, as in every family); a database that cannot be opened is
``infra_error``. Neither is ever a match or a 0.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

from envhub.core import Episode, TaskEnv
from envhub.errors import (
    ConfigError,
    GoldAnswerError,
    InfraError,
    InvalidAction,
    NotSupported,
    VerifierTimeout,
)
from envhub.spec import EnvSpec
from envhub.types import Message, Task

from . import sqltext
from .builder import BuiltinDatabases, read_schema
from .compare import ABS_TOL, REL_TOL, Tolerance, compare_results
from .executor import (
    MAX_RESULT_BYTES,
    MAX_VALUE_BYTES,
    DatabaseUnavailable,
    QueryFailed,
    QueryRefused,
    QueryResult,
    QueryTimeout,
    QueryTooLarge,
    check_query_text,
    run_query,
)
from .external import find_database, row_to_sql_task
from .tasks import builtin_task_set

GOLD_CACHE_SIZE = 4096


def _single_select(sql: str) -> bool:
    """True when ``sql`` is one SELECT/WITH/VALUES statement (the requested format)."""
    try:
        check_query_text(sql)
    except QueryRefused:
        return False
    return True


class GoldQueryFailed(GoldAnswerError):
    """A broken gold query: missing, erroring, timed out or returning too many rows.

    The task's data is broken (``env_error``): never a match and never a 0.
    """


class SqlEnv(TaskEnv):
    """Single-answer text-to-SQL: one query per episode, judged against the gold query.

    Args:
        spec: The catalog entry.
        cache_dir: Folder of the built databases (``$ENVHUB_HOME/cache/sql`` by default).
        databases: Built-in databases whose tasks to use (all by default).
        db_dir: Folder of user databases (Spider layout or flat ``<db_id>.sqlite``).
        timeout_s: Deadline of the model's query, in seconds.
        gold_timeout_s: Deadline of the gold query (exceeding it is ``env_error``).
        max_rows: Rows fetched at most; a model result beyond it is a wrong answer.
        max_value_bytes: Largest string or blob a query may build or read (raise it for
            databases with long texts; it bounds the cost of one function call).
        max_result_bytes: Most bytes of values one query may fetch; a model query whose
            result holds more is ``invalid_action`` (it bounds the server's memory).
        rel_tol: Relative float tolerance of the comparison.
        abs_tol: Absolute float tolerance of the comparison.
        **options: Options of subclasses (:attr:`extra_options`); anything else is an error.
    """

    components = frozenset({"correctness", "format", "executes"})
    primary_component = "correctness"

    option_names: tuple[str, ...] = (
        "cache_dir",
        "databases",
        "db_dir",
        "timeout_s",
        "gold_timeout_s",
        "max_rows",
        "max_value_bytes",
        "max_result_bytes",
        "rel_tol",
        "abs_tol",
    )
    """The keyword options of :class:`SqlEnv` (the YAML ``options`` mapping)."""
    extra_options: tuple[str, ...] = ()
    """Option names a subclass accepts on top of :class:`SqlEnv`'s."""

    def __init__(
        self,
        spec: EnvSpec,
        *,
        cache_dir: str | None = None,
        databases: list[str] | None = None,
        db_dir: str | None = None,
        timeout_s: float = 2.0,
        gold_timeout_s: float = 10.0,
        max_rows: int = 10_000,
        max_value_bytes: int = MAX_VALUE_BYTES,
        max_result_bytes: int = MAX_RESULT_BYTES,
        rel_tol: float = REL_TOL,
        abs_tol: float = ABS_TOL,
        **options: Any,
    ) -> None:
        """Build from a spec; the keyword options are those of the class docstring."""
        self._check_options(options)
        super().__init__(spec, **options)
        self._set_limits(timeout_s, gold_timeout_s, max_rows, max_value_bytes, max_result_bytes)
        self.builtin = BuiltinDatabases(cache_dir)
        if isinstance(databases, str):
            databases = [databases]
        self.database_ids = list(databases) if databases is not None else None
        self.db_dir = Path(db_dir).expanduser() if db_dir else None
        self.tolerance = Tolerance(rel_tol=rel_tol, abs_tol=abs_tol)
        self._lock = threading.Lock()
        self._builtin_tasks: dict[str, list[Task]] | None = None
        self._schemas: dict[str, str] = {}
        self._gold: dict[tuple[str, str], QueryResult | Exception] = {}
        """Gold results by (database, query); deterministic failures are kept too."""
        self.options = {
            "cache_dir": cache_dir,
            "databases": self.database_ids,
            "db_dir": db_dir,
            "timeout_s": timeout_s,
            "gold_timeout_s": gold_timeout_s,
            "max_rows": max_rows,
            "max_value_bytes": max_value_bytes,
            "max_result_bytes": max_result_bytes,
            "rel_tol": rel_tol,
            "abs_tol": abs_tol,
            **options,
        }

    def _set_limits(
        self,
        timeout_s: float,
        gold_timeout_s: float,
        max_rows: int,
        max_value_bytes: int,
        max_result_bytes: int,
    ) -> None:
        if min(timeout_s, gold_timeout_s, max_rows, max_result_bytes) <= 0:
            raise ConfigError(
                f"{self.spec.name}: timeout_s, gold_timeout_s, max_rows and max_result_bytes "
                "must be > 0"
            )
        self.timeout_s = float(timeout_s)
        self.gold_timeout_s = float(gold_timeout_s)
        self.max_rows = int(max_rows)
        self.max_value_bytes = int(max_value_bytes)
        self.max_result_bytes = int(max_result_bytes)

    def _check_options(self, options: dict[str, Any]) -> None:
        unknown = sorted(set(options) - set(self.extra_options))
        if unknown:
            known = [*self.option_names, *self.extra_options]
            raise ConfigError(f"unknown sql option(s) {unknown}; valid options: {known}")

    # ------------------------------------------------------------------ data

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        """Tasks of the built-in databases (see :mod:`envhub.envs.sql.tasks`)."""
        with self._lock:
            if self._builtin_tasks is None:
                self._builtin_tasks = builtin_task_set(self.builtin, self.database_ids)
        if split not in self._builtin_tasks:
            raise ConfigError(f"{self.spec.name}: no split {split!r}; use 'train' or 'test'")
        tasks = self._builtin_tasks[split]
        if size is not None and size < len(tasks):
            keep = sorted(random.Random(seed).sample(range(len(tasks)), size))
            tasks = [tasks[i] for i in keep]
        return list(tasks)

    def row_to_task(self, row: dict[str, Any], index: int, split: str) -> Task:
        """A task from a Spider/BIRD-style row (see :mod:`envhub.envs.sql.external`)."""
        db_id = str(row.get(self.spec.dataset.fields.get("db_id", "db_id")) or "")
        db_file = find_database(db_id, row.get("db_path"), self.db_dir, self.spec.source_dir)
        if db_file is None and db_id in self.builtin.ids():
            path = self.builtin.path(db_id)
        elif db_file is None or not db_file.is_file():
            where = db_file or (self.db_dir and f"{self.db_dir}/{db_id}/{db_id}.sqlite")
            raise ConfigError(
                f"{self.spec.name}: row {index} of split {split!r}: database {db_id!r} not "
                f"found (looked for {where or 'nothing: set the db_dir option'}); give the "
                "row a db_path or set options.db_dir"
            )
        else:
            path = db_file
        row = {**row, "db_id": db_id}
        return row_to_sql_task(
            row,
            index,
            split,
            fields=self.spec.dataset.fields,
            db_file=db_file,
            schema=self._schema(path),
        )

    def _schema(self, path: Path) -> str:
        key = str(path)
        if key not in self._schemas:
            self._schemas[key] = read_schema(path)
        return self._schemas[key]

    def task_from_gold(self, gold: str) -> Task:
        """Not offered: a gold query means nothing without its database."""
        raise NotSupported(f"{self.spec.name} needs the task's database: use --task-id")

    def db_path(self, task: Task) -> Path:
        """The database file of ``task``.

        Raises:
            InfraError: The task names no database, or its file is missing.
        """
        meta = task.metadata
        if meta.get("db_path"):
            path = Path(meta["db_path"])
        elif meta.get("db_id") in self.builtin.ids():
            path = self.builtin.path(meta["db_id"])
        else:
            raise InfraError(
                f"task {task.task_id!r} names no known database "
                f"(db_id={meta.get('db_id')!r}, no db_path)"
            )
        if not path.is_file():
            raise InfraError(f"database file {path} of task {task.task_id!r} is missing")
        return path

    # ------------------------------------------------------------------ verification

    def run(
        self, db: Path, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None
    ) -> QueryResult:
        """Run one query under the guards with this environment's limits."""
        return run_query(
            db,
            sql,
            timeout_s=timeout_s or self.timeout_s,
            max_rows=max_rows or self.max_rows,
            max_value_bytes=self.max_value_bytes,
            max_result_bytes=self.max_result_bytes,
        )

    def gold_result(self, task: Task, db: Path) -> QueryResult:
        """The gold query's result (cached).

        Raises:
            GoldQueryFailed: The gold query is missing, fails, times out or returns too many
                rows.
            InfraError: The database cannot be opened.
        """
        if not task.answer:
            raise GoldQueryFailed(f"task {task.task_id!r} has no gold query")
        key = (str(db), task.answer)
        cached = self._gold.get(key)
        if cached is None:
            cached = self._run_gold(task, db)
            if not isinstance(cached, (QueryTimeout, DatabaseUnavailable)):  # may pass later
                with self._lock:
                    if len(self._gold) >= GOLD_CACHE_SIZE:
                        self._gold.pop(next(iter(self._gold)))
                    self._gold[key] = cached
        if isinstance(cached, QueryResult):
            return cached
        if isinstance(cached, DatabaseUnavailable):  # the database, not the gold
            raise InfraError(str(cached)) from cached
        raise GoldQueryFailed(
            f"gold query of task {task.task_id!r} failed: {type(cached).__name__}: {cached}"
        )

    def _run_gold(self, task: Task, db: Path) -> QueryResult | Exception:
        try:
            result = self.run(db, task.answer or "", timeout_s=self.gold_timeout_s)
        except (QueryFailed, DatabaseUnavailable) as e:
            return e
        if result.truncated:
            return ValueError(
                f"it returns more than max_rows={self.max_rows} rows; raise the max_rows option"
            )
        return result

    def judge(
        self, task: Task, sql: str, in_format: bool
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """Run ``sql`` and compare with the gold result: the components and details.

        Raises:
            VerifierTimeout: The model's query ran past its deadline.
            InvalidAction: The model's query returned more than ``max_result_bytes``.
            GoldQueryFailed: The gold query failed (``env_error``).
            InfraError: The database cannot be opened.
        """
        db = self.db_path(task)
        gold = self.gold_result(task, db)
        ordered = sqltext.orders_at_top_level(task.answer or "")
        details: dict[str, Any] = {"sql": sql, "ordered": ordered, "gold_rows": len(gold.rows)}
        fmt = 1.0 if in_format and _single_select(sql) else 0.0
        try:
            pred = self.run(db, sql)
        except QueryTimeout as e:
            raise VerifierTimeout(f"the model's query: {e}") from e
        except QueryTooLarge as e:
            raise InvalidAction(f"the model's query: {e}") from e
        except DatabaseUnavailable as e:
            raise InfraError(str(e)) from e
        except QueryFailed as e:
            details.update(query_error_kind=e.kind, query_error=str(e))
            return {"correctness": 0.0, "format": fmt, "executes": 0.0}, details
        details["rows"] = len(pred.rows)
        if pred.truncated:
            details["reason"] = f"the query returns more than max_rows={self.max_rows} rows"
            return {"correctness": 0.0, "format": fmt, "executes": 1.0}, details
        verdict = compare_results(gold.rows, pred.rows, ordered=ordered, tol=self.tolerance)
        details["reason"] = verdict.reason
        return {"correctness": float(verdict.match), "format": fmt, "executes": 1.0}, details

    def score(self, task: Task, response: Message) -> tuple[dict[str, float], dict[str, Any]]:
        """Judge the query in ``response`` (last ```sql block, else the whole message)."""
        found = sqltext.extract_sql(response.content)
        return self.judge(task, found.sql, found.fenced)

    def reference_action(self, episode: Episode) -> Message:
        """The gold query in the requested format."""
        return Message(role="assistant", content=f"```sql\n{episode.task.answer}\n```")

    def info(self) -> dict[str, Any]:
        """The base info plus the databases and limits."""
        return {
            **super().info(),
            "databases": self.database_ids or self.builtin.ids(),
            "timeout_s": self.timeout_s,
            "max_rows": self.max_rows,
        }
