"""`envhub train examples/tiny.yaml` for 2 steps with each algorithm switch (rollout
correction, GSPO, LoRA, activation checkpointing); a LoRA run resumes exactly and exports a
merged model that `envhub eval --model` loads. Slow: each run starts Ray."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from test_train import TINY, assert_same_tree, dcp_state
from train_support import REPO, envhub_train, run_envhub_train

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]  # Ray start-up on a loaded machine

DIAGNOSTICS = {
    "rollout_correction/mismatch_kl",
    "rollout_correction/masked_token_fraction",
    "rollout_correction/masked_seq_fraction",
    "rollout_correction/weight_mean",
    "rollout_correction/weight_max",
}


@pytest.mark.parametrize(
    "override",
    [
        "loss.rollout_correction.mode=token_tis",
        "loss.ratio_level=sequence",
        "model.activation_checkpointing=true",
    ],
)
def test_two_steps_with_each_switch_write_their_diagnostics(override, tmp_path):
    rows = envhub_train(TINY, tmp_path / "run", "train.steps=2", override)
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        assert DIAGNOSTICS <= set(r), DIAGNOSTICS - set(r)
        assert r["grad_norm"] > 0
        # the engine and the trainer hold the same weights: nothing to correct or mask
        assert r["rollout_correction/mismatch_kl"] == pytest.approx(0.0, abs=1e-4)
        assert r["rollout_correction/masked_token_fraction"] == 0.0
        assert r["rollout_correction/weight_mean"] == pytest.approx(1.0, abs=1e-2)


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("lora") / "a"
    rows = envhub_train(TINY, out, "train.steps=2", "model.lora.rank=8")
    return out, rows


def test_lora_trains_with_the_base_model_as_reference(lora_run):
    out, rows = lora_run
    assert [r["step"] for r in rows] == [1, 2]
    assert DIAGNOSTICS <= set(rows[0])
    assert rows[0]["kl"] == pytest.approx(0.0, abs=1e-6)  # the adapter starts at zero
    assert rows[1]["kl"] > 0 and rows[1]["grad_norm"] > 0
    assert abs(rows[1]["token_mult_prob_error"] - 1.0) < 1e-3  # merged refit reached the engine
    groups = {a["group"] for a in json.loads((out / "placement.json").read_text())}
    assert "reference" not in groups  # kl_beta > 0, but no second copy of the model
    assert (out / "final" / "adapter" / "adapter_config.json").exists()


def test_lora_resumes_exactly(lora_run, tmp_path):
    out_a, rows_a = lora_run
    out_b = tmp_path / "b"
    shutil.copytree(out_a / "checkpoints" / "step_1", out_b / "checkpoints" / "step_1")
    rows_b = envhub_train(
        TINY, out_b, "train.steps=2", "model.lora.rank=8", "checkpoint.resume=true"
    )
    assert [r["step"] for r in rows_b] == [2]
    assert rows_b[0]["reward_mean"] == rows_a[1]["reward_mean"]
    assert rows_b[0]["loss"] == rows_a[1]["loss"]
    assert_same_tree(
        dcp_state(out_a / "checkpoints/step_2", tmp_path),
        dcp_state(out_b / "checkpoints/step_2", tmp_path),
    )


def test_lora_export_loads_in_envhub_eval(lora_run, tmp_path):
    out, _ = lora_run
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "envhub.cli", "eval", "--model", str(out / "final")]
    cmd += ["--env", "gsm8k", "--limit", "1", "--max-tokens", "4", "--engine", "transformers"]
    proc = subprocess.run(
        [*cmd, "--out", str(tmp_path / "eval"), "--no-progress"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_lora_with_vllm_engines_refits_the_adapter_alone(tmp_path):
    pytest.importorskip("vllm")
    config = REPO / "examples" / "tiny_split_vllm.yaml"
    out = tmp_path / "run"
    overrides = ["train.steps=2", "model.lora.rank=8", "generation.verify_refit=false"]
    overrides.append("generation.one_step_off_policy=false")  # step 2 sampled after the refit
    overrides.append("train.skip_zero_advantage=false")  # token_mult_prob_error on every row
    proc = run_envhub_train(config, out, *overrides)
    assert "refit: the LoRA adapter alone" in proc.stdout + proc.stderr
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        # step 2 was sampled by vLLM with the adapter trained at step 1: the engine's
        # logprobs of its tokens are the trainer's (merged) ones
        assert abs(r["token_mult_prob_error"] - 1.0) < 1e-3
        assert r["rollout_correction/mismatch_kl"] < 1e-4
