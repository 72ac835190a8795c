"""Per-step latency of one environment through the in-process, HTTP and Docker runners.

Usage::

    python bench/runner_overhead.py [--env gsm8k] [--episodes 50] [--json out.json]

For each runner it makes the environment once (start-up time reported separately), then plays
``--episodes`` episodes: ``reset(seed=i)`` and the environment's reference action (a fixed wrong
answer where there is none), timing every ``reset`` and ``step`` call. It prints the median,
p90 and mean per call and the overhead of each runner over in-process. The same actions go
through every runner in the same run, so the difference is transport and container cost.
The Docker row is skipped, with the reason, when no engine is reachable.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import envhub
from envhub.core import TaskEnv
from envhub.types import Message

FALLBACK = Message(role="assistant", content="I do not know.")


def _actions(name: str, episodes: int) -> list[list[Message]]:
    """The actions each episode plays: the in-process reference moves (or a fixed answer)."""
    env = envhub.make(name, runner="local")
    plans = []
    for seed in range(episodes):
        env.reset(seed=seed)
        plan: list[Message] = []
        done = False
        while not done and len(plan) < env.spec.max_turns:
            move = env.reference_action(env._episode) if isinstance(env, TaskEnv) else None
            plan.append(move or FALLBACK)
            result = env.step(plan[-1])
            done = result.terminated or result.truncated
        plans.append(plan)
    env.close()
    return plans


def _stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {
        "median_ms": 1e3 * statistics.median(xs),
        "p90_ms": 1e3 * xs[int(0.9 * (len(xs) - 1))],
        "mean_ms": 1e3 * statistics.fmean(xs),
        "n": len(xs),
    }


def measure(name: str, runner: str, plans: list[list[Message]]) -> dict:
    """Start the runner, play every plan, and time each call."""
    start = time.perf_counter()
    env = envhub.make(name, runner=runner)
    startup = time.perf_counter() - start
    resets, steps = [], []
    try:
        for seed, plan in enumerate(plans):
            t = time.perf_counter()
            env.reset(seed=seed)
            resets.append(time.perf_counter() - t)
            for action in plan:
                t = time.perf_counter()
                env.step(action)
                steps.append(time.perf_counter() - t)
    finally:
        env.close()
    return {"runner": runner, "startup_s": startup, "reset": _stats(resets), "step": _stats(steps)}


def main() -> None:
    """Run the benchmark and print a table (and JSON with ``--json``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="gsm8k")
    ap.add_argument("--episodes", type=int, default=50)
    ap.add_argument("--runners", default="local,http,docker")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    plans = _actions(args.env, args.episodes)
    rows, skipped = [], {}
    for runner in args.runners.split(","):
        try:
            rows.append(measure(args.env, runner, plans))
        except Exception as e:
            if runner != "docker":
                raise
            skipped[runner] = f"{type(e).__name__}: {e}"
    base = next((r["step"]["median_ms"] for r in rows if r["runner"] == "local"), None)
    print(f"env {args.env}, {args.episodes} episodes, {sum(map(len, plans))} steps per runner")
    print(f"{'runner':8} {'start s':>8} {'reset ms':>9} {'step ms':>8} {'p90 ms':>8} "
          f"{'mean ms':>8} {'overhead ms':>12}")  # fmt: skip
    for r in rows:
        s = r["step"]
        over = f"+{s['median_ms'] - base:.2f}" if base is not None else "-"
        print(
            f"{r['runner']:8} {r['startup_s']:8.2f} {r['reset']['median_ms']:9.2f} "
            f"{s['median_ms']:8.2f} {s['p90_ms']:8.2f} {s['mean_ms']:8.2f} {over:>12}"
        )
    for runner, why in skipped.items():
        print(f"{runner:8} skipped: {why}")
    if args.json:
        args.json.write_text(
            json.dumps({"env": args.env, "rows": rows, "skipped": skipped}, indent=1)
        )


if __name__ == "__main__":
    main()
