"""Two trees' bench figures in one run: a git revision (before) against this checkout (after).

The revision's tree is exported with ``git archive`` into a temporary folder (no worktree, no
checkout is touched), then each bench runs on both trees back to back with the same
arguments, the same Python and the same machine, each in its own tree (``cwd`` and
``PYTHONPATH``; Ray's workers follow the tree, see ``Cluster._start_ray``). The 1-minute load
average is recorded before every run: on a shared machine it is what the figures mean.

    python bench/before_after.py                      # main's merge-base vs this tree, 2 steps
    python bench/before_after.py --rev main --steps 2 --json bench/before_after.json
    python bench/before_after.py --rounds 2           # before, after, after, before

With ``--rounds 2`` or more the order alternates (ABBA...), so a load that drifts during the
run weighs on both trees alike; the figures shown are each tree's median over its runs.

Benches: ``bench/grpo_step.py`` (seconds per step and per phase on the tiny example) and
``bench/hub_overhead.py`` (rollout logs and validation against neither).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHES = {
    "grpo_step": ("bench/grpo_step.py", ["time/step", "time/rollout", "time/train", "time/refit"]),
    "hub_overhead": ("bench/hub_overhead.py", []),
}
"""Name -> (script, the figures to print; hub_overhead's are its own summary)."""


def export(rev: str, into: Path) -> str:
    """``git archive`` of ``rev`` unpacked in ``into``; returns the commit it names."""
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", rev], capture_output=True, text=True, check=True
    ).stdout.strip()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True
    ).stdout
    tar = into / "tree.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as t:
        t.extractall(into / "tree", filter="data")
    tar.unlink()
    return commit


def run(tree: Path, script: str, args: list[str], out: Path) -> dict:
    """``script`` of ``tree`` with ``args --json out``; its summary, the load and the wall time."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    cmd = [sys.executable, script, *args, "--json", str(out)]
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"{script} failed in {tree}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    summary = json.loads(out.read_text())
    return {"summary": summary, "load_1min": load, "wall_s": time.monotonic() - t0}


def figures(name: str, keys: list[str], summary: dict) -> dict[str, float]:
    """The figures shown of one run's summary."""
    if name == "hub_overhead":
        parts = ("step_s", "rollout_log_s", "validation_s")
        return {f"{side} {k}": summary[side][k] for side in ("with", "without") for k in parts}
    return {k: summary.get(k, 0.0) for k in [*keys, "startup_s"]}


def show(name: str, keys: list[str], before: list[dict], after: list[dict]) -> None:
    """One bench's runs: each tree's median per figure, and every run's load."""
    loads = [f"{r['load_1min']:.2f}" for r in before], [f"{r['load_1min']:.2f}" for r in after]
    print(f"{name}: before (load {', '.join(loads[0])}) / after (load {', '.join(loads[1])})")
    b = [figures(name, keys, r["summary"]) for r in before]
    a = [figures(name, keys, r["summary"]) for r in after]
    for label in b[0]:
        x = statistics.median(r[label] for r in b)
        y = statistics.median(r[label] for r in a)
        print(f"  {label:32s} {x:9.3f} {y:9.3f}  ({(y - x) / x if x else 0.0:+.1%})")


def main() -> None:
    """Export the revision, run every bench on both trees, print and (``--json``) save."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--rev", default=None, help="the 'before' revision (default: merge-base with main)"
    )
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1, help="runs per tree, order alternating")
    ap.add_argument("--bench", choices=sorted(BENCHES), action="append", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rev = (
        args.rev
        or subprocess.run(
            ["git", "-C", str(ROOT), "merge-base", "HEAD", "main"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    result: dict = {"steps": args.steps}
    with tempfile.TemporaryDirectory(prefix="before-after-") as tmp:
        result["before_rev"] = export(rev, Path(tmp))
        before_tree = Path(tmp) / "tree"
        for name in args.bench or sorted(BENCHES):
            script, keys = BENCHES[name]
            bench_args = ["--steps", str(args.steps)]
            runs: dict[str, list[dict]] = {"before": [], "after": []}
            for i in range(args.rounds):
                order = ("before", "after") if i % 2 == 0 else ("after", "before")
                for side in order:
                    tree = before_tree if side == "before" else ROOT
                    out = Path(tmp) / f"{name}-{side}-{i}.json"
                    runs[side].append(run(tree, script, bench_args, out))
            result[name] = runs
            show(name, keys, runs["before"], runs["after"])
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
