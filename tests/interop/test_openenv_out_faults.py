"""`envhub serve NAME --openenv` when the client or the clock misbehaves (issue 33, item 5).

A binary frame gets an error frame (it used to close the connection unanswered); a refused
reset (an unknown task) leaves the connection's running episode as it was; a session the
server expired answers ``SESSION_ERROR``, which envhub's own OpenEnv client reads as the
machinery's ``infra_error``, not the model's ``invalid_action``.
"""

from __future__ import annotations

import json
import time

import pytest
from serving import running
from websockets.sync.client import connect

import envhub
from envhub.server.app import ServerSettings, create_app
from envhub.types import Status

TTL_S = 0.5


@pytest.fixture
def echo_openenv(dummy_registry):
    app = create_app(envhub.make("echo"), ServerSettings(session_ttl_s=TTL_S), dialect="openenv")
    with running(app) as url:
        yield url


def _call(ws, kind: str, data: dict | None = None) -> dict:
    ws.send(json.dumps({"type": kind, "data": data or {}}))
    return json.loads(ws.recv(timeout=10))


def _ws(url: str):
    return connect(url.replace("http", "ws", 1) + "/ws")


def test_a_binary_frame_gets_an_error_frame_and_the_episode_goes_on(echo_openenv):
    with _ws(echo_openenv) as ws:
        _call(ws, "reset", {"seed": 0})
        ws.send(b'{"type": "step", "data": {"message": "hi"}}')
        assert json.loads(ws.recv(timeout=10)) == {
            "type": "error",
            "data": {
                "message": "binary frames are not read: send the JSON as a text frame",
                "code": "INVALID_JSON",
            },
        }
        assert _call(ws, "step", {"message": "hi"})["type"] == "observation"


def test_a_refused_reset_keeps_the_running_episode(echo_openenv):
    with _ws(echo_openenv) as ws:
        _call(ws, "reset", {"seed": 0})
        before = _call(ws, "state")["data"]
        refused = _call(ws, "reset", {"task_id": "no-such-task"})
        assert (refused["type"], refused["data"]["code"]) == ("error", "EXECUTION_ERROR")
        assert _call(ws, "state")["data"] == before
        assert _call(ws, "step", {"message": "hi"})["type"] == "observation"


def test_an_expired_session_is_session_error(echo_openenv):
    with _ws(echo_openenv) as ws:
        _call(ws, "reset", {"seed": 0})
        time.sleep(TTL_S * 2)
        expired = _call(ws, "step", {"message": "hi"})
    assert (expired["type"], expired["data"]["code"]) == ("error", "SESSION_ERROR")


def test_envhubs_openenv_client_reads_an_expired_session_as_infra_error(
    echo_openenv, tmp_path, clean_user_registry
):
    (tmp_path / "served.yaml").write_text(
        "name: served-echo\nentry_point: envhub.interop.openenv:OpenEnvEnv\nmax_turns: 4\n"
        f"dataset: {{size: 2}}\noptions: {{base_url: {echo_openenv!r}, action_field: message}}\n"
    )
    envhub.register(tmp_path / "served.yaml")
    with envhub.make("served-echo") as env:
        env.reset(seed=0)
        time.sleep(TTL_S * 2)
        step = env.step("hi")
    assert step.info.status is Status.INFRA_ERROR and "SESSION_ERROR" in step.info.error
