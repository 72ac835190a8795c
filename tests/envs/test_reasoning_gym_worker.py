"""An answer that the static guard misses costs a worker process, never the caller's process.

The attack (red team, B1): ``3**(9999*9999*99)`` on ``rg-simple_integration`` ran sympy in C
for minutes, holding the GIL: ``env.step`` ignored its deadline, and under ``envhub serve``
health checks and other episodes timed out and SIGTERM went unanswered. The static guard
(``scoring.explosive``) now refuses that answer; :data:`SLOW` is one it lets through (every
exponent and value within bounds) on which the scorer's ``simplify`` runs for minutes, so these
tests show the second line holds: scoring runs in a worker under a CPU budget
(:mod:`envhub.envs.reasoning_gym.worker`).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest
from children import stop, wait_health

import envhub
from envhub.client.child_server import free_port
from envhub.envs.reasoning_gym import scoring, worker
from envhub.types import Status

SLOW = "(x+1)**9999 + (x+2)**9999 + (X+1)**9999 + (X+2)**9999"
"""Within every bound of the guard; ``simplify`` of its derivative ran past 30 s."""
ENTRY = "rg-simple_integration-v1"
BOUND_S = 5 * worker.SCORE_CPU_S + 15
"""The longest a step on :data:`SLOW` may take: the worker's wall backstop, and room for a
loaded machine (its CPU budget is what decides)."""


def test_the_slow_answer_is_one_the_guard_lets_through():
    assert scoring.explosive(SLOW) is None


class Ticker:
    """A thread of the caller's process that notes the time every 50 ms while it runs."""

    def __init__(self) -> None:
        self.ticks: list[float] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(0.05):
            self.ticks.append(time.monotonic())

    def longest_gap(self) -> float:
        """Stop, and return the longest time between two ticks."""
        self._done.set()
        self._thread.join()
        return max((b - a for a, b in zip(self.ticks, self.ticks[1:], strict=False)), default=0)


def test_an_answer_the_guard_misses_costs_a_worker_not_the_caller():
    env = envhub.make(ENTRY, dataset={"size": 3, "seed": 0, "options": {}})
    task = env.tasks()[0]
    env.reset(task_id=task.task_id)
    ticker = Ticker()
    started = time.monotonic()
    result = env.step(f"<answer>{SLOW}</answer>")
    took = time.monotonic() - started
    assert result.info.status in (Status.OK, Status.TIMEOUT), result.info
    assert result.info.components.get("correctness", 0.0) == 0.0
    assert took < BOUND_S
    assert ticker.longest_gap() < 2.0, "the caller's other threads stood still"
    env.reset(task_id=task.task_id)
    assert env.step(f"<answer>{task.answer}</answer>").info.components["correctness"] == 1.0


def _post(client: httpx.Client, path: str, body: dict) -> dict:
    reply = client.post(path, json=body)
    assert reply.status_code == 200, reply.text
    return reply.json()


@pytest.mark.skipif(sys.platform != "linux", reason="the workers are forked")
def test_a_server_answers_health_and_other_episodes_while_a_step_computes():
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "envhub.cli", "serve", ENTRY, "--port", str(port)]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        wait_health(url, proc)
        with httpx.Client(base_url=url, timeout=BOUND_S + 30) as client:
            session = _post(client, "/reset", {"seed": 0})
            slow: dict = {}
            step = {"message": f"<answer>{SLOW}</answer>", **_credentials(session)}
            thread = threading.Thread(target=lambda: slow.update(_post(client, "/step", step)))
            thread.start()
            time.sleep(0.5)  # the slow step is being scored now
            started = time.monotonic()
            assert httpx.get(url + "/health", timeout=5).status_code == 200
            other = _post(client, "/reset", {"seed": 1})
            _post(client, "/step", {"message": "<answer>x</answer>", **_credentials(other)})
            assert time.monotonic() - started < 5.0, "the server stood still behind the step"
            thread.join(BOUND_S + 30)
            assert slow["info"]["components"].get("correctness", 0.0) == 0.0, slow
        assert stop(proc, signal.SIGTERM, timeout=15) == 0
    finally:
        stop(proc, signal.SIGKILL, timeout=15)


def _credentials(session: dict) -> dict:
    return {"session_id": session["session_id"], "session_secret": session["session_secret"]}
