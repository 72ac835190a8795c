"""A mix of environments: per-step quotas, deterministic draws, one batch over sources with
their own turn budgets, per-source metrics, and the config's forms."""

import json
import random
from collections import Counter

import pytest
from fake_envs import make_retry
from test_rollout import ScriptedEngine, settings

from envhub.engines.chat import ChatFormatter
from envhub.trainer.config import TrainConfigError, load_config
from envhub.trainer.episodes.mix import Job, MixSampler, MixSource, quotas
from envhub.trainer.episodes.rollout import LocalEnvPool, RoutedEnvPool, collect
from envhub.trainer.metrics import source_metrics


def sampler(seed=0, **weights):
    return MixSampler([MixSource(name=n, weight=w) for n, w in weights.items()], seed)


def test_quotas_are_exact_per_step_and_sum_to_the_batch():
    rng = random.Random(0)
    assert quotas({"a": 2, "b": 1, "c": 1}, 4, rng) == {"a": 2, "b": 1, "c": 1}
    for n in range(1, 12):
        q = quotas({"a": 0.5, "b": 0.3, "c": 0.2}, n, rng)
        assert sum(q.values()) == n
        for s, w in {"a": 0.5, "b": 0.3, "c": 0.2}.items():
            assert int(w * n) <= q[s] <= int(w * n) + 1  # floor or ceil of the exact share


def test_shares_over_many_steps_tend_to_the_weights():
    s = sampler(a=3, b=1)
    counts = Counter(j.source for step in range(1, 401) for j in s.draw(step, 2))
    assert counts["a"] + counts["b"] == 800
    assert abs(counts["a"] / 800 - 0.75) < 0.03


def test_draws_are_deterministic_per_seed_step_and_round():
    a, b, c = sampler(0, x=1, y=1), sampler(0, x=1, y=1), sampler(1, x=1, y=1)
    assert a.draw(3, 4) == b.draw(3, 4)  # a pure function: nothing depends on earlier draws
    assert a.draw(3, 4) != c.draw(3, 4)
    assert a.draw(3, 4, round_=1) != a.draw(3, 4)
    assert [j.source for j in a.draw(5, 4)] == ["x", "x", "y", "y"]


def test_one_batch_mixes_single_and_multi_turn_sources(engine):
    tok = engine.tokenizer
    chat = ChatFormatter(tok)
    fake = ScriptedEngine(tok, tok.eos_token_id)  # turn 1 answers "99" (always wrong)
    pool = RoutedEnvPool({"multi": LocalEnvPool(make_retry), "single": LocalEnvPool(make_retry)})
    jobs = [Job("multi", 1), Job("single", 2, task_id="1+2")]
    run = settings(source_turns={"multi": 2, "single": 1})
    batch = collect(fake.generate, pool, chat, jobs, run, sample_seed=0)
    by_env = {e: [x for x in batch.episodes if x.env == e] for e in ("multi", "single")}
    assert [x.turns for x in by_env["single"]] == [1, 1]  # its own turn budget
    assert [x.turns for x in by_env["multi"]] == [2, 2]  # a second chance after "99"
    assert all(x.task_id == "1+2" for x in by_env["single"])  # the job's task
    assert all(x.key.startswith("multi|") for x in by_env["multi"])
    m = source_metrics(batch, {"multi": "correctness", "single": "correctness"})
    assert m["turns/single"] == 1.0 and m["turns/multi"] == 2.0
    assert m["accuracy/single"] == 0.0 and m["reward/single/mean"] == 0.0
    assert m["episodes/multi"] == 2.0 and m["status/multi/ok"] == 2.0


def test_a_key_of_no_source_is_refused():
    pool = RoutedEnvPool({"a": LocalEnvPool(make_retry)})
    with pytest.raises(KeyError, match="names no source"):
        pool.reset("b|1-0-0", 1, None)


def test_config_single_env_is_a_mix_of_one_and_the_mix_form_validates(tmp_path):
    one = load_config(None, ["env.name=gsm8k", "rollout.max_turns=3"])
    assert [(s.name, s.weight) for s in one.sources()] == [("gsm8k", 1.0)]
    mixed = load_config(
        None,
        [
            "env.mix=[{name: gsm8k, weight: 2, overrides: {dataset: {kind: jsonl, path: a.jsonl}}},"
            " {name: wordle, max_turns: 4}]"
        ],
    )
    assert [(s.name, s.weight, s.max_turns) for s in mixed.sources()] == [
        ("gsm8k", 2.0, None),
        ("wordle", 1.0, 4),
    ]
    assert mixed.sources()[0].overrides["dataset"]["path"].endswith("/a.jsonl")  # resolved
    assert mixed.fingerprint()["env.mix"] == [["gsm8k", 2.0], ["wordle", 1.0]]
    # a checkpoint keeps it as JSON: it must compare equal after the round trip
    assert json.loads(json.dumps(mixed.fingerprint())) == mixed.fingerprint()
    with pytest.raises(TrainConfigError, match="more than once"):
        load_config(None, ["env.mix=[{name: gsm8k}, {name: gsm8k}]"])
    with pytest.raises(TrainConfigError, match="single-environment form"):
        load_config(None, ["env.mix=[{name: gsm8k}]", "env.overrides={max_turns: 2}"])
    with pytest.raises(TrainConfigError, match="weight"):
        load_config(None, ["env.mix=[{name: gsm8k, weight: 0}]"])
