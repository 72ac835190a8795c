"""What rollout logs and validation cost a training step.

Runs ``envhub train`` twice on the same config, the same number of steps: once with rollout
logs every step and validation every ``--every`` steps, once with both off
(``logging.rollouts_every=0 validation.every=0``), and reports from each run's
``metrics.jsonl`` the mean seconds per step (steps after the first), the mean
``time/rollout_log`` and ``time/validation``, and their share of the step. The issue's bound
is rollout logging at most 5% of step time.

    python bench/hub_overhead.py                                   # tiny example, 4 steps
    python bench/hub_overhead.py --config examples/smollm2_mix.yaml --steps 3 --json out.json

Extra ``key=value`` arguments go to both runs. On the tiny example (the default) the sums
are split into ``data/sums_train.jsonl`` and ``data/sums_test.jsonl``
(``examples/make_mix_data.py``), since validation refuses a split that shares tasks with
training.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TINY = "examples/tiny.yaml"
TINY_HELD_OUT = ["env.split=train", "env.overrides.dataset.path=data/sums_{split}.jsonl"]
"""The tiny example's sums with a held-out test split."""


def train(config: str, out: Path, overrides: list[str]) -> list[dict]:
    """One ``envhub train`` run in a subprocess; its metrics rows."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "envhub.cli", "train", config, *overrides, "--out", str(out)]
    proc = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"envhub train failed:\n{proc.stderr[-3000:]}")
    return [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]


def summary(rows: list[dict]) -> dict[str, float]:
    """Mean step time and the logging/validation times over the steps after the first."""
    later = rows[1:] or rows

    def mean(key: str) -> float:
        return statistics.fmean(r.get(key, 0.0) for r in later)

    step = mean("time/step")
    log, val = mean("time/rollout_log"), mean("time/validation")
    return {
        "steps": len(rows),
        "step_s": step,
        "rollout_log_s": log,
        "validation_s": val,
        "rollout_log_share": log / step if step else 0.0,
        "validation_share": val / step if step else 0.0,
    }


def main() -> None:
    """Both runs, then the table (and ``--json``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=TINY)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--every", type=int, default=2, help="validation.every of the run with it")
    ap.add_argument("--json", default=None)
    args, extra = ap.parse_known_args()
    held_out = TINY_HELD_OUT if args.config == TINY else []
    common = [f"train.steps={args.steps}", "checkpoint.every=0", *held_out, *extra]
    with tempfile.TemporaryDirectory(prefix="hub-overhead-") as tmp:
        on = train(
            args.config,
            Path(tmp) / "on",
            [*common, "logging.rollouts_every=1", f"validation.every={args.every}"],
        )
        off = train(
            args.config,
            Path(tmp) / "off",
            [*common, "logging.rollouts_every=0", "validation.every=0"],
        )
    result = {"with": summary(on), "without": summary(off), "load": os.getloadavg()[0]}
    w, wo = result["with"], result["without"]
    print(f"{'':<22}{'with logs+validation':>22}{'without':>12}")
    print(f"{'seconds per step':<22}{w['step_s']:>22.2f}{wo['step_s']:>12.2f}")
    print(f"{'rollout log s/step':<22}{w['rollout_log_s']:>22.3f}  ({w['rollout_log_share']:.1%})")
    print(f"{'validation s/step':<22}{w['validation_s']:>22.2f}  ({w['validation_share']:.1%})")
    print(f"load average {result['load']:.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
