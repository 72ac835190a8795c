"""The built-in databases' DDL is data (``envhub/envs/sql/data/schemas/*.sql``) and builds the same rows."""

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from envhub.envs.sql.builder import BuiltinDatabases, read_schema
from envhub.envs.sql.schemas import SCHEMA_DIR, SCHEMAS

ROOT = Path(__file__).resolve().parents[2]

# Digests of every table's name, DDL and rows (in rowid order) as built when the DDL was still
# Python strings (commit 2410dab). Independent of the sqlite file format, unlike a file sha256.
PINNED = {
    "store": "6b56c6ae103d3c93268ba397d0ec9a2a00c0b1ed28cd9dc55f24e7a016c05724",
    "university": "d93b4e31a11de7e4607dbf4554ced35db07746ddd72e4a489132583baae741bf",
    "flights": "553ea656ec5e1b855be2b36ba8d545626c9b757eec61fb1cd93e79dce556ddc6",
    "library": "36231a7d089341caa7de4b1d511b4ab85959482a7efb5a45f5f2d22fefc0b5cc",
}


@pytest.fixture(scope="module")
def dbs(tmp_path_factory):
    return BuiltinDatabases(tmp_path_factory.mktemp("sqlcache"))


def _content_digest(path: Path) -> str:
    conn = sqlite3.connect(path)
    h = hashlib.sha256()
    try:
        tables = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
        ).fetchall()
        for name, sql in tables:
            h.update(repr((name, sql)).encode())
            for row in conn.execute(f'SELECT * FROM "{name}" ORDER BY rowid'):
                h.update(repr(row).encode())
    finally:
        conn.close()
    return h.hexdigest()


def test_every_database_has_its_sql_file_and_nothing_else_is_there():
    assert sorted(p.stem for p in SCHEMA_DIR.glob("*.sql")) == sorted(SCHEMAS)
    for schema in SCHEMAS.values():
        assert schema.ddl_path.parent == SCHEMA_DIR
        assert "CREATE TABLE" in schema.ddl


@pytest.mark.parametrize("db_id", sorted(PINNED))
def test_built_tables_and_rows_match_the_pinned_digest(dbs, db_id):
    assert _content_digest(dbs.path(db_id)) == PINNED[db_id]


@pytest.mark.parametrize("db_id", sorted(PINNED))
def test_the_schema_shown_to_the_model_is_the_sql_file(dbs, db_id, tmp_path):
    fresh = tmp_path / "ddl_only.sqlite"
    conn = sqlite3.connect(fresh)
    conn.executescript(SCHEMAS[db_id].ddl_path.read_text(encoding="utf-8"))
    conn.close()
    assert read_schema(dbs.path(db_id)) == read_schema(fresh)
    assert "-- 1 if no longer sold" in read_schema(dbs.path("store"))  # inner comments kept


def test_the_sql_benchmark_runs_from_bench(tmp_path):
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "sql_executor.py")],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert "build 4 databases" in out.stdout
    assert "verify with warm gold cache" in out.stdout
