"""Model-owned slowness at any load: more slow episodes than worker threads, none dropped.

Each step of the ``echo`` test env answering ``hang S`` sleeps S seconds and reports the
model's ``timeout`` (a program that loops until its deadline). With four times as many such
steps in flight as the server has worker threads, most wait in the server's queue longer than
the client's deadline; a deadline that counted the wait would turn them into ``infra_error``,
a free pass for the policy. A wedged server still ends in finite time with ``infra_error``.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from bwrap import needs_bwrap
from serving import running, serving_env

import envhub
from envhub.client.remote_env import RemoteEnv
from envhub.server.app import ServerSettings, create_app
from envhub.types import Status

THREADS = 2
EPISODES = 4 * THREADS
HANG_S = 0.4


def _episode(env: RemoteEnv, message: str) -> Status:
    env.reset(task_id="train/0")
    return env.step(message).info.status


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_a_saturated_server_never_turns_model_slowness_into_infra_error(dummy_registry, transport):
    settings = {"threads": THREADS, "queue_timeout_s": 0.3, "request_timeout_s": 5.0}
    with (
        serving_env("echo", **settings) as url,
        RemoteEnv(url, timeout=1.0, transport=transport) as env,
    ):
        forks = [env.fork() for _ in range(EPISODES)]
        t0 = time.monotonic()
        with ThreadPoolExecutor(EPISODES) as pool:
            statuses = list(pool.map(_episode, forks, [f"hang {HANG_S}"] * EPISODES))
        elapsed = time.monotonic() - t0
        for fork in forks:
            fork.close()
    # the queue held them for longer than the client's 1 s deadline, and none was dropped
    assert elapsed > 1.0 and statuses == [Status.TIMEOUT] * EPISODES


def test_a_wedged_server_ends_in_infra_error_in_finite_time(dummy_registry):
    settings = {"threads": 1, "queue_timeout_s": 0.2, "request_timeout_s": 0.5}
    with serving_env("echo", **settings) as url, RemoteEnv(url, timeout=5.0, transport="http") as a:
        b = a.fork()
        a.reset(task_id="train/0")
        b.reset(task_id="train/0")
        t0 = time.monotonic()
        with ThreadPoolExecutor(2) as pool:
            wedged = pool.submit(a.step, "hang 4")  # holds the only worker past its deadline
            time.sleep(0.05)
            behind = pool.submit(b.step, "alpha")  # queued behind it: the pool is stalled
            results = [wedged.result(), behind.result()]
        b.close()
    assert [r.info.status for r in results] == [Status.INFRA_ERROR] * 2
    assert "deadline" in results[0].info.error and "stalled" in results[1].info.error
    assert time.monotonic() - t0 < 4


LOOPER = (
    "```python\ndef has_close_elements(numbers, threshold):\n    while True:\n        pass\n```"
)
SLEEPER = (
    "```python\nimport time\ndef has_close_elements(numbers, threshold):\n    time.sleep(60)\n```"
)


@needs_bwrap
def test_real_programs_that_run_to_their_deadline_are_the_models_at_3x_the_workers():
    env = envhub.make("humaneval", timeout_s=1.5)
    episodes = 3 * THREADS
    programs = [LOOPER, SLEEPER] * (episodes // 2)
    settings = ServerSettings(threads=THREADS, queue_timeout_s=1.0)
    with running(create_app(env, settings)) as url, RemoteEnv(url, timeout=4.0) as client:
        forks = [client.fork() for _ in range(episodes)]
        with ThreadPoolExecutor(episodes) as pool:
            steps = list(pool.map(_code_episode, forks, programs))
        for fork in forks:
            fork.close()
    assert [s.info.status for s in steps] == [Status.TIMEOUT] * episodes, steps


def _code_episode(env: RemoteEnv, program: str):
    env.reset(task_id="HumanEval/0")
    return env.step(program)
