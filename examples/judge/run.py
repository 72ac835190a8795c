"""Grade a few GSM8K-style tasks with gsm8k-explained: the checker plus an LLM judge.

Each task is answered twice with the right number: once with the task's worked solution
(an explanation) and once with the bare final line. A judge that reads explanations says
yes to the first and no to the second; correctness is 1.0 for both. Start the judge's server
first (README.md beside this file), then::

    python examples/judge/run.py --tasks 5
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from envhub.registry.catalog import specs_from_file
from envhub.registry.make import make_local

HERE = Path(__file__).resolve().parent


def main() -> None:
    """Verify the two responses of each task and print the components and the judge's time."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=5, help="First N test tasks (default 5).")
    parser.add_argument("--yaml", type=Path, default=HERE / "gsm8k_explained.yaml")
    args = parser.parse_args()
    (spec,) = specs_from_file(args.yaml)
    env = make_local(spec.model_copy(update={"split": "test"}))
    t_all = time.monotonic()
    for task in list(env.tasks())[: args.tasks]:
        explained = task.metadata["solution"]
        for label, response in (("explained", explained), ("bare", f"#### {task.answer}")):
            t0 = time.monotonic()
            score = env.verify(task, response)
            took = time.monotonic() - t0
            detail = score.components if score.error is None else score.error[:160]
            print(f"{task.task_id:<24} {label:<9} {score.status.value:<11} {took:5.1f}s {detail}")
    print(f"{2 * args.tasks} verifications in {time.monotonic() - t_all:.1f}s")


if __name__ == "__main__":
    main()
