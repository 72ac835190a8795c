"""Small environments for the trainer tests (importable by Ray workers through PYTHONPATH)."""

from __future__ import annotations

import re
import time

from envhub.core import Episode, Feedback, TaskEnv
from envhub.errors import InfraError
from envhub.spec import EnvSpec, RewardSpec
from envhub.types import Message, Task


class RetrySumEnv(TaskEnv):
    """Two-turn 1-digit sums: a wrong first answer gets "try again" and a second chance.

    Options: ``fail_seeds`` make those episodes raise an infrastructure error at the first
    step; ``hang_seeds`` make ``step`` sleep ``hang_s`` seconds.
    """

    components = frozenset({"correctness"})

    def __init__(self, spec, fail_seeds=(), hang_seeds=(), hang_s=0.0):
        super().__init__(spec, fail_seeds=fail_seeds, hang_seeds=hang_seeds, hang_s=hang_s)
        self.fail_seeds, self.hang_seeds, self.hang_s = set(fail_seeds), set(hang_seeds), hang_s

    def builtin_tasks(self, split, size, seed):
        return [
            Task(task_id=f"{a}+{b}", prompt=f"What is {a}+{b}?", answer=str(a + b))
            for a in range(10)
            for b in range(10)
        ]

    def init_state(self, episode):
        return None

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        if episode.seed in self.fail_seeds:
            raise InfraError("sandbox died")
        if episode.seed in self.hang_seeds:
            time.sleep(self.hang_s)
        nums = re.findall(r"-?\d+", message.content)
        if nums and nums[-1] == episode.task.answer:
            return Feedback(done=True, components={"correctness": 1.0})
        if episode.turn < self.spec.max_turns:
            return Feedback(messages=[Message(role="user", content="Wrong, try again.")])
        return Feedback(done=True, components={"correctness": 0.0})

    def reference_action(self, episode):
        return Message(role="assistant", content=episode.task.answer)


def retry_spec(**kw) -> EnvSpec:
    return EnvSpec(
        name="retry-sum",
        entry_point="fake_envs:RetrySumEnv",
        max_turns=2,
        reward=RewardSpec(weights={"correctness": 1.0}),
        **kw,
    )


def make_retry(**options) -> RetrySumEnv:
    spec = retry_spec(options=options)
    return RetrySumEnv(spec, **options)
