"""One status table on every runner: the caller's mistakes, the env's faults, the model's output.

* a request error (unknown task id, a bad split, a user-role message) is the caller's
  ``bad_input``: an exception in process and over HTTP (a 4xx underneath), never a score;
* an environment fault is ``env_error``;
* only the model's own output is ``invalid_action``.

The Docker runner is the HTTP server in a container (the same client and app), so it is covered
by the HTTP rows; ``tests/docker_runner/test_docker.py`` runs the container itself where dockerd is reachable.
"""

import httpx
import pytest
from serving import running

import envhub
from envhub.client.remote_env import RemoteEnv
from envhub.errors import ConfigError, NotSupported, TaskNotFound
from envhub.server.app import create_app
from envhub.types import Status


@pytest.fixture(params=["local", "http"])
def echo(request, dummy_registry):
    if request.param == "local":
        with envhub.make("echo") as env:
            yield env
        return
    with running(create_app(envhub.make("echo"))) as url, RemoteEnv(url) as env:
        yield env


@pytest.fixture(params=["local", "http"])
def count(request, dummy_registry):
    if request.param == "local":
        with envhub.make("count") as env:
            yield env
        return
    with running(create_app(envhub.make("count"))) as url, RemoteEnv(url) as env:
        yield env


def test_verify_on_a_multi_turn_env_is_the_callers_error_not_the_models(count):
    """It used to come back over HTTP as a reward of 0 with ``invalid_action``."""
    with pytest.raises(NotSupported):
        count.verify("count-1", "1")


@pytest.mark.parametrize(
    ("response", "status"),
    [
        ("alpha", Status.OK),
        ("invalid", Status.INVALID_ACTION),  # the model's output
        ("boom", Status.ENV_ERROR),  # the verifier crashed: the environment's fault
    ],
)
def test_verify_and_step_statuses(echo, response, status):
    assert echo.verify("train/0", response).status is status
    echo.reset(task_id="train/0")
    assert echo.step(response).info.status is status


def test_unknown_task_is_the_callers_error_everywhere(echo):
    with pytest.raises(TaskNotFound, match="no-such-task"):
        echo.verify("no-such-task", "alpha")
    with pytest.raises(TaskNotFound, match="no-such-task"):
        echo.reset(task_id="no-such-task")


def test_a_user_role_message_is_the_callers_error(echo):
    echo.reset(task_id="train/0")
    with pytest.raises(ValueError, match="assistant"):
        echo.step({"role": "user", "content": "alpha"})


def test_http_answers_4xx_for_request_errors_never_a_score(dummy_registry):
    with running(create_app(envhub.make("echo"))) as url:
        items = [{"task_id": "train/0", "response": "alpha"}, {"task_id": "zzz", "response": "a"}]
        r = httpx.post(url + "/verify", json={"items": items})
        assert r.status_code == 404 and r.json()["kind"] == "task_not_found"
        assert "items[1]" in r.json()["error"] and "zzz" in r.json()["error"]
        r = httpx.post(url + "/reset", json={"task_id": "zzz"})
        assert r.status_code == 404


def test_a_split_that_fails_to_load_is_reported_with_its_cause(dummy_registry):
    with envhub.make("gsm8k") as env:
        with pytest.raises(ConfigError, match="split 'dev'.*train.*test"):
            env.tasks("dev")
    with running(create_app(envhub.make("gsm8k"))) as url:
        r = httpx.get(url + "/tasks", params={"split": "dev"})
        assert r.status_code == 400 and r.json()["kind"] == "config"
        assert "split 'dev'" in r.json()["error"]


def test_unknown_task_names_the_splits_it_could_not_search(dummy_registry):
    with envhub.make("humaneval") as env, pytest.raises(TaskNotFound) as caught:
        env.get_task("HumanEval/9999")
    assert "split 'train' not searched" in str(caught.value)


@pytest.mark.docker
def test_request_errors_are_the_callers_in_a_container_too():
    """The Docker runner: a real environment (the test doubles are not in the image)."""
    docker = pytest.importorskip("envhub.docker")
    try:
        docker.engine()
    except (envhub.errors.DependencyMissing, docker.DockerUnavailable) as e:
        pytest.skip(f"no Docker engine: {e}")
    with envhub.make("sql", runner="docker") as env:
        task = env.tasks()[0]
        with pytest.raises(TaskNotFound):
            env.verify("no-such-task", "SELECT 1")
        with pytest.raises(TaskNotFound):
            env.reset(task_id="no-such-task")
        with pytest.raises(ConfigError, match="split 'dev'"):
            env.tasks("dev")
        env.reset(task_id=task.task_id)
        with pytest.raises(ValueError, match="assistant"):
            env.step({"role": "user", "content": "SELECT 1"})
        assert env.verify(task.task_id, "SELECT 1").status is Status.OK  # a wrong answer: 0
