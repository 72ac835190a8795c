"""Validation during training: held-out splits enforced, envhub eval's own episodes, the
validation.jsonl rows, the plot, the best round and early stopping."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import envhub
from envhub.authoring.register import register
from envhub.engines.chat import ChatFormatter
from envhub.errors import ConfigError
from envhub.evaluate.backends import BatchingBackend
from envhub.evaluate.local import engine_batch_fn
from envhub.trainer.config import load_config
from envhub.trainer.episodes.mix import MixSource
from envhub.trainer.episodes.validation import (
    BestTracker,
    ValidationConfig,
    Validator,
    read_rows,
)


def sums(path, pairs):
    rows = [
        {"task_id": f"sum/{a}+{b}", "prompt": f"What is {a} + {b}?", "answer": a + b}
        for a, b in pairs
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def data(tmp_path):
    sums(tmp_path / "sums_train.jsonl", [(a, b) for a in range(5) for b in range(10)])
    sums(tmp_path / "sums_test.jsonl", [(a, b) for a in range(5, 10) for b in range(10)])
    sums(tmp_path / "sums_validation.jsonl", [(0, 1), (7, 7)])  # shares 0+1 with train
    return tmp_path


def source(data, path="sums_{split}.jsonl", split="train"):
    ds = {"kind": "jsonl", "path": str(data / path)}
    return MixSource(name="gsm8k", split=split, overrides={"dataset": ds})


def validator(data, src, tmp_path, backend=None, **cfg):
    cfg = ValidationConfig(every=1, **cfg)
    return Validator(cfg, tmp_path, [src], backend or (lambda: None), seed=0, max_tokens=8)


def test_an_overlapping_split_is_refused(data, tmp_path):
    with pytest.raises(ConfigError, match="shares 1 task"):
        validator(data, source(data), tmp_path, split="validation").check()
    # one file for every split: the held-out split is the training split
    with pytest.raises(ConfigError, match="shares 50 task"):
        validator(data, source(data, "sums_train.jsonl"), tmp_path).check()
    with pytest.raises(ConfigError, match="cannot be loaded"):
        validator(data, source(data), tmp_path, split="dev").check()
    validator(data, source(data), tmp_path).check()  # train vs test: disjoint
    with pytest.raises(ConfigError, match="not in the mix"):
        validator(data, source(data), tmp_path, sources=["wordle"])


def test_a_round_runs_envhub_eval_episodes_and_writes_its_row(data, tmp_path, engine):
    chat = ChatFormatter(engine.tokenizer)

    def backend():
        return BatchingBackend("policy", engine_batch_fn(engine, chat), max_batch=8)

    out = tmp_path / "run"
    out.mkdir()
    v = validator(data, source(data), out, backend, tasks=3, k=2, temperature=1.0)
    rows = v.run(10)
    assert len(rows) == 1
    row = json.loads((out / "validation.jsonl").read_text())
    assert row["step"] == 10 and row["env"] == "gsm8k" and row["tasks"] == 3 and row["k"] == 2
    assert {"pass@1", "pass@k", "mean_reward", "pass@1_ci95"} <= set(row)
    lo, hi = row["pass@1_ci95"]
    assert lo <= row["pass@1"] <= hi
    store = out / "validation" / "step_00010" / "gsm8k"
    records = [json.loads(x) for x in (store / "episodes.jsonl").read_text().splitlines()]
    assert len(records) == 6 and all(r["split"] == "test" for r in records)
    assert {r["task_id"] for r in records} <= {
        f"sum/{a}+{b}" for a in range(5, 10) for b in range(10)
    }
    assert (
        json.loads((store / "summary.json").read_text())["environments"]["gsm8k"]["pass@1"]
        == (row["pass@1"])
    )
    assert (out / "validation.png").stat().st_size > 0
    assert v.due(0, 7, 3) and v.due(6, 7, 3) and v.due(7, 7, 3) and not v.due(5, 7, 3)


def test_a_run_from_a_validated_export_may_skip_the_round_at_step_0(data, tmp_path):
    v = validator(data, source(data), tmp_path, at_start=False)
    assert not v.due(0, 10, 5) and v.due(5, 10, 5) and v.due(10, 10, 5)
    assert not v.due(0, 10) and v.due(3, 10)  # every=1: each step but the first
    assert not validator(data, source(data), tmp_path, at_start=False).due(0, 0)


def test_validating_the_same_policy_twice_gives_the_same_samples(data, tmp_path, engine):
    """Each request is seeded from the run seed, the task and the sample: two rounds on the
    same weights agree episode for episode, however the engine batched their requests."""
    chat = ChatFormatter(engine.tokenizer)

    def transcripts(out, max_batch):
        def backend():
            return BatchingBackend("policy", engine_batch_fn(engine, chat), max_batch=max_batch)

        out.mkdir()
        validator(data, source(data), out, backend, tasks=3, k=2, temperature=1.0).run(0)
        store = out / "validation" / "step_00000" / "gsm8k" / "episodes.jsonl"
        records = [json.loads(x) for x in store.read_text().split("\n") if x]
        return {(r["task_id"], r["sample"]): (r["seed"], r["messages"]) for r in records}

    first = transcripts(tmp_path / "a", max_batch=8)
    assert transcripts(tmp_path / "b", max_batch=8) == first
    assert transcripts(tmp_path / "c", max_batch=1) == first  # one request a batch
    assert len(first) == 6 and len({seed for seed, _ in first.values()}) == 6
    tasks = {task for task, _ in first}
    assert any(first[t, 0][1] != first[t, 1][1] for t in tasks)  # a sample of its own


class InPlace:
    """An engine actor whose ``generate.remote`` runs at once (``ray.get`` returns it as is)."""

    def __init__(self, engine):
        def remote(prompts, params, version, seeds):
            return engine.generate(prompts, params, seeds)

        self.generate = SimpleNamespace(remote=remote)


def test_the_runs_engines_sample_a_seeded_request_alike_however_many(engine, monkeypatch):
    """Validation through the run's engines: a request's sample does not depend on how the
    cluster splits the batch over its engines."""
    import ray

    from envhub.engines.types import SamplingParams
    from envhub.trainer.config import Config
    from envhub.trainer.episodes.validation_rounds import ClusterEngine
    from envhub.trainer.workers import cluster as workers
    from envhub.trainer.workers.cluster import Cluster

    monkeypatch.setattr(ray, "get", lambda refs: refs)
    monkeypatch.setattr(workers, "get", lambda refs, *_, **__: refs)
    chat = ChatFormatter(engine.tokenizer)
    prompts = [chat.prompt_ids([{"role": "user", "content": f"{n} + 1?"}]) for n in range(5)]
    params, seeds = SamplingParams(max_tokens=6, temperature=1.0), [11, 12, 13, 14, 15]
    samples = []
    for engines in (1, 2, 3):
        cluster = Cluster.over(Config(), [InPlace(engine)] * engines, [])
        outs = ClusterEngine(cluster, 512).generate(prompts, params, seeds)
        samples.append([g.token_ids for g in outs])
    assert samples[0] == samples[1] == samples[2]


def test_best_round_and_early_stopping():
    t = BestTracker("pass@1", patience=2)
    assert t.update(0, [{"pass@1": 0.1}, {"pass@1": 0.3}])
    assert t.best == pytest.approx(0.2)
    assert not t.update(5, [{"pass@1": 0.2}, {"pass@1": 0.2}])  # equal is no improvement
    assert not t.should_stop
    assert not t.update(10, [{"pass@1": None}])
    assert t.should_stop and t.best_step == 0
    resumed = BestTracker("pass@1", patience=2)
    resumed.load_state_dict(t.state_dict())
    assert resumed.should_stop and resumed.best == t.best


def test_the_mix_example_registers_and_its_splits_are_held_out(clean_user_registry, tmp_path):
    root = Path(__file__).parents[2] / "examples"
    register(root / "mix_envs.yaml")
    config = load_config(root / "smollm2_mix.yaml")
    assert [s.name for s in config.sources()] == ["mix-sums", "mix-products", "mix-retry"]
    retry = envhub.make("mix-retry")  # the multi-turn source: a retry game of 3 attempts
    assert retry.spec.max_turns == 3 and retry.attempts == 3
    v = Validator(config.validation, tmp_path, config.sources(), lambda: None, seed=0, max_tokens=8)
    v.check()  # every source's test split shares no task with its train split
    assert [v.split_of(s) for s in v.sources] == ["test"] * 3


def test_a_resumed_run_drops_the_rows_of_rounds_after_its_checkpoint(data, tmp_path):
    v = validator(data, source(data), tmp_path)
    rows = [{"step": s, "env": "gsm8k"} for s in (0, 5, 10)]
    v.path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    v.start_at(5)
    assert [r["step"] for r in read_rows(v.path)] == [0, 5]


def test_jsonl_rows_are_split_at_newlines_only(data, tmp_path):
    """A string may hold U+2028 raw (a writer with ensure_ascii=False): one row, not two."""
    from envhub.trainer.config import LoggingConfig
    from envhub.trainer.metrics import MetricsLogger

    odd = "a\u2028b\x1cc\u0085d"
    rows = [{"step": s, "env": "gsm8k", "note": odd} for s in (0, 5, 10)]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    assert "\u2028" in text and len(text.splitlines()) > len(rows)  # what splitlines tore
    v = validator(data, source(data), tmp_path)
    v.path.write_text(text, encoding="utf-8")
    assert read_rows(v.path) == rows
    v.start_at(5)
    assert read_rows(v.path) == rows[:2]
    quiet = LoggingConfig(console=False, progress_bar=False, tensorboard=False)
    logger = MetricsLogger(tmp_path, quiet, total_steps=10, run_config={})
    logger.path.write_text(text, encoding="utf-8")
    logger.start_at(5)
    assert [json.loads(x) for x in logger.path.read_text().split("\n") if x] == rows[:2]
