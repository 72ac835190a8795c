"""OpenEnv both ways, against each release in a venv of its own: ``openenv-core`` 0.3 and
``openenv`` 0.10 (``conftest.py``'s ``openenv_venv``; where a venv cannot be made, skipped).

Out: the release's own client (``GenericEnvClient``, in ``openenv_client_probe.py``) plays
``envhub serve gsm8k --openenv`` and reads envhub's reward. In: the toy OpenEnv server
(``toy_openenv.py``) served by the release plays through ``envhub.make``, its refusals the
model's ``invalid_action`` and its death ``infra_error``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from children import stop
from openenv_games import EXPECTED, envhub_serving_openenv, play, register, toy_server

import envhub
from envhub.types import Status

PROBE = Path(__file__).parents[1] / "support" / "openenv_client_probe.py"


@pytest.fixture(scope="module")
def served_gsm8k():
    with envhub_serving_openenv("gsm8k") as url:
        yield url


def _probe(python: Path, url: str, task_id: str, actions: list[dict]) -> list[dict]:
    job = json.dumps({"task_id": task_id, "actions": actions})
    done = subprocess.run(
        [str(python), str(PROBE), url], input=job, text=True, capture_output=True, timeout=300
    )
    assert done.returncode == 0, f"OpenEnv's client failed:\n{done.stderr[-3000:]}"
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_each_releases_client_plays_envhub_serve_gsm8k(openenv_venv, served_gsm8k):
    with envhub.make("gsm8k") as env:
        task = env.tasks()[3]
        right = env.verify(task, f"So:\n#### {task.answer}").reward
        wrong = env.verify(task, "#### -1").reward
    assert right > wrong
    actions = [{"message": f"So:\n#### {task.answer}"}, {"message": "#### -1"}, {"text": "hi"}]
    gold, bad, malformed = _probe(openenv_venv, served_gsm8k, task.task_id, actions)
    assert gold["reset"]["reward"] is None and gold["reset"]["done"] is False
    assert gold["reset"]["observation"]["task_id"] == task.task_id
    assert task.prompt in gold["reset"]["observation"]["messages"][-1]["content"]
    assert gold["step"]["done"] is True and gold["step"]["reward"] == pytest.approx(right)
    assert gold["step"]["observation"]["components"]["correctness"] == 1.0
    assert gold["state"]["step_count"] == 1 and gold["state"]["task_id"] == task.task_id
    assert bad["step"]["reward"] == pytest.approx(wrong)
    assert "VALIDATION_ERROR" in malformed["step"]["error"]
    assert "message" in malformed["step"]["error"]


def test_each_releases_toy_server_plays_through_envhub_make(
    openenv_venv, tmp_path, clean_user_registry
):
    with toy_server(openenv_venv) as (url, proc):
        name = register(tmp_path, "guess", base_url=url, action_field="word")
        with envhub.make(name) as env:
            assert play(env) == EXPECTED
        json_name = register(tmp_path, "guess-json", base_url=url)
        with envhub.make(json_name) as env:
            env.reset(task_id="seed-1")
            refused = env.step('{"wrd": "berry"}')  # VALIDATION_ERROR: the model's
            assert refused.info.status is Status.INVALID_ACTION and refused.reward == 0.0
            assert "word" in refused.messages[0].content  # 0.10 lists the field apart
            raised = env.step('{"word": "boom"}')  # EXECUTION_ERROR: the model's
            assert raised.info.status is Status.INVALID_ACTION and not raised.terminated
            assert env.step('{"word": "berry"}').reward == 1.0
            env.reset(task_id="seed-0")
            stop(proc)
            assert env.step('{"word": "apple"}').info.status is Status.INFRA_ERROR
