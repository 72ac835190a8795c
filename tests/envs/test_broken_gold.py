"""A broken gold is ``env_error`` in every family, and the model is never paid for it.

DESIGN.md: "A verifier that cannot parse the gold answer must not pay 1.0 (nor 0.0): it is an
error." The gold is the environment's data, so its fault is ``env_error`` (issue 23, point 4):
math's unparseable answer, a code task's unreadable tests, sql's failing gold query, search's
and mcp_tools' empty answer, a game's impossible secret word, level or opening. Each family
gets a broken gold here; single-turn families through ``verify`` and a played step, games
through ``reset`` (their episodes start from the gold).
"""

from __future__ import annotations

import pytest

import envhub
from envhub.errors import EpisodeError, status_for
from envhub.spec import EnvSpec
from envhub.types import Status, Task


def _serving(monkeypatch, env, task: Task):
    """``env`` with ``task`` as its only task (a broken task cannot come from its loader)."""
    monkeypatch.setattr(env, "tasks", lambda split=None: [task])
    return env


def _assert_unpaid_env_error(env, monkeypatch, task: Task, response: str) -> None:
    score = env.verify(task, response)
    assert score.status is Status.ENV_ERROR, score
    assert score.reward == 0.0 and score.components == {}
    _serving(monkeypatch, env, task).reset(seed=0)
    step = env.step(response)
    assert step.info.status is Status.ENV_ERROR, step.info
    assert step.reward == 0.0 and step.info.components == {} and step.truncated


@pytest.mark.parametrize("gold", ["", "\\frac{1}{"])
def test_math(monkeypatch, gold):
    env = envhub.make("gsm8k")
    task = env.tasks()[0].model_copy(update={"answer": gold})
    _assert_unpaid_env_error(env, monkeypatch, task, "\\boxed{1}")


@pytest.mark.parametrize(
    "metadata",
    [
        {"check": "def check(candidate):\n    pass\n", "entry_point": "f"},
        {"check": "def check(candidate):\n    assert candidate(1) == (\n", "entry_point": "f"},
        {"entry_point": "f"},
        {"kind": "io"},
    ],
    ids=["no-assert", "not-python", "no-tests", "io-without-cases"],
)
def test_code(monkeypatch, metadata):
    env = envhub.make("humaneval")
    task = Task(task_id="broken-tests", prompt="def f(x):\n", metadata=metadata)
    _assert_unpaid_env_error(env, monkeypatch, task, "```python\ndef f(x):\n    return x\n```")


@pytest.mark.parametrize(
    "gold", ["SELECT no_such_column FROM customers", "DELETE FROM customers", ""]
)
def test_sql(monkeypatch, gold):
    env = envhub.make("sql")
    task = env.tasks()[0].model_copy(update={"task_id": "broken-gold", "answer": gold})
    _assert_unpaid_env_error(env, monkeypatch, task, f"```sql\n{gold or 'SELECT 1'}\n```")


def test_search(monkeypatch):
    env = envhub.make("search")
    task = env.tasks()[0].model_copy(update={"answer": "  ..."})
    _assert_unpaid_env_error(env, monkeypatch, task, "<answer>...</answer>")


@pytest.mark.parametrize(
    ("name", "update"),
    [
        ("wordle", {"answer": "TOOLONG"}),
        ("sokoban", {"metadata": {"level": "not a level"}}),
        ("connect4", {"metadata": {"opening": [8], "seed": 0}}),
    ],
)
def test_games(monkeypatch, name, update):
    env = envhub.make(name)
    task = env.tasks()[0].model_copy(update=update)
    with pytest.raises(EpisodeError) as err:
        _serving(monkeypatch, env, task).reset(seed=0)
    assert status_for(err.value) is Status.ENV_ERROR
    assert task.task_id in str(err.value)


def test_mcp_tools():
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from envhub.envs.mcp_tools.env import McpToolEnv

    spec = EnvSpec(name="mcp-broken-gold", family="mcp_tools")
    env = McpToolEnv(spec, mcp={"url": "http://127.0.0.1:9/mcp"})  # never contacted
    try:
        for gold in ("", "   ", None):
            score = env.verify(Task(task_id="q", prompt="?", answer=gold), "<answer>4</answer>")
            assert score.status is Status.ENV_ERROR and "gold" in (score.error or "")
            assert score.reward == 0.0 and score.components == {}
    finally:
        env.close()
