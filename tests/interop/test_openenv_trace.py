"""The gateway's traces as OpenEnv 0.10's ``TrainingTrace`` and back, against the real package.

A real trace (``envhub eval --agent`` on the tiny engine, three calls an episode, the later ones
extending the first) becomes a ``TrainingTrace`` that ``openenv`` 0.10's own model accepts
(its strict checks of ids, logprobs and masks); OpenEnv's own entry round trip of it reads
back into envhub's format with the same ids, logprobs, reward and segments.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
from typer.testing import CliRunner

from envhub.cli import app
from envhub.gateway.openenv_trace import from_training_trace, to_training_trace
from envhub.gateway.trace import read_trace

TESTS = Path(__file__).parents[1]
PROBE = TESTS / "support" / "openenv_trace_probe.py"
AGENT = TESTS / "gateway" / "agents" / "stdlib_agent.py"


@pytest.fixture
def episodes(dummy_registry, tmp_path, tiny_path):
    out = tmp_path / "run"
    args = ["eval", "--agent", f"{sys.executable} {AGENT} multi", "--model", str(tiny_path)]
    args += ["--engine", "transformers", "--env", "echo", "--limit", "2", "--max-tokens", "4"]
    res = CliRunner().invoke(app, [*args, "--out", str(out), "--json", "--no-progress"])
    assert res.exit_code == 0, res.output
    return list(read_trace(out))


def _openenv(python: Path, trace: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python), str(PROBE)],
        input=json.dumps(trace),
        text=True,
        capture_output=True,
        timeout=300,
    )


def test_a_gateway_trace_is_a_training_trace_openenv_accepts_and_reads_back(
    episodes, openenv10_python
):
    for ep in episodes:
        trace = to_training_trace(ep)
        assert [t["node_id"] for t in trace["turns"]] == [f"{ep['episode']}/{i}" for i in range(3)]
        done = _openenv(openenv10_python, trace)
        assert done.returncode == 0, done.stderr
        back = from_training_trace(json.loads(done.stdout))
        assert back["episode"] == ep["episode"] and back["reward"] == ep["reward"]
        assert back["status"] == ep["status"] and back["segments"] == ep["segments"] == 1
        for mine, theirs in zip(ep["calls"], back["calls"], strict=True):
            for key in ("prompt_ids", "sampled_ids", "logprobs", "messages", "reply"):
                assert theirs[key] == mine[key], key
            assert theirs["reused_prefix"] == mine["reused_prefix"]


def test_openenvs_own_trace_reads_without_envhubs_metadata(episodes):
    trace = to_training_trace(episodes[0])
    for turn in trace["turns"]:
        turn["metadata"] = {"node_id": turn["node_id"]}
    back = from_training_trace(trace, episode="capture-7")
    assert back["episode"] == "capture-7" and back["status"] == "ok" and back["reward"] is None
    assert [c["sampled_ids"] for c in back["calls"]] == [
        c["sampled_ids"] for c in episodes[0]["calls"]
    ]


def test_what_either_format_cannot_say_is_refused(episodes, openenv10_python):
    trace = to_training_trace(episodes[0])
    masked = copy.deepcopy(trace)
    masked["turns"][0]["loss_mask"][-1] = 0
    with pytest.raises(ValueError, match="masks part of its completion"):
        from_training_trace(masked)
    trained_prompt = copy.deepcopy(trace)
    trained_prompt["turns"][0]["loss_mask"][0] = 1
    assert "prompt tokens must remain context" in _openenv(openenv10_python, trained_prompt).stderr
    upstream = copy.deepcopy(episodes[0])
    for call in upstream["calls"]:
        call["prompt_ids"], call["sampled_ids"], call["logprobs"] = [], [], []
    with pytest.raises(ValueError, match="holds no token ids"):
        to_training_trace(upstream)
