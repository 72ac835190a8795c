"""Instantiate the built-in templates into tasks, and split them into train and test.

For each template the candidate parameter rows come from its ``params`` query; a fixed seed
picks up to ``limit`` of them. An instance is kept only when its gold query returns at least
one row and, for ordered golds, its sort key has no ties (within the result, and between the
last row and the next one for top-N questions). Instances go round-robin to the splits: every
fifth instance of a template is a test task, the rest are train tasks, so both splits cover
the same kinds of question with different values. Task ids look like
``store/top_spenders/2`` (database, template, instance number) and never change with
``dataset.seed`` or ``dataset.size``, which only subsample. The tasks of each database are
cached next to it as JSON, so servers and forks start without re-running the templates.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import sqlite3
import uuid
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path
from typing import Any

from envhub.types import Task

from . import sqltext
from .builder import BuiltinDatabases, read_schema
from .tasksets import TEMPLATES, Template

log = logging.getLogger("envhub.sql")

INSTANCE_SEED = 20240601
"""Seed that picks the parameter values; fixed so task ids always mean the same question."""
TEST_EVERY = 4
"""Every fifth instance of a template is a test task."""


def render(template: Template, params: dict[str, Any]) -> tuple[str, str]:
    """The question and gold SQL of one instance."""
    question = template.question.format(**{k: str(v) for k, v in params.items()})
    sql = template.sql.format(**{k: sqltext.quote_literal(v) for k, v in params.items()})
    return question, sql


def _readonly(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


def _candidates(conn: sqlite3.Connection, template: Template) -> list[dict[str, Any]]:
    if template.params is None:
        return [{}]
    cur = conn.execute(template.params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _keys(rows: Iterable[tuple], sort_key: tuple[int, ...]) -> list[tuple]:
    return [tuple(r[i] for i in sort_key) for r in rows]


def instance_problem(
    conn: sqlite3.Connection, template: Template, params: dict[str, Any]
) -> str | None:
    """Why this instance cannot be a task (empty result, ambiguous order), or ``None``."""
    _, sql = render(template, params)
    rows = conn.execute(sql).fetchall()
    if not rows:
        return "the gold query returns no rows"
    if sqltext.orders_at_top_level(sql):
        if not template.sort_key:
            return "the gold query orders but the template names no sort_key"
        keys = _keys(rows, template.sort_key)
        if len(set(keys)) != len(keys):
            return "the sort key ties within the result"
        if "n" in params:
            _, longer = render(template, {**params, "n": int(params["n"]) + 1})
            more = _keys(conn.execute(longer).fetchall(), template.sort_key)
            if len(more) > len(keys) and more[len(keys)] == keys[-1]:
                return "the sort key ties at the LIMIT boundary"
    return None


def template_tasks(conn: sqlite3.Connection, template: Template, schema: str) -> list[Task]:
    """The kept instances of one template, as tasks (split recorded in metadata)."""
    rng = random.Random(f"{INSTANCE_SEED}/{template.db_id}/{template.key}")
    candidates = _candidates(conn, template)
    rng.shuffle(candidates)
    tasks: list[Task] = []
    for params in candidates:
        if len(tasks) >= template.limit:
            break
        if instance_problem(conn, template, params) is not None:
            continue
        question, sql = render(template, params)
        index = len(tasks)
        tasks.append(
            Task(
                task_id=f"{template.db_id}/{template.key}/{index}",
                prompt=question,
                answer=sql,
                metadata={
                    "db_id": template.db_id,
                    "schema": schema,
                    "template": template.key,
                    "params": params,
                    "split": "test" if index % TEST_EVERY == TEST_EVERY - 1 else "train",
                },
            )
        )
    return tasks


def builtin_task_set(
    databases: BuiltinDatabases, db_ids: Iterable[str] | None = None
) -> dict[str, list[Task]]:
    """Every built-in task, by split (``train`` and ``test``).

    Args:
        databases: Where the built-in databases live (built on first use).
        db_ids: Restrict to these databases; all when ``None``.
    """
    wanted = list(db_ids) if db_ids is not None else databases.ids()
    unknown = sorted(set(wanted) - set(databases.ids()))
    if unknown:
        raise KeyError(f"unknown built-in database(s) {unknown}; choose from {databases.ids()}")
    out: dict[str, list[Task]] = {"train": [], "test": []}
    for db_id in wanted:
        for task in database_tasks(databases, db_id):
            out[task.metadata["split"]].append(task)
    return out


def database_tasks(databases: BuiltinDatabases, db_id: str) -> list[Task]:
    """The tasks of one built-in database, from a cache file keyed by everything they depend on.

    The key hashes the database's checksum, its templates and the instancing constants, so a
    changed template or database can never be served stale tasks.
    """
    path = databases.path(db_id)
    templates = [t for t in TEMPLATES if t.db_id == db_id]
    key = hashlib.sha256(
        repr((databases.expected_checksum(db_id), templates, INSTANCE_SEED, TEST_EVERY)).encode()
    ).hexdigest()[:16]
    cache = databases.cache_dir / f"tasks-{db_id}-{key}.json"
    if cache.exists():
        try:
            return [Task.model_validate(t) for t in json.loads(cache.read_text())]
        except (ValueError, TypeError):
            log.warning("sql: unreadable task cache %s; rebuilding it", cache)
    schema = read_schema(path)
    tasks: list[Task] = []
    with closing(_readonly(path)) as conn:
        for template in templates:
            tasks.extend(template_tasks(conn, template, schema))
    tmp = cache.with_name(f".{cache.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_text(json.dumps([t.model_dump(mode="json") for t in tasks]))
    os.replace(tmp, cache)
    return tasks
