"""Benchmark envhub's math verification: the checker against math-verify, and the server.

Run from the repository root::

    python bench/verify_throughput.py            # both parts, about a minute
    python bench/verify_throughput.py --skip-server --json out.json

Part 1 (checker): envhub's ``is_equivalent`` and math-verify's ``verify(parse(gold),
parse(pred))`` on the same hand-checked pairs (``tests/envs/math_pairs.jsonl``) and on
GSM8K-style final answers, in the same process: accuracy against the hand truth, every
disagreement, pairs/s of each and the speed ratio. math-verify gets each side wrapped in
``\\boxed{}``, the input form it reads best on this table. envhub's caches (gold answers, sympy
values) are emptied and its workers restarted before its timed pass.

Part 1b (math-verify's own suite): the 269 cases of math-verify's tests
(``tests/envs/math_verify_cases.jsonl``) scored by math-verify with its defaults
(``verify(parse(gold), parse(pred))``) and by envhub as its environment scores a response
(extract the final answer, hedging included, then compare; see ``envhub/envs/math/suite.py``),
side by side: agreement with the labels, and with the labels we hold to be wrong corrected.

Part 2 (server): starts ``envhub serve gsm8k`` on a free loopback port, then POSTs single-item
``/verify`` requests (a full worked GSM8K-style solution ending in ``#### <answer>``, half of
them with a wrong final answer) from an ``httpx.AsyncClient`` at several concurrency levels for
a few seconds each, while a prober times ``GET /health``. Reports requests/s, p50/p99 latency,
errors, health latency under load, and the ratio to the NeMo Gym math-verify server
(16.7 verifications/s at concurrency 32, p50 1.9 s, on a 2-core machine like this one).
Client and server share the machine's cores, as they would in a colocated trainer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PAIRS = ROOT / "tests" / "envs" / "math_pairs.jsonl"
PEER_RPS, PEER_P50_S = 16.7, 1.9


# ---------------------------------------------------------------- part 1: the checker


def load_pairs() -> list[dict]:
    return [json.loads(line) for line in PAIRS.read_text().splitlines() if line.strip()]


def gsm_pairs(n: int) -> list[dict]:
    """GSM8K-style (pred, gold) final answers: right ones written in varied forms, wrong ones."""
    from envhub.envs.math.generators import gsm_symbolic_tasks

    rng = random.Random(0)
    out = []
    for task in gsm_symbolic_tasks("test", n, 0):
        gold = int(task.answer)
        right = rng.random() < 0.5
        value = gold if right else gold + rng.choice([-10, -1, 1, 2, 100])
        form = rng.choice(["{v}", "{v:,}", "${v}", "{v}.0", "{v} dollars"])
        out.append({"pred": form.format(v=value), "gold": task.answer, "equal": right})
    return out


def run_envhub(pairs: list[dict]) -> tuple[list, float]:
    from envhub.envs.math import answers, compare, pool, symbolic

    pool.shutdown()
    pool.warmup()
    answers._gold.cache_clear()
    compare.read.cache_clear()
    symbolic._to_sympy.cache_clear()
    got = []
    start = time.perf_counter()
    for p in pairs:
        try:
            got.append(answers.is_equivalent(p["pred"], p["gold"], timeout=5.0))
        except Exception as e:  # noqa: BLE001 (a failure of the measured checker is a row)
            got.append(f"{type(e).__name__}")
    elapsed = time.perf_counter() - start
    return got, elapsed


def run_math_verify(pairs: list[dict]) -> tuple[list, float]:
    from math_verify import parse, verify

    def box(s: str) -> str:
        return "\\boxed{" + s + "}"

    verify(parse(box("1")), parse(box("1")))  # warm imports
    got = []
    start = time.perf_counter()
    for p in pairs:
        try:
            got.append(bool(verify(parse(box(p["gold"])), parse(box(p["pred"])))))
        except Exception as e:  # noqa: BLE001 (a failure of the compared library is a row)
            got.append(f"{type(e).__name__}")
    return got, time.perf_counter() - start


def compare_checkers(name: str, pairs: list[dict]) -> dict:
    ours, t_ours = run_envhub(pairs)
    theirs, t_theirs = run_math_verify(pairs)
    result = {"set": name, "pairs": len(pairs)}
    print(
        f"\n== checker: {name} ({len(pairs)} pairs, "
        f"{sum(p['equal'] for p in pairs)} equal by hand) =="
    )
    for label, got, elapsed in (("envhub", ours, t_ours), ("math-verify", theirs, t_theirs)):
        wrong = [(p, g) for p, g in zip(pairs, got, strict=True) if g is not p["equal"]]
        rate = len(pairs) / elapsed
        result[label] = {"correct": len(pairs) - len(wrong), "pairs_per_s": round(rate, 1)}
        print(
            f"{label:>12}: {len(pairs) - len(wrong)}/{len(pairs)} agree with the hand truth,"
            f" {rate:,.0f} pairs/s ({elapsed * 1000:.0f} ms)"
        )
        for p, g in wrong[:15]:
            print(
                f"{'':>14}disagrees: pred={p['pred']!r} gold={p['gold']!r} "
                f"truth={p['equal']} got={g}"
            )
        if len(wrong) > 15:
            print(f"{'':>14}... and {len(wrong) - 15} more")
    ratio = t_theirs / t_ours
    result["speed_ratio"] = round(ratio, 1)
    print(f"{'':>12}  envhub is {ratio:,.1f}x the speed of math-verify on this set")
    return result


def suite_agreement() -> dict:
    """Agreement of both checkers with math-verify's own test labels, side by side."""
    from math_verify import parse, verify

    from envhub.envs.math import pool, suite

    cases = suite.load_cases()
    pool.warmup()
    t0 = time.perf_counter()
    ours = [suite.envhub_verdict(c) for c in cases]
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    theirs = []
    for c in cases:
        try:
            theirs.append(bool(verify(parse(c["gold"]), parse(c["pred"]))))
        except Exception as e:  # noqa: BLE001 (report, don't crash the bench)
            theirs.append(type(e).__name__)
    t_theirs = time.perf_counter() - t0
    print(f"\n== math-verify's own suite ({len(cases)} cases, labels from its tests) ==")
    result: dict = {"cases": len(cases)}
    for label, got, elapsed in (("envhub", ours, t_ours), ("math-verify", theirs, t_theirs)):
        agree = sum(g is c["expected"] for g, c in zip(got, cases, strict=True))
        fixed = sum(
            g is suite.WRONG_LABELS.get(c["id"], c["expected"])
            for g, c in zip(got, cases, strict=True)
        )
        result[label] = {"agree": agree, "agree_labels_fixed": fixed, "seconds": round(elapsed, 2)}
        print(
            f"{label:>12}: {agree}/{len(cases)} agree with the labels, {fixed}/{len(cases)} "
            f"with the {len(suite.WRONG_LABELS)} wrong labels corrected ({elapsed:.1f} s)"
        )
        for g, c in zip(got, cases, strict=True):
            if g is not c["expected"]:
                print(f"{'':>14}disagrees: {c['id'][:110]} expected={c['expected']} got={g}")
    return result


# ---------------------------------------------------------------- part 2: the server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-c",
        "from envhub.cli import app; app()",
        "serve",
        "gsm8k",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--answers",  # /verify is what this bench measures: the evaluator's port, not an agent's
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def wait_healthy(base: str, proc: subprocess.Popen, timeout: float = 90.0) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if proc.poll() is not None:
            raise RuntimeError(
                f"envhub serve exited with {proc.returncode}:\n"
                f"{proc.stderr.read() if proc.stderr else ''}"
            )
        try:
            if httpx.get(f"{base}/health", timeout=1.0).status_code == 200:
                return time.monotonic() - start
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"envhub serve did not answer /health within {timeout:.0f}s")


def make_items(base: str, n: int) -> list[tuple[dict, float]]:
    """Single-item verify bodies with the reward each must earn (1.1 right, 0.1 wrong)."""
    tasks = httpx.get(f"{base}/tasks", params={"limit": n}, timeout=30).json()["tasks"]
    rng = random.Random(1)
    items = []
    for t in tasks:
        solution = t["metadata"].get("solution") or f"Working...\n#### {t['answer']}"
        right = rng.random() < 0.5
        if not right:
            head = solution.rsplit("####", 1)[0]
            solution = f"{head}#### {int(t['answer']) + rng.choice([-3, -1, 1, 7])}"
        body = {"items": [{"task_id": t["task_id"], "response": solution}]}
        items.append((body, 1.1 if right else 0.1))
    return items


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


class HttpxPoster:
    """One ``httpx.AsyncClient`` holding one keep-alive connection."""

    def __init__(self, base: str, tls: ssl.SSLContext) -> None:
        one = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        self.client = httpx.AsyncClient(base_url=base, limits=one, timeout=30.0, verify=tls)

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        r = await self.client.post(path, content=body, headers={"content-type": "application/json"})
        return r.status_code, r.content

    async def close(self) -> None:
        await self.client.aclose()


class RawPoster:
    """A minimal keep-alive HTTP/1.1 client on asyncio streams: almost no client CPU."""

    def __init__(self, base: str, tls: ssl.SSLContext) -> None:
        host, port = base.removeprefix("http://").split(":")
        self.host, self.port = host, int(port)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        await self.writer.drain()
        raw = await self.reader.readuntil(b"\r\n\r\n")  # type: ignore[union-attr]
        lines = raw.decode("latin-1").split("\r\n")
        headers = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
        length = int({k.lower(): v for k, v in headers.items()}["content-length"])
        return int(lines[0].split()[1]), await self.reader.readexactly(length)  # type: ignore[union-attr]

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


CLIENTS = {"httpx": HttpxPoster, "raw": RawPoster}


async def load_level(
    base: str, items: list, concurrency: int, duration: float, client: str = "httpx"
) -> dict:
    """Closed-loop load: ``concurrency`` workers, each with its own one-connection client.

    One client per worker, not one shared pool: httpx's pool does work linear in its number
    of connections on every request, which at 64 connections costs more CPU than the server.
    """
    latencies: list[float] = []
    health: list[float] = []
    errors = wrong = 0
    tls = ssl.create_default_context()  # shared: loading certificates per client is slow
    posters = [CLIENTS[client](base, tls) for _ in range(concurrency)]
    await asyncio.gather(*(p.post("/verify", items[0][0]) for p in posters))  # connect first
    stop = time.monotonic() + duration

    async def worker(k: int) -> None:
        nonlocal errors, wrong
        i = k
        poster = posters[k]
        try:
            while time.monotonic() < stop:
                body, expected = items[i % len(items)]
                i += concurrency
                t0 = time.perf_counter()
                try:
                    status, content = await poster.post("/verify", body)
                except (httpx.HTTPError, OSError, asyncio.IncompleteReadError):
                    errors += 1
                    continue
                latencies.append(time.perf_counter() - t0)
                if status != 200:
                    errors += 1
                    continue
                score = json.loads(content)["scores"][0]
                if score["status"] != "ok" or abs(score["reward"] - expected) > 1e-6:
                    wrong += 1
        finally:
            await poster.close()

    async def prober() -> None:
        async with httpx.AsyncClient(base_url=base, timeout=10.0, verify=tls) as hc:
            while time.monotonic() < stop:
                t0 = time.perf_counter()
                await hc.get("/health")
                health.append(time.perf_counter() - t0)
                await asyncio.sleep(0.05)

    t0 = time.monotonic()
    await asyncio.gather(prober(), *(worker(k) for k in range(concurrency)))
    elapsed = time.monotonic() - t0
    done = len(latencies) - errors
    return {
        "client": client,
        "concurrency": concurrency,
        "requests": len(latencies),
        "rps": done / elapsed,
        "p50_ms": pct(latencies, 0.5) * 1e3,
        "p99_ms": pct(latencies, 0.99) * 1e3,
        "errors": errors,
        "wrong_rewards": wrong,
        "health_p50_ms": pct(health, 0.5) * 1e3,
        "health_p99_ms": pct(health, 0.99) * 1e3,
        "health_max_ms": max(health, default=float("nan")) * 1e3,
    }


def run_level(
    proc: subprocess.Popen, base: str, items: list, c: int, duration: float, client: str
) -> dict:
    server_cpu, client_cpu = cpu_seconds(proc.pid), own_cpu_seconds()
    row = asyncio.run(load_level(base, items, c, duration, client))
    served = max(1, row["requests"] - row["errors"])
    row["server_cpu_ms_per_req"] = (cpu_seconds(proc.pid) - server_cpu) / served * 1e3
    row["client_cpu_ms_per_req"] = (own_cpu_seconds() - client_cpu) / served * 1e3
    print(
        f"{client:>6} {c:>5} {row['rps']:>7.0f} {row['p50_ms']:>8.1f} {row['p99_ms']:>8.1f} "
        f"{row['errors']:>6} {row['wrong_rewards']:>6} "
        f"{row['health_p50_ms']:>8.1f}/{row['health_p99_ms']:.1f}/{row['health_max_ms']:.1f}"
        f"{'':>6}{row['server_cpu_ms_per_req']:.2f} + {row['client_cpu_ms_per_req']:.2f}"
    )
    return row


def summarize(rows: list[dict]) -> None:
    for row in rows:
        if row["concurrency"] != 32:
            continue
        print(
            f"{row['client']} client, concurrency 32: {row['rps'] / PEER_RPS:.1f}x the "
            f"requests/s of the NeMo Gym math-verify server ({PEER_RPS}/s); p50 "
            f"{row['p50_ms']:.1f} ms vs {PEER_P50_S * 1e3:.0f} ms "
            f"({PEER_P50_S * 1e3 / row['p50_ms']:.1f}x lower); p99 {row['p99_ms']:.1f} ms "
            f"(targets: >= {10 * PEER_RPS:.0f}/s, p99 < 100 ms); server CPU "
            f"{row['server_cpu_ms_per_req']:.2f} ms/request = "
            f"{1e3 / row['server_cpu_ms_per_req']:,.0f} requests/s per free core"
        )


def bench_server(levels: list[int], raw_levels: list[int], duration: float) -> dict:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_server(port)
    try:
        startup = wait_healthy(base, proc)
        items = [(json.dumps(b).encode(), want) for b, want in make_items(base, 200)]
        print(
            f"\n== server: envhub serve gsm8k on {base} (healthy after {startup:.1f}s), "
            f"single-item POST /verify, {duration:g}s per level =="
        )
        asyncio.run(load_level(base, items, 8, 1.0))  # warm-up
        print(
            f"{'client':>6} {'conc':>5} {'req/s':>7} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6} "
            f"{'wrong':>6} {'health p50/p99/max ms':>22} {'CPU ms/req server+client':>25}"
        )
        rows = [run_level(proc, base, items, c, duration, "httpx") for c in levels]
        rows += [run_level(proc, base, items, c, duration, "raw") for c in raw_levels]
        summarize(rows)
        return {"startup_s": round(startup, 2), "levels": rows}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=4.0, help="seconds per concurrency level")
    ap.add_argument("--levels", default="1,8,32,64", help="concurrency levels, comma-separated")
    ap.add_argument(
        "--raw-levels",
        default="32",
        help="levels also run with the minimal stdlib client ('' for none)",
    )
    ap.add_argument("--gsm-pairs", type=int, default=200, help="GSM8K-style pairs in part 1")
    ap.add_argument("--skip-checker", action="store_true")
    ap.add_argument("--skip-server", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} cores, load average {load}, python {sys.version.split()[0]}")
    report: dict = {}
    if not args.skip_checker:
        report["checker"] = [
            compare_checkers("hand-checked table", load_pairs()),
            compare_checkers("GSM8K-style answers", gsm_pairs(args.gsm_pairs)),
        ]
        report["suite"] = suite_agreement()
        from envhub.envs.math import pool

        pool.shutdown()
    if not args.skip_server:
        levels = [int(x) for x in args.levels.split(",") if x]
        raw_levels = [int(x) for x in args.raw_levels.split(",") if x]
        report["server"] = bench_server(levels, raw_levels, args.duration)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
