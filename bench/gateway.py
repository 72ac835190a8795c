"""The recording gateway's cost: added latency per call, and agent-episode throughput.

Usage::

    python bench/gateway.py [--model tiny] [--calls 40] [--episodes 64] [--max-tokens 8]

Same run, same engine (transformers, the tiny random Llama by default):

* **latency**: ``--calls`` sequential calls of one prompt, straight into the engine
  (``engine.generate``) and through the gateway (the ``openai`` SDK over loopback HTTP,
  one episode, the recording included), interleaved one by one so a noisy neighbour hits both
  alike; the median of each and their difference, the gateway's added latency per call;
* **throughput**: ``--episodes`` agent episodes (a stdlib agent program, one call each: start a
  process, read the task, call, exit) at concurrency 1, 8 and 64, in episodes per second.

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
AGENT = ROOT / "tests" / "gateway" / "agents" / "stdlib_agent.py"


def latency(engine, server, gateway, calls: int, max_tokens: int) -> dict:
    import openai

    from envhub.engines.chat import ChatFormatter
    from envhub.engines.types import SamplingParams

    messages = [{"role": "user", "content": "Count from one to ten."}]
    prompt = ChatFormatter(engine.tokenizer).prompt_ids(messages)
    params = SamplingParams(max_tokens=max_tokens, temperature=1.0)
    ep = gateway.open(budget=None)
    client = openai.OpenAI(base_url=server.base_url, api_key=ep.key, max_retries=0)
    direct, via = [], []
    for i in range(calls + 2):  # two warm-up rounds
        t0 = time.perf_counter()
        engine.generate([prompt], params, [i])
        t1 = time.perf_counter()
        client.chat.completions.create(model="m", messages=messages, max_tokens=max_tokens, seed=i)
        t2 = time.perf_counter()
        if i >= 2:
            direct.append(t1 - t0)
            via.append(t2 - t1)
    gateway.close(ep)
    d, v = statistics.median(direct), statistics.median(via)
    return {
        "calls": calls,
        "max_tokens": max_tokens,
        "engine_ms": round(d * 1000, 2),
        "gateway_ms": round(v * 1000, 2),
        "added_ms": round((v - d) * 1000, 2),
    }


def throughput(gateway, server, episodes: int, concurrency: int) -> dict:
    from envhub.gateway.agent import AgentRunner, agent_status
    from envhub.gateway.config import AgentConfig

    config = AgentConfig(
        command=[sys.executable, str(AGENT), "once"], concurrency=concurrency, timeout_s=300
    )
    runner = AgentRunner(config, gateway, server.base_url, "m")
    task = {"env": "bench", "task_id": "t", "seed": 0, "tools": None}
    task["messages"] = [{"role": "user", "content": "Say alpha"}]

    async def go():
        sem = asyncio.Semaphore(concurrency)

        async def one(i):
            async with sem:
                return await runner.run(task, f"e{i}")

        return await asyncio.gather(*(one(i) for i in range(episodes)))

    t0 = time.perf_counter()
    runs = asyncio.run(go())
    wall = time.perf_counter() - t0
    ok = sum(agent_status(r) == (None, None) for r in runs)
    return {
        "concurrency": concurrency,
        "episodes": episodes,
        "ok": ok,
        "wall_s": round(wall, 2),
        "episodes_per_s": round(episodes / wall, 2),
    }


def main() -> None:
    """Run both measurements and print them."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=8)
    args = parser.parse_args()

    import torch

    from envhub.engines.transformers_engine import TransformersEngine
    from envhub.engines.weights import tiny_llama_path
    from envhub.gateway.backends import EngineBackend
    from envhub.gateway.server import GatewayServer
    from envhub.gateway.service import Gateway

    torch.set_num_threads(1)
    path = tiny_llama_path() if args.model == "tiny" else args.model
    engine = TransformersEngine.from_pretrained(path)
    gateway = Gateway(EngineBackend(engine, "m"), default_max_tokens=args.max_tokens)
    with GatewayServer(gateway) as server:
        out = {"latency": latency(engine, server, gateway, args.calls, args.max_tokens)}
        out["throughput"] = [throughput(gateway, server, args.episodes, c) for c in (1, 8, 64)]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
