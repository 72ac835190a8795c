"""Single-turn episodes per second of `envhub eval` against a scripted OpenAI-compatible endpoint.

The endpoint (a separate process on loopback, so it does not share our GIL) answers at once,
so the figure measures envhub's own loop: reset, one chat completion over HTTP, step
(verification), the record appended to episodes.jsonl. The same work then goes through
PrimeIntellect's ``vf-eval`` (the ``verifiers`` package) where it is installed, and the
ratio is printed.

    python bench/eval_throughput.py                      # 2000 episodes, concurrency 32
    python bench/eval_throughput.py --vf-python /tmp/vfenv/bin/python

``--vf-python`` names a Python that has ``verifiers`` (install it in a venv: it pins its own
openai/datasets versions). Without it the script looks for ``vf-eval`` on PATH.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envhub.core import TaskEnv  # noqa: E402
from envhub.spec import EnvSpec  # noqa: E402
from envhub.types import Message, Task  # noqa: E402

PROMPT = re.compile(r"What is (\d+) \+ (\d+)\?")


def sum_responder(body: dict) -> dict:
    """The scripted model: answers every sum right."""
    text = body["messages"][-1]["content"]
    m = PROMPT.search(text)
    return {"content": str(int(m.group(1)) + int(m.group(2))) if m else "?"}


def serve(port_file: str) -> None:
    """Run the scripted endpoint in this process until killed; write its port to a file."""
    from envhub.evaluate.scripted import ScriptedEndpoint

    ep = ScriptedEndpoint(sum_responder, model="scripted").start()
    Path(port_file).write_text(str(ep.port))
    while True:
        time.sleep(3600)


class SumEnv(TaskEnv):
    """Single-turn sums with an exact-match verifier (cheap: the loop is what is measured)."""

    components = frozenset({"correctness"})

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        return [
            Task(
                task_id=f"sum/{i}",
                prompt=f"What is {i} + {i * 7 % 13}?",
                answer=str(i + i * 7 % 13),
            )
            for i in range(size or 2000)
        ]

    def score(self, task: Task, response: Message) -> tuple[dict[str, float], dict]:
        return {"correctness": float(response.content.strip() == task.answer)}, {}


def start_endpoint() -> tuple[subprocess.Popen, str]:
    port_file = tempfile.mktemp(prefix="envhub-bench-port-")
    proc = subprocess.Popen([sys.executable, __file__, "--serve", port_file])
    deadline = time.monotonic() + 60
    while not os.path.exists(port_file) or not Path(port_file).read_text():
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise RuntimeError("the scripted endpoint did not start")
        time.sleep(0.05)
    time.sleep(0.05)
    return proc, f"http://127.0.0.1:{Path(port_file).read_text()}/v1"


def run_envhub(base_url: str, episodes: int, concurrency: int) -> float:
    """Episodes per second of envhub's evaluation loop."""
    from envhub.evaluate import EvalConfig, Evaluation, OpenAIEndpoint, RunStore

    spec = EnvSpec(
        name="bench-sum", dataset={"size": episodes}, reward={"weights": {"correctness": 1.0}}
    )
    cfg = EvalConfig(envs=["bench-sum"], base_url=base_url, concurrency=concurrency)

    async def once(out: str, limit: int) -> tuple[dict, float]:
        model = OpenAIEndpoint(base_url, "scripted", concurrency=concurrency)
        ev = Evaluation(
            cfg.model_copy(update={"limit": limit}), model, RunStore(out), lambda name: SumEnv(spec)
        )
        t0 = time.perf_counter()
        try:
            summary = await ev.run()
        finally:
            await model.aclose()
        return summary, time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(once(f"{tmp}/warm", 64))
        summary, wall = asyncio.run(once(f"{tmp}/run", episodes))
    s = summary["environments"]["bench-sum"]
    assert s["episodes"] == episodes and s["pass@1"] == 1.0, s
    return episodes / wall


VF_TASKSET = textwrap.dedent("""
    import verifiers.v1 as vf

    class SumData(vf.TaskData):
        answer: str

    class SumTask(vf.Task[SumData]):
        @vf.reward(weight=1.0)
        async def correct(self, trace: vf.Trace) -> float:
            return float((trace.last_reply or "").strip() == self.data.answer)

    class SumConfig(vf.TasksetConfig):
        n: int = 64

    class SumTaskset(vf.Taskset[SumTask, SumConfig]):
        def load(self) -> list[SumTask]:
            pairs = [(i, i * 7 % 13) for i in range(self.config.n)]
            rows = [(f"What is {i} + {j}?", str(i + j)) for i, j in pairs]
            return [SumTask(SumData(prompt=q, answer=a), self.config.task) for q, a in rows]

    __all__ = ["SumTaskset"]
""")


def _vf_command(python: str | None) -> list[str] | None:
    if python:
        exe = Path(python).parent / "vf-eval"
        return [str(exe)] if exe.exists() else [python, "-m", "verifiers.v1.cli.eval"]
    found = shutil.which("vf-eval")
    return [found] if found else None


def run_vf_eval(python: str | None, base_url: str, episodes: int, concurrency: int) -> str:
    """The same work through vf-eval (verifiers 0.4, v1 API: null harness, subprocess runtime).

    Returns its rollouts/s, or why it could not run. Its null harness runs a uv script (the
    chat program) per rollout, so ``uv`` must be on PATH and able to install that script's
    dependencies once.
    """
    vf = _vf_command(python)
    if vf is None:
        return "not run: verifiers is not installed (give --vf-python)"
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "envhub_bench_sum.py").write_text(VF_TASKSET)
        env = {
            **os.environ,
            "PYTHONPATH": tmp,
            "OPENAI_API_KEY": "x",
            "HF_HUB_OFFLINE": "1",
            "PATH": f"{Path(vf[0]).parent}:{os.environ.get('PATH', '')}",
        }
        cmd = vf + [
            "envhub_bench_sum",
            "-m",
            "scripted",
            "--client.base-url",
            base_url,
            "--client.api-key-var",
            "OPENAI_API_KEY",
            "-r",
            "1",
            "-c",
            str(concurrency),
            "--no-push",
            "--env.taskset.n",
            str(episodes),
            "--env.agent.harness.id",
            "null",
            "--env.agent.runtime.type",
            "subprocess",
            "-o",
            f"{tmp}/out",
        ]
        t0 = time.perf_counter()
        try:
            res = subprocess.run(
                cmd, env=env, cwd=tmp, capture_output=True, text=True, timeout=1200
            )
        except subprocess.TimeoutExpired:
            return f"not run: vf-eval ran past 1200 s for {episodes} rollouts"
        wall = time.perf_counter() - t0
        traces = list(Path(tmp, "out").rglob("traces.jsonl"))
        rewards = []
        for path in traces:
            for line in path.read_text().splitlines():
                for trace in json.loads(line).get("traces", []):
                    score = (trace.get("rewards") or {}).get("correct", {}).get("score")
                    if trace.get("ok") and score is not None:
                        rewards.append(score)
        if res.returncode != 0 or len(rewards) < episodes:
            tail = (res.stderr or res.stdout).strip().splitlines()[-3:]
            return f"failed: {len(rewards)}/{episodes} rollouts scored: " + " | ".join(tail)
        return f"{episodes / wall:.2f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--vf-python", default=None, help="a Python with `verifiers` installed")
    p.add_argument(
        "--vf-episodes",
        type=int,
        default=64,
        help="rollouts for vf-eval (it runs a process per rollout: keep it small)",
    )
    p.add_argument("--serve", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.serve:
        return serve(args.serve)
    proc, base_url = start_endpoint()
    try:
        ours = run_envhub(base_url, args.episodes, args.concurrency)
        theirs = run_vf_eval(args.vf_python, base_url, args.vf_episodes, args.concurrency)
    finally:
        proc.kill()
        proc.wait()
    result = {
        "envhub_episodes_per_s": round(ours, 1),
        "vf_eval_episodes_per_s": theirs,
        "concurrency": args.concurrency,
        "episodes": args.episodes,
        "cpus": os.cpu_count(),
    }
    try:
        result["ratio"] = round(ours / float(theirs), 1)
    except ValueError:
        result["ratio"] = None
    print(json.dumps(result))
    print(
        f"envhub eval: {ours:.1f} episodes/s at concurrency {args.concurrency} "
        f"(goal >= 100); vf-eval: {theirs}"
        + (f"; ratio {result['ratio']}x" if result["ratio"] else "")
    )


if __name__ == "__main__":
    main()
