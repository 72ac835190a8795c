"""A small verifiers (v1) taskset for envhub's interop tests: sums, two weighted rewards.

Imported only in a Python that has verifiers (the venv envhub makes for it).
"""

from __future__ import annotations

import verifiers.v1 as vf


class ArithData(vf.TaskData):
    answer: int


class ArithTask(vf.Task[ArithData]):
    @vf.reward(weight=1.0)
    async def correct(self, trace: vf.Trace) -> float:
        return float(trace.last_reply == str(self.data.answer))

    @vf.reward(weight=0.25)
    async def brief(self, trace: vf.Trace) -> float:
        return float(len(trace.last_reply) <= 3)


class ArithConfig(vf.TasksetConfig):
    n: int = 4


class ArithTaskset(vf.Taskset[ArithTask, ArithConfig]):
    def load(self):
        for i in range(self.config.n):
            data = ArithData(id=f"sum-{i}", prompt=f"What is {i} + {i + 10}?", answer=2 * i + 10,
                             system_prompt="Answer with the number only.")  # fmt: skip
            yield ArithTask(data, self.config.task)


__all__ = ["ArithTaskset"]
