"""Spider/BIRD-style tasks from a user's files: rows of question, gold query and database.

A row (one JSON object per line, or one row of a ``datasets`` dataset) has:

- ``question`` (or ``prompt``): the question in words;
- ``query`` (or ``SQL``, ``sql``, ``gold``): the gold SQLite query;
- ``db_id``: the database's name;
- ``db_path`` (optional): the sqlite file; relative paths resolve against the ``db_dir``
  option, else the folder of the YAML file that registered the environment;
- ``evidence`` (optional, BIRD): a hint, appended to the question;
- ``task_id`` (or ``question_id``, optional): a stable id; ``<split>/<row number>`` otherwise.

Without ``db_path`` the database is looked up as ``<db_dir>/<db_id>/<db_id>.sqlite`` (Spider's
layout), ``<db_dir>/<db_id>.sqlite`` or ``.db``, and finally among the built-in databases, so
a user can also write questions of their own about ``store`` or ``flights``. Other scalar
fields (difficulty, ...) are kept in the task's metadata.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envhub.errors import ConfigError
from envhub.types import Task

QUESTION_KEYS = ("question", "prompt")
QUERY_KEYS = ("query", "SQL", "sql", "gold")
ID_KEYS = ("task_id", "question_id")
_CONSUMED = {*QUESTION_KEYS, *QUERY_KEYS, *ID_KEYS, "db_id", "db_path", "evidence"}
FORMAT_HINT = "see envhub/envs/sql/README.md, 'Your own tasks'"


def _first(row: dict[str, Any], keys: tuple[str, ...], renamed: str | None) -> Any:
    for key in ((renamed,) if renamed else ()) + keys:
        if row.get(key) not in (None, ""):
            return row[key]
    return None


def find_database(
    db_id: str, db_path: str | None, db_dir: Path | None, base: Path | None
) -> Path | None:
    """The sqlite file of a row, or ``None`` when no file is found (maybe a built-in id)."""
    if db_path:
        p = Path(db_path).expanduser()
        if not p.is_absolute():
            p = (db_dir or base or Path.cwd()) / p
        return p
    if db_dir is not None:
        for candidate in (
            db_dir / db_id / f"{db_id}.sqlite",
            db_dir / f"{db_id}.sqlite",
            db_dir / f"{db_id}.db",
        ):
            if candidate.is_file():
                return candidate
    return None


def row_to_sql_task(
    row: dict[str, Any],
    index: int,
    split: str,
    *,
    fields: dict[str, str],
    db_file: Path | None,
    schema: str,
) -> Task:
    """Build a task from one external row whose database was resolved to ``db_file``.

    Args:
        row: The row.
        index: Its position (for the default id and error messages).
        split: The split it belongs to.
        fields: ``dataset.fields`` renames (``question``, ``query``, ``db_id``, ``task_id``).
        db_file: The database file, or ``None`` for a built-in database.
        schema: The schema text shown to the model.
    """
    question = _first(row, QUESTION_KEYS, fields.get("question") or fields.get("prompt"))
    query = _first(row, QUERY_KEYS, fields.get("query") or fields.get("answer"))
    if question is None or query is None:
        raise ConfigError(
            f"row {index} of split {split!r} needs a question and a gold query (columns "
            f"{list(QUESTION_KEYS)} and {list(QUERY_KEYS)}; got {sorted(row)}); {FORMAT_HINT}"
        )
    prompt = str(question).strip()
    if row.get("evidence"):
        prompt += f"\nHint: {str(row['evidence']).strip()}"
    task_id = _first(row, ID_KEYS, fields.get("task_id"))
    extra = {
        k: v
        for k, v in row.items()
        if k not in _CONSUMED and isinstance(v, (str, int, float, bool))
    }
    metadata: dict[str, Any] = {**extra, "db_id": str(row.get("db_id") or ""), "schema": schema}
    if db_file is not None:
        metadata["db_path"] = str(db_file)
    return Task(
        task_id=str(task_id) if task_id is not None else f"{split}/{index}",
        prompt=prompt,
        answer=str(query).strip(),
        metadata=metadata,
    )
