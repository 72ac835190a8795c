"""The WebSocket transport: resumed sessions, failures as infra_error, limits, fallback.

The ``count`` test env says 1..N one per turn and ends with correctness 0 on a wrong number,
so a step lost or applied twice shows in the reward.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx
import pytest
from serving import running
from tcpproxy import Relay
from websockets.sync.client import connect

import envhub
from envhub.client.child_server import spawn_server
from envhub.client.remote_env import RemoteEnv
from envhub.errors import EpisodeStateError, TransportError
from envhub.server.app import ServerSettings, create_app
from envhub.types import Status


def _app(name="count", **settings):
    return create_app(envhub.make(name), ServerSettings(**settings))


@pytest.fixture
def count_url(dummy_registry):
    with running(_app()) as url:
        yield url


def _count_to_four(env, between=None):
    env.reset(task_id="count-4")
    rewards = []
    for n in range(1, 5):
        if between is not None:
            between(n)
        step = env.step(str(n))
        assert step.info.status == Status.OK, step.info.error
        rewards.append(step.reward)
    assert step.terminated and step.info.turn == 4
    return rewards


def test_a_dropped_connection_mid_episode_resumes_the_session(count_url):
    relay = Relay(int(count_url.rsplit(":", 1)[1]))
    try:
        with RemoteEnv(relay.url, transport="ws") as env:
            rewards = _count_to_four(env, between=lambda n: relay.cut() if n in (2, 4) else None)
        assert rewards == [0.0, 0.0, 0.0, 1.0]
        assert relay.accepted == 1 + 3  # /info over HTTP; the WebSocket, then one per cut
    finally:
        relay.close()


def test_a_step_whose_answer_was_lost_is_not_applied_twice(count_url):
    relay = Relay(int(count_url.rsplit(":", 1)[1]))

    def lose_answer(n):
        relay.swallow_next_answer = n == 3  # the server applies step 3, the client never hears

    try:
        with RemoteEnv(relay.url, transport="ws") as env:
            assert _count_to_four(env, between=lose_answer) == [0.0, 0.0, 0.0, 1.0]
    finally:
        relay.close()


def test_a_killed_server_is_infra_error_per_episode_and_nothing_hangs(dummy_registry):
    server = spawn_server(envhub.registry.catalog.spec("count"))
    env = RemoteEnv(server.url, transport="ws", timeout=5, retries=2, owner=server)
    forks = [env.fork() for _ in range(4)]
    for f in forks:
        f.reset(task_id="count-4")
        assert f.step("1").info.status == Status.OK
    server.proc.kill()
    server.proc.wait()
    started = time.monotonic()
    results = [f.step("2") for f in forks]
    assert time.monotonic() - started < 10
    for r in results:
        assert r.info.status == Status.INFRA_ERROR and r.truncated and r.reward == 0.0
        assert "connection" in r.info.error
    with pytest.raises(EpisodeStateError):  # that episode is over; the handle is not wedged
        forks[0].step("3")
    with pytest.raises(TransportError):
        forks[0].reset(task_id="count-4")
    for f in forks:
        f.close()
    env.close()


def test_async_episodes_share_the_server_and_match_sync(count_url):
    env = RemoteEnv(count_url, transport="ws")

    async def play(fork):
        await fork.areset(task_id="count-3")
        return [(await fork.astep(str(n))).reward for n in (1, 2, 3)]

    async def main():
        return await asyncio.gather(*(play(env.fork()) for _ in range(8)))

    try:
        assert asyncio.run(main()) == [[0.0, 0.0, 1.0]] * 8
        assert httpx.get(count_url + "/metrics").json()["ws_connections"] >= 8
    finally:
        env.close()


def test_a_killed_server_is_infra_error_for_async_episodes_too(dummy_registry):
    server = spawn_server(envhub.registry.catalog.spec("count"))
    env = RemoteEnv(server.url, transport="ws", timeout=5, retries=1, owner=server)

    async def main():
        await env.areset(task_id="count-4")
        server.proc.kill()
        server.proc.wait()
        return await asyncio.wait_for(env.astep("1"), 10)

    try:
        result = asyncio.run(main())
        assert result.info.status == Status.INFRA_ERROR
    finally:
        env.close()


def test_ws_keeps_the_servers_limits(dummy_registry):
    with running(_app(max_body_bytes=4096, max_sessions=1)) as url:
        with RemoteEnv(url, transport="ws", retries=0) as env:
            env.reset(task_id="count-4")
            with connect(url.replace("http", "ws") + "/ws") as raw:  # a call that is no step
                raw.send(json.dumps({"op": "reset", "task_id": "1" * 10_000}))
                assert json.loads(raw.recv(timeout=10))["code"] == 413
            other = env.fork()
            with pytest.raises(TransportError, match="sessions are in use"):
                other.reset(task_id="count-4")
            assert env.step("1").info.status == Status.OK


def _no_websockets(app):
    async def refuse(scope, receive, send):
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await app(scope, receive, send)

    return refuse


def test_auto_falls_back_to_http_where_websockets_are_refused(dummy_registry):
    with running(_no_websockets(_app())) as url:
        with RemoteEnv(url) as env:
            assert _count_to_four(env) == [0.0, 0.0, 0.0, 1.0]
            assert env.transport == "http"
        with pytest.raises(TransportError, match="transport='http'"):
            RemoteEnv(url, transport="ws").reset(task_id="count-4")


def test_a_refused_websocket_hands_the_session_to_the_http_wire_for_every_fork(dummy_registry):
    with running(_no_websockets(_app())) as url, RemoteEnv(url) as env:
        early = env.fork()  # made while the pool still takes the WebSocket
        assert env._wire.name == "ws" and early._wire.name == "ws"
        session = env._wire.session
        assert asyncio.run(env.areset(task_id="count-4")).info.task_id == "count-4"
        assert env._wire.name == "http" and env._wire.session is session and session.live
        assert env.transport == early.transport == "http"  # the pool speaks HTTP from now on
        late = env.fork()
        assert late._wire.name == "http"
        for handle in (env, early, late):  # the early fork falls back at its own refusal
            assert _count_to_four(handle) == [0.0, 0.0, 0.0, 1.0]
            assert handle._wire.name == "http"
        early.close()
        late.close()


def test_a_reconnect_refused_mid_episode_is_infra_error_not_an_exception(dummy_registry):
    app = _app()
    refusing = _no_websockets(app)
    refuse = False

    async def switch(scope, receive, send):
        await (refusing if refuse else app)(scope, receive, send)

    with running(switch) as url:
        relay = Relay(int(url.rsplit(":", 1)[1]))
        try:
            with RemoteEnv(relay.url, retries=1) as env:
                env.reset(task_id="count-4")
                assert env.step("1").info.status == Status.OK
                refuse = True  # a proxy that stops taking WebSockets, then a dropped connection
                relay.cut()
                lost = env.step("2")
                assert lost.info.status == Status.INFRA_ERROR and "refused" in lost.info.error
                assert env.reset(task_id="count-4").info.task_id == "count-4"  # over HTTP now
                assert env.transport == "http"
        finally:
            relay.close()


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_the_server_deadline_ends_a_wedged_step_as_infra_error(dummy_registry, transport):
    env = envhub.make("count")
    env.step = lambda action: time.sleep(3)  # forks copy it: every episode's step wedges
    with running(create_app(env, ServerSettings(request_timeout_s=0.5))) as url:
        with RemoteEnv(url, transport=transport, retries=0) as client:
            client.reset(task_id="count-4")
            started = time.monotonic()
            result = client.step("1")
            assert time.monotonic() - started < 2.5
            assert result.info.status == Status.INFRA_ERROR and "deadline" in result.info.error
            assert httpx.get(url + "/health", timeout=1).status_code == 200


async def _acount_to_four(env, between):
    await env.areset(task_id="count-4")
    rewards = []
    for n in range(1, 5):
        between(n)
        step = await env.astep(str(n))
        assert step.info.status == Status.OK, step.info.error
        rewards.append(step.reward)
    assert step.terminated and step.info.turn == 4
    return rewards


def test_async_a_dropped_connection_or_a_lost_answer_resumes_without_a_double_step(count_url):
    relay = Relay(int(count_url.rsplit(":", 1)[1]))

    def trouble(n):
        if n == 2:
            relay.cut()
        relay.swallow_next_answer = n == 3

    try:
        with RemoteEnv(relay.url, transport="ws", timeout=2) as env:
            assert asyncio.run(_acount_to_four(env, trouble)) == [0.0, 0.0, 0.0, 1.0]
        assert relay.accepted >= 1 + 3  # /info; the WebSocket; again after the cut and the loss
    finally:
        relay.close()


@pytest.mark.parametrize("api", ["sync", "async"])
def test_the_clients_deadline_ends_a_silent_call_as_infra_error(dummy_registry, api):
    env = envhub.make("count")
    wedge = threading.Event()  # the step answers only when the test lets it (after its checks)
    env.step = lambda action: wedge.wait(60)
    with running(create_app(env)) as url:
        try:
            with RemoteEnv(url, transport="ws", retries=0, timeout=2.0) as client:

                async def play():
                    await client.areset(task_id="count-4")
                    started = time.monotonic()
                    return await client.astep("1"), time.monotonic() - started

                if api == "async":
                    result, took = asyncio.run(play())
                else:
                    client.reset(task_id="count-4")
                    started = time.monotonic()
                    result, took = client.step("1"), time.monotonic() - started
        finally:
            wedge.set()
    assert took < 10  # the step is wedged until the end: only the client's 2 s deadline ends it
    assert result.info.status == Status.INFRA_ERROR and "deadline" in result.info.error


def test_closing_a_sync_handle_closes_its_session_on_the_server(count_url):
    with RemoteEnv(count_url, transport="ws") as env:
        forks = [env.fork() for _ in range(3)]
        for fork in forks:
            fork.reset(task_id="count-4")
        assert httpx.get(count_url + "/metrics").json()["sessions"] == 3
        for fork in forks:
            fork.close()
        deadline = time.monotonic() + 5
        while httpx.get(count_url + "/metrics").json()["sessions"] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert httpx.get(count_url + "/metrics").json()["sessions"] == 0


def test_finish_on_the_ws_wire_is_a_frame_and_answers_what_http_does(dummy_registry):
    """``finish`` goes on the episode's WebSocket (no ``POST /finish``), blocking and awaited,
    with the final accounting the HTTP wire gets for the same episode."""
    app, paths = _app(), []

    @app.middleware("http")
    async def record(request, call_next):
        paths.append(request.url.path)
        return await call_next(request)

    def two_steps_then_finish(env, aio):
        env.reset(task_id="count-4")
        env.step("1")
        env.step("2")
        return asyncio.run(env.afinish()) if aio else env.finish()

    with running(app) as url:
        results = {}
        for transport, aio in (("ws", False), ("ws", True), ("http", False)):
            with RemoteEnv(url, transport=transport) as env:
                results[transport, aio] = two_steps_then_finish(env, aio)
                assert not env._wire.session.live
                with pytest.raises(EpisodeStateError):  # finished: the episode is over
                    env.finish()
            if transport == "ws":
                assert "/finish" not in paths and "/step" not in paths, paths
    over_http = results["http", False]
    assert over_http.truncated and over_http.info.status == Status.OK
    assert paths.count("/finish") == 1
    dumped = {k: r.model_dump() for k, r in results.items()}
    assert dumped["ws", False] == dumped["ws", True] == dumped["http", False]


def test_a_lone_surrogate_in_a_step_is_scored_on_ws_as_on_http(dummy_registry):
    """A third-party client's frame may escape a lone surrogate in the model's text: pydantic's
    JSON parser refused it (``invalid_request``) where the HTTP routes score it as U+FFFD; a
    frame no parser reads is still refused."""
    with running(_app("echo")) as url, connect(url.replace("http", "ws") + "/ws") as raw:
        raw.send('{"op": "reset", "seed": 0}')
        raw.recv(timeout=10)
        raw.send('{"op": "step", "message": "alpha \\ud800"}')
        step = json.loads(raw.recv(timeout=10))
        assert step["info"]["status"] == "ok", step
        raw.send('{"op": "reset", "seed": 0}')
        raw.recv(timeout=10)
        raw.send('{"op": "step", "message": ' + "[" * 5000 + '"\\ud800"' + "]" * 5000 + "}")
        assert json.loads(raw.recv(timeout=10))["code"] == 422
