"""The trainer's environment calls at a saturated server: queueing is never a dropped episode.

Eight episodes whose step is the ``echo`` test env's ``hang 0.4`` (the model's ``timeout``
after 0.4 s) on a server with two worker threads, under a trainer ``timeout_s`` of 1 s: the
last steps wait longer than that for a worker. The trainer's deadline of a call is its work
plus the admission wait (``EnvConfig.call_deadline_s``), so none is dropped as
``infra_error`` (a free pass for the policy).
"""

from __future__ import annotations

import time

import pytest
from serving import serving_env

from envhub.client.remote_env import RemoteEnv
from envhub.types import Status

THREADS = 2
EPISODES = 4 * THREADS
HANG_S = 0.4


def test_the_trainer_drops_no_episode_of_a_saturated_server(dummy_registry, tiny_path):
    """The trainer's env-call deadline at a 1 s ``timeout_s``: waiting for admission is free."""
    transformers = pytest.importorskip("transformers")
    from envhub.engines.chat import ChatFormatter
    from envhub.engines.types import Generation, SamplingParams
    from envhub.trainer.config import EnvConfig
    from envhub.trainer.episodes.rollout import LocalEnvPool, RolloutSettings, collect

    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_path)
    answer = Generation(f"hang {HANG_S}", "stop", token_ids=[tokenizer.eos_token_id],
                        logprobs=[-0.1], stop_reason="<eos>")  # fmt: skip
    settings = RolloutSettings(
        group_size=EPISODES,
        max_turns=1,
        max_seq_len=512,
        timeout_s=EnvConfig(timeout_s=1.0).call_deadline_s,
        params=SamplingParams(max_tokens=8),
    )
    server = {"threads": THREADS, "queue_timeout_s": 0.3, "request_timeout_s": 5.0}
    with serving_env("echo", **server) as url, RemoteEnv(url, timeout=1.0) as client:
        pool = LocalEnvPool(client.fork)
        t0 = time.monotonic()
        batch = collect(lambda prompts, params: [answer] * len(prompts), pool,
                        ChatFormatter(tokenizer), [0], settings, sample_seed=0)  # fmt: skip
        pool.shutdown()
    assert time.monotonic() - t0 > 1.0  # longer than the work deadline: queued, not dropped
    assert [e.status for e in batch.episodes] == [Status.TIMEOUT] * EPISODES
    assert not any(e.dropped for e in batch.episodes)
