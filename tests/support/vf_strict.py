"""A verifiers (v1) taskset whose reward function raises on a reply that is no integer.

Its ``correct`` reads the reply with ``int()``, as many a taskset's reward does: ``abc`` makes
verifiers raise ``TaskError``. Imported only in a Python that has verifiers.
"""

from __future__ import annotations

import verifiers.v1 as vf


class StrictData(vf.TaskData):
    answer: int


class StrictTask(vf.Task[StrictData]):
    @vf.reward(weight=1.0)
    async def correct(self, trace: vf.Trace) -> float:
        return float(int(trace.last_reply) == self.data.answer)


class StrictTaskset(vf.Taskset[StrictTask, vf.TasksetConfig]):
    def load(self):
        for i in range(2):
            yield StrictTask(StrictData(id=f"s-{i}", prompt=f"{i} + 1?", answer=i + 1),
                             self.config.task)  # fmt: skip


__all__ = ["StrictTaskset"]
