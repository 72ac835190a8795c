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


# ------------------------------------------------------------------ malformed frames (B10)

DEEP = '{"type": "step", "data": {"message": "hi", "metadata": ' + '{"a": ' * 100_000
MALFORMED = [
    ("deep-json", DEEP + "1" + "}" * 100_002, "INVALID_JSON"),
    ("not-json", "\x00garbage", "INVALID_JSON"),
    ("frame-list", [1, 2, 3], "VALIDATION_ERROR"),
    ("frame-string", "step", "INVALID_JSON"),
    ("type-list", {"type": ["step"], "data": {}}, "UNKNOWN_TYPE"),
    ("type-dict", {"type": {"step": 1}, "data": {}}, "UNKNOWN_TYPE"),
    ("type-number", {"type": 3, "data": {}}, "UNKNOWN_TYPE"),
    ("type-missing", {"data": {"message": "hi"}}, "UNKNOWN_TYPE"),
    ("type-mcp", {"type": "mcp", "data": {}}, "UNKNOWN_TYPE"),
    ("data-list", {"type": "step", "data": [1, 2]}, "VALIDATION_ERROR"),
    ("data-zero", {"type": "step", "data": 0}, "VALIDATION_ERROR"),
    ("data-string", {"type": "reset", "data": "seed"}, "VALIDATION_ERROR"),
    ("message-int", {"type": "step", "data": {"message": 5}}, "VALIDATION_ERROR"),
    ("message-missing", {"type": "step", "data": {}}, "VALIDATION_ERROR"),
    ("seed-string", {"type": "reset", "data": {"seed": "x"}}, "VALIDATION_ERROR"),
]


@pytest.mark.parametrize(
    ("frame", "code"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_a_malformed_frame_gets_an_error_frame_and_the_episode_goes_on(echo_openenv, frame, code):
    """The attack: frames that raised RecursionError or TypeError dropped the socket unanswered."""
    with _ws(echo_openenv) as ws:
        _call(ws, "reset", {"seed": 0})
        before = _call(ws, "state")["data"]
        ws.send(frame if isinstance(frame, str) else json.dumps(frame))
        answer = json.loads(ws.recv(timeout=10))
        assert (answer["type"], answer["data"]["code"]) == ("error", code), answer
        assert _call(ws, "state")["data"] == before  # the same episode, nothing applied
        assert _call(ws, "step", {"message": "hi"})["type"] == "observation"


# ------------------------------------------------------------------ whose fault (B12)


def _served_echo(url: str, tmp_path, **options) -> envhub.Env:
    """envhub's own OpenEnv client playing ``url``'s echo (its message JSON, no action_field)."""
    extra = "".join(f", {k}: {v}" for k, v in options.items())
    (tmp_path / "served.yaml").write_text(
        "name: served-echo\nentry_point: envhub.interop.openenv:OpenEnvEnv\nmax_turns: 4\n"
        f"dataset: {{size: 2}}\noptions: {{base_url: {url!r}{extra}}}\n"
    )
    envhub.register(tmp_path / "served.yaml")
    return envhub.make("served-echo")


@pytest.fixture
def short_deadline(dummy_registry):
    """The echo served over OpenEnv with a server deadline of 0.3 s."""
    settings = ServerSettings(request_timeout_s=0.3)
    with running(create_app(envhub.make("echo"), settings, dialect="openenv")) as url:
        yield url


def test_the_servers_deadline_is_session_error_and_never_the_actions(
    short_deadline, tmp_path, clean_user_registry
):
    """A step past envhub's own deadline was EXECUTION_ERROR: the model's invalid_action."""
    with _ws(short_deadline) as ws:
        _call(ws, "reset", {"seed": 0})
        late = _call(ws, "step", {"message": "slow 1"})
    with _served_echo(short_deadline, tmp_path) as env:
        env.reset(seed=0)
        step = env.step('{"message": "slow 1"}')
    assert (late["type"], late["data"]["code"]) == ("error", "SESSION_ERROR")
    assert "deadline of 0.3 s" in late["data"]["message"]
    assert step.info.status is Status.INFRA_ERROR and "SESSION_ERROR" in step.info.error


@pytest.mark.parametrize("said", ["infra", "boom"], ids=["infra_error", "env_error"])
def test_a_step_whose_status_is_the_machinerys_is_session_error_never_a_reward(
    echo_openenv, tmp_path, clean_user_registry, said
):
    """An infra_error step was an observation paying 0.0, which an OpenEnv trainer trains on."""
    with _ws(echo_openenv) as ws:
        _call(ws, "reset", {"seed": 0})
        answer = _call(ws, "step", {"message": said})
    assert (answer["type"], answer["data"]["code"]) == ("error", "SESSION_ERROR")
    with _served_echo(echo_openenv, tmp_path) as env:
        env.reset(seed=0)
        step = env.step(json.dumps({"message": said}))
    assert step.info.status is Status.INFRA_ERROR and step.reward == 0.0


def test_a_bug_in_the_server_is_session_error_logged_and_the_connection_stays(
    echo_openenv, monkeypatch, caplog
):
    from envhub.server.episodes import Episodes

    async def broken(self, sid, message, seq=None):
        raise KeyError("a bug")

    with _ws(echo_openenv) as ws:
        _call(ws, "reset", {"seed": 0})
        with monkeypatch.context() as patch:
            patch.setattr(Episodes, "step", broken)
            answer = _call(ws, "step", {"message": "hi"})
        assert _call(ws, "step", {"message": "hi"})["type"] == "observation"
    assert (answer["type"], answer["data"]["code"]) == ("error", "SESSION_ERROR")
    assert "internal error KeyError" in answer["data"]["message"]
    assert "bug in the OpenEnv /ws" in caplog.text


def test_a_full_server_is_capacity_reached(dummy_registry):
    settings = ServerSettings(max_sessions=1)
    with running(create_app(envhub.make("echo"), settings, dialect="openenv")) as url:
        with _ws(url) as first, _ws(url) as second:
            _call(first, "reset", {"seed": 0})
            full = _call(second, "reset", {"seed": 0})
    assert (full["type"], full["data"]["code"]) == ("error", "CAPACITY_REACHED")


def test_the_models_invalid_action_stays_invalid_action(
    echo_openenv, tmp_path, clean_user_registry
):
    """A message that is no action of the server's (an unknown field): the model's, as ever."""
    with _served_echo(echo_openenv, tmp_path) as env:
        env.reset(seed=0)
        refused = env.step('{"mesage": "alpha"}')
        played = env.step('{"message": "invalid"}')  # the env's own invalid_action: observed
    assert refused.info.status is Status.INVALID_ACTION and "VALIDATION_ERROR" in refused.info.error
    assert played.info.status is Status.OK
    assert json.loads(played.messages[0].content)["status"] == "invalid_action"
