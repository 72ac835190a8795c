"""The ``sql`` environment: verification outcomes, statuses, external tasks, CLI."""

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from typer.testing import CliRunner

import envhub
from envhub.envs.sql.builder import sha256_file
from envhub.envs.sql.env import SqlEnv
from envhub.errors import ConfigError, NotSupported
from envhub.spec import EnvSpec
from envhub.types import Status, Task

SPEC = dict(
    name="sql-test",
    family="sql",
    entry_point="envhub.envs.sql.env:SqlEnv",
    prompt_template="{schema}\n\nQuestion: {prompt}",
    reward={"weights": {"correctness": 1.0, "format": 0.1}},
)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("sqlcache"))


@pytest.fixture(scope="module")
def env(cache):
    return SqlEnv(EnvSpec(**SPEC), cache_dir=cache, timeout_s=0.5)


def fenced(sql):
    return f"Here you go:\n```sql\n{sql}\n```"


def checksums(env):
    return {db: sha256_file(env.builtin.path(db)) for db in env.builtin.ids()}


def test_every_gold_scores_full_marks(env):
    for split in ("train", "test"):
        for task in env.tasks(split):
            score = env.verify(task, fenced(task.answer))
            assert score.status is Status.OK, (task.task_id, score.error)
            assert score.components == {"correctness": 1.0, "format": 1.0, "executes": 1.0}, (
                task.task_id,
                score.info,
            )
            assert score.reward == pytest.approx(1.1)


def test_equivalent_queries_match(env):
    task = env.get_task("store/customers_in_city/0")
    city = task.metadata["params"]["city"]
    for sql in [
        f"SELECT last_name, first_name FROM customers WHERE city = '{city}'",  # column order
        f"SELECT c.first_name AS f, c.last_name AS l FROM customers c WHERE c.city = '{city}' "
        "ORDER BY c.last_name DESC",  # names and an order the question does not ask for
        f"SELECT first_name, last_name FROM customers WHERE city IN (SELECT '{city}')",
    ]:
        score = env.verify(task, fenced(sql))
        assert score.components["correctness"] == 1.0, (sql, score.info)


@pytest.mark.parametrize(
    "edit,reason",
    [
        ("SELECT first_name FROM customers WHERE city = '{city}'", "columns"),
        ("SELECT first_name, last_name, city FROM customers WHERE city = '{city}'", "columns"),
        ("SELECT DISTINCT first_name, last_name FROM customers WHERE city = '{city}'", None),
        ("SELECT first_name, last_name FROM customers WHERE city <> '{city}'", "rows"),
        ("SELECT first_name, last_name FROM customers", "rows"),
    ],
)
def test_wrong_answers_score_zero_with_status_ok(env, edit, reason):
    task = env.get_task("store/customers_in_city/0")
    sql = edit.format(city=task.metadata["params"]["city"])
    score = env.verify(task, fenced(sql))
    if reason is None:  # DISTINCT only differs when the city has namesakes
        gold = env.gold_result(task, env.db_path(task)).rows
        if len(set(gold)) == len(gold):
            pytest.skip("no duplicate names in this city")
    assert score.status is Status.OK and score.components["correctness"] == 0.0
    assert score.components["executes"] == 1.0
    if reason:
        assert reason in score.info["reason"]


def test_order_matters_only_when_the_gold_orders(env):
    task = next(t for t in env.tasks("train") if t.metadata["template"] == "top_spenders")
    reversed_sql = f"SELECT * FROM ({task.answer}) ORDER BY spent ASC"
    score = env.verify(task, fenced(reversed_sql))
    assert score.components["correctness"] == 0.0 and "order" in score.info["reason"]
    assert score.info["ordered"] is True


def test_format_component_needs_a_sql_block(env):
    task = env.get_task("store/orders_with_status/0")
    bare = env.verify(task, task.answer)
    assert bare.components == {"correctness": 1.0, "format": 0.0, "executes": 1.0}
    assert bare.reward == pytest.approx(1.0)


@pytest.mark.parametrize(
    "response,kind,fmt",
    [
        ("```sql\nSELECT nope FROM customers\n```", "error", 1.0),
        ("```sql\nSELECT * FROM pragma_table_info('orders')\n```", "refused", 1.0),
        ("I think the answer is 42.", "refused", 0.0),
        ("", "refused", 0.0),
        ("```sql\nDROP TABLE customers\n```", "refused", 0.0),
        ("```sql\nSELECT 1; DELETE FROM orders\n```", "refused", 0.0),
        ("```sql\nATTACH DATABASE '/tmp/x.db' AS x\n```", "refused", 0.0),
    ],
)
def test_model_errors_are_wrong_answers_not_crashes(env, response, kind, fmt):
    before = checksums(env)
    score = env.verify("store/orders_with_status/0", response)
    assert score.status is Status.OK
    assert score.components["correctness"] == 0.0 and score.components["executes"] == 0.0
    # one SELECT in a sql block follows the format even when it fails; nothing else does
    assert score.components["format"] == fmt and score.reward == pytest.approx(0.1 * fmt)
    assert score.info["query_error_kind"] == kind
    assert checksums(env) == before


def test_runaway_model_query_is_a_timeout(env):
    score = env.verify(
        "store/orders_with_status/0",
        fenced("SELECT COUNT(*) FROM order_items a, order_items b, order_items c"),
    )
    assert score.status is Status.TIMEOUT and score.reward == 0.0
    assert "deadline" in score.error


def test_endless_result_is_cut_at_max_rows_and_wrong(env):
    score = env.verify(
        "store/orders_with_status/0",
        fenced("WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x FROM r"),
    )
    assert score.status is Status.OK and score.components["correctness"] == 0.0
    assert "max_rows" in score.info["reason"]


WIDE_ROWS = (
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r LIMIT 10001) SELECT "
    + ", ".join(f"replace(hex(zeroblob(9990)), '0', 'x') AS c{k}" for k in range(60))
    + " FROM r"
)
"""The wide-row memory bomb of issue 17 (point 4): 12 GB if fetched whole."""


def test_wide_row_memory_bomb_is_invalid_action(env):
    score = env.verify("store/orders_with_status/0", fenced(WIDE_ROWS))
    assert score.status is Status.INVALID_ACTION and score.reward == 0.0
    assert "bytes" in score.error


def _peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmHWM"))


@pytest.mark.slow
def test_four_memory_bombs_over_http_leave_the_server_small_and_healthy():
    """Four wide-row answers at once: each is the model's invalid_action, the server's peak
    memory grows by tens of MB (2 GB each before the fetch cap), and it still answers."""
    import httpx

    from envhub.client.child_server import spawn_server
    from envhub.client.remote_env import RemoteEnv
    from envhub.registry.catalog import spec as lookup

    server = spawn_server(lookup("sql"))
    with RemoteEnv(server.url, owner=server) as remote:
        task = remote.tasks("test")[0]
        remote.verify(task.task_id, fenced(task.answer))  # warm: databases built, gold cached
        before = _peak_rss_mb(server.proc.pid)
        with ThreadPoolExecutor(4) as pool:
            scores = list(pool.map(remote.verify, [task.task_id] * 4, [fenced(WIDE_ROWS)] * 4))
        grown = _peak_rss_mb(server.proc.pid) - before
        assert [s.status for s in scores] == [Status.INVALID_ACTION] * 4
        assert all(s.reward == 0.0 for s in scores)
        assert grown < 250, f"the server's peak memory grew by {grown} MB"
        assert httpx.get(server.url + "/health", timeout=2).status_code == 200
        assert remote.verify(task.task_id, fenced(task.answer)).components["correctness"] == 1.0


def _adhoc(env, gold, db_id="store"):
    return Task(task_id="adhoc/1", prompt="q", answer=gold, metadata={"db_id": db_id})


@pytest.mark.parametrize(
    "gold",
    [
        "SELECT no_such_column FROM customers",
        "DELETE FROM customers",
        "SELECT COUNT(*) FROM order_items a, order_items b, order_items c, order_items d",
        "",
    ],
)
def test_broken_gold_is_env_error_never_a_match(cache, gold):
    """A broken gold is the task's data, env_error as in every family (issue 23, point 4)."""
    quick = SqlEnv(EnvSpec(**SPEC), cache_dir=cache, gold_timeout_s=0.3)
    before = checksums(quick)
    task = _adhoc(quick, gold)
    for response in (fenced(gold), fenced("SELECT 1"), fenced(gold)):
        score = quick.verify(task, response)
        assert score.status is Status.ENV_ERROR and score.reward == 0.0
        assert "gold" in score.error
        assert score.components == {}
    assert checksums(quick) == before


def test_gold_with_too_many_rows_is_env_error(cache):
    small = SqlEnv(EnvSpec(**SPEC), cache_dir=cache, max_rows=10)
    score = small.verify(_adhoc(small, "SELECT * FROM customers"), "SELECT * FROM customers")
    assert score.status is Status.ENV_ERROR and "max_rows" in score.error


def test_missing_database_is_infra_error(env, tmp_path):
    task = Task(
        task_id="x",
        prompt="q",
        answer="SELECT 1",
        metadata={"db_path": str(tmp_path / "gone.sqlite")},
    )
    score = env.verify(task, "SELECT 1")
    assert score.status is Status.INFRA_ERROR and "missing" in score.error
    assert (
        env.verify(_adhoc(env, "SELECT 1", db_id="nope"), "SELECT 1").status is Status.INFRA_ERROR
    )


def test_verify_from_many_threads(env):
    tasks = env.tasks("test")[:24]
    items = [(t, fenced(t.answer) if i % 3 else fenced("SELECT 1")) for i, t in enumerate(tasks)]
    with ThreadPoolExecutor(8) as pool:
        scores = list(pool.map(lambda it: env.verify(*it), items * 3))
    expected = [1.0 if i % 3 else 0.0 for i in range(len(items))] * 3
    assert [s.components["correctness"] for s in scores] == expected
    assert all(s.status is Status.OK for s in scores)


def test_hostile_episodes_leave_every_database_unchanged(env, tmp_path):
    before = checksums(env)
    attacks = [
        f"ATTACH DATABASE '{tmp_path}/new.db' AS evil",
        "PRAGMA writable_schema = ON",
        "INSERT INTO customers (customer_id) VALUES (99999)",
        "DROP TABLE orders",
        f"VACUUM INTO '{tmp_path}/copy.db'",
        "SELECT load_extension('/tmp/evil')",
        "CREATE TEMP TABLE t AS SELECT * FROM orders",
        "SELECT 1; UPDATE products SET price = 0",
        "WITH x AS (SELECT 1) DELETE FROM reviews",
    ]
    for db_id in env.builtin.ids():
        task = next(t for t in env.tasks("train") if t.metadata["db_id"] == db_id)
        for attack in attacks:
            env.reset(task_id=task.task_id)
            result = env.step(fenced(attack))
            assert result.info.status is Status.OK and result.reward <= 0.1
            assert result.info.components["executes"] == 0.0
            assert result.info.components["correctness"] == 0.0
    assert checksums(env) == before
    assert list(tmp_path.iterdir()) == []


def test_options_are_checked():
    with pytest.raises(ConfigError, match="valid options"):
        SqlEnv(EnvSpec(**SPEC), timeout=3)
    with pytest.raises(ConfigError):
        SqlEnv(EnvSpec(**SPEC), max_rows=0)


def test_gold_alone_is_not_enough(env):
    with pytest.raises(NotSupported, match="task-id"):
        env.task_from_gold("SELECT 1")


def test_registry_entry_and_prompt():
    with envhub.make("sql") as sql:
        first = sql.reset(seed=3)
        task = sql.get_task(first.info.task_id)
        user = first.messages[-1].content
        assert first.messages[0].role == "system" and "```sql" in first.messages[0].content
        assert "CREATE TABLE" in user and task.prompt in user
        assert sql.step(fenced(task.answer)).reward == pytest.approx(1.1)


def test_cli_verify_by_task_id():
    from envhub.cli import app

    runner = CliRunner()
    task_id = "store/orders_with_status/0"
    with envhub.make("sql") as sql:
        gold = sql.get_task(task_id).answer
    out = runner.invoke(app, ["verify", "sql", "--task-id", task_id, "--response", gold])
    assert out.exit_code == 0, out.output
    score = json.loads(out.stdout)
    assert score["status"] == "ok" and score["components"]["correctness"] == 1.0
    out = runner.invoke(
        app, ["verify", "sql", "--task-id", task_id, "--response", "SELECT COUNT(*) FROM orders"]
    )
    score = json.loads(out.stdout)
    assert score["status"] == "ok" and score["reward"] == 0.0


@pytest.mark.slow
def test_http_server_verifies_concurrently_and_stays_read_only():
    """Through `envhub serve`: a batch mixing gold, wrong and hostile answers, checksums kept."""
    with envhub.make("sql") as local:
        before = checksums(local)
        tasks = local.tasks("test")[:12]
    hostile = [
        "DROP TABLE orders",
        "ATTACH DATABASE 'x.db' AS x",
        "PRAGMA writable_schema=1",
        "SELECT 1; DELETE FROM loans",
    ]
    items = [(t.task_id, fenced(t.answer)) for t in tasks]
    items += [(t.task_id, fenced(h)) for t, h in zip(tasks, hostile, strict=False)]
    with envhub.make("sql", runner="http") as remote:
        with ThreadPoolExecutor(4) as pool:
            batches = list(pool.map(remote.verify_batch, [items] * 4))
    for scores in batches:
        assert [s.components["correctness"] for s in scores] == [1.0] * 12 + [0.0] * 4
        assert all(s.status is Status.OK for s in scores)
    with envhub.make("sql") as local:
        assert checksums(local) == before
