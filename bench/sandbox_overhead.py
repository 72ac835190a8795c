"""Sandbox overhead and code-verification throughput.

Usage::

    python bench/sandbox_overhead.py [--runs 30] [--workers 1,2,4] [--tasks 40]

Prints, as one JSON object:

- ``bare_ms``: median time of ``python3 -I -S -c PROGRAM`` run directly (fork, exec, exit).
- ``sandbox_exec_ms``: the same program through ``Sandbox.run_python`` (bubblewrap, the
  runner, limits, output capture, reaping). ``sandbox_exec_overhead_ms`` is the difference.
- ``sandbox_tests_ms``: the same function checked by ``run_suite`` (runner + zygote + worker,
  three asserts crossing the process boundary); ``sandbox_tests_overhead_ms`` is the difference with
  the bare program that runs the same asserts in-process (no isolation, no trusted verdict).
- ``warm_exec_ms`` / ``warm_tests_ms``: the same two through ``Sandbox(warm=1)``, whose
  sandbox was started ahead of the run (namespaces, uid, cgroup, limits and the interpreter
  up, waiting for a job): what a run costs when the server is not saturated. The pool is
  refilled before each timed run, so no start-up runs alongside a timed run. Their CPU
  columns still include the whole sandbox's start-up (it is paid, just not on the run's
  path): at full load, throughput is set by the CPU figures, not by the warm latency.
- ``*_child_cpu_ms``: CPU time (user + system) of the child processes per run, which
  machine load does not inflate (wall times on a busy machine mostly measure waiting).
  As root, runs are children of the sandbox's spawner process, not of this one: its own CPU
  and that of the runs it reaped (``getrusage`` inside it) are added. Processes the kernel
  reaps when a sandbox's pid namespace ends are not all counted.
- ``spawner``: runs were started by the spawner (``ENVHUB_SANDBOX_SPAWNER=0``: by
  ``sh`` + ``setpriv``, the path used before the spawner, for comparison).
- ``throughput``: HumanEval gold solutions verified per second through ``env.verify`` with
  N threads (what the HTTP server does per request), for each N in ``--workers``;
  ``throughput_http`` (with ``--http``): the same through a spawned ``envhub serve``.

All runs of one kind are interleaved with the others, so machine load hits them alike.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import envhub
from envhub.sandbox import FunctionSuite, Limits, Sandbox, run_suite, spawner

FUNCTION = "def add(a, b):\n    return a + b\n"
ASSERTS = ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(-1, 1) == 0"]
PROGRAM = FUNCTION + "\n".join(ASSERTS) + "\n"


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def children_cpu() -> float:
    """CPU seconds (user + system) of reaped children: a cost that machine load leaves alone.

    Includes the spawner and the runs it reaped (they are not children of this process).
    """
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime + spawner.cpu_seconds()


def latency(runs: int, python: str) -> dict[str, float | str | bool]:
    box = Sandbox(Limits(wall_s=30))
    box.check()
    warm = Sandbox(Limits(wall_s=30), warm=1)
    suite = FunctionSuite.from_asserts(ASSERTS)

    def bare() -> bool:
        return subprocess.run([python, "-I", "-S", "-c", PROGRAM]).returncode == 0

    kinds = {
        "bare": bare,
        "sandbox_exec": lambda: box.run_python(PROGRAM).ok,
        "sandbox_tests": lambda: run_suite(box, FUNCTION, suite).all_passed,
        "warm_exec": lambda: warm.run_python(PROGRAM).warm,
        "warm_tests": lambda: run_suite(warm, FUNCTION, suite).run.warm,
    }
    warm.run_python(PROGRAM)  # the first run of each kind is cold and asks for that kind
    run_suite(warm, FUNCTION, suite)
    wall: dict[str, list[float]] = {k: [] for k in kinds}
    cpu = dict.fromkeys(kinds, 0.0)
    for _ in range(runs):
        for kind, fn in kinds.items():
            if not warm.wait_warm(60):
                sys.exit("the warm sandboxes did not come up")
            c, t = children_cpu(), time.perf_counter()
            if not fn():
                sys.exit(f"a {kind} run failed")
            wall[kind].append(time.perf_counter() - t)
            cpu[kind] += children_cpu() - c
    out: dict[str, float | str | bool] = {"mode": box.mode, "spawner": spawner.active()}
    out["cgroup"] = box.run(["/bin/true"]).cgroup
    for kind in kinds:
        out[f"{kind}_ms"] = median_ms(wall[kind])
        out[f"{kind}_child_cpu_ms"] = round(cpu[kind] / runs * 1000, 2)
    for kind in ("sandbox_exec", "sandbox_tests", "warm_exec", "warm_tests"):
        out[f"{kind}_overhead_ms"] = round(out[f"{kind}_ms"] - out["bare_ms"], 2)
        out[f"{kind}_overhead_cpu_ms"] = round(
            out[f"{kind}_child_cpu_ms"] - out["bare_child_cpu_ms"], 2
        )
    box.close()
    warm.close()
    return out


def throughput(workers: list[int], n_tasks: int, runner: str = "local") -> dict[str, float]:
    env = envhub.make("humaneval", runner=runner)
    tasks = envhub.make("humaneval").tasks()[:n_tasks]
    golds = [f"```python\n{t.answer}\n```" for t in tasks]
    env.verify(tasks[0], golds[0])  # warm: probe and compile the runner once
    out = {}
    for n in workers:
        start = time.perf_counter()
        with ThreadPoolExecutor(n) as pool:
            scores = list(pool.map(env.verify, tasks, golds))
        elapsed = time.perf_counter() - start
        assert all(s.components["correctness"] == 1.0 for s in scores)
        out[f"{n}_workers_per_s"] = round(len(tasks) / elapsed, 1)
    env.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument(
        "--http", action="store_true", help="also measure through `envhub serve` (POST /verify)"
    )
    args = parser.parse_args()
    result = {"cpus": os.cpu_count(), "load_before": os.getloadavg()[0]}
    result.update(latency(args.runs, args.python))
    workers = [int(w) for w in args.workers.split(",")]
    result["throughput"] = throughput(workers, args.tasks)
    if args.http:
        result["throughput_http"] = throughput(workers, args.tasks, runner="http")
    result["load_after"] = os.getloadavg()[0]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
