"""Agent programs as episodes: every row of the status table, hostile agents, nothing left running.

The agents are separate programs (``agents/``): stdlib-only ones for the hostile behaviours, and
one written against the ``openai`` SDK only, whose recorded ids are checked against what the
engine sampled on every call.
"""

import asyncio
import os
import time

import pytest
from gateway_support import AGENTS, agent_cmd

from envhub.gateway.agent import AgentRunner, agent_status
from envhub.gateway.config import AgentConfig
from envhub.gateway.recording import training_sequences
from envhub.types import Status

TASK = {
    "env": "echo",
    "task_id": "t/0",
    "seed": 1,
    "messages": [{"role": "user", "content": "Say alpha"}],
    "tools": None,
}


def running_in_group(pgid, wait_s=5.0):
    """Processes of the group that are not zombies (waiting a moment for the kills to land)."""
    deadline = time.monotonic() + wait_s
    while True:
        alive = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] not in "ZX":
                alive.append(int(entry))
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def run_agent(served, cmd=None, fn=None, n=1, **settings):
    gateway, server = served
    config = AgentConfig(command=cmd, callable=fn, **settings)
    runner = AgentRunner(config, gateway, server.base_url, "tiny")

    async def go():
        return await asyncio.gather(*(runner.run(TASK, f"ep{i}") for i in range(n)))

    runs = asyncio.run(go())
    for run in runs:  # nothing of any run is left running
        if run.pid is not None:
            assert running_in_group(run.pid) == []
        assert gateway.episodes.get(run.episode.key) is None  # the key is revoked
    return runs if n > 1 else runs[0]


@pytest.mark.parametrize(
    "mode,status,scored",
    [
        ("once", None, True),
        ("midstream", None, True),  # left mid-stream, exit 0: the recorded reply is scored
        ("crash_after", Status.INVALID_ACTION, False),
        ("exit3", Status.INVALID_ACTION, False),
        ("never", Status.INFRA_ERROR, False),  # exit 0 without reaching the gateway
        ("never_crash", Status.INFRA_ERROR, False),
        ("fabricate_only", Status.INFRA_ERROR, False),  # an answer the model never gave
    ],
)
def test_status_table(served, mode, status, scored):
    run = agent_run = run_agent(served, agent_cmd(mode), timeout_s=30)
    got, error = agent_status(agent_run)
    assert got == status, (error, run.stderr_tail)
    assert (got is None) == scored
    if scored:
        assert run.last_reply == run.episode.recorder.calls[-1].reply


def test_a_hang_after_the_model_spoke_is_a_timeout_and_is_killed(served):
    t0 = time.monotonic()
    run = run_agent(served, agent_cmd("hang_after"), timeout_s=2)
    assert agent_status(run)[0] is Status.TIMEOUT and time.monotonic() - t0 < 15


def test_a_hang_before_any_call_is_infra(served):
    run = run_agent(served, agent_cmd("hang_before"), timeout_s=1)
    status, error = agent_status(run)
    assert status is Status.INFRA_ERROR and "timed out" in error


def test_a_program_that_cannot_start_is_infra(served):
    run = run_agent(served, ["/nonexistent/agent"], timeout_s=5)
    status, error = agent_status(run)
    assert status is Status.INFRA_ERROR and ("did not start" in error or "without a model" in error)


def test_a_dead_backend_is_infra_even_when_the_agent_crashes(served, spy):
    spy.fail = True
    try:
        run = run_agent(served, agent_cmd("once"), timeout_s=30)
    finally:
        spy.fail = False
    assert agent_status(run)[0] is Status.INFRA_ERROR and run.exit_code != 0


def test_ten_thousand_calls_hit_the_budget_and_end_truncated(served):
    t0 = time.monotonic()
    run = run_agent(served, agent_cmd("spam"), timeout_s=120, max_calls=5)
    assert run.calls == 5 and run.episode.truncated == "max_calls=5 reached"
    assert run.killed_for_budget and time.monotonic() - t0 < 60
    assert agent_status(run) == (None, None)  # scored (the last real reply), truncated


def test_another_episodes_key_is_refused(served, monkeypatch):
    gateway, _ = served
    victim = gateway.open()
    monkeypatch.setenv("STOLEN_KEY", victim.key + "x")
    run = run_agent(served, agent_cmd("other_key"), timeout_s=30)
    assert run.exit_code == 0 and victim.recorder.calls == []
    gateway.close(victim)


def test_fabricated_assistant_turns_are_context_not_trained(served):
    run = run_agent(served, agent_cmd("fabricate"), timeout_s=30)
    [call] = run.episode.recorder.calls
    [seq] = training_sequences([call])
    trained = [t for t, m in zip(seq.tokens, seq.loss_mask, strict=True) if m]
    assert trained == call.sampled_ids  # "alpha" is in the prompt ids only
    assert run.last_reply == call.reply and run.last_reply["content"] != "alpha"


def _cgroup_or_skip():
    from envhub.sandbox import cgroup

    group = cgroup.create(f"probe-{os.getpid()}", 64, 8)
    if group is None:
        pytest.skip("no cgroup here: a fork bomb could not be contained (RLIMIT_NPROC skips root)")
    group.destroy()


def test_a_fork_bomb_is_capped_and_killed(served):
    _cgroup_or_skip()
    run = run_agent(served, agent_cmd("forkbomb"), timeout_s=3, max_processes=16, memory_mb=256)
    assert run.cgroup and agent_status(run)[0] is Status.TIMEOUT


def test_a_daemon_in_a_new_session_does_not_outlive_its_episode(served, tmp_path, monkeypatch):
    _cgroup_or_skip()
    pidfile = tmp_path / "pid"
    monkeypatch.setenv("PIDFILE", str(pidfile))
    run = run_agent(served, agent_cmd("daemon"), timeout_s=30)
    assert agent_status(run) == (None, None)
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        for _ in range(100):
            os.kill(pid, 0)
            time.sleep(0.02)


def test_sixty_four_agents_at_once(served):
    runs = run_agent(served, agent_cmd("once"), n=64, timeout_s=120, concurrency=64)
    assert [agent_status(r) for r in runs] == [(None, None)] * 64
    keys = {r.episode.key for r in runs}
    assert len(keys) == 64 and all(r.calls == 1 for r in runs)


def test_an_sdk_agent_records_exactly_what_the_engine_sampled(served, spy):
    """A program envhub did not write (the openai SDK only), in its own process, extending and
    editing its history: on every call the recorded ids are the engine's, and the trained ids
    are exactly the sampled ones."""
    import sys

    pytest.importorskip("openai")
    before = len(spy.samples)
    run = run_agent(served, [sys.executable, str(AGENTS / "sdk_agent.py")], timeout_s=60)
    assert agent_status(run) == (None, None), run.stderr_tail
    calls = run.episode.recorder.calls
    engine = spy.samples[before:]
    assert len(calls) == len(engine) == 5
    for call, (prompt, sampled, logprobs) in zip(calls, engine, strict=True):
        assert (call.prompt_ids, call.sampled_ids, call.logprobs) == (prompt, sampled, logprobs)
    assert [c.segment for c in calls] == [0, 0, 1, 1, 1]
    assert run.episode.recorder.retokenized == 1 and run.episode.recorder.segments == 2
    for segment, seq in enumerate(training_sequences(calls)):
        trained = [t for t, m in zip(seq.tokens, seq.loss_mask, strict=True) if m]
        members = [c for c in calls if c.segment == segment]
        assert trained == [t for c in members for t in c.sampled_ids]


async def ok_agent(client, task):
    r = await client.chat.completions.create(model="tiny", messages=task["messages"], max_tokens=4)
    return r.choices[0].message.content


async def crashing_agent(client, task):
    await ok_agent(client, task)
    raise RuntimeError("agent bug")


async def hanging_agent(client, task):
    await ok_agent(client, task)
    await asyncio.sleep(3600)


@pytest.mark.parametrize(
    "fn,status",
    [
        ("ok_agent", None),
        ("crashing_agent", Status.INVALID_ACTION),
        ("hanging_agent", Status.TIMEOUT),
    ],
)
def test_callable_agents_follow_the_same_table(served, fn, status):
    run = run_agent(served, fn=f"test_agents:{fn}", timeout_s=2)
    assert agent_status(run)[0] == status


@pytest.mark.parametrize(
    "settings,fragment",
    [
        ({}, "exactly one"),
        ({"command": "a", "callable": "m:f"}, "exactly one"),
        ({"command": ""}, "empty"),
        ({"command": "python 'unclosed"}, "split"),
        ({"callable": "nocolon"}, "module:function"),
        ({"command": "x", "timeout_s": 0}, "timeout_s"),
        ({"command": "x", "bogus": 1}, "bogus"),
    ],
)
def test_agent_config_errors_are_clear(settings, fragment):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=fragment):
        AgentConfig(**settings)
    assert AgentConfig(command="python a.py --x 'y z'").command == ["python", "a.py", "--x", "y z"]


def test_a_broken_gateway_is_infra_even_after_the_model_spoke(served, monkeypatch):
    """The gateway's own bug on a later call (here: its recorder raising) is the machinery's
    failure: the agent gets a 500 and crashes, and the episode is infra_error, not the model's."""
    from envhub.gateway.recording import Recorder

    real = Recorder.prompt

    def flaky(self, messages, tools):
        if self.calls:  # the second call breaks
            raise RuntimeError("recorder bug")
        return real(self, messages, tools)

    monkeypatch.setattr(Recorder, "prompt", flaky)
    run = run_agent(served, agent_cmd("multi"), timeout_s=30)
    status, error = agent_status(run)
    assert run.calls == 1 and run.exit_code != 0
    assert status is Status.INFRA_ERROR and "recorder bug" in error
