"""``sql-multiturn``: exploration, final answers in text and tool-call form, turn budget."""

import json

import pytest

from envhub.envs.sql.builder import sha256_file
from envhub.envs.sql.multiturn import SqlMultiTurnEnv
from envhub.spec import EnvSpec
from envhub.types import FunctionCall, Message, Status, ToolCall

SPEC = dict(
    name="sql-mt-test",
    family="sql",
    entry_point="envhub.envs.sql.multiturn:SqlMultiTurnEnv",
    prompt_template="{schema}\n\nQuestion: {prompt}",
    max_turns=4,
    reward={"weights": {"correctness": 1.0, "format": 0.1}},
)
TASK = "store/top_spenders/0"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return SqlMultiTurnEnv(
        EnvSpec(**SPEC), cache_dir=str(tmp_path_factory.mktemp("c")), timeout_s=0.5
    )


@pytest.fixture()
def env(base):
    e = base.fork()
    e.reset(task_id=TASK)
    return e


def gold(env):
    return env.get_task(TASK).answer


def call(name, query, call_id="c1"):
    return ToolCall(
        id=call_id, function=FunctionCall(name=name, arguments=json.dumps({"query": query}))
    )


def test_exploration_shows_a_truncated_table_then_the_final_answer_is_judged(env):
    r = env.step("Let me look.\n```sql\nSELECT customer_id, city FROM customers\n```")
    assert not r.done and r.reward == 0.0 and r.info.status is Status.OK
    text = r.messages[0].content
    assert r.messages[0].role == "user"
    assert text.splitlines()[0] == "customer_id | city"
    assert len(text.splitlines()) == 1 + 20 + 2  # header, 20 rows, note, turns left
    assert "more rows" in text and text.endswith("(3 turns left.)")
    final = env.step(f"FINAL ANSWER:\n```sql\n{gold(env)}\n```")
    assert final.terminated and final.reward == pytest.approx(1.1)
    assert final.info.components == {"correctness": 1.0, "format": 1.0, "executes": 1.0}
    assert final.info.model_extra["explored"] == 1


def test_exploration_errors_and_refusals_are_shown_not_fatal(env, base):
    before = sha256_file(base.builtin.path("store"))
    r = env.step("```sql\nSELECT nope FROM customers\n```")
    assert not r.done and r.info.status is Status.OK and "Error (error)" in r.messages[0].content
    r = env.step("```sql\nDROP TABLE customers\n```")
    assert not r.done and "Error (refused)" in r.messages[0].content
    r = env.step(
        "```sql\nWITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM r) "
        "SELECT COUNT(*) FROM r\n```"
    )
    assert not r.done and "Error (timeout)" in r.messages[0].content
    assert "final answer" in r.messages[0].content  # last turn comes next
    assert sha256_file(base.builtin.path("store")) == before


def test_an_exploration_too_large_to_fetch_is_an_error_shown_to_the_model(env):
    """20 rows of 2,000 columns of 20 kB (800 MB) stop at the fetch cap, turn goes on."""
    wide = ", ".join(["s"] * 2000)
    r = env.step(
        "```sql\nWITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r LIMIT 30), "
        f"w(s) AS (SELECT replace(hex(zeroblob(9990)), '0', 'x')) SELECT {wide} FROM r, w\n```"
    )
    assert not r.done and r.info.status is Status.OK
    assert "Error (too_large)" in r.messages[0].content


def test_a_message_without_query_is_invalid_and_the_episode_goes_on(env):
    r = env.step("Hmm, I wonder what the tables are.")
    assert r.info.status is Status.INVALID_ACTION and not r.done
    assert "FINAL ANSWER" in r.messages[0].content
    final = env.step(f"final answer: ```sql\n{gold(env)}\n```")
    assert final.info.components["correctness"] == 1.0


def test_final_marker_after_the_block_still_judges_it(env):
    r = env.step(f"```sql\n{gold(env)}\n```\nFINAL ANSWER: the query above.")
    assert r.terminated and r.info.components == {
        "correctness": 1.0,
        "format": 0.0,
        "executes": 1.0,
    }


def test_bare_select_is_run_too(env):
    r = env.step("SELECT COUNT(*) FROM orders")
    assert r.info.status is Status.OK and "1500" in r.messages[0].content


def test_structured_tool_calls(env):
    msg = Message(
        role="assistant",
        tool_calls=[
            call("run_query", "SELECT COUNT(*) FROM orders"),
            call("run_query", "SELECT 2", "c2"),
        ],
    )
    r = env.step(msg)
    assert [m.role for m in r.messages] == ["tool", "tool"]
    assert [m.tool_call_id for m in r.messages] == ["c1", "c2"]
    assert "1500" in r.messages[0].content
    final = env.step(Message(role="assistant", tool_calls=[call("submit_answer", gold(env))]))
    assert final.terminated and final.info.components["format"] == 1.0
    assert final.info.components["correctness"] == 1.0


def test_text_tool_calls_and_malformed_calls(env):
    text = '<tool_call>{"name": "run_query", "arguments": {"query": "SELECT 7"}}</tool_call>'
    r = env.step(text)
    assert r.messages[0].role == "user" and "<tool_response>" in r.messages[0].content
    assert "7" in r.messages[0].content
    r = env.step('<tool_call>{"name": "run_qery", "arguments": {"query": "SELECT 1"}}</tool_call>')
    assert r.info.status is Status.INVALID_ACTION and "did you mean" in r.messages[0].content
    r = env.step(
        Message(
            role="assistant",
            tool_calls=[
                ToolCall(id="x", function=FunctionCall(name="submit_answer", arguments="{not json"))
            ],
        )
    )
    assert r.info.status is Status.INVALID_ACTION and not r.done


def test_last_turn_query_without_marker_is_judged_without_format(env):
    for _ in range(3):
        env.step("```sql\nSELECT 1\n```")
    r = env.step(f"```sql\n{gold(env)}\n```")
    assert r.terminated and r.info.components == {
        "correctness": 1.0,
        "format": 0.0,
        "executes": 1.0,
    }


def test_running_out_of_turns_is_truncated_with_zero(env):
    for _ in range(3):
        assert not env.step("thinking...").done
    r = env.step("still thinking")
    assert r.truncated and not r.terminated and r.reward == 0.0
    assert r.info.components == {"correctness": 0.0, "format": 0.0, "executes": 0.0}


def test_final_answer_timeout_is_a_timeout_status(env):
    r = env.step(
        "FINAL ANSWER:\n```sql\nSELECT COUNT(*) FROM order_items a, order_items b, "
        "order_items c\n```"
    )
    assert r.info.status is Status.TIMEOUT and r.done and r.reward == 0.0


def test_reference_action_and_tools_are_offered(base):
    e = base.fork()
    first = e.reset(seed=0)
    assert {t["function"]["name"] for t in first.info.model_extra["tools"]} == {
        "run_query",
        "submit_answer",
    }
    r = e.step(e.reference_action(e._episode))
    assert r.terminated and r.info.components["correctness"] == 1.0


def test_hostile_exploration_leaves_databases_unchanged(base, tmp_path):
    before = {d: sha256_file(base.builtin.path(d)) for d in base.builtin.ids()}
    e = base.fork()
    attacks = [
        f"ATTACH '{tmp_path}/a.db' AS a",
        "PRAGMA writable_schema=1",
        f"VACUUM INTO '{tmp_path}/v.db'",
        "INSERT INTO orders VALUES (1,1,1,1,1)",
        "SELECT load_extension('x')",
        "CREATE TEMP TABLE t(a)",
        "DROP TABLE orders",
    ]
    for db_id in base.builtin.ids():
        task = next(t for t in base.tasks() if t.metadata["db_id"] == db_id)
        e.reset(task_id=task.task_id)
        for attack in attacks[:3]:
            e.step(f"```sql\n{attack}\n```")
        msg = Message(
            role="assistant",
            tool_calls=[call("run_query", a, f"c{i}") for i, a in enumerate(attacks[3:])],
        )
        r = e.step(msg)
        assert all("Error (refused)" in m.content for m in r.messages)
    assert {d: sha256_file(base.builtin.path(d)) for d in base.builtin.ids()} == before
    assert list(tmp_path.iterdir()) == []


def test_database_gone_mid_episode_is_infra_error(base, tmp_path):
    import shutil

    from envhub.types import Task

    db = tmp_path / "copy.sqlite"
    shutil.copy(base.builtin.path("store"), db)
    e = base.fork()
    e.reset(task_id=TASK)
    e._episode.task = Task(
        task_id="copy",
        prompt="q",
        answer="SELECT 1",
        metadata={"db_path": str(db), "db_id": "copy"},
    )
    assert e.step("```sql\nSELECT COUNT(*) FROM orders\n```").info.status is Status.OK
    db.unlink()
    r = e.step("```sql\nSELECT COUNT(*) FROM orders\n```")
    assert r.info.status is Status.INFRA_ERROR and r.reward == 0.0 and r.truncated
