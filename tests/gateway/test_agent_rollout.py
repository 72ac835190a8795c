"""Agent rollouts for the trainer: a group is group_size runs of the agent on one task, trained on
exactly the ids the engine sampled, with the status table's outcomes."""

import pytest
from gateway_support import agent_cmd

import envhub
from envhub.engines.chat import ChatFormatter
from envhub.engines.types import SamplingParams
from envhub.gateway.config import AgentConfig
from envhub.trainer.episodes.agents import collect_agents
from envhub.trainer.episodes.rollout import LocalEnvPool, RolloutSettings
from envhub.trainer.metrics import rollout_metrics
from envhub.types import Status


def rollout(spy, mode, groups=2, group_size=2, max_tokens=6, trace=None):
    settings = RolloutSettings(
        group_size=group_size,
        max_turns=1,
        max_seq_len=512,
        timeout_s=60,
        params=SamplingParams(max_tokens=max_tokens, temperature=1.0),
    )
    pool = LocalEnvPool(lambda: envhub.make("echo"))
    agent = AgentConfig(command=agent_cmd(mode), timeout_s=30, concurrency=4)
    before = len(spy.samples)
    try:
        batch = collect_agents(
            lambda prompts, params: spy.generate(prompts, params),
            pool,
            ChatFormatter(spy.tokenizer),
            list(range(groups)),
            settings,
            agent,
            sample_seed=7,
            trace=trace,
            step=5,
        )
    finally:
        pool.shutdown()
    return batch, spy.samples[before:]


def test_a_group_trains_on_every_sampled_id_of_every_call(dummy_registry, spy, tmp_path):
    from envhub.gateway.trace import TraceWriter, read_trace

    batch, engine = rollout(spy, "multi", trace=TraceWriter(tmp_path))
    lines = list(read_trace(tmp_path))
    assert len(lines) == 4 and {line["step"] for line in lines} == {5}
    assert [len(line["calls"]) for line in lines] == [3] * 4
    assert len(batch.episodes) == 4 and batch.kept == batch.episodes
    assert [e.group for e in batch.episodes] == [0, 0, 1, 1]
    sampled = {tuple(s) for _, s, _ in engine}
    for ep in batch.episodes:
        assert ep.status is Status.OK and ep.turns == 3
        runs, current = [], []
        for t, m in zip(ep.tokens, ep.loss_mask, strict=True):
            if m:
                current.append(t)
            elif current:
                runs.append(tuple(current))
                current = []
        runs.append(tuple(current))
        assert len(runs) == 3 and all(r in sampled for r in runs)
        assert all(len(r) <= 6 for r in runs)  # the trainer's max_tokens, not the agent's 8
        assert ep.gateway == {"segments": 1, "retokenized": 0} and ep.extra_sequences == []
    metrics = rollout_metrics(batch)
    assert metrics["gateway/segments"] == 4 and metrics["gateway/retokenized"] == 0


def test_history_edits_train_every_segment_with_the_runs_advantage(dummy_registry, spy):
    from envhub.trainer.train import to_samples

    batch, engine = rollout(spy, "edit", groups=1)
    sampled = [s for _, s, _ in engine]
    for ep in batch.episodes:
        assert ep.gateway == {"segments": 2, "retokenized": 1} and ep.status is Status.OK
        # calls 0, 2, 3 form segment 0 (the scored one); the edited call 1 is segment 1
        [(tokens, mask, logprobs)] = ep.extra_sequences
        trained = [t for t, m in zip(tokens, mask, strict=True) if m]
        assert trained in sampled and len(logprobs) == len(tokens)
        assert ep.turns == 4 and len([m for m in ep.loss_mask if m]) > len(trained)
    batch.episodes[0].reward = 1.0  # give the group some variance
    samples = to_samples(batch, normalize_std=True)
    assert len(samples) == 4  # two runs, two segments each
    by_advantage = {}
    for s in samples:
        by_advantage.setdefault(s.advantage, 0)
        by_advantage[s.advantage] += 1
    assert sorted(by_advantage.values()) == [2, 2]  # each run's segments share its advantage


@pytest.mark.parametrize(
    "mode,status,dropped",
    [("crash_after", Status.INVALID_ACTION, False), ("never", Status.INFRA_ERROR, True)],
)
def test_statuses_follow_the_table(dummy_registry, spy, mode, status, dropped):
    batch, _ = rollout(spy, mode, groups=1)
    for ep in batch.episodes:
        assert ep.status is status and ep.dropped is dropped
        if not dropped:  # the model's failure is a sample: its tokens, reward 0
            assert ep.reward == 0.0 and sum(ep.loss_mask) > 0


def test_the_agent_section_is_settable_from_the_command_line():
    from pathlib import Path

    from envhub.trainer.config import TrainConfigError, load_config

    tiny = Path(__file__).resolve().parents[2] / "examples" / "tiny.yaml"
    assert load_config(tiny).agent is None  # no agent section: the trainer's own loop
    cfg = load_config(tiny, ["agent.command=python my_agent.py --fast 'a b'", "agent.max_calls=3"])
    assert cfg.agent.command == ["python", "my_agent.py", "--fast", "a b"]
    assert cfg.agent.max_calls == 3
    with pytest.raises(TrainConfigError, match="agent.bogus"):
        load_config(tiny, ["agent.command=x", "agent.bogus=1"])
    with pytest.raises(TrainConfigError, match="exactly one"):
        load_config(tiny, ["agent.max_calls=3"])


@pytest.mark.slow
def test_tiny_agent_example_trains_token_exact(tmp_path):
    """examples/tiny_agent.yaml: 2 GRPO steps through the gateway (about 90 s here); the
    trainer's logprobs of the agent's tokens equal the engine's (token_mult_prob_error 1)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "envhub.cli",
        "train",
        "examples/tiny_agent.yaml",
        "--out",
        str(out),
    ]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")]),
    }
    subprocess.run(cmd, cwd=repo, env=env, check=True, timeout=280)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert row["kept"] == row["episodes"] == 8 and row["gateway/segments"] == 8
        assert abs(row["token_mult_prob_error"] - 1.0) < 1e-3
        assert row["groups_discarded_age"] == 0


def test_a_tool_agent_answers_search_through_its_episode_url(spy):
    """The tool loop over `search` with the tiny model: the environment's own steps score it,
    and whatever the model wrote, the episodes are kept (or the model's failure, never infra)."""
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "agents" / "tool_loop.py"
    settings = RolloutSettings(
        group_size=2,
        max_turns=10,
        max_seq_len=2048,
        timeout_s=60,
        params=SamplingParams(max_tokens=8, temperature=1.0),
    )
    pool = LocalEnvPool(lambda: envhub.make("search"))
    agent = AgentConfig(command=[sys.executable, str(example)], timeout_s=60, max_calls=3)
    try:
        batch = collect_agents(
            lambda p, s: spy.generate(p, s),
            pool,
            ChatFormatter(spy.tokenizer),
            [0],
            settings,
            agent,
            sample_seed=1,
        )
    finally:
        pool.shutdown()
    for ep in batch.episodes:
        assert not ep.dropped, ep.error
        assert ep.turns >= 1 and sum(ep.loss_mask) > 0
        assert ep.end in ("terminated", "truncated")


def test_a_mix_with_one_agent_source_collects_each_its_way(dummy_registry, spy):
    """An env.mix source may carry its own agent; the others keep the trainer's loop. Groups
    stay distinct after the merge."""
    from envhub.trainer.config import load_config
    from envhub.trainer.episodes.agents import collect_mixed
    from envhub.trainer.episodes.mix import Job
    from envhub.trainer.episodes.rollout import RoutedEnvPool

    settings = RolloutSettings(
        group_size=2,
        max_turns=1,
        max_seq_len=512,
        timeout_s=60,
        params=SamplingParams(max_tokens=4, temperature=1.0),
    )
    pools = {n: LocalEnvPool(lambda: envhub.make("echo")) for n in ("plain", "agentic")}
    agent = AgentConfig(command=agent_cmd("once"), timeout_s=30)
    jobs = [Job("plain", 1), Job("agentic", 2), Job("plain", 3)]
    try:
        batch = collect_mixed(
            lambda p, s: spy.generate(p, s),
            RoutedEnvPool(pools),
            ChatFormatter(spy.tokenizer),
            jobs,
            settings,
            {"plain": None, "agentic": agent},
            sample_seed=3,
        )
    finally:
        for p in pools.values():
            p.shutdown()
    groups = {}
    for ep in batch.episodes:
        groups.setdefault(ep.group, set()).add(ep.env)
    assert len(groups) == 3 and all(len(v) == 1 for v in groups.values())
    assert sorted(ep.env for ep in batch.episodes) == ["agentic"] * 2 + ["plain"] * 4
    assert all(bool(ep.gateway) == (ep.env == "agentic") for ep in batch.episodes)
    cfg = load_config(
        None,
        [
            "env.mix=[{name: echo, agent: {command: 'python a.py'}}, {name: count}]",
            "agent.command=python b.py",
        ],
    )
    assert cfg.agent_of() == {
        "echo": AgentConfig(command=["python", "a.py"]),
        "count": AgentConfig(command=["python", "b.py"]),
    }


def test_validation_of_an_agent_source_runs_the_agent(dummy_registry, spy, tmp_path):
    """A source with an agent is validated as `envhub eval --agent` would: the agent's episodes,
    their trace, the usual validation row."""
    import json

    from envhub.trainer.config import load_config
    from envhub.trainer.episodes.validation import Validator

    cfg = load_config(None, ["env.name=echo", "agent.command=x"])
    cfg = cfg.model_copy(update={"agent": AgentConfig(command=agent_cmd("once"))})
    v = Validator(
        cfg.validation.model_copy(update={"every": 1, "tasks": 3}),
        tmp_path,
        cfg.sources(),
        lambda: pytest.fail("agent sources do not use the message backend"),
        seed=0,
        max_tokens=4,
        agents=cfg.agent_of(),
        engine_factory=lambda: spy,
    )
    [row] = v.run(0)
    assert row["env"] == "echo" and row["tasks"] == 3
    trace = tmp_path / "validation" / "step_00000" / "echo" / "traces" / "episodes.jsonl"
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert len(lines) == 3 and all(line["status"] == "ok" for line in lines)


def test_an_agents_step_does_not_wait_for_a_thread_against_its_deadline():
    """64 agents' steps ran on asyncio's default executor (``cpu + 4`` threads): a step that
    waited for a thread counted the wait against ``timeout_s`` and was dropped as
    ``infra_error``. Each run in flight has its thread (``step_threads``, as ``collect_agents``
    makes them): 40 steps of 0.6 s at once, each within 1.5 s."""
    import asyncio
    import time

    from envhub.trainer.episodes.agents import _stepper, step_threads
    from envhub.trainer.episodes.rollout import TrainingEpisode
    from envhub.types import Info, StepResult

    class SlowPool:
        def step(self, key, message):
            time.sleep(0.6)
            return StepResult(
                messages=[], reward=1.0, terminated=True, truncated=False, info=Info(task_id=key)
            )

    n = 40  # over the default executor's threads on a machine of up to 35 cores
    episodes = [TrainingEpisode(group=0, key=f"e{i}") for i in range(n)]

    async def steps():
        with step_threads(AgentConfig(command=["true"], concurrency=n)) as threads:
            calls = [_stepper(SlowPool(), ep, 1.5, threads) for ep in episodes]
            return await asyncio.gather(*(c({"role": "assistant", "content": "x"}) for c in calls))

    asyncio.run(steps())
    assert [ep.status for ep in episodes] == [Status.OK] * n
    assert [ep.reward for ep in episodes] == [1.0] * n
