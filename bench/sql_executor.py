"""Measure the SQL environment: build, task generation, verification rate, deadline precision.

Run ``python bench/sql_executor.py`` from the repository root (the project installed, or
``PYTHONPATH=.``); it works in a temporary cache and prints one line per figure.
"""

from __future__ import annotations

import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from envhub.envs.sql.builder import BuiltinDatabases
from envhub.envs.sql.env import SqlEnv
from envhub.envs.sql.executor import QueryTimeout, run_query
from envhub.envs.sql.tasks import builtin_task_set
from envhub.spec import EnvSpec


def main() -> None:
    """Print the figures."""
    cache = tempfile.mkdtemp(prefix="sql-bench-")
    t = time.perf_counter()
    dbs = BuiltinDatabases(cache)
    for db_id in dbs.ids():
        dbs.path(db_id)
    print(f"build 4 databases: {time.perf_counter() - t:.2f} s")
    t = time.perf_counter()
    tasks = builtin_task_set(dbs)
    n = sum(len(v) for v in tasks.values())
    print(f"generate task set: {n} tasks in {time.perf_counter() - t:.2f} s")

    env = SqlEnv(EnvSpec(name="sql-bench", family="sql"), cache_dir=cache)
    items = [(task, f"```sql\n{task.answer}\n```") for v in tasks.values() for task in v]
    env.verify_batch(items[:5])
    for threads in (1, 4):
        env._gold.clear()
        t = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            scores = list(pool.map(lambda it: env.verify(*it), items))
        dt = time.perf_counter() - t
        assert all(s.components["correctness"] == 1.0 for s in scores)
        print(
            f"verify {len(items)} gold answers, {threads} thread(s), cold gold cache: "
            f"{len(items) / dt:.0f}/s ({1000 * dt / len(items):.1f} ms each)"
        )
    t = time.perf_counter()
    scores = env.verify_batch(items)
    dt = time.perf_counter() - t
    print(f"verify with warm gold cache: {len(items) / dt:.0f}/s")
    runaway = "SELECT COUNT(*) FROM order_items a, order_items b, order_items c"
    overshoot = []
    for _ in range(5):
        t = time.perf_counter()
        try:
            run_query(dbs.path("store"), runaway, timeout_s=0.5, max_rows=10)
        except QueryTimeout:
            overshoot.append(time.perf_counter() - t - 0.5)
    print(
        f"runaway cross join, 0.5 s deadline: interrupted after +{max(overshoot) * 1000:.0f} "
        "ms at most (5 runs)"
    )


if __name__ == "__main__":
    main()
