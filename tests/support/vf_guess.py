"""A small multi-turn verifiers (v1) environment for envhub's interop tests: guess a number
from 1 to 10 with higher/lower hints, in at most 4 guesses. Two weighted rewards: ``found`` and
``quick`` (fewer guesses score more). Three replies stand in for faults, for the bridge's fault
tests: ``crash`` makes the environment's own code raise (an environment bug that a model's
text can trigger), ``provider-down`` raises verifiers' ``ProviderError`` (its machinery
failing), and ``nan`` ends the game with a ``quick`` reward of NaN (a broken reward).

Imported only in a Python that has verifiers (the venv envhub makes for it).
"""

from __future__ import annotations

import verifiers.v1 as vf

GUESSES = 4


class GuessData(vf.TaskData):
    secret: int


class GuessTask(vf.Task[GuessData]):
    @vf.reward(weight=1.0)
    async def found(self, trace: vf.Trace) -> float:
        return float(trace.last_reply.strip() == str(self.data.secret))

    @vf.reward(weight=0.5)
    async def quick(self, trace: vf.Trace) -> float:
        if trace.last_reply.strip() == "nan":
            return float("nan")
        return (GUESSES - trace.num_turns + 1) / GUESSES


class GuessConfig(vf.TasksetConfig):
    n: int = 3


class GuessTaskset(vf.Taskset[GuessTask, GuessConfig]):
    def load(self):
        for i in range(self.config.n):
            data = GuessData(id=f"g-{i}", prompt="Guess my number (1-10). Reply with the number.",
                             system_prompt="You play a guessing game.", secret=3 + i)  # fmt: skip
            yield GuessTask(data, self.config.task)


class GuessEnvConfig(vf.EnvConfig):
    player: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"})


class GuessEnv(vf.Env[GuessEnvConfig]):
    async def run(self, task, agents):
        async with agents.player.interaction(task) as game:
            turn = await game.turn()
            for _ in range(GUESSES - 1):
                reply = turn.last_reply.strip()
                if turn.terminated or reply == str(task.data.secret):
                    return
                if reply == "crash":
                    raise RuntimeError("the game's own bug")
                if reply == "provider-down":
                    raise vf.ProviderError("the model provider is down (a test's fault)")
                if reply == "nan":
                    return
                low = reply.isdigit() and int(reply) < task.data.secret
                turn = await game.turn("Higher." if low else "Lower.")


__all__ = ["GuessTaskset", "GuessEnv"]
