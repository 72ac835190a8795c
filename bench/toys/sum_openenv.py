"""The benchmarks' toy environment on OpenEnv's server: ``python sum_openenv.py PORT``.

The same game as ``sum_envhub.py`` ("What is A + B?", three tries), written as OpenEnv's
docs write an environment (``Environment``, ``Action``, ``Observation``, ``create_app``).
Runs in the OpenEnv venv (openenv-core 0.3.0), never imports envhub. ``TOY_SLEEP_S`` (the
slow-steps bench) makes every step wait that long: with ``TOY_ASYNC=1`` in ``step_async``
(``asyncio.sleep``), otherwise in ``step`` (``time.sleep``).
"""

import asyncio
import os
import random
import sys
import time
import uuid

import uvicorn
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

TRIES = 3
SLEEP_S = float(os.environ.get("TOY_SLEEP_S", "0"))
MAX_ENVS = int(os.environ.get("TOY_MAX_ENVS", "4096"))


class SumAction(Action):
    message: str


class SumObservation(Observation):
    text: str = ""


class SumToy(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self):
        super().__init__()
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)
        self._answer = ""

    def reset(self, seed=None, episode_id=None, **kwargs):
        rng = random.Random(seed)
        a, b = rng.randrange(100), rng.randrange(100)
        self._answer = str(a + b)
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return SumObservation(text=f"What is {a} + {b}?", done=False, reward=0.0)

    def step(self, action, timeout_s=None, **kwargs):
        if SLEEP_S:
            time.sleep(SLEEP_S)
        return self._answer_to(action)

    async def step_async(self, action, timeout_s=None, **kwargs):
        if SLEEP_S:
            await asyncio.sleep(SLEEP_S)
        return self._answer_to(action)

    def _answer_to(self, action):
        self._state.step_count += 1
        if action.message.strip() == self._answer:
            return SumObservation(text="Correct.", done=True, reward=1.0)
        done = self._state.step_count >= TRIES
        return SumObservation(text="" if done else "Wrong, try again.", done=done, reward=0.0)

    @property
    def state(self):
        return self._state


if __name__ == "__main__":
    if os.environ.get("TOY_ASYNC") != "1":
        del SumToy.step_async  # OpenEnv then runs the sync step in its thread pool
    app = create_app(
        SumToy, SumAction, SumObservation, env_name="toy-sum", max_concurrent_envs=MAX_ENVS
    )
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
