"""The driver's step batches on a mix: dynamic sampling runs in the synchronous, one-step
off-policy and asynchronous collectors alike, and draws the same tasks in each."""

import re

import pytest
from fake_envs import make_retry

from envhub.engines.chat import ChatFormatter
from envhub.engines.types import Generation
from envhub.trainer.config import load_config
from envhub.trainer.episodes.draws import Draws
from envhub.trainer.episodes.rollout import LocalEnvPool, RolloutSettings, RoutedEnvPool
from envhub.trainer.train import _Rollouts


class FakeCluster:
    """Two retry-sum sources in process; generation answers a task ``a+b`` right only at an
    even position of the call and with ``a`` even, so about half the groups differ."""

    def __init__(self, tok):
        self.tok = tok
        self.env_pool = RoutedEnvPool(
            {"a": LocalEnvPool(make_retry), "b": LocalEnvPool(make_retry)}
        )

    def generate(self, prompts, params):
        out = []
        for i, p in enumerate(prompts):
            a, b = map(int, re.findall(r"What is (\d)\+(\d)", self.tok.decode(p))[-1])
            text = str(a + b) if i % 2 == 0 and a % 2 == 0 else "99"
            ids = self.tok.encode(text, add_special_tokens=False) + [self.tok.eos_token_id]
            out.append(
                Generation(
                    text, "stop", token_ids=ids, logprobs=[-0.1] * len(ids), stop_reason="<eos>"
                )
            )
        return out


MODES = {
    "sync": [],
    "one-step": ["cluster.placement=split", "generation.max_trajectory_age_steps=1"],
    "async-2": ["cluster.placement=split", "generation.max_trajectory_age_steps=2"],
}


def batches(engine, tmp_path, mode):
    config = load_config(
        None,
        [
            "env.mix=[{name: a, weight: 1, max_turns: 1}, {name: b, weight: 1, max_turns: 2}]",
            "rollout.prompts_per_step=4",
            "rollout.group_size=2",
            "rollout.filter_groups=zero_variance",
            "rollout.max_backfill_rounds=3",
            "train.steps=3",
            *MODES[mode],
        ],
    )
    chat = ChatFormatter(engine.tokenizer)
    draws = Draws(config.sources(), config.seed, config.max_trajectory_age)
    draws.primaries = {"a": "correctness", "b": "correctness"}
    settings = RolloutSettings(
        group_size=2,
        max_turns=2,
        max_seq_len=512,
        timeout_s=10.0,
        params=config.rollout.sampling.params(),
        source_turns={"a": 1, "b": 2},
    )
    rollouts = _Rollouts(FakeCluster(engine.tokenizer), chat, config, settings, draws, tmp_path)
    out = []
    try:
        for step in range(1, 4):
            filtered, _ = rollouts.take(step)
            rollouts.launch(step)
            out.append(filtered)
    finally:
        rollouts.close()
    return out


@pytest.mark.parametrize("mode", sorted(MODES))
def test_filtering_and_backfill_in_every_mode(engine, tmp_path, mode):
    got = batches(engine, tmp_path, mode)
    ref = batches(engine, tmp_path, "sync")
    for f, r in zip(got, ref, strict=True):
        assert f.metrics["filter/groups_generated"] >= 4
        assert f.metrics["filter/groups_zero_variance"] > 0
        kept = {e.group for e in f.batch.episodes}
        assert len(kept) + f.metrics["filter/groups_short"] == 4 and kept
        assert f.metrics["filter/groups_zero_variance"] == f.metrics[
            "filter/groups_generated"
        ] - len(kept)
        # the same draws whichever collector ran them
        assert [(e.env, e.task_id, e.seed) for e in f.generated.episodes] == [
            (e.env, e.task_id, e.seed) for e in r.generated.episodes
        ]
