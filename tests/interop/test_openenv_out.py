"""`envhub serve NAME --openenv`: openenv-core's own client plays envhub episodes."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

import envhub

openenv_client = pytest.importorskip(
    "openenv.core.generic_client",
    reason="the OpenEnv tests need openenv-core: pip install -c constraints.txt -e '.[interop-openenv]'",
)
from openenv_games import envhub_serving_openenv  # noqa: E402
from serving import running  # noqa: E402

from envhub.server.app import create_app  # noqa: E402


def _gold_message(task) -> str:
    return f"Let me think.\n#### {task.answer}"


@pytest.fixture(scope="module")
def served_gsm8k():
    """`envhub serve gsm8k --openenv` in a process of its own, as a user starts it."""
    with envhub_serving_openenv("gsm8k") as url:
        yield url


def test_an_openenv_client_plays_gsm8k_and_reads_envhub_reward(served_gsm8k):
    with envhub.make("gsm8k") as env:
        task = env.tasks()[3]
        wrong = env.verify(task, "#### -1")
        right = env.verify(task, _gold_message(task))
    assert right.reward > wrong.reward
    with openenv_client.GenericEnvClient(base_url=served_gsm8k).sync() as client:
        opened = client.reset(task_id=task.task_id)
        assert opened.reward is None and opened.done is False
        assert opened.observation["task_id"] == task.task_id
        assert task.prompt in opened.observation["messages"][-1]["content"]
        result = client.step({"message": _gold_message(task)})
        assert result.done is True
        assert result.reward == pytest.approx(right.reward)
        assert result.observation["components"]["correctness"] == 1.0
        client.reset(task_id=task.task_id)
        assert client.step({"message": "#### -1"}).reward == pytest.approx(wrong.reward)


@pytest.fixture
def echo_app(dummy_registry):
    with running(create_app(envhub.make("echo"), dialect="openenv")) as url:
        yield url


def test_a_malformed_action_is_openenv_validation_error_naming_the_field(echo_app):
    with openenv_client.GenericEnvClient(base_url=echo_app).sync() as client:
        client.reset(seed=0)
        with pytest.raises(RuntimeError, match=r"VALIDATION_ERROR.*") as err:
            client.step({"text": "hello"})
        assert "message" in str(err.value)


def test_a_frame_over_the_body_limit_is_refused_and_the_episode_goes_on(echo_app):
    with openenv_client.GenericEnvClient(base_url=echo_app).sync() as client:
        client.reset(seed=0)
        with pytest.raises(RuntimeError, match="over this server's"):
            client.step({"message": "x" * 5_000_000})
        assert client.step({"message": "alpha"}).done is True


def test_state_and_stateless_http_follow_openenv(echo_app):
    with openenv_client.GenericEnvClient(base_url=echo_app).sync() as client:
        client.reset(seed=1)
        client.step({"message": "hi"})
        state = client.state()
        assert state["step_count"] == 1 and state["episode_id"]
    reset = httpx.post(echo_app + "/reset", json={"seed": 1}).json()
    assert reset["done"] is False and reset["observation"]["messages"]
    step = httpx.post(echo_app + "/step", json={"action": {"message": "hi"}})
    assert step.status_code == 409 and "/ws" in step.json()["error"]
    schema = httpx.get(echo_app + "/schema").json()
    assert schema["action"]["required"] == ["message"]
    item = {"task_id": "train/0", "response": "alpha"}  # envhub's own /verify: opt-in only
    refused = httpx.post(echo_app + "/verify", json={"items": [item]})
    assert refused.status_code == 403 and "--answers" in refused.text


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--openenv", "--nemo-gym"], "a server speaks one dialect"),
        (["--openenv", "--docker"], "drop --docker"),
    ],
)
def test_serve_refuses_two_dialects_or_a_dialect_in_docker(flags, said):
    done = subprocess.run([sys.executable, "-m", "envhub.cli", "serve", "gsm8k", *flags],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 1 and said in done.stderr


def test_openenv_010s_task_api_lists_the_tasks_without_answers(echo_app):
    assert httpx.get(echo_app + "/list_environments").json() == ["echo"]
    splits = httpx.get(echo_app + "/echo/splits").json()
    assert {"name": "train", "type": "train"} in splits
    with envhub.make("echo") as env:
        train = env.tasks("train")
    count = httpx.post(echo_app + "/echo/num_tasks", json={"split": "train"}).json()
    assert count == {"num_tasks": len(train)}
    listed = httpx.post(echo_app + "/echo/tasks", json={"split": "train"}).json()
    assert [t["task_id"] for t in listed["tasks"]] == [t.task_id for t in train]
    one = httpx.post(echo_app + "/echo/task", json={"split": "train", "index": 1}).json()["task"]
    assert one["task_id"] == train[1].task_id and one["messages"][-1]["role"] == "user"
    assert set(one) == {"task_id", "messages"}  # no answer, no metadata: the agent's port
    bounds = {"split": "train", "start": 1, "stop": 3}
    some = httpx.post(echo_app + "/echo/task_range", json=bounds)
    assert [t["task_id"] for t in some.json()["tasks"]] == [t.task_id for t in train[1:3]]
    past = httpx.post(echo_app + "/echo/task", json={"split": "train", "index": 10**6})
    assert past.status_code == 400 and "Invalid task index" in past.text
    assert httpx.post(echo_app + "/other/num_tasks", json={"split": "train"}).status_code == 404
