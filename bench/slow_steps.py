"""Steps that wait: 1,024 sessions whose every step waits 10 s, envhub against OpenEnv.

Usage::

    python bench/slow_steps.py [--sessions 1024] [--wait 10] [--openenv-step async sync]
        [--openenv-venv DIR] [--json OUT]

The toy game of ``bench/toys/`` ("What is A + B?", three tries) on both servers, each step
waiting ``--wait`` seconds before it answers, as a step does that calls a remote API:

* ``envhub``: ``SlowSumToy``, whose ``aenv_response`` awaits ``asyncio.sleep`` (the server
  awaits it on its event loop), under ``envhub serve`` with its default settings;
* ``openenv``: the same game under OpenEnv 0.3.0's ``create_app``, its ``step_async`` awaiting
  ``asyncio.sleep`` (OpenEnv awaits a ``step_async`` on its loop); ``--openenv-step sync``
  also runs its ``step`` with ``time.sleep`` (one executor thread per session), reported as
  ``openenv_sync``.

The same wait written blocking in envhub (``BlockingSumToy``: ``time.sleep`` in
``env_response``) runs on the worker threads, whose queue bound refuses what waits too long
(``overloaded``); ``tests/server/test_waiting_steps.py`` pins both behaviours.

Each server gets one client process (envhub's ``RemoteEnv`` over ``ws``, OpenEnv's
``GenericEnvClient``) that opens ``--sessions`` sessions at once, one connection each, and
plays one episode on each: a reset and three wrong answers, so three waiting steps. The
servers run one after the other, so each has the machine to itself.

Figures per server: ``sessions`` opened, ``errors`` (calls that raised, or a status other
than ``ok``), ``refused`` (refusals the client saw, plus for envhub those its server counted
and its client sent again), ``steps_per_s`` (steps over the wall time of the run),
``p99_ms`` (step latency), ``server_mb`` (the server's peak RSS, children included) with
``server_mb_idle`` (before the sessions) and ``kb_per_session``. The last line printed is one
JSON object of them, keyed by server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from episodes_throughput import (
    DEFAULT_VENV,
    WRONG,
    ensure_openenv,
    load,
    start_envhub,
    start_openenv,
)

REFUSAL_COUNTERS = ("refused_overloaded", "rejected_overload")
"""envhub's ``/metrics`` counters of calls refused (and sent again by its client)."""


# ------------------------------------------------------------------------------ clients


async def _sessions(open_session, play, sessions: int) -> dict:
    """``sessions`` sessions opened at once, one episode each; figures of the run."""
    latencies: list[float] = []
    outcome = {"errors": 0, "refused": 0, "statuses": {}}

    async def one(i: int) -> None:
        try:
            session = await open_session()
            status = await play(session, i, latencies)
            outcome["statuses"][status] = outcome["statuses"].get(status, 0) + 1
            outcome["errors"] += status != "ok"
        except Exception as e:  # noqa: BLE001 - counted, the run goes on
            refused = any(w in str(e).lower() for w in ("capacity", "overloaded", "full"))
            outcome["refused" if refused else "errors"] += 1
            outcome.setdefault("first_error", f"{type(e).__name__}: {e}"[:300])

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(sessions)))
    wall = time.perf_counter() - t0
    latencies.sort()
    return {
        **outcome,
        "sessions": sessions,
        "steps": len(latencies),
        "wall_s": wall,
        "steps_per_s": len(latencies) / wall,
        "p50_ms": 1000 * latencies[len(latencies) // 2] if latencies else None,
        "p99_ms": 1000 * latencies[int(len(latencies) * 0.99)] if latencies else None,
    }


def client_envhub(url: str, sessions: int) -> dict:
    """envhub's ``RemoteEnv`` over ``ws``, async API, one fork (connection) per session."""
    from envhub.client.remote_env import RemoteEnv

    root = RemoteEnv(url, transport="ws", timeout=120)
    forks = []

    async def open_session():
        forks.append(root.fork())
        return forks[-1]

    async def play(env, i, latencies):
        await env.areset(seed=i)
        while True:
            t0 = time.perf_counter()
            step = await env.astep(WRONG)
            latencies.append(time.perf_counter() - t0)
            if step.terminated or step.truncated:
                return str(step.info.status)

    try:
        return asyncio.run(_sessions(open_session, play, sessions))
    finally:
        for env in forks:
            env.close()
        root.close()


def client_openenv(url: str, sessions: int) -> dict:
    """OpenEnv's WebSocket client (``GenericEnvClient``), one connection per session."""
    from openenv.core.generic_client import GenericEnvClient

    clients = []

    async def open_session():
        client = GenericEnvClient(base_url=url, connect_timeout_s=60, message_timeout_s=120)
        clients.append(client)
        await client.connect()
        return client

    async def play(client, i, latencies):
        await client.reset(seed=i)
        while True:
            t0 = time.perf_counter()
            result = await client.step({"message": WRONG})
            latencies.append(time.perf_counter() - t0)
            if result.done:
                return "ok"

    async def run():
        try:
            return await _sessions(open_session, play, sessions)
        finally:
            await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)

    return asyncio.run(run())


# ------------------------------------------------------------------------------ the run


def _tree_rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its children, in MB."""
    total, family = 0, {pid}
    for entry in sorted(os.listdir("/proc"), key=lambda e: (not e.isdigit(), e)):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(entry) in family or int(fields.get("PPid", "0")) in family:
            family.add(int(entry))
            total += int(fields.get("VmRSS", "0 kB").split()[0])
    return total / 1024


def measure(name: str, python: Path, kind: str, url: str, proc, sessions: int) -> dict:
    """One client run against the server ``proc``; its figures with the server's memory."""
    idle = _tree_rss_mb(proc.pid)
    peak = [idle]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.5):
            peak[0] = max(peak[0], _tree_rss_mb(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    before = load()
    env = dict(os.environ)
    if kind == "openenv":
        env.pop("PYTHONPATH", None)
    cmd = [str(python), __file__, "_client", kind, url, str(sessions)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
    finally:
        done.set()
        sampler.join()
    if out.returncode != 0:
        raise SystemExit(f"{name}: client failed:\n{out.stderr[-3000:]}")
    fig = json.loads(out.stdout.strip().splitlines()[-1])
    if kind == "envhub":
        import httpx

        counted = httpx.get(url + "/metrics").json()
        fig["refused"] += sum(counted.get(k, 0) for k in REFUSAL_COUNTERS)
    fig |= {
        "server_mb": round(peak[0], 1),
        "server_mb_idle": round(idle, 1),
        "kb_per_session": round(1024 * (peak[0] - idle) / sessions, 1),
        "load": f"{before} before, {load()} after",
    }
    for key in ("steps_per_s", "p50_ms", "p99_ms", "wall_s"):
        if fig.get(key) is not None:
            fig[key] = round(fig[key], 1)
    print(f"{name}: {json.dumps(fig)}", flush=True)
    return fig


def main() -> None:
    """Parse arguments, run each server in turn, print one JSON line of figures last."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=1024)
    ap.add_argument("--wait", type=float, default=10.0, help="seconds every step waits")
    ap.add_argument(
        "--openenv-step", nargs="*", choices=["async", "sync"], default=["async"],
        help="OpenEnv's step awaited (async), blocking (sync) or both; none: envhub only",
    )  # fmt: skip
    ap.add_argument("--openenv-venv", type=Path, default=DEFAULT_VENV)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    python = ensure_openenv(args.openenv_venv)
    here = Path(sys.executable)
    print(f"load average at start: {load()}", flush=True)
    slow = {"cls": "SlowSumToy", "options": {"wait_s": args.wait}}
    runs = [("envhub", here, "envhub", lambda: start_envhub(None, **slow))]
    for mode in args.openenv_step:
        name = "openenv" if mode == "async" else "openenv_sync"
        toy = {"TOY_SLEEP_S": str(args.wait), "TOY_ASYNC": "1" if mode == "async" else "0"}
        runs.append((name, python, "openenv", lambda toy=toy: start_openenv(python, **toy)))
    figures = {}
    for name, py, kind, start in runs:
        url, proc = start()
        try:
            figures[name] = measure(name, py, kind, url, proc, args.sessions)
        finally:
            proc.terminate()
            proc.wait(10)
    print(f"load average at the end: {load()}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    print(json.dumps(figures))


def _client_main(argv: list[str]) -> None:
    kind, url, sessions = argv[0], argv[1], int(argv[2])
    fig = client_openenv(url, sessions) if kind == "openenv" else client_envhub(url, sessions)
    print(json.dumps(fig))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_client":
        _client_main(sys.argv[2:])
    else:
        main()
