"""Trainer part 2: engine actors in split placement, refit verification, one-step off-policy.

The end-to-end runs are slow (each starts Ray, a policy worker and an engine actor): one step
in split placement with the transformers engine, two steps of one-step off-policy with the
transformers engine, and the same with vLLM when it is installed.
"""

import importlib.util
from pathlib import Path

import pytest
import torch
from train_support import envhub_train

from envhub.engines.transformers_engine import TransformersEngine
from envhub.trainer.workers.generation import engine_score, require_vllm

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "examples" / "tiny.yaml"


SPLIT = [
    "cluster.placement=split",
    "cluster.policy_workers=1",
    "cluster.num_cpus=3",
    "generation.num_engines=1",
    "generation.verify_refit=true",
    "generation.kv_cache_gib=0.25",
    "generation.max_num_seqs=32",
    "loss.kl_beta=0",
    # every sample trained, so that token_mult_prob_error (the refit's check) is on each row
    "train.skip_zero_advantage=false",
    "checkpoint.every=0",
    "checkpoint.export_final=false",
]
HAS_VLLM = importlib.util.find_spec("vllm") is not None


def test_missing_vllm_names_the_extra(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(ImportError, match=r"\.\[vllm\]"):
        require_vllm()


def test_engine_score_equals_a_full_forward():
    from envhub.engines.weights import tiny_llama_path

    engine = TransformersEngine.from_pretrained(tiny_llama_path())
    seq = [1, 5, 9, 20, 33, 7]
    [got] = engine_score(engine, [seq], [3], temperature=0.7)
    with torch.no_grad():
        logits = engine.model(input_ids=torch.tensor([seq])).logits[0].float()
    logp = torch.log_softmax(logits / 0.7, dim=-1)
    want = [float(logp[j - 1, seq[j]]) for j in range(3, len(seq))]
    assert got == pytest.approx(want, abs=1e-5)


@pytest.mark.slow
def test_one_step_in_split_placement(tmp_path):
    rows = envhub_train(TINY, tmp_path / "split", "train.steps=1", *SPLIT)
    [row] = rows
    assert row["episodes"] == 16 and row["time/refit"] > 0
    # the engine actor got the updated weights: its logprobs equal the trainer's
    assert row["refit/logprob_max_diff"] < 1e-3
    assert abs(row["token_mult_prob_error"] - 1.0) < 1e-3  # sampled by the same weights


@pytest.mark.slow
@pytest.mark.parametrize(
    "engine",
    [
        "transformers",
        pytest.param("vllm", marks=pytest.mark.skipif(not HAS_VLLM, reason="vLLM missing")),
    ],
)
def test_one_step_off_policy(tmp_path, engine):
    extra = ["model.path=tiny-vllm"] if engine == "vllm" else []
    rows = envhub_train(
        TINY,
        tmp_path / engine,
        "train.steps=2",
        *SPLIT,
        f"cluster.engine={engine}",
        "generation.one_step_off_policy=true",
        *extra,
    )
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        assert r["refit/logprob_max_diff"] < 1e-3
        assert r["time/overlap_saved"] >= 0 and "is_weight_mean" in r
    # step 1 overlapped step 2's generation; step 2 has nothing left to overlap
    assert rows[0]["time/overlap_saved"] > 0
    assert rows[1]["time/overlap_saved"] == 0
    # step 1 is on-policy (weights 1); step 2's batch came from the weights before step 1
    assert rows[0]["is_weight_mean"] == pytest.approx(1.0, abs=1e-3)
    assert rows[1]["token_mult_prob_error"] > 1.0 + 1e-4


@pytest.mark.slow
@pytest.mark.skipif(not HAS_VLLM, reason="vLLM missing")
def test_colocated_vllm_engines_share_the_policy_resources(tmp_path):
    colocated = [o for o in SPLIT if not o.startswith(("cluster.placement", "generation.num_"))]
    rows = envhub_train(
        TINY,
        tmp_path / "colocated",
        "train.steps=2",
        *colocated,
        "cluster.placement=colocated",
        "cluster.engine=vllm",
        "model.path=tiny-vllm",
    )
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        assert r["time/refit"] > 0
        assert r["refit/logprob_max_diff"] < 1e-3  # the engine holds the updated weights
        assert abs(r["token_mult_prob_error"] - 1.0) < 1e-3  # on-policy: sampled by them
