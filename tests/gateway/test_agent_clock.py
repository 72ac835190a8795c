"""Whose time an agent's ``timeout_s`` counts: the program's own, never its waits on the engine.

Under load an agent waits on the engine (its calls queued behind other episodes') far longer than
it runs. That wait is the machinery's: it must not become the model's ``timeout``. A call the
engine never answers is bounded by the backend's ``call_timeout_s``: ``infra_error``.
"""

import asyncio
import time

import pytest
from gateway_support import agent_cmd
from test_agents import TASK

from envhub.gateway.agent import AgentRunner, agent_status
from envhub.gateway.config import AgentConfig
from envhub.gateway.episodes import Budget, GatewayEpisode
from envhub.gateway.recording import Recorder
from envhub.types import Status

ENGINE_S = 2.5
"""How long the loaded engine takes to answer each call."""


class LoadedEngine:
    """The tiny engine behind a long queue: every batch answers ``delay`` seconds late."""

    def __init__(self, engine, delay):
        self.engine, self.delay = engine, delay
        self.max_model_len = engine.max_model_len

    @property
    def tokenizer(self):
        return self.engine.tokenizer

    def generate(self, prompts, params, seeds=None):
        time.sleep(self.delay)
        return self.engine.generate(prompts, params, seeds)


def _serve(engine, delay, call_timeout_s=600.0):
    from envhub.gateway.backends import EngineBackend
    from envhub.gateway.server import GatewayServer
    from envhub.gateway.service import Gateway

    backend = EngineBackend(LoadedEngine(engine, delay), "tiny", call_timeout_s=call_timeout_s)
    return GatewayServer(Gateway(backend, default_max_tokens=8))


@pytest.fixture(scope="module")
def loaded(engine):
    with _serve(engine, ENGINE_S) as server:
        yield server


def _run(server, **settings):
    runner = AgentRunner(AgentConfig(**settings), server.gateway, server.base_url, "tiny")
    return asyncio.run(runner.run(TASK, "ep0"))


async def two_calls(client, task):
    for _ in range(2):
        await client.chat.completions.create(model="tiny", messages=task["messages"], max_tokens=4)


async def one_call_then_hang(client, task):
    await client.chat.completions.create(model="tiny", messages=task["messages"], max_tokens=4)
    await asyncio.sleep(3600)


@pytest.mark.parametrize("kind", ["command", "callable"])
def test_waiting_on_a_loaded_engine_is_not_the_models_timeout(loaded, kind):
    """Each call waits 2.5 s, the agent may run 1 s: it is scored, not timed out."""
    if kind == "command":
        run = _run(loaded, command=agent_cmd("multi"), timeout_s=1.0)
        calls = 3
    else:
        run = _run(loaded, callable="test_agent_clock:two_calls", timeout_s=1.0)
        calls = 2
    assert agent_status(run) == (None, None), run.summary()
    assert run.calls == calls
    assert run.model_wait_s >= calls * ENGINE_S
    assert run.wall_s - run.model_wait_s < 1.0  # the program's own time
    assert run.summary()["model_wait_s"] == pytest.approx(run.model_wait_s, abs=1e-3)


@pytest.mark.parametrize("kind", ["command", "callable"])
def test_a_program_that_runs_long_on_its_own_still_times_out(loaded, kind):
    if kind == "command":
        run = _run(loaded, command=agent_cmd("hang_after"), timeout_s=1.0)
    else:
        run = _run(loaded, callable="test_agent_clock:one_call_then_hang", timeout_s=1.0)
    assert agent_status(run)[0] == Status.TIMEOUT
    assert run.timed_out and run.calls == 1
    assert ENGINE_S + 1.0 <= run.wall_s < ENGINE_S + 4.0  # the wait, then 1 s of its own


def test_an_engine_that_never_answers_is_infra_not_a_hang(engine):
    with _serve(engine, delay=30.0, call_timeout_s=1.0) as server:
        start = time.monotonic()
        run = _run(server, command=agent_cmd("once"), timeout_s=60.0)
    status, error = agent_status(run)
    assert status == Status.INFRA_ERROR
    assert "did not answer this call within 1 s" in error
    assert time.monotonic() - start < 20.0


def test_waits_of_overlapping_calls_count_once():
    ep = GatewayEpisode(id="e", key="k", budget=Budget(), recorder=Recorder(None))
    assert ep.waited_s() == 0.0
    ep.admit()
    ep.admit()  # two calls in flight at once
    time.sleep(0.2)
    ep.release()
    time.sleep(0.2)
    ep.release()
    waited = ep.waited_s()
    assert 0.4 <= waited < 0.6
    time.sleep(0.1)  # no call in flight: the program's own time
    assert ep.waited_s() == waited
