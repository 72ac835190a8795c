"""The built-in databases and task set: deterministic, cached, tamper-proof, well-posed."""

import collections
import sqlite3
from contextlib import closing

import pytest

from envhub.envs.sql import builder
from envhub.envs.sql.builder import BuiltinDatabases, sha256_file
from envhub.envs.sql.compare import compare_results
from envhub.envs.sql.sqltext import orders_at_top_level
from envhub.envs.sql.tasks import builtin_task_set, instance_problem
from envhub.envs.sql.tasksets import TEMPLATES


@pytest.fixture(scope="module")
def dbs(tmp_path_factory):
    return BuiltinDatabases(tmp_path_factory.mktemp("sqlcache"))


@pytest.fixture(scope="module")
def task_set(dbs):
    return builtin_task_set(dbs)


def _dump(path):
    with closing(sqlite3.connect(path)) as conn:
        tables = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
        ]
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in tables}


def test_builds_are_deterministic(dbs, tmp_path):
    other = BuiltinDatabases(tmp_path)
    for db_id in dbs.ids():
        assert _dump(dbs.path(db_id)) == _dump(other.path(db_id))
        assert sha256_file(dbs.path(db_id)) == sha256_file(other.path(db_id))


def test_databases_are_big_enough_for_joins_and_aggregates(dbs):
    assert len(dbs.ids()) >= 4
    for db_id in dbs.ids():
        dump = _dump(dbs.path(db_id))
        tables = [t for t in dump if not t.startswith("sqlite_")]
        assert len(tables) >= 5, db_id
        assert sum(len(dump[t]) for t in tables) > 2000, db_id
        assert max(len(dump[t]) for t in tables) >= 1500, db_id


def test_foreign_keys_hold(dbs):
    for db_id in dbs.ids():
        with closing(sqlite3.connect(dbs.path(db_id))) as conn:
            assert conn.execute("PRAGMA foreign_key_check").fetchall() == [], db_id


def test_cache_is_reused_and_a_tampered_copy_is_rebuilt(tmp_path, monkeypatch):
    first = BuiltinDatabases(tmp_path)
    path = first.path("library")
    good = sha256_file(path)
    mtime = path.stat().st_mtime_ns
    built = []
    monkeypatch.setattr(
        builder, "build_database", lambda *a: built.append(a) or pytest.fail("rebuilt a good cache")
    )
    assert BuiltinDatabases(tmp_path).path("library") == path
    assert path.stat().st_mtime_ns == mtime and not built
    monkeypatch.undo()

    path.chmod(0o644)
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("DELETE FROM loans")
        conn.commit()
    assert sha256_file(path) != good
    assert BuiltinDatabases(tmp_path).path("library") == path
    assert sha256_file(path) == good


def test_cache_dir_follows_envhub_home(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVHUB_HOME", str(tmp_path / "home"))
    assert BuiltinDatabases().cache_dir == tmp_path / "home" / "cache" / "sql"


def test_unknown_database_names_the_choices(dbs):
    with pytest.raises(KeyError, match="store"):
        dbs.path("nope")


def test_a_few_hundred_tasks_in_both_splits(task_set):
    train, test = task_set["train"], task_set["test"]
    assert len(train) + len(test) >= 250
    assert len(test) >= 50
    ids = [t.task_id for t in train + test]
    assert len(ids) == len(set(ids))
    assert {t.metadata["db_id"] for t in test} == {"store", "university", "flights", "library"}
    per_template = collections.Counter(t.metadata["template"] for t in train + test)
    assert len(per_template) == len(TEMPLATES)  # every template yields tasks


def test_every_gold_returns_rows_and_ordered_golds_have_no_ties(dbs, task_set):
    by_key = {(t.db_id, t.key): t for t in TEMPLATES}
    for task in task_set["train"] + task_set["test"]:
        template = by_key[(task.metadata["db_id"], task.metadata["template"])]
        with closing(sqlite3.connect(dbs.path(task.metadata["db_id"]))) as conn:
            assert instance_problem(conn, template, task.metadata["params"]) is None, task.task_id
            rows = conn.execute(task.answer).fetchall()
        assert rows, task.task_id
        if orders_at_top_level(task.answer):
            assert template.sort_key, task.task_id


def test_unordered_golds_do_not_depend_on_scan_order(dbs, task_set):
    """Reversing sqlite's unordered output changes nothing the comparison looks at."""
    for task in task_set["train"] + task_set["test"]:
        path = dbs.path(task.metadata["db_id"])
        with closing(sqlite3.connect(path)) as conn:
            plain = conn.execute(task.answer).fetchall()
            conn.execute("PRAGMA reverse_unordered_selects = ON")
            reverse = conn.execute(task.answer).fetchall()
        # sums and averages may differ in the last bits: the tolerance absorbs it
        ordered = orders_at_top_level(task.answer)
        assert compare_results(plain, reverse, ordered=ordered).match, task.task_id


def test_prompts_carry_the_schema_and_values(task_set):
    task = next(t for t in task_set["train"] if t.metadata["template"] == "customers_in_city")
    assert "CREATE TABLE customers" in task.metadata["schema"]
    assert task.metadata["params"]["city"] in task.prompt
    assert f"'{task.metadata['params']['city']}'" in task.answer


def test_task_cache_is_reused_and_survives_corruption(dbs, task_set):
    files = sorted(dbs.cache_dir.glob("tasks-*.json"))
    assert len(files) == 4
    again = builtin_task_set(dbs)
    assert again == task_set
    files[0].write_text("{not json")
    assert builtin_task_set(dbs) == task_set


def test_subset_of_databases(dbs):
    only = builtin_task_set(dbs, ["flights"])
    assert {t.metadata["db_id"] for t in only["train"] + only["test"]} == {"flights"}
    with pytest.raises(KeyError):
        builtin_task_set(dbs, ["flight"])
