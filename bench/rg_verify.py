"""Benchmark reasoning-gym verification: scoring in a worker process against in the caller's.

Run from the repository root::

    python bench/rg_verify.py                          # six entries, 1000 verifies each
    python bench/rg_verify.py --n 300 --entries rg-countdown,rg-sudoku

Each entry's first 10 tasks are verified in turn with their own gold and with another task's
gold (half right, half wrong), after one verify per task that measures its constant floor
(outside the timing). ``in-process`` scores in this process (``worker.judge``, how envhub
scored before its scorers moved to a worker); ``worker`` is ``env.verify`` as it runs now,
each answer sent to a worker process (``worker.score``). Prints milliseconds per verify of
each, the cost of the hop, and the load average before and after (2-core machines are shared).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import envhub
from envhub.envs.reasoning_gym import worker

ENTRIES = (
    "rg-basic_arithmetic",
    "rg-simple_integration",
    "rg-countdown",
    "rg-sudoku",
    "rg-gsm_symbolic",
    "rg-word_sorting",
)


def ms_per_verify(env_id: str, n: int) -> float:
    """Milliseconds per ``env.verify`` over ``n`` answers (floors measured beforehand)."""
    spec = envhub.catalog().spec(env_id)
    with envhub.make(env_id, dataset={**spec.dataset.model_dump(), "size": 20}) as env:
        tasks = env.tasks()[:10]
        golds = [str(t.answer) for t in tasks]
        for task in tasks:
            env.verify(task, "<answer>1</answer>")
        started = time.perf_counter()
        for i in range(n):
            k = i % len(tasks)
            answer = golds[k] if (i // len(tasks)) % 2 == 0 else golds[(k + 1) % len(tasks)]
            env.verify(tasks[k], f"<answer>{answer}</answer>")
        return 1000 * (time.perf_counter() - started) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="verifies per entry and mode")
    parser.add_argument("--entries", default=",".join(ENTRIES))
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    print(f"{'entry':28s} {'in-process':>11s} {'worker':>9s} {'hop':>8s}  (ms per verify)")
    in_worker = worker.score
    for env_id in args.entries.split(","):
        worker.score = worker.judge
        local = ms_per_verify(env_id, args.n)
        worker.score = in_worker
        remote = ms_per_verify(env_id, args.n)
        print(f"{env_id:28s} {local:11.3f} {remote:9.3f} {remote - local:+8.3f}", flush=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
