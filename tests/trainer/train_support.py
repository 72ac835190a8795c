"""Shared helper of the end-to-end trainer tests."""

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_envhub_train(config, out, *overrides) -> subprocess.CompletedProcess:
    """`envhub train` in a subprocess (its private Ray stops with it), output captured."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "envhub.cli", "train", str(config), *overrides, "--out", str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return proc


def envhub_train(config, out, *overrides):
    """`envhub train` in a subprocess (its private Ray stops with it); the metrics rows."""
    run_envhub_train(config, out, *overrides)
    return [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]
