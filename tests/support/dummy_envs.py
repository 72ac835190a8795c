"""Small, configurable test doubles of environments (imported by entry point in tests)."""

from __future__ import annotations

import asyncio
import time

from envhub.core import Episode, Feedback, TaskEnv
from envhub.errors import InfraError, InvalidAction, VerifierTimeout
from envhub.types import Message, Task


class EchoEnv(TaskEnv):
    """Single-turn: the right answer is the task's word, echoed back."""

    components = frozenset({"correctness", "format"})

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
        n = size or len(words)
        return [
            Task(task_id=f"{split}/{i}", prompt=f"Say {words[i % 8]}", answer=words[i % 8])
            for i in range(n)
        ]

    def score(self, task: Task, response: Message):
        text = response.content.strip()
        if text == "boom":
            raise RuntimeError("the verifier crashed")
        if text == "infra":
            raise InfraError("sandbox is down")
        if text == "invalid":
            raise InvalidAction("that is not an answer")
        if text.startswith("hang "):  # a program that runs until its deadline: the model's
            time.sleep(float(text.split()[1]))
            raise VerifierTimeout("the program ran past its deadline")
        if text.startswith("slow"):
            time.sleep(float(text.split()[1]) if " " in text else 0.2)
        return (
            {"correctness": float(text == task.answer), "format": float(text.islower())},
            {"seen": text},
        )

    def reference_action(self, episode: Episode) -> Message:
        return Message(role="assistant", content=episode.task.answer or "")


class CountEnv(TaskEnv):
    """Multi-turn: say the numbers 1..N, one per turn; a wrong number ends the episode."""

    components = frozenset({"correctness"})

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        return [
            Task(task_id=f"count-{n}", prompt=f"Count to {n}", metadata={"n": n})
            for n in range(1, (size or 4) + 1)
        ]

    def init_state(self, episode: Episode) -> list[int]:
        return []

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        said = episode.state
        expected = len(said) + 1
        if message.content.strip() == "crash":
            raise RuntimeError("env bug")
        if message.content.strip() != str(expected):
            return Feedback(
                done=True,
                components={"correctness": 0.0},
                messages=[Message(role="user", content=f"wrong, expected {expected}")],
            )
        said.append(expected)
        if expected == episode.task.metadata["n"]:
            return Feedback(done=True, components={"correctness": 1.0})
        return Feedback(messages=[Message(role="user", content="go on")])

    def reference_action(self, episode: Episode) -> Message:
        return Message(role="assistant", content=str(len(episode.state) + 1))


class _Waits(TaskEnv):
    """Single-turn: every step waits ``wait_s`` (I/O: a remote API), then checks ``yes``."""

    components = frozenset({"correctness"})
    wait_s = 0.5

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        return [Task(task_id=f"{split}/{i}", prompt="Say yes", answer="yes") for i in range(8)]

    def judged(self, episode: Episode, message: Message) -> Feedback:
        if message.content == "own-timeout":  # the API's own wait ran out: not the model's
            raise TimeoutError("the API did not answer")
        right = message.content.strip() == episode.task.answer
        return Feedback(done=True, components={"correctness": float(right)})


class AwaitingEnv(_Waits):
    """Its steps await their wait (``aenv_response``): served on the event loop."""

    async def aenv_response(self, episode: Episode, message: Message) -> Feedback:
        await asyncio.sleep(self.wait_s)
        return self.judged(episode, message)


class BlockingEnv(_Waits):
    """Its steps block for their wait (``time.sleep``): served on the worker threads."""

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        time.sleep(self.wait_s)
        return self.judged(episode, message)


class InlineEnv(CountEnv):
    """:class:`CountEnv` declared cheap (``inline_steps``); ``sleep S`` makes a step slow."""

    inline_steps = True

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        if message.content.startswith("sleep "):
            time.sleep(float(message.content.split()[1]))
            return Feedback(messages=[Message(role="user", content="slept")])
        return super().env_response(episode, message)
