"""Episodes over the wire: envhub's server and client against OpenEnv's, on the same toy game.

Usage::

    python bench/episodes_throughput.py [--episodes 2000] [--concurrency 32 256] [--rounds 3]
        [--clients envhub-ws openenv] [--openenv-venv DIR] [--server-src DIR] [--json OUT]

Both servers serve the same game, ``bench/toys/`` ("What is A + B?", three tries; every client
answers ``-1`` three times, so an episode is a reset and three steps): envhub's ``TaskEnv``
under ``envhub serve`` and OpenEnv's ``Environment`` under its ``create_app``. Runs are
interleaved round by round so a noisy neighbour hits every client alike, and the load average
is printed before and after each round.

Clients: envhub's :class:`~envhub.client.remote_env.RemoteEnv` over ``ws`` and over ``http`` (async
API, one handle per concurrent session; ``envhub-ws-sync``: the sync API from one thread per
session, as the trainer's env workers call it) and OpenEnv's ``GenericEnvClient`` (its
WebSocket client, one connection per session), each in its own process so its CPU time is its own
(``time.process_time``). Every server's CPU is read from ``/proc`` (the server process and its
children). Each concurrent session plays episodes back to back until ``--episodes`` are done.
OpenEnv (``openenv-core==0.3.0``) lives in its own virtual environment, created on the first run
(``--openenv-venv``, default ``~/.cache/envhub/bench-openenv-venv``).

``--server-src DIR`` serves envhub from another checkout (for example the main branch before
a change) to compare server CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OPENENV_VERSION = "0.3.0"
DEFAULT_VENV = Path("~/.cache/envhub/bench-openenv-venv").expanduser()

TOYS = Path(__file__).resolve().parent / "toys"
WRONG = "-1"
"""The answer every client sends: never a sum of two numbers below 100, so three tries."""


# ------------------------------------------------------------------------------ clients


async def _drive(play, concurrency: int, episodes: int) -> dict:
    """Run ``episodes`` episodes on ``concurrency`` sessions; latencies in seconds."""
    latencies: list[float] = []
    left = [episodes]
    statuses: dict[str, int] = {}

    async def worker(w: int) -> None:
        session = await play("open", w, None)
        while left[0] > 0:
            left[0] -= 1
            status = await play("episode", left[0], (session, latencies))
            statuses[status] = statuses.get(status, 0) + 1
        await play("close", w, session)

    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(concurrency)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return _figures(episodes, wall, cpu, latencies, statuses)


def _figures(episodes: int, wall: float, cpu: float, latencies: list, statuses: dict) -> dict:
    latencies.sort()
    return {
        "episodes": episodes,
        "wall_s": wall,
        "client_cpu_s": cpu,
        "steps": len(latencies),
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[int(len(latencies) * 0.99)],
        "statuses": statuses,
    }


def client_envhub(url: str, transport: str, conc: int, n: int) -> dict:
    """envhub's own client, async API, one fork per concurrent session."""
    from envhub.client.remote_env import RemoteEnv

    root = RemoteEnv(url, transport=transport, timeout=60)

    async def play(what, i, arg):
        if what == "open":
            return root.fork()
        if what == "close":
            arg.close()
            return None
        env, latencies = arg
        await env.areset(seed=i)
        while True:
            t0 = time.perf_counter()
            step = await env.astep(WRONG)
            latencies.append(time.perf_counter() - t0)
            if step.terminated or step.truncated:
                return str(step.info.status)

    try:
        out = asyncio.run(_drive(play, conc, n))
    finally:
        root.close()
    out["transport"] = root.transport
    return out


def client_envhub_sync(url: str, conc: int, n: int) -> dict:
    """envhub's own client, sync API from ``conc`` threads (how the trainer's workers call)."""
    import threading

    from envhub.client.remote_env import RemoteEnv

    root = RemoteEnv(url, transport="ws", timeout=60)
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    left = [n]
    lock = threading.Lock()

    def worker() -> None:
        env = root.fork()
        while True:
            with lock:
                if left[0] <= 0:
                    break
                left[0] -= 1
                i = left[0]
            env.reset(seed=i)
            while True:
                t0 = time.perf_counter()
                step = env.step(WRONG)
                latencies.append(time.perf_counter() - t0)
                if step.terminated or step.truncated:
                    break
            with lock:
                statuses[str(step.info.status)] = statuses.get(str(step.info.status), 0) + 1
        env.close()

    threads = [threading.Thread(target=worker) for _ in range(conc)]
    cpu0, t0 = time.process_time(), time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    root.close()
    return _figures(n, wall, cpu, latencies, statuses)


def client_openenv(url: str, conc: int, n: int) -> dict:
    """OpenEnv's WebSocket client (``GenericEnvClient``), one connection per session."""
    from openenv.core.generic_client import GenericEnvClient

    async def play(what, i, arg):
        if what == "open":
            client = GenericEnvClient(base_url=url)
            await client.connect()
            return client
        if what == "close":
            await arg.close()
            return None
        client, latencies = arg
        await client.reset(seed=i)
        while True:
            t0 = time.perf_counter()
            result = await client.step({"message": WRONG})
            latencies.append(time.perf_counter() - t0)
            if result.done:
                return "ok"

    return asyncio.run(_drive(play, conc, n))


# ------------------------------------------------------------------------------ servers


def _tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its live descendants (utime + stime)."""
    tick = os.sysconf("SC_CLK_TCK")
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    family, total = {pid}, 0.0
    grew = True
    while grew:
        grew = False
        for p, (ppid, _) in stats.items():
            if ppid in family and p not in family:
                family.add(p)
                grew = True
    for p in family:
        total += stats.get(p, (0, 0.0))[1]
    return total


def _wait_healthy(url: str, proc: subprocess.Popen, what: str) -> None:
    import httpx

    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode}")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit(f"{what} did not answer /health at {url} within 180 s")


def start_envhub(server_src: str | None, *extra: str, **fields) -> tuple[str, subprocess.Popen]:
    """``envhub serve`` for the toy (``bench/toys/sum_envhub.py``), from this checkout or
    ``server_src``; ``extra``: more ``envhub serve`` options, ``fields``: spec fields."""
    from envhub.client.child_server import free_port

    sys.path.insert(0, str(TOYS))
    from sum_envhub import spec

    port = free_port()
    env = {**os.environ, "PYTHONPATH": server_src or os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "envhub.cli", "serve", "toy-sum", "--port", str(port), *extra]
    proc = subprocess.Popen(
        [*cmd, "--spec-json", spec(**fields).model_dump_json()],
        env=env, stdout=subprocess.DEVNULL, cwd=server_src,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    _wait_healthy(url, proc, "envhub serve toy-sum")
    return url, proc


def start_openenv(python: Path, **env_vars: str) -> tuple[str, subprocess.Popen]:
    """OpenEnv's server for the toy (``bench/toys/sum_openenv.py``), ``env_vars`` set."""
    from envhub.client.child_server import free_port

    port = free_port()
    env = {**os.environ, "ENABLE_WEB_INTERFACE": "false", **env_vars}
    env.pop("PYTHONPATH", None)
    log = Path(tempfile.gettempdir()) / f"envhub-bench-openenv.{port}.log"
    with open(log, "w") as err:
        cmd = [str(python), str(TOYS / "sum_openenv.py"), str(port)]
        proc = subprocess.Popen(cmd, env=env, stderr=err)
    url = f"http://127.0.0.1:{port}"
    _wait_healthy(url, proc, f"OpenEnv toy server (log: {log})")
    return url, proc


def load() -> str:
    """The load averages (1, 5, 15 min) as ``uptime`` prints them."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def ensure_openenv(venv: Path) -> Path:
    """The venv's python with ``openenv-core`` installed (created on first use)."""
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import openenv.core.generic_client"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    print(f"creating {venv} with openenv-core=={OPENENV_VERSION} ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q", f"openenv-core=={OPENENV_VERSION}"]
    subprocess.run(pip, check=True)
    return python


# ------------------------------------------------------------------------------ the run


def run_client(python: Path, kind: str, url: str, conc: int, n: int) -> dict:
    """One client run in its own process; returns its figures."""
    cmd = [str(python), __file__, "_client", kind, url, str(conc), str(n)]
    env = dict(os.environ)
    if kind == "openenv":
        env.pop("PYTHONPATH", None)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if out.returncode != 0:
        raise SystemExit(f"client {kind} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Parse arguments, start the servers, run the clients interleaved, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[32, 256])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--openenv-venv", type=Path, default=DEFAULT_VENV)
    ap.add_argument("--server-src", default=None)
    ap.add_argument("--clients", nargs="+", default=["envhub-ws", "openenv"])
    ap.add_argument("--json", type=Path, default=None, help="save every run's figures here")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    python = ensure_openenv(args.openenv_venv)
    print(f"load average at start: {load()}", flush=True)
    servers = {"envhub": start_envhub(args.server_src), "openenv": start_openenv(python)}
    rows: list[dict] = []
    try:
        for rnd in range(args.rounds):
            before = load()
            for conc in args.concurrency:
                for client in args.clients:
                    side = "openenv" if client == "openenv" else "envhub"
                    url, proc = servers[side]
                    py = python if side == "openenv" else Path(sys.executable)
                    cpu0 = _tree_cpu(proc.pid)
                    fig = run_client(py, client.replace("envhub-", ""), url, conc, args.episodes)
                    fig["server_cpu_s"] = _tree_cpu(proc.pid) - cpu0
                    fig |= {"round": rnd, "conc": conc, "client": client, "load": load()}
                    rows.append(fig)
                    print(_line(fig), flush=True)
            print(f"round {rnd}: load average {before} before, {load()} after", flush=True)
    finally:
        for _, proc in servers.values():
            proc.terminate()
            proc.wait(10)
    print()
    print(_table(rows))
    print(f"\nload average at the end: {load()}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


def _line(f: dict) -> str:
    eps = f["episodes"] / f["wall_s"]
    return (
        f"round {f['round']} c={f['conc']:<4} {f['client']:15} "
        f"{eps:8.1f} ep/s  p50 {f['p50_ms']:.2f} ms p99 {f['p99_ms']:.2f} ms  "
        f"client {1000 * f['client_cpu_s'] / f['episodes']:.3f} ms/ep "
        f"{1000 * f['client_cpu_s'] / f['steps']:.3f} ms/step  "
        f"server {1000 * f['server_cpu_s'] / f['episodes']:.3f} ms/ep  {f['statuses']}  "
        f"load {f['load']}"
    )


def _table(rows: list[dict]) -> str:
    """Medians over rounds; ratio = episodes/s over OpenEnv's in the same cell.

    Client CPU is the client process's whole CPU time (``time.process_time``: every thread,
    connection set-up, resets and closes included) over the run, divided by episodes, by
    steps, and by calls (resets + steps).
    """
    out = [
        "| sessions | client | episodes/s | step p50 ms | step p99 ms "
        "| client CPU ms/ep | client CPU ms/step | client CPU ms/call | server CPU ms/ep "
        "| vs OpenEnv WS |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    cells: dict[tuple, list[dict]] = {}
    for r in rows:
        cells.setdefault((r["conc"], r["client"]), []).append(r)

    def med(key: tuple, fn) -> float:
        return statistics.median(fn(r) for r in cells[key])

    for (conc, client), runs in cells.items():
        eps = med((conc, client), lambda r: r["episodes"] / r["wall_s"])
        base_key = (conc, "openenv")
        base = med(base_key, lambda r: r["episodes"] / r["wall_s"]) if base_key in cells else 0
        ratio = f"{eps / base:.2f}x" if base else "-"
        out.append(
            f"| {conc} | {client} | {eps:.0f} "
            f"| {statistics.median(r['p50_ms'] for r in runs):.2f} "
            f"| {statistics.median(r['p99_ms'] for r in runs):.2f} "
            f"| {statistics.median(1000 * r['client_cpu_s'] / r['episodes'] for r in runs):.3f} "
            f"| {statistics.median(1000 * r['client_cpu_s'] / r['steps'] for r in runs):.3f} "
            f"| {statistics.median(1000 * r['client_cpu_s'] / _calls(r) for r in runs):.3f} "
            f"| {statistics.median(1000 * r['server_cpu_s'] / r['episodes'] for r in runs):.3f} "
            f"| {ratio} |"
        )
    return "\n".join(out)


def _calls(r: dict) -> int:
    return r["steps"] + r["episodes"]  # every step and one reset per episode


def _client_main(argv: list[str]) -> None:
    kind, url, conc, n = argv[0], argv[1], int(argv[2]), int(argv[3])
    if kind == "openenv":
        fig = client_openenv(url, conc, n)
    elif kind == "ws-sync":
        fig = client_envhub_sync(url, conc, n)
    else:
        fig = client_envhub(url, kind, conc, n)
    print(json.dumps(fig))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_client":
        _client_main(sys.argv[2:])
    else:
        main()
