"""Episodes over the wire: envhub's own client (WebSocket and HTTP) against OpenEnv's.

Usage::

    python bench/episodes_throughput.py [--episodes 1000] [--concurrency 32 256] [--rounds 3]
        [--openenv-venv DIR] [--server-src DIR]

What runs, all on this machine, interleaved round by round so a noisy neighbour hits every
client alike:

* **multi-step**: envhub ``wordle`` (``max_turns=3``, three wrong guesses, so three steps)
  against an OpenEnv toy environment built with ``openenv.core`` (``create_app``, the echo
  pattern: the observation echoes the action) that ends after three steps;
* **single-step**: envhub ``gsm8k`` answered with its gold answer (the verifier runs) against
  the same OpenEnv toy ending after one step.

Clients: envhub's :class:`~envhub.client.remote_env.RemoteEnv` over ``ws`` and over ``http`` (async
API, one handle per concurrent session; ``envhub-ws-sync`` in ``--clients``: the sync API from one
thread per session, as the trainer's env workers call it) and OpenEnv's ``GenericEnvClient`` (its
WebSocket client, one connection per session), each in its own process so its CPU time is its own
(``time.process_time``). Every server's CPU is read from ``/proc`` (the server process and its
children). Each concurrent session plays episodes back to back until ``--episodes`` are done.
OpenEnv (``openenv-core==0.3.0``) lives in its own virtual environment, created on the first run
(``--openenv-venv``, default ``~/.cache/envhub/bench-openenv-venv``).

``--server-src DIR`` serves envhub from another checkout (for example the main branch before
a change) to compare server CPU; its clients then use HTTP only when that server has no
``/ws``.
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
WORDS = ("crane", "slate", "pious")

OPENENV_SERVER = """
import os, sys, uuid
import uvicorn
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

STEPS = int(os.environ["TOY_STEPS"])


class ToyAction(Action):
    message: str


class ToyObservation(Observation):
    echoed_message: str = ""
    message_length: int = 0


class ToyEnv(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self):
        super().__init__()
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)

    def reset(self, seed=None, episode_id=None, **kwargs):
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return ToyObservation(echoed_message="Guess the word.", done=False, reward=0.0)

    def step(self, action, timeout_s=None, **kwargs):
        self._state.step_count += 1
        done = self._state.step_count >= STEPS
        return ToyObservation(echoed_message=action.message, message_length=len(action.message),
                              done=done, reward=float(done))

    @property
    def state(self):
        return self._state


app = create_app(ToyEnv, ToyAction, ToyObservation, env_name="toy", max_concurrent_envs=4096)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


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


def client_envhub(url: str, scenario: str, transport: str, conc: int, n: int) -> dict:
    """envhub's own client, async API, one fork per concurrent session."""
    from envhub.client.remote_env import RemoteEnv

    root = RemoteEnv(url, transport=transport, timeout=60)
    golds = {t.task_id: t.answer for t in root.tasks()} if scenario == "single" else {}
    ids = sorted(golds)

    async def play(what, i, arg):
        if what == "open":
            return root.fork()
        if what == "close":
            arg.close()
            return None
        env, latencies = arg
        if scenario == "single":
            task = ids[i % len(ids)]
            await env.areset(task_id=task)
            actions = [f"#### {golds[task]}"]
        else:
            await env.areset(seed=i)
            actions = [f"<guess>{w}</guess>" for w in WORDS]
        for action in actions:
            t0 = time.perf_counter()
            step = await env.astep(action)
            latencies.append(time.perf_counter() - t0)
            if step.terminated or step.truncated:
                break
        return str(step.info.status)

    try:
        out = asyncio.run(_drive(play, conc, n))
    finally:
        root.close()
    out["transport"] = root.transport
    return out


def client_envhub_sync(url: str, scenario: str, conc: int, n: int) -> dict:
    """envhub's own client, sync API from ``conc`` threads (how the trainer's workers call)."""
    import threading

    from envhub.client.remote_env import RemoteEnv

    root = RemoteEnv(url, transport="ws", timeout=60)
    golds = {t.task_id: t.answer for t in root.tasks()} if scenario == "single" else {}
    ids = sorted(golds)
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
            if scenario == "single":
                task = ids[i % len(ids)]
                env.reset(task_id=task)
                actions = [f"#### {golds[task]}"]
            else:
                env.reset(seed=i)
                actions = [f"<guess>{w}</guess>" for w in WORDS]
            for action in actions:
                t0 = time.perf_counter()
                step = env.step(action)
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
    latencies.sort()
    return {
        "episodes": n,
        "wall_s": wall,
        "client_cpu_s": cpu,
        "steps": len(latencies),
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[int(len(latencies) * 0.99)],
        "statuses": statuses,
    }


def client_openenv(url: str, scenario: str, conc: int, n: int) -> dict:
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
            result = await client.step({"message": "<guess>crane</guess>"})
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


def start_envhub(name: str, server_src: str | None, **overrides) -> tuple[str, subprocess.Popen]:
    """``envhub serve`` for ``name`` with ``overrides``, from this checkout or ``server_src``."""
    from envhub.client.child_server import free_port
    from envhub.registry.catalog import spec
    from envhub.registry.make import apply_overrides

    port = free_port()
    spec_json = apply_overrides(spec(name), overrides).model_dump_json()
    env = {**os.environ, "PYTHONPATH": server_src or os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "envhub.cli", "serve", name, "--port", str(port)]
    proc = subprocess.Popen(
        [*cmd, "--spec-json", spec_json], env=env, stdout=subprocess.DEVNULL, cwd=server_src
    )
    url = f"http://127.0.0.1:{port}"
    _wait_healthy(url, proc, f"envhub serve {name}")
    return url, proc


def start_openenv(python: Path, steps: int, script: Path) -> tuple[str, subprocess.Popen]:
    """The OpenEnv toy server ending after ``steps`` steps."""
    from envhub.client.child_server import free_port

    port = free_port()
    env = {**os.environ, "TOY_STEPS": str(steps), "ENABLE_WEB_INTERFACE": "false"}
    env.pop("PYTHONPATH", None)
    log = open(script.with_suffix(f".{port}.log"), "w")
    proc = subprocess.Popen([str(python), str(script), str(port)], env=env, stderr=log)
    url = f"http://127.0.0.1:{port}"
    _wait_healthy(url, proc, "OpenEnv toy server")
    return url, proc


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


def run_client(python: Path, kind: str, url: str, scenario: str, conc: int, n: int) -> dict:
    """One client run in its own process; returns its figures."""
    cmd = [str(python), __file__, "_client", kind, url, scenario, str(conc), str(n)]
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
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[32, 256])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--openenv-venv", type=Path, default=DEFAULT_VENV)
    ap.add_argument("--server-src", default=None)
    ap.add_argument("--clients", nargs="+", default=["envhub-ws", "envhub-http", "openenv"])
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    python = ensure_openenv(args.openenv_venv)
    script = Path(tempfile.mkdtemp(prefix="envhub-bench-")) / "openenv_toy.py"
    script.write_text(OPENENV_SERVER)
    servers = {
        ("multi", "envhub"): start_envhub("wordle", args.server_src, max_turns=3),
        ("single", "envhub"): start_envhub("gsm8k", args.server_src),
        ("multi", "openenv"): start_openenv(python, 3, script),
        ("single", "openenv"): start_openenv(python, 1, script),
    }
    rows: list[dict] = []
    try:
        for rnd in range(args.rounds):
            for conc in args.concurrency:
                for scenario in ("multi", "single"):
                    for client in args.clients:
                        side = "openenv" if client == "openenv" else "envhub"
                        url, proc = servers[(scenario, side)]
                        kind = client.replace("envhub-", "")
                        py = python if side == "openenv" else Path(sys.executable)
                        cpu0 = _tree_cpu(proc.pid)
                        fig = run_client(py, kind, url, scenario, conc, args.episodes)
                        fig["server_cpu_s"] = _tree_cpu(proc.pid) - cpu0
                        fig |= {"round": rnd, "conc": conc, "scenario": scenario, "client": client}
                        rows.append(fig)
                        print(_line(fig), flush=True)
    finally:
        for _, proc in servers.values():
            proc.terminate()
            proc.wait(10)
    print()
    print(_table(rows))


def _line(f: dict) -> str:
    eps = f["episodes"] / f["wall_s"]
    return (
        f"round {f['round']} {f['scenario']:6} c={f['conc']:<4} {f['client']:12} "
        f"{eps:8.1f} ep/s  p50 {f['p50_ms']:.2f} ms p99 {f['p99_ms']:.2f} ms  "
        f"client {1000 * f['client_cpu_s'] / f['episodes']:.3f} ms/ep "
        f"{1000 * f['client_cpu_s'] / f['steps']:.3f} ms/step  "
        f"server {1000 * f['server_cpu_s'] / f['episodes']:.3f} ms/ep  {f['statuses']}"
    )


def _table(rows: list[dict]) -> str:
    """Medians over rounds; ratio = episodes/s over OpenEnv's in the same cell.

    Client CPU is the client process's whole CPU time (``time.process_time``: every thread,
    connection set-up, resets and closes included) over the run, divided by episodes, by
    steps, and by calls (resets + steps).
    """
    out = [
        "| scenario | sessions | client | episodes/s | step p50 ms | step p99 ms "
        "| client CPU ms/ep | client CPU ms/step | client CPU ms/call | server CPU ms/ep "
        "| vs OpenEnv WS |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    cells: dict[tuple, list[dict]] = {}
    for r in rows:
        cells.setdefault((r["scenario"], r["conc"], r["client"]), []).append(r)

    def med(key: tuple, fn) -> float:
        return statistics.median(fn(r) for r in cells[key])

    for (scenario, conc, client), runs in cells.items():
        eps = med((scenario, conc, client), lambda r: r["episodes"] / r["wall_s"])
        base_key = (scenario, conc, "openenv")
        base = med(base_key, lambda r: r["episodes"] / r["wall_s"]) if base_key in cells else 0
        ratio = f"{eps / base:.2f}x" if base else "-"
        out.append(
            f"| {scenario} | {conc} | {client} | {eps:.0f} "
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
    kind, url, scenario, conc, n = argv[0], argv[1], argv[2], int(argv[3]), int(argv[4])
    if kind == "openenv":
        fig = client_openenv(url, scenario, conc, n)
    elif kind == "ws-sync":
        fig = client_envhub_sync(url, scenario, conc, n)
    else:
        fig = client_envhub(url, scenario, kind, conc, n)
    print(json.dumps(fig))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_client":
        _client_main(sys.argv[2:])
    else:
        main()
