"""Steps that wait hold no thread; steps that block keep the worker pool and its load shedding.

An environment whose step awaits its I/O (``aenv_response``) is served on the event loop: a
server with two worker threads and a 0.2 s queue bound serves 1,024 sessions whose steps all
wait at once, with no refusal. The same wait written blocking (``time.sleep``) still goes to
the worker threads, where the queue bound refuses what waits too long (``overloaded``, sent
again by the client). An environment declared cheap (``inline_steps``) runs on the loop until
its calls overrun the budget.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from dummy_envs import AwaitingEnv, BlockingEnv, InlineEnv
from serving import all_at_once, running

from envhub.client.remote_env import RemoteEnv
from envhub.server.app import Server, ServerSettings, create_app
from envhub.spec import EnvSpec
from envhub.types import Status

SESSIONS = 1024
WAIT_S = 1.0
TIGHT = {"threads": 2, "queue_timeout_s": 0.2, "request_timeout_s": 30.0}
"""Two worker threads and a short queue bound: what a blocking wait would overflow."""


def _env(cls, **spec):
    return cls(EnvSpec(name="waits", max_turns=spec.pop("max_turns", 1), **spec))


async def _all_at_once(url: str, sessions: int) -> tuple[list[Status], float]:
    """``sessions`` episodes opened together, then every step sent together."""
    steps, elapsed = await all_at_once(url, sessions)
    assert all(s.reward == 1.0 for s in steps)
    return [s.info.status for s in steps], elapsed


def test_1024_sessions_whose_steps_await_are_served_at_once_with_no_refusal():
    env = _env(AwaitingEnv)
    env.wait_s = WAIT_S
    with running(create_app(env, ServerSettings(**TIGHT)), ws="websockets-sansio") as url:
        statuses, elapsed = asyncio.run(_all_at_once(url, SESSIONS))
        metrics = httpx.get(url + "/metrics").json()
    assert statuses == [Status.OK] * SESSIONS
    # on two threads, one at a time, they would take 512 s; together, about one wait
    assert elapsed < 8 * WAIT_S
    assert metrics["calls"] == "awaited"
    assert "refused_overloaded" not in metrics and "rejected_overload" not in metrics


def test_a_blocking_wait_keeps_the_worker_pool_and_is_shed_as_overloaded():
    env = _env(BlockingEnv)
    env.wait_s = 0.3
    with running(create_app(env, ServerSettings(**TIGHT))) as url:
        statuses, _ = asyncio.run(_all_at_once(url, 12))
        metrics = httpx.get(url + "/metrics").json()
    # every episode ends ok (the client sends a refused step again), but the queue refused
    assert statuses == [Status.OK] * 12
    assert metrics["calls"] == "blocking" and metrics["refused_overloaded"] > 0


def test_an_awaited_step_past_its_deadline_is_the_models_timeout_and_its_own_timeout_is_not():
    env = _env(AwaitingEnv)
    env.wait_s, env.step_timeout_s = 0.5, 0.1

    async def play(message: str):
        await env.areset(task_id="train/0")
        return await env.astep(message)

    slow = asyncio.run(play("yes"))
    assert slow.info.status == Status.TIMEOUT and slow.truncated and "deadline" in slow.info.error
    env.step_timeout_s = None
    own = asyncio.run(play("own-timeout"))
    assert own.info.status == Status.ENV_ERROR and "did not answer" in own.info.error


def test_the_server_deadline_bounds_an_awaited_step():
    env = _env(AwaitingEnv)
    env.wait_s, env.step_timeout_s = 5.0, None
    settings = ServerSettings(request_timeout_s=0.3)
    with running(create_app(env, settings)) as url:
        opened = httpx.post(url + "/reset", json={"task_id": "train/0"}).json()
        ids = {k: opened[k] for k in ("session_id", "session_secret")}
        t0 = time.monotonic()
        late = httpx.post(url + "/step", json={**ids, "message": "yes"}, timeout=10)
        assert time.monotonic() - t0 < 3
    assert late.status_code == 504 and late.json()["kind"] == "deadline"


def test_an_inline_env_runs_on_the_loop_until_its_calls_overrun_the_budget():
    env = _env(InlineEnv, max_turns=8, reward={"weights": {"correctness": 1.0}})
    settings = ServerSettings(inline_budget_ms=5.0, threads=2)
    with running(create_app(env, settings)) as url, RemoteEnv(url, transport="ws") as remote:
        remote.reset(task_id="count-4")
        assert [remote.step(str(n)).info.status for n in (1, 2)] == [Status.OK] * 2
        assert httpx.get(url + "/metrics").json()["calls"] == "inline"
        for _ in range(3):
            assert remote.step("sleep 0.02").info.status == Status.OK
        metrics = httpx.get(url + "/metrics").json()
        assert metrics["calls"] == "blocking" and metrics["inline_overruns"] == 3
        # the episode goes on, on the worker threads, where it left off
        assert remote.step("3").info.status == Status.OK
        final = remote.step("4")
    assert final.terminated and final.reward == 1.0


def test_an_async_env_plays_with_the_sync_api_in_process_but_not_from_a_running_loop():
    env = _env(AwaitingEnv)
    env.wait_s = 0.01
    env.reset(task_id="train/0")
    assert env.step("yes").reward == 1.0

    async def wrongly_sync():
        env.reset(task_id="train/0")

    with pytest.raises(RuntimeError, match="await areset"):
        asyncio.run(wrongly_sync())


def test_an_awaiting_env_gets_an_inflight_bound_above_its_sessions_unless_one_is_set():
    env = _env(AwaitingEnv)
    assert Server(env, ServerSettings(max_sessions=1024)).settings.max_inflight == 2048
    assert Server(env, ServerSettings(max_inflight=300)).settings.max_inflight == 300
    assert Server(_env(BlockingEnv), ServerSettings()).settings.max_inflight == 256
