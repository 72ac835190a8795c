"""NeMo Gym both ways: `envhub serve NAME --nemo-gym` answers its resources-server protocol,
and `envhub.interop.nemo_gym:NemoGymEnv` verifies through a resources server's /verify.

The request body in data/ was made by nemo-gym 0.4.0's own models (tests/support/
nemo_gym_probe.py). nemo-gym needs Python >= 3.12 and pins mcp<2, so it cannot live in envhub's
environment: where ENVHUB_NEMO_GYM_PYTHON names a Python that has it, the tests also build and
validate the bodies with its models live. `.ci/run` makes that Python (pins in .ci/nemo-gym.txt).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from children import stop

import envhub
from envhub.client.child_server import free_port
from envhub.types import Status

DATA = Path(__file__).parent / "data"
PROBE = Path(__file__).parents[1] / "support" / "nemo_gym_probe.py"
NEMO_PYTHON = os.environ.get("ENVHUB_NEMO_GYM_PYTHON")
# .ci/run makes nemo-gym's environment and sets ENVHUB_NEMO_GYM_PYTHON, or says why it could not.
CI_WHY = os.environ.get("ENVHUB_NEMO_GYM_UNAVAILABLE")
needs_nemo = pytest.mark.skipif(
    not NEMO_PYTHON,
    reason=(f"no nemo-gym in CI: {CI_WHY}; " if CI_WHY else "")
    + "set ENVHUB_NEMO_GYM_PYTHON to a Python >= 3.12 with nemo-gym to check the bodies "
    "with its own models (nemo-gym cannot share envhub's environment: Python 3.12, mcp<2)",
)


def _probe(*args: str, stdin: str = "") -> dict:
    out = subprocess.run([NEMO_PYTHON, str(PROBE), *args], input=stdin, capture_output=True,
                         text=True, check=True, timeout=120)  # fmt: skip
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def served():
    """`envhub serve gsm8k --nemo-gym`, as a NeMo Gym config would point at it."""
    port = free_port()
    cmd = [sys.executable, "-m", "envhub.cli", "serve", "gsm8k", "--nemo-gym", "--answers",
           "--port", str(port)]  # fmt: skip
    proc = subprocess.Popen(cmd)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.post(url + "/seed_session", json={}, timeout=0.5).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    try:
        yield url
    finally:
        stop(proc)


def _cli_verify(task_id: str, text: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "envhub.cli", "verify", "gsm8k", "--task-id", task_id,
         "--response", text], capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def task():
    with envhub.make("gsm8k") as env:
        return env.tasks()[5]


@pytest.mark.parametrize("right", [True, False])
def test_a_nemo_gym_verify_request_gets_the_reward_envhub_verify_gives(served, task, right):
    text = f"So the answer is\n#### {task.answer if right else -7}"
    body = json.loads((DATA / "nemo_gym_verify_request.json").read_text())
    body["response"]["output"][0]["content"][0]["text"] = text
    body["task_id"] = task.task_id
    answer = httpx.post(served + "/verify", json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    got = answer.json()
    expected = _cli_verify(task.task_id, text)
    assert got["reward"] == pytest.approx(expected["reward"])
    assert got["envhub"]["components"]["correctness"] == float(right)
    assert got["responses_create_params"] == body["responses_create_params"]
    assert got["response"] == body["response"]
    assert httpx.post(served + "/seed_session", json={}).json() == {}


def test_a_request_naming_no_task_is_the_callers_error_saying_what_to_add(served):
    body = json.loads((DATA / "nemo_gym_verify_request.json").read_text())
    answer = httpx.post(served + "/verify", json=body, timeout=60)
    assert answer.status_code == 422
    assert "add task_id" in answer.text


@needs_nemo
def test_nemo_gyms_own_models_build_the_request_and_read_the_answer(served, task):
    body = _probe("body", f"#### {task.answer}")
    body["task_id"] = task.task_id
    answer = httpx.post(served + "/verify", json=body, timeout=60)
    assert _probe("response", stdin=answer.text) == {"reward": answer.json()["reward"]}
    assert answer.json()["reward"] == pytest.approx(
        _cli_verify(task.task_id, f"#### {task.answer}")["reward"]
    )


def _rows(tmp_path, tasks) -> Path:
    path = tmp_path / "train.jsonl"
    rows = [
        {
            "task_id": t.task_id,
            "responses_create_params": {"input": [{"role": "user", "content": t.prompt}]},
        }
        for t in tasks
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _register(tmp_path, url, rows: Path) -> str:
    (tmp_path / "nemo.yaml").write_text(
        "name: nemo-gsm8k\nentry_point: envhub.interop.nemo_gym:NemoGymEnv\n"
        f"dataset: {{kind: jsonl, path: {rows}}}\noptions: {{base_url: {url!r}}}\n"
    )
    envhub.register(tmp_path / "nemo.yaml")
    return "nemo-gsm8k"


def test_nemo_gym_env_verifies_through_a_resources_servers_verify(
    served, tmp_path, clean_user_registry
):
    with envhub.make("gsm8k") as gsm8k:
        tasks = gsm8k.tasks()[:3]
        answers = [f"#### {t.answer}" for t in tasks[:2]] + ["#### -7"]
        expected = [gsm8k.verify(t, a).reward for t, a in zip(tasks, answers, strict=True)]
    name = _register(tmp_path, served, _rows(tmp_path, tasks))
    with envhub.make(name) as env:
        got = []
        for t, a in zip(tasks, answers, strict=True):
            opened = env.reset(task_id=t.task_id)
            assert opened.messages[-1].content == t.prompt
            got.append(env.step(a).reward)
    assert got == pytest.approx(expected)


@needs_nemo
def test_the_body_nemo_gym_env_sends_is_a_nemo_gym_verify_request(tmp_path):
    from envhub.interop.nemo_gym.env import responses_object

    body = {"responses_create_params": {"input": [{"role": "user", "content": "hi"}]},
            "response": responses_object("#### 3")}  # fmt: skip
    assert _probe("request", stdin=json.dumps(body)) == {"valid": True}


def test_a_dead_resources_server_is_infra_error(tmp_path, clean_user_registry, task):
    name = _register(tmp_path, f"http://127.0.0.1:{free_port()}", _rows(tmp_path, [task]))
    with envhub.make(name) as env:
        env.reset(task_id=task.task_id)
        step = env.step("#### 1")
    assert step.info.status is Status.INFRA_ERROR and "cannot reach" in step.info.error


def test_a_verification_envhub_cannot_make_is_a_503_never_a_zero_reward(monkeypatch):
    """The fault rule's serving side: a broken gold (the environment's fault) is no reward NeMo
    Gym could tell from a wrong answer, so it is a 503 naming the status, and a body that is no
    JSON is the caller's 4xx; the server answers the next request."""
    from serving import running

    from envhub.server.app import ServerSettings, create_app

    env = envhub.make("gsm8k")
    good = env.tasks()[0]
    broken = good.model_copy(update={"task_id": "broken", "answer": "\\frac{1}{"})
    found = env.get_task
    monkeypatch.setattr(env, "get_task", lambda i, s=None: broken if i == "broken" else found(i, s))
    body = json.loads((DATA / "nemo_gym_verify_request.json").read_text())
    body["response"]["output"][0]["content"][0]["text"] = f"#### {good.answer}"
    app = create_app(env, ServerSettings(answers=True), dialect="nemo-gym")
    with running(app) as url:
        answer = httpx.post(url + "/verify", json={**body, "task_id": "broken"}, timeout=60)
        assert answer.status_code == 503, answer.text
        assert "env_error" in answer.text
        garbage = httpx.post(url + "/verify", content=b"<html>", timeout=60)
        assert 400 <= garbage.status_code < 500, garbage.text
        answer = httpx.post(url + "/verify", json={**body, "task_id": good.task_id}, timeout=60)
        assert answer.status_code == 200 and answer.json()["reward"] > 0


def test_a_lone_surrogate_in_the_models_text_is_verified_and_a_text_no_string_is_the_callers():
    """The model's text may escape a lone surrogate: echoing it failed the answer (a 422 the
    caller charges to itself, NeMo Gym's bridge as env_error), where envhub's own routes verify
    such text as U+FFFD. An ``output_text`` whose text is null or a number crashed the route
    (500); it is the caller's malformed request (422, naming it)."""
    from serving import running

    from envhub.server.app import ServerSettings, create_app

    env = envhub.make("gsm8k")
    good = env.tasks()[0]
    body = json.loads((DATA / "nemo_gym_verify_request.json").read_text())
    part = body["response"]["output"][0]["content"][0]
    app = create_app(env, ServerSettings(answers=True), dialect="nemo-gym")
    with running(app) as url:
        part["text"] = f"#### {good.answer} \ud800"
        raw = json.dumps({**body, "task_id": good.task_id}).encode()  # "\ud800" escaped
        headers = {"content-type": "application/json"}
        answer = httpx.post(url + "/verify", content=raw, headers=headers, timeout=60)
        assert answer.status_code == 200, answer.text
        assert answer.json()["envhub"]["status"] == "ok"
        assert answer.json()["response"]["output"][0]["content"][0]["text"].endswith("\ufffd")
        for text in (None, 5):
            part["text"] = text
            wrong = httpx.post(url + "/verify", json={**body, "task_id": good.task_id}, timeout=60)
            assert wrong.status_code == 422 and "not a string" in wrong.text, wrong.text
