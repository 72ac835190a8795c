"""The benchmarks' toy environment, envhub's side: "What is A + B?", three tries.

A right answer ends the episode with reward 1; a wrong one is told to try again, and the
third wrong one ends it with reward 0. ``sum_openenv.py`` beside this file is the same game
written for OpenEnv's server, so both servers are measured on the same work. It declares
itself cheap (:attr:`~envhub.core.Env.inline_steps`): a step is a string compare.
:class:`SlowSumToy` awaits a wait before each answer (``bench/slow_steps.py``).
"""

from __future__ import annotations

import asyncio
import random

from envhub.core import Episode, Feedback, TaskEnv
from envhub.spec import EnvSpec
from envhub.types import Message, Task

TRIES = 3


class SumToy(TaskEnv):
    """Sums of two numbers below 100; up to three tries."""

    components = frozenset({"correctness"})
    inline_steps = True

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        rng = random.Random(f"{seed}/{split}")
        pairs = [(rng.randrange(100), rng.randrange(100)) for _ in range(size or 1000)]
        return [
            Task(task_id=f"{split}/{i}", prompt=f"What is {a} + {b}?", answer=str(a + b))
            for i, (a, b) in enumerate(pairs)
        ]

    def init_state(self, episode: Episode) -> int:
        return 0  # wrong answers so far

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        if message.content.strip() == episode.task.answer:
            return Feedback(done=True, components={"correctness": 1.0})
        episode.state += 1
        if episode.state >= TRIES:
            return Feedback(done=True, components={"correctness": 0.0})
        return Feedback(messages=[Message(role="user", content="Wrong, try again.")])

    def reference_action(self, episode: Episode) -> Message:
        return Message(role="assistant", content=episode.task.answer or "")


def spec(cls: str = "SumToy", **fields: object) -> EnvSpec:
    """The catalog entry of ``cls`` (``envhub serve toy-sum --spec-json``), ``fields`` set."""
    return EnvSpec(
        name="toy-sum",
        family="bench",
        entry_point=f"{__file__}:{cls}",
        max_turns=TRIES,
        reward={"weights": {"correctness": 1.0}},
        **fields,
    )


class SlowSumToy(SumToy):
    """The toy whose every step first waits ``wait_s`` seconds on I/O, awaited (no thread)."""

    inline_steps = False

    def __init__(self, spec: EnvSpec, wait_s: float = 10.0) -> None:
        super().__init__(spec, wait_s=wait_s)
        self.wait_s = wait_s

    async def aenv_response(self, episode: Episode, message: Message) -> Feedback:
        await asyncio.sleep(self.wait_s)
        return self.env_response(episode, message)
