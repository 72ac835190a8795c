"""End-to-end runs of `envhub train` on the tiny example: Ray, 2 FSDP2 ranks on gloo, the
reference and env workers, checkpoints, resume and export. Slow: each run starts Ray."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "examples" / "tiny.yaml"
KEYS = {
    "step",
    "reward_mean",
    "kl",
    "entropy",
    "clip_fraction",
    "grad_norm",
    "response_length",
    "token_mult_prob_error",
    "tokens_per_s",
    "dropped",
    "turns",
    "time/generation",
    "time/refit",
    "time/logprobs",
    "time/train",
    "time/step",
}

pytestmark = pytest.mark.slow


def envhub_train(config, out, *overrides, extra_path=None):
    env = dict(os.environ)
    path = [str(REPO)] + ([str(extra_path)] if extra_path else [])
    env["PYTHONPATH"] = os.pathsep.join(path + [env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "envhub.cli", "train", str(config), *overrides, "--out", str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]


def dcp_state(ckpt_dir, tmp_path):
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    target = tmp_path / f"{ckpt_dir.parent.parent.name}-{ckpt_dir.name}.pt"
    dcp_to_torch_save(ckpt_dir / "dcp", target)
    return torch.load(target, weights_only=False)


def assert_same_tree(a, b, where=""):
    if isinstance(a, dict):
        assert set(a) == set(b), where
        for k in a:
            assert_same_tree(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, torch.Tensor):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=lambda m: f"{where}: {m}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_tree(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


@pytest.fixture(scope="module")
def run_a(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "a"
    rows = envhub_train(TINY, out, "train.steps=2")
    return out, rows


def test_two_steps_write_metrics_checkpoints_and_export(run_a):
    out, rows = run_a
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        assert KEYS <= set(r), KEYS - set(r)
        assert r["episodes"] == 16 and r["dropped"] == 0
        # engine and trainer hold the same weights: probabilities agree token by token
        assert abs(r["token_mult_prob_error"] - 1.0) < 1e-3
        assert r["grad_norm"] > 0 and r["entropy"] > 0
    assert rows[0]["kl"] == pytest.approx(0.0, abs=1e-6)  # policy == reference before update
    assert rows[1]["kl"] > 0
    assert (out / "reward.png").stat().st_size > 0
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step_1", "step_2"]
    state = json.loads((out / "checkpoints" / "step_2" / "trainer_state.json").read_text())
    assert state["step"] == 2 and state["data_position"] == 8

    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(out / "final")
    tok = AutoTokenizer.from_pretrained(out / "final")
    ids = tok("What is 1 + 2?", return_tensors="pt").input_ids
    assert model(ids).logits.shape[-1] == len(tok)


def test_resume_from_the_middle_reaches_the_same_state(run_a, tmp_path):
    out_a, rows_a = run_a
    out_b = tmp_path / "b"
    # the run was "killed" after step 1: only its step_1 checkpoint survives
    shutil.copytree(out_a / "checkpoints" / "step_1", out_b / "checkpoints" / "step_1")
    rows_b = envhub_train(TINY, out_b, "train.steps=2", "checkpoint.resume=true")
    assert [r["step"] for r in rows_b] == [2]
    assert rows_b[0]["reward_mean"] == rows_a[1]["reward_mean"]
    a, b = (
        json.loads((o / "checkpoints/step_2/trainer_state.json").read_text())
        for o in (out_a, out_b)
    )
    assert (a["step"], a["data_position"]) == (b["step"], b["data_position"]) == (2, 8)
    # same weights and the same optimizer state (moments, step counts)
    assert_same_tree(
        dcp_state(out_a / "checkpoints/step_2", tmp_path),
        dcp_state(out_b / "checkpoints/step_2", tmp_path),
    )


def test_resume_with_an_incompatible_config_is_refused(run_a, tmp_path):
    out_a, _ = run_a
    out_c = tmp_path / "c"
    shutil.copytree(out_a / "checkpoints" / "step_1", out_c / "checkpoints" / "step_1")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "envhub.cli",
            "train",
            str(TINY),
            "train.steps=2",
            "checkpoint.resume=true",
            "rollout.group_size=8",
            "--out",
            str(out_c),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert proc.returncode != 0
    assert "rollout.group_size" in proc.stderr and "cannot resume" in proc.stderr


def test_resume_refuses_an_environment_that_changed_since_the_run_began(run_a, tmp_path):
    out_a, _ = run_a
    pins = json.loads((out_a / "pins.json").read_text())
    assert [p["name"] for p in pins] == ["gsm8k"] and pins[0]["digest"].startswith("spec-sha256:")
    out_d = tmp_path / "d"
    shutil.copytree(out_a / "checkpoints" / "step_1", out_d / "checkpoints" / "step_1")
    state_file = out_d / "checkpoints" / "step_1" / "trainer_state.json"
    state = json.loads(state_file.read_text())
    assert state["pins"] == pins
    state["pins"] = [{**pins[0], "version": "v0", "digest": "spec-sha256:older"}]
    state_file.write_text(json.dumps(state))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "envhub.cli", "train", str(TINY), "train.steps=2",
           "checkpoint.resume=true", "--out", str(out_d)]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode != 0
    assert "an environment changed since the run began" in proc.stderr, proc.stderr[-2000:]
    assert "gsm8k: the run used v0 (spec-sha256:older)" in proc.stderr


def test_multi_turn_environment_trains(tmp_path):
    out = tmp_path / "wordle"
    rows = envhub_train(
        TINY,
        out,
        "train.steps=2",
        "env.name=wordle",
        "env.overrides={max_turns: 2, "
        "reward: {weights: {solved: 1.0, format: 0.1, length: -0.1}, length_limit: 40}}",
        "rollout.sampling.max_tokens=12",
        "loss.kl_beta=0",
        "checkpoint.every=0",
        "rollout.prompts_per_step=2",
        "cluster.policy_workers=1",
    )
    assert [r["step"] for r in rows] == [1, 2]
    assert all(r["turns"] == 2 for r in rows)  # random text: invalid guesses, a second turn
    assert all(r["response_length"] == 24 for r in rows)  # 2 turns x 12 tokens, no EOS
    assert rows[0]["grad_norm"] > 0
