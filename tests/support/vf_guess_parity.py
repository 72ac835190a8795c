"""verifiers' own rewards for scripted games: ``python vf_guess_parity.py`` reads JSON lines
``{"task_id", "replies"}`` on stdin and prints ``{"reward", "turns"}`` per line: the episode
verifiers itself plays of the vf_guess environment (n=3), its model's turns answered in order
by ``replies`` from envhub's scripted loopback endpoint
(:class:`envhub.evaluate.scripted.ScriptedEndpoint`), with ``ok`` and the errors verifiers
recorded on the episode and its traces (so a failure on verifiers' side shows its own cause). Runs in the venv that has verifiers (and
``uv``, which launches verifiers' chat program).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from verifiers.v1.clients import ModelContext
from verifiers.v1.configs.client import EvalClientConfig
from verifiers.v1.runtimes import SubprocessConfig
from vf_guess import GuessEnv, GuessEnvConfig

from envhub.evaluate.scripted import ScriptedEndpoint


class Script:
    """The replies of the game being played, answered in order by a scripted endpoint."""

    def __init__(self) -> None:
        self.replies: list[str] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        return {"content": self.replies.pop(0)}


def guess_env() -> GuessEnv:
    os.environ["PARITY_KEY"] = "unused"
    config = GuessEnvConfig(taskset={"id": "vf_guess", "n": 3},
                            player={"runtime": SubprocessConfig()})  # fmt: skip
    return GuessEnv(config)


def model_context(endpoint: ScriptedEndpoint) -> ModelContext:
    """The run's model: the scripted endpoint."""
    return ModelContext(model="m", client=EvalClientConfig(base_url=endpoint.base_url,
                                                           api_key_var="PARITY_KEY"))  # fmt: skip


async def play(rows: list[dict]) -> None:
    env, script = guess_env(), Script()
    tasks = {t.data.id: t for t in env.taskset}
    with ScriptedEndpoint(script) as endpoint:
        ctx = model_context(endpoint)
        async with env.serving():
            for row in rows:
                script.replies = list(row["replies"])
                episode = await env.run_episode(tasks[row["task_id"]], ctx)
                trace = episode.traces[-1]
                errors = [*(e for t in episode.traces for e in t.errors), *episode.errors]
                print(json.dumps({"reward": trace.reward, "turns": trace.num_turns,
                                  "ok": episode.ok,
                                  "errors": [f"{e.type}: {e.message}" for e in errors]}))  # fmt: skip


if __name__ == "__main__":
    asyncio.run(play([json.loads(line) for line in sys.stdin]))
