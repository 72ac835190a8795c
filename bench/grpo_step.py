"""Seconds per GRPO step, phase timings and peak memory of envhub's trainer.

Runs the trainer in this process on a config (the tiny example by default) for a few steps
and reports the mean over the steps after the first (the first pays for lazy set-up), per
phase (``time/*``), generated tokens per second, and the largest policy worker's peak memory.
Started with trainer part 1; part 2 adds the race against TRL's GRPOTrainer on SmolLM2.

    python bench/grpo_step.py                                   # tiny example, 4 steps
    python bench/grpo_step.py --config examples/tiny.yaml --steps 6 rollout.group_size=8
    python bench/grpo_step.py --json bench/grpo_step.json

Start-up (Ray, worker processes, model loading) is reported separately as ``startup_s``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def summarise(rows: list[dict], startup_s: float) -> dict:
    """Mean of every timing over steps 2.., plus throughput and memory."""
    steady = rows[1:] or rows
    keys = sorted({k for r in steady for k in r if k.startswith("time/")})
    out = {k: statistics.fmean(r.get(k, 0.0) for r in steady) for k in keys}
    out["tokens_per_s"] = statistics.fmean(r.get("tokens_per_s", 0.0) for r in steady)
    out["response_length"] = statistics.fmean(r.get("response_length", 0.0) for r in steady)
    out["episodes_per_step"] = steady[0].get("episodes", 0.0)
    out["memory/worker_peak_mb"] = max(r.get("memory/worker_peak_mb", 0.0) for r in rows)
    out["startup_s"] = startup_s
    out["steps_measured"] = len(steady)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "examples" / "tiny.yaml"))
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--json", default=None, help="also write the summary here")
    parser.add_argument("overrides", nargs="*", help="key=value config overrides")
    args = parser.parse_args()

    from trainer.config import load_config
    from trainer.train import train

    overrides = [
        f"train.steps={args.steps}",
        "checkpoint.every=0",
        "checkpoint.export_final=false",
        "logging.progress_bar=false",
        "logging.tensorboard=false",
        "logging.plot=false",
        *args.overrides,
    ]
    config = load_config(args.config, overrides)
    with tempfile.TemporaryDirectory(prefix="grpo-bench-") as tmp:
        out = Path(tmp)
        t0 = time.perf_counter()
        train(config, out)
        total = time.perf_counter() - t0
        rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    startup = total - sum(r["time/step"] for r in rows)
    summary = summarise(rows, startup)
    print(f"config {args.config} ({' '.join(args.overrides) or 'as is'}), {args.steps} steps")
    for k, v in summary.items():
        print(f"  {k:28s} {v:10.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
