"""verifiers' own rewards for scripted games: ``python vf_guess_parity.py`` reads JSON lines
``{"task_id", "replies"}`` on stdin and prints ``{"reward", "turns"}`` per line: the episode
verifiers itself plays of the vf_guess environment (n=3), its model's turns answered in order
by ``replies`` from a loopback OpenAI-style endpoint. Runs in the venv that has verifiers (and
``uv``, which launches verifiers' chat program).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from aiohttp import web
from verifiers.v1.clients import ModelContext
from verifiers.v1.configs.client import EvalClientConfig
from verifiers.v1.runtimes import SubprocessConfig
from vf_guess import GuessEnv, GuessEnvConfig


async def scripted_endpoint(replies: list[str]) -> web.AppRunner:
    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        text = replies.pop(0)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        base = {"id": "p", "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
        for choice in ({"index": 0, "delta": {"role": "assistant", "content": text}},
                       {"index": 0, "delta": {}, "finish_reason": "stop"}):  # fmt: skip
            await response.write(f"data: {json.dumps({**base, 'choices': [choice]})}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner


async def play(rows: list[dict]) -> None:
    os.environ["PARITY_KEY"] = "unused"
    config = GuessEnvConfig(taskset={"id": "vf_guess", "n": 3},
                            player={"runtime": SubprocessConfig()})  # fmt: skip
    env = GuessEnv(config)
    tasks = {t.data.id: t for t in env.taskset}
    async with env.serving():
        for row in rows:
            runner = await scripted_endpoint(list(row["replies"]))
            port = runner.addresses[0][1]
            client = EvalClientConfig(
                base_url=f"http://127.0.0.1:{port}/v1", api_key_var="PARITY_KEY"
            )
            episode = await env.run_episode(
                tasks[row["task_id"]], ModelContext(model="m", client=client)
            )
            await runner.cleanup()
            trace = episode.traces[-1]
            print(json.dumps({"reward": trace.reward, "turns": trace.num_turns, "ok": episode.ok}))


if __name__ == "__main__":
    asyncio.run(play([json.loads(line) for line in sys.stdin]))
