"""Spider/BIRD-style tasks from a local JSONL file over the user's own sqlite databases."""

import json
import sqlite3
from contextlib import closing

import pytest

from envhub.envs.sql.builder import sha256_file
from envhub.envs.sql.env import SqlEnv
from envhub.errors import ConfigError
from envhub.spec import EnvSpec
from envhub.types import Status


@pytest.fixture()
def layout(tmp_path):
    """A Spider-like folder: database/<db_id>/<db_id>.sqlite plus a dev.jsonl."""
    db_dir = tmp_path / "database"
    pets = db_dir / "pets" / "pets.sqlite"
    pets.parent.mkdir(parents=True)
    with closing(sqlite3.connect(pets)) as conn:
        conn.executescript("""
            CREATE TABLE owner (id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE pet (id INTEGER PRIMARY KEY, owner_id INTEGER, kind TEXT, age REAL);
            INSERT INTO owner VALUES (1, 'Ana'), (2, 'Ben'), (3, 'Caro');
            INSERT INTO pet VALUES (1, 1, 'cat', 3), (2, 1, 'dog', 5.5), (3, 2, 'cat', 1),
                                   (4, 3, 'fish', NULL);
        """)
        conn.commit()
    loose = db_dir / "extra" / "shop.db"
    loose.parent.mkdir()
    with closing(sqlite3.connect(loose)) as conn:
        conn.executescript(
            "CREATE TABLE item (sku TEXT, price REAL);"
            "INSERT INTO item VALUES ('a', 1.5), ('b', 2.25);"
        )
        conn.commit()
    rows = [
        {
            "question": "How many cats are there?",
            "query": "SELECT count(*) FROM pet WHERE kind = 'cat'",
            "db_id": "pets",
            "difficulty": "easy",
        },
        {
            "question_id": 17,
            "question": "Owners of dogs?",
            "SQL": "SELECT T1.name FROM owner "
            "AS T1 JOIN pet AS T2 ON T1.id = T2.owner_id WHERE T2.kind = 'dog'",
            "db_id": "pets",
            "evidence": "dog refers to kind = 'dog'",
        },
        {
            "task_id": "shop-1",
            "question": "Total price?",
            "query": "SELECT SUM(price) FROM item",
            "db_id": "shop",
            "db_path": "extra/shop.db",
        },  # relative to db_dir
        {
            "question": "How many categories?",
            "query": "SELECT COUNT(*) FROM categories",
            "db_id": "store",
        },
    ]
    data = tmp_path / "dev.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return tmp_path, db_dir, pets, loose, data


def make(tmp_path, data, **options):
    spec = EnvSpec(
        name="sql-local",
        family="sql",
        entry_point="envhub.envs.sql.env:SqlEnv",
        dataset={"kind": "jsonl", "path": str(data)},
        split="dev",
        prompt_template="{schema}\n\nQuestion: {prompt}",
        source=str(tmp_path / "mine.yaml"),
    )
    return SqlEnv(spec, cache_dir=str(tmp_path / "cache"), **options)


def test_rows_become_tasks_with_schema_and_ids(layout):
    tmp_path, db_dir, pets, loose, data = layout
    env = make(tmp_path, data, db_dir=str(db_dir))
    tasks = env.tasks("dev")
    assert [t.task_id for t in tasks] == ["dev/0", "17", "shop-1", "dev/3"]
    assert "CREATE TABLE pet" in tasks[0].metadata["schema"]
    assert tasks[0].metadata["difficulty"] == "easy"
    assert tasks[1].prompt.endswith("Hint: dog refers to kind = 'dog'")
    assert tasks[2].metadata["db_path"] == str(loose)
    assert "CREATE TABLE categories" in tasks[3].metadata["schema"]  # a built-in database


def test_golds_verify_and_wrong_answers_do_not(layout):
    tmp_path, db_dir, pets, loose, data = layout
    env = make(tmp_path, str(data), db_dir=str(db_dir))
    before = (sha256_file(pets), sha256_file(loose))
    for task in env.tasks("dev"):
        score = env.verify(task, f"```sql\n{task.answer}\n```")
        assert score.status is Status.OK and score.components["correctness"] == 1.0, score
    assert env.verify("17", "SELECT name FROM owner").components["correctness"] == 0.0
    assert env.verify("dev/0", "DELETE FROM pet").info["query_error_kind"] == "refused"
    assert env.verify("dev/0", "SELECT 2.0").components["correctness"] == 1.0
    assert (sha256_file(pets), sha256_file(loose)) == before


def test_relative_db_path_resolves_against_the_yaml_folder(layout):
    tmp_path, db_dir, pets, loose, data = layout
    env = make(tmp_path, data)  # no db_dir
    task = env.row_to_task(
        {
            "question": "q",
            "query": "SELECT 1",
            "db_id": "shop",
            "db_path": "database/extra/shop.db",
        },
        0,
        "dev",
    )
    assert task.metadata["db_path"] == str(loose)


def test_missing_database_names_the_fix(layout):
    tmp_path, db_dir, pets, loose, data = layout
    env = make(tmp_path, data)  # no db_dir: 'pets' cannot be found
    with pytest.raises(ConfigError, match="db_dir"):
        env.tasks("dev")


def test_rows_without_a_gold_query_are_rejected(tmp_path):
    data = tmp_path / "bad.jsonl"
    data.write_text(json.dumps({"question": "q", "db_id": "store"}) + "\n")
    env = make(tmp_path, data)
    with pytest.raises(ConfigError, match="gold query"):
        env.tasks("dev")


def test_spider_rows_through_the_registered_entry(layout):
    """``sql-spider`` maps Spider's columns (token lists are dropped from the metadata)."""
    import envhub

    tmp_path, db_dir, pets, loose, data = layout
    spec = envhub.catalog().spec("sql-spider")
    assert "needs-data" in spec.tags and spec.dataset.kind == "hf"
    env = SqlEnv(
        spec, **{**spec.options, "db_dir": str(db_dir), "cache_dir": str(tmp_path / "cache")}
    )
    row = {
        "db_id": "pets",
        "query": "SELECT name FROM owner ORDER BY name",
        "question": "List owners by name.",
        "query_toks": ["SELECT", "name"],
        "question_toks": ["List"],
        "query_toks_no_value": ["select"],
    }
    task = env.row_to_task(row, 3, "validation")
    assert task.task_id == "validation/3" and set(task.metadata) == {"db_id", "schema", "db_path"}
    assert "Database pets" in env.opening_messages(task)[-1].content
    ok = env.verify(task, "```sql\nSELECT name FROM owner ORDER BY name\n```")
    assert ok.components["correctness"] == 1.0
    wrong_order = env.verify(task, "```sql\nSELECT name FROM owner ORDER BY name DESC\n```")
    assert wrong_order.components["correctness"] == 0.0
