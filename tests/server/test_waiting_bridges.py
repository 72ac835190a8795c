"""envhub's own environments that wait on I/O are served awaited: the judge, the bridges.

A judged environment (its judge answers in a second), a remote environment (``RemoteEnv`` of
another envhub server whose steps wait a second), an OpenEnv server's environment (its steps
take a second) and an MCP server's tools (a tool that answers in a second) are each served by
a server with two worker threads and a 0.2 s queue bound: many sessions whose steps all wait at
once are served together, in about one wait, with no ``overloaded`` refusal and no
``infra_error``. On the worker threads they would take a wait per two sessions. Awaited, each
keeps its statuses (a judge that is down, an OpenEnv server that is slow or goes away), and
the sync API still plays each in-process.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from dummy_envs import AwaitingEnv
from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from gullible_judge import gullible_judge
from serving import all_at_once, running

from envhub.client.child_server import free_port
from envhub.client.remote_env import RemoteEnv
from envhub.evaluate.scripted import ScriptedEndpoint, ScriptedHTTPError
from envhub.interop.openenv.env import OpenEnvEnv
from envhub.registry.make import make_local
from envhub.server.app import ServerSettings, create_app
from envhub.spec import EnvSpec
from envhub.types import FunctionCall, Message, Status, ToolCall

SESSIONS = 256
WAIT_S = 1.0
TIGHT = {"threads": 2, "queue_timeout_s": 0.2, "request_timeout_s": 30.0}
"""Two worker threads and a short queue bound: what a blocking wait would overflow."""
ROOT = Path(__file__).resolve().parents[2]


def _served(env, sessions: int, **play) -> tuple[list, float, dict]:
    """``sessions`` episodes of ``env`` served with :data:`TIGHT`, every step sent at once."""
    with running(create_app(env, ServerSettings(**TIGHT)), ws="websockets-sansio") as url:
        assert httpx.get(url + "/metrics").json()["calls"] == "awaited"
        steps, elapsed = asyncio.run(all_at_once(url, sessions, **play))
        metrics = httpx.get(url + "/metrics").json()
    assert [s.info.status for s in steps] == [Status.OK] * sessions, steps[0].info.error
    assert "refused_overloaded" not in metrics and "rejected_overload" not in metrics
    # on two threads, a wait each, they would take sessions / 2 waits; together, about one
    assert elapsed < 8 * WAIT_S
    return steps, elapsed, metrics


# ---------------------------------------------------------------------------- the judge


def _judged(base_url: str, **judge):
    cfg = {
        "base_url": base_url,
        "model": "scripted",
        "prompt": "Task: {task}\nGold: {gold}\nAnswer: {response}\nIs the answer right?",
        "max_concurrency": SESSIONS,
        **judge,
    }
    spec = {"name": "judged-echo", "entry_point": "dummy_envs:EchoEnv"}
    reward = {"weights": {"correctness": 1.0, "style": 1.0}, "judges": {"style": cfg}}
    return make_local(EnvSpec.model_validate({**spec, "reward": reward}))


def test_256_sessions_whose_steps_wait_on_the_judge_are_served_at_once():
    with ScriptedEndpoint(gullible_judge(), delay=WAIT_S) as judge:
        steps, _, _ = _served(_judged(judge.base_url), SESSIONS, message="alpha")
        assert judge.requests == SESSIONS  # every step waited on the judge
    assert all(s.info.components["style"] == 1.0 and s.reward == 2.0 for s in steps)


async def _areset_astep(env, message: str):
    await env.areset(task_id="train/0")
    return await env.astep(message)


def _reset_step(env, message: str):
    env.reset(task_id="train/0")  # in-process, blocking: no event loop of its own
    return env.step(message)


def test_an_awaited_judge_keeps_its_statuses_and_the_sync_api_still_plays():
    def down(body):
        raise ScriptedHTTPError(500, "the judge fell over")

    play = _areset_astep
    with ScriptedEndpoint(gullible_judge()) as judge:
        env = _judged(judge.base_url)
        assert type(env).async_steps
        right, garbled = (asyncio.run(play(env, m)) for m in ("alpha", "alpha GARBLE"))
        sync = _reset_step(env, "alpha")
    assert right.info.status is Status.OK and right.reward == 2.0
    assert sync.info.status is Status.OK and sync.info.components == right.info.components
    assert garbled.info.status is Status.INVALID_ACTION and "gave no verdict" in garbled.info.error
    with ScriptedEndpoint(down) as dead:
        failed = asyncio.run(play(_judged(dead.base_url), "alpha"))
    assert failed.info.status is Status.INFRA_ERROR and "HTTP 500" in failed.info.error
    assert failed.info.components == {} and failed.reward == 0.0


def test_the_step_deadline_bounds_the_envs_own_hook_not_the_wait_on_the_judge():
    """A judge slower than the step's deadline is no slow step of the model's; a slow hook is."""
    with ScriptedEndpoint(gullible_judge(), delay=0.6) as judge:
        env = _judged(judge.base_url)
        env.step_timeout_s = 0.3
        sync, awaited = _reset_step(env, "alpha"), asyncio.run(_areset_astep(env, "alpha!"))
        slow_sync = _reset_step(env, "slow 1")
        slow_awaited = asyncio.run(_areset_astep(env, "slow 1"))
    for step in (sync, awaited):
        assert step.info.status is Status.OK and step.info.components["style"] == 1.0
    for step in (slow_sync, slow_awaited):
        assert step.info.status is Status.TIMEOUT and "deadline" in step.info.error


# ---------------------------------------------------------------------------- a remote env


def test_256_sessions_of_a_served_remote_env_whose_steps_wait_are_served_at_once():
    inner = AwaitingEnv(EnvSpec(name="waits", max_turns=1))
    inner.wait_s = WAIT_S
    with (
        running(create_app(inner, ServerSettings()), ws="websockets-sansio") as inner_url,
        RemoteEnv(inner_url, transport="ws") as remote,
    ):
        steps, _, _ = _served(remote, SESSIONS)
    assert all(s.reward == 1.0 for s in steps)


def test_a_remote_episode_closed_on_its_loop_is_closed_by_a_frame_not_a_blocking_request(
    monkeypatch,
):
    """What a server does when it closes a session of a remote env: no HTTP on its loop."""
    from envhub.client.http_wire import HttpWire

    posted = []
    close = HttpWire.close
    monkeypatch.setattr(HttpWire, "close", lambda w: (posted.append(w.session.live), close(w)))
    inner = AwaitingEnv(EnvSpec(name="waits", max_turns=2))
    inner.wait_s = 0.0

    async def open_and_close(url: str) -> None:
        remote = RemoteEnv(url, transport="ws")
        await remote.areset(task_id="train/0")
        remote.close()  # on the loop, the episode under way

    with running(create_app(inner, ServerSettings())) as url:
        asyncio.run(open_and_close(url))
        deadline = time.monotonic() + 5
        while httpx.get(url + "/metrics").json()["sessions"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert httpx.get(url + "/metrics").json()["sessions"] == 0
    assert posted == [False]  # the frame ended the session: no POST /close was needed


# ---------------------------------------------------------------------------- OpenEnv


def waiting_openenv(wait_s: float) -> FastAPI:
    """An OpenEnv server (its WebSocket protocol) whose steps take ``wait_s``.

    A step of the word ``drop`` closes the connection instead of answering.
    """
    app = FastAPI()

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "healthy"}

    @app.websocket("/ws")
    async def episode(sock: WebSocket) -> None:
        await sock.accept()
        while True:
            try:
                frame = json.loads(await sock.receive_text())
            except WebSocketDisconnect:
                return
            step = frame["type"] == "step"
            if frame["type"] == "close" or (step and frame["data"].get("word") == "drop"):
                await sock.close()
                return
            if step:
                await asyncio.sleep(wait_s)
            data = {
                "observation": {"feedback": "ok"},
                "reward": 1.0 if step else None,
                "done": step,
            }
            await sock.send_text(json.dumps({"type": "observation", "data": data}))

    return app


def _openenv(url: str, **options) -> OpenEnvEnv:
    spec = EnvSpec(name="waits-openenv", max_turns=2, dataset={"size": 4})
    return OpenEnvEnv(spec, base_url=url, action_field="word", **options)


def test_256_sessions_whose_steps_wait_on_an_openenv_server_are_served_at_once():
    with running(waiting_openenv(WAIT_S), ws="websockets-sansio") as url:
        steps, _, _ = _served(_openenv(url), SESSIONS, task_id="seed-0", message="apple")
    assert all(s.reward == 1.0 and s.terminated for s in steps)


def test_an_awaited_openenv_episode_keeps_its_statuses_and_the_sync_api_still_plays():
    async def play(env, word: str):
        try:
            await env.areset(task_id="seed-0")
            return await env.astep(word)
        finally:
            await asyncio.to_thread(env.close)

    with running(waiting_openenv(0.5)) as url:
        env = _openenv(url, timeout_s=0.1)
        assert type(env).async_steps
        slow = asyncio.run(play(env, "apple"))
        env.timeout_s = 5.0
        gone = asyncio.run(play(env, "drop"))
        fine = asyncio.run(play(env, "apple"))
        env.reset(task_id="seed-0")  # in-process, blocking: no event loop of its own
        sync = env.step("apple")
        env.close()
    assert slow.info.status is Status.INFRA_ERROR and "within 0.1 s" in slow.info.error
    assert gone.info.status is Status.INFRA_ERROR and "went away" in gone.info.error
    assert (fine.info.status, fine.reward, sync.info.status, sync.reward) == (
        Status.OK, 1.0, Status.OK, 1.0,
    )  # fmt: skip


# ---------------------------------------------------------------------------- MCP tools

MCP_SESSIONS = 64
"""The tools' sessions share one MCP connection (the environment's), to one small server."""


@pytest.fixture(scope="module")
def mcp_url():
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    url = f"http://127.0.0.1:{free_port()}/mcp"
    script = ROOT / "tests" / "support" / "hostile_mcp.py"
    proc = subprocess.Popen(
        [sys.executable, str(script), url.split(":")[-1].removesuffix("/mcp")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(url, timeout=1)
            break
        except httpx.HTTPError:
            assert proc.poll() is None and time.monotonic() < deadline, "no MCP server"
            time.sleep(0.1)
    yield url
    proc.kill()
    proc.wait(10)


def _mcp_env(url: str):
    from envhub.registry.catalog import load_file
    from envhub.registry.make import apply_overrides

    ((spec, _),) = load_file(ROOT / "examples" / "mcp_tools.yaml")
    return make_local(apply_overrides(spec, {"mcp": {"url": url, "timeout_s": 5, "tools": None}}))


def _tool_call(name: str, **arguments) -> Message:
    call = ToolCall(id="c1", function=FunctionCall(name=name, arguments=json.dumps(arguments)))
    return Message(role="assistant", tool_calls=[call])


def test_sessions_whose_tool_calls_wait_on_an_mcp_server_are_served_at_once(mcp_url):
    env = _mcp_env(mcp_url)
    try:
        wait = _tool_call("wait", seconds=WAIT_S)
        steps, _, _ = _served(env, MCP_SESSIONS, task_id="q1", message=wait)
    finally:
        env.close()
    assert all(s.messages[0].content == "wait done" and not s.done for s in steps)


def test_an_awaited_mcp_tool_call_keeps_its_statuses(mcp_url):
    env = _mcp_env(mcp_url)

    async def play(message: Message):
        await env.areset(task_id="q1")
        return await env.astep(message)

    try:
        assert type(env).async_steps
        env.mcp.timeout_s = env.server.timeout_s = 1.0
        slow = asyncio.run(play(_tool_call("wait", seconds=3)))
        failed = asyncio.run(play(_tool_call("refuse", code=-32603)))
        refused = asyncio.run(play(_tool_call("refuse", code=-32602)))
    finally:
        env.close()
    assert slow.info.status is Status.TIMEOUT and "gave no answer within 1 s" in slow.info.error
    assert failed.info.status is Status.OK  # the tool's failure, shown to the model
    assert failed.messages[0].content.startswith("Error: the server failed this call")
    assert refused.info.status is Status.INVALID_ACTION
