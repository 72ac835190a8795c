"""Agent rollouts for the trainer: a group is group_size runs of the agent on one task, trained on
exactly the ids the engine sampled, with the status table's outcomes."""

import pytest
from conftest import agent_cmd

import envhub
from envhub.engines.chat import ChatFormatter
from envhub.engines.types import SamplingParams
from envhub.gateway.config import AgentConfig
from envhub.trainer.episodes.agents import collect_agents
from envhub.trainer.episodes.rollout import LocalEnvPool, RolloutSettings
from envhub.trainer.metrics import rollout_metrics
from envhub.types import Status


def rollout(spy, mode, groups=2, group_size=2, max_tokens=6):
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
        )
    finally:
        pool.shutdown()
    return batch, spy.samples[before:]


def test_a_group_trains_on_every_sampled_id_of_every_call(dummy_registry, spy):
    batch, engine = rollout(spy, "multi")
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
        assert ep.gateway == {"segments": 1, "retokenized": 0, "untrained_segments": 0}
    metrics = rollout_metrics(batch)
    assert metrics["gateway/segments"] == 4 and metrics["gateway/retokenized"] == 0


def test_history_edits_train_the_last_segment_and_count_the_rest(dummy_registry, spy):
    batch, _ = rollout(spy, "edit", groups=1)
    for ep in batch.episodes:
        assert ep.gateway == {"segments": 2, "retokenized": 1, "untrained_segments": 1}
        assert ep.status is Status.OK


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
