"""Attacks on the server's edges: sessions by id alone, foreign pages, odd frames, huge steps.

A session id is shown in logs and errors; it is not a credential. Every attack here is a
second party holding what it should not be able to use, or a model's message the wire cannot
carry, which must end as the model's own status, never the machinery's.
"""

from __future__ import annotations

import json

import httpx
import pytest
from serving import running, serving_env
from websockets.sync.client import connect

import envhub
from envhub.client.remote_env import RemoteEnv
from envhub.server.app import ServerSettings, create_app
from envhub.types import Status


@pytest.fixture
def count_url(dummy_registry):
    with serving_env("count") as url:
        yield url


def _ws(url: str):
    return connect(url.replace("http", "ws", 1) + "/ws")


def test_an_id_without_its_secret_drives_no_session(count_url):
    with RemoteEnv(count_url, transport="http") as owner:
        owner.reset(task_id="count-4")
        sid, secret = owner._wire.session.id, owner._wire.session.secret
        for guess in ("", "guess", secret[:-1] + "x"):
            attacks = [
                ("/step", {"session_id": sid, "session_secret": guess, "message": "1"}),
                ("/finish", {"session_id": sid, "session_secret": guess}),
                ("/close", {"session_id": sid, "session_secret": guess}),
                ("/reset", {"close_session": sid, "close_secret": guess}),
            ]
            for path, body in attacks:
                r = httpx.post(count_url + path, json=body)
                assert r.status_code == 403 and r.json()["kind"] == "forbidden", path
                assert "session_secret" in r.json()["error"]
            with _ws(count_url) as raw:  # resume on another connection
                raw.send(json.dumps({"op": "resume", "session_id": sid, "session_secret": guess}))
                assert json.loads(raw.recv(timeout=10))["code"] == 403
                raw.send(json.dumps({"op": "step", "message": "1"}))  # nothing was resumed
                assert json.loads(raw.recv(timeout=10))["kind"] == "episode_state"
        # the owner's episode went on untouched: every step counts, none was played by another
        assert [owner.step(str(n)).info.status for n in range(1, 5)] == [Status.OK] * 4


def test_the_secret_resumes_on_another_connection(count_url):
    with RemoteEnv(count_url, transport="ws") as owner:
        owner.reset(task_id="count-4")
        session = owner._wire.session
        assert owner.step("1").info.status == Status.OK
        with _ws(count_url) as raw:
            frame = {"op": "resume", "session_id": session.id, "session_secret": session.secret}
            raw.send(json.dumps(frame))
            assert json.loads(raw.recv(timeout=10))["steps"] == 1


REBOUND = {"Host": "attacker.example:8000"}  # a page's name, rebound to 127.0.0.1
FOREIGN = {"Origin": "http://attacker.example"}  # a page's fetch to 127.0.0.1


@pytest.mark.parametrize("headers", [REBOUND, FOREIGN])
def test_a_web_page_reaches_no_route(dummy_registry, headers):
    pytest.importorskip("mcp")
    app = create_app(envhub.make("count"), ServerSettings(answers=True), mcp=True)
    code, kind = (421, "bad_host") if "Host" in headers else (403, "bad_origin")
    with running(app) as url:
        for method, path in [("GET", "/tasks"), ("POST", "/reset"), ("POST", "/mcp")]:
            r = httpx.request(method, url + path, headers=headers, json={})
            assert r.status_code == code and r.json()["kind"] == kind, path
            assert "--allow-" in r.json()["error"]
        with (
            pytest.raises(Exception, match="403|1008"),
            connect(url.replace("http", "ws", 1) + "/ws", additional_headers=headers),
        ):
            pass
        assert httpx.get(url + "/health", headers=headers).is_success  # probes name an address
        # loopback names and no Origin (every envhub client, curl) are served as before
        assert httpx.get(url + "/tasks", headers={"Origin": "http://localhost:3000"}).is_success


def test_allow_host_and_allow_origin_let_a_proxy_in(dummy_registry):
    settings = ServerSettings(
        allowed_hosts=["attacker.example"],
        allowed_origins=["http://attacker.example"],
        answers=True,
    )
    with running(create_app(envhub.make("count"), settings)) as url:
        assert httpx.get(url + "/tasks", headers={**REBOUND, **FOREIGN}).is_success
        assert httpx.get(url + "/tasks", headers={"Host": "other.example"}).status_code == 421


def test_a_binary_frame_is_answered_and_the_session_kept(count_url):
    with _ws(count_url) as raw:
        raw.send(json.dumps({"op": "reset", "task_id": "count-4"}))
        assert "session_id" in json.loads(raw.recv(timeout=10))
        raw.send(json.dumps({"op": "step", "message": "1"}).encode())  # bytes: a binary frame
        error = json.loads(raw.recv(timeout=10))
        assert error["kind"] == "bad_input" and "text frame" in error["error"]
        raw.send(json.dumps({"op": "step", "message": "1"}))  # the same session goes on
        info = json.loads(raw.recv(timeout=10))["info"]
        assert info["status"] == "ok" and info["turn"] == 1  # the binary one was not applied


HUGE = "1" * 300_000  # over the server's 64 KiB limit below, and over max_message_chars


@pytest.fixture
def small_body_url(dummy_registry):
    with serving_env("count", max_body_bytes=65_536) as url:
        yield url


def test_an_oversized_step_is_invalid_action_in_process(dummy_registry):
    with envhub.make("count") as env:
        env.reset(task_id="count-4")
        assert env.step(HUGE).info.status == Status.INVALID_ACTION


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_an_oversized_step_is_invalid_action_on_every_runner(small_body_url, transport):
    with RemoteEnv(small_body_url, transport=transport) as env:
        for call in (env.step, _async_step(env)):
            env.reset(task_id="count-4")
            assert env.step("1").info.status == Status.OK
            result = call(HUGE)
            assert result.info.status == Status.INVALID_ACTION and result.reward == 0.0
            assert "max_body_bytes" in result.info.error and result.truncated
            assert result.info.turn == 1  # the env never saw it: the episode ends, as paid


def _async_step(env):
    import asyncio

    async def both(message):
        await env.areset(task_id="count-4")
        assert (await env.astep("1")).info.status == Status.OK
        return await env.astep(message)

    return lambda message: asyncio.run(both(message))


def test_an_oversized_step_from_a_foreign_client_is_invalid_action(small_body_url):
    opened = httpx.post(small_body_url + "/reset", json={"task_id": "count-4"}).json()
    session = {k: opened[k] for k in ("session_id", "session_secret")}
    r = httpx.post(small_body_url + "/step", json={**session, "seq": 1, "message": HUGE})
    assert r.status_code == 200 and r.json()["info"]["status"] == "invalid_action"
    again = httpx.post(small_body_url + "/step", json={**session, "seq": 1, "message": HUGE})
    assert again.json() == r.json()  # sent again: answered from the record, not applied twice
    thief = httpx.post(small_body_url + "/step", json={"session_id": opened["session_id"],
                                                        "message": HUGE})  # fmt: skip
    assert thief.status_code == 403  # the stand-in needs the secret like any step
    with _ws(small_body_url) as raw:
        raw.send(json.dumps({"op": "reset", "task_id": "count-4"}))
        raw.recv(timeout=10)
        raw.send(json.dumps({"op": "step", "seq": 1, "message": HUGE}))
        assert json.loads(raw.recv(timeout=10))["info"]["status"] == "invalid_action"


def test_an_oversized_response_to_verify_is_invalid_action_not_a_crash(dummy_registry):
    with serving_env("echo", max_body_bytes=65_536) as url, RemoteEnv(url) as env:
        huge, good = env.verify_batch([("train/0", HUGE), ("train/0", "alpha")])
        assert huge.status == Status.INVALID_ACTION and "max_body_bytes" in huge.error
        assert good.status == Status.OK and good.components["correctness"] == 1.0
        assert env.verify("train/0", HUGE).status == Status.INVALID_ACTION
        with envhub.make("echo") as local:  # in process: the same status
            assert local.verify("train/0", HUGE).status == Status.INVALID_ACTION
