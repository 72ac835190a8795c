"""Test doubles for the evaluator: environments with known answers and scripted policies.

* ``arith``: single-turn sums; correct answers end in ``ANSWER: <sum>``.
* ``guess``: multi-turn, a ``guess`` tool; the env answers ``higher``/``lower``/``correct``.
* ``flaky``: like ``arith``, but verifying tasks whose metadata says so raises InfraError.

``POLICY`` is the scripted endpoint's responder: it knows every task and answers
according to the rules written next to it, so every reward is known exactly.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import envhub
from envhub.core import Episode, Feedback, TaskEnv
from envhub.errors import InfraError, InvalidAction
from envhub.evaluate.scripted import ScriptedHTTPError, last_user_text
from envhub.types import Message, Task

SUMS = [(2, 3), (4, 4), (10, 7), (6, 9), (1, 1), (8, 5)]
"""Tasks arith/0..5. The policy answers 0-3 right (with the format), 4 wrong, 5 without format."""
SECRETS = [37, 80, 5]
"""Hidden numbers of guess/0..2; a binary search over 1..100 finds them."""


class ArithEnv(TaskEnv):
    components = frozenset({"correctness", "format"})

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        return [
            Task(
                task_id=f"arith/{i}",
                prompt=f"What is {a} + {b}?",
                answer=str(a + b),
                metadata={"flaky": i % 2 == 1},
            )
            for i, (a, b) in enumerate(SUMS)
        ]

    def score(self, task: Task, response: Message):
        text = response.content.strip()
        fmt = text.startswith("ANSWER:")
        got = text.removeprefix("ANSWER:").strip()
        return {"correctness": float(got == task.answer), "format": float(fmt)}, {"got": got}

    def reference_action(self, episode: Episode) -> Message:
        return Message(role="assistant", content=f"ANSWER: {episode.task.answer}")


class FlakyEnv(ArithEnv):
    def score(self, task: Task, response: Message):
        if task.metadata.get("flaky"):
            raise InfraError("sandbox is down")
        return super().score(task, response)


class GuessEnv(TaskEnv):
    components = frozenset({"correctness"})

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        return [
            Task(task_id=f"guess/{i}", prompt="Guess my number (1-100).", answer=str(n))
            for i, n in enumerate(SECRETS)
        ]

    def tools(self):
        return [
            {
                "type": "function",
                "function": {
                    "name": "guess",
                    "description": "Guess the number.",
                    "parameters": {
                        "type": "object",
                        "properties": {"n": {"type": "integer"}},
                        "required": ["n"],
                    },
                },
            }
        ]

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        if not message.tool_calls:
            raise InvalidAction("call the guess tool")
        call = message.tool_calls[0]
        n = int(json.loads(call.function.arguments)["n"])
        secret = int(episode.task.answer or 0)
        verdict = "correct" if n == secret else ("higher" if n < secret else "lower")
        reply = Message(role="tool", tool_call_id=call.id, name="guess", content=verdict)
        if verdict == "correct":
            return Feedback(messages=[reply], done=True, components={"correctness": 1.0})
        return Feedback(messages=[reply])

    def on_truncate(self, episode: Episode) -> dict[str, float]:
        return {"correctness": 0.0}


def binary_search_turns(secret: int) -> int:
    lo, hi, turns = 1, 100, 0
    while True:
        turns += 1
        mid = (lo + hi) // 2
        if mid == secret:
            return turns
        lo, hi = (mid + 1, hi) if mid < secret else (lo, mid - 1)


def policy(body: dict) -> dict:
    """The scripted model: arith answers by the rules of SUMS, guess by binary search."""
    if body.get("tools"):
        lo, hi = 1, 100
        msgs = body["messages"]
        for i, m in enumerate(msgs):
            if m["role"] == "tool":
                guessed = json.loads(msgs[i - 1]["tool_calls"][0]["function"]["arguments"])["n"]
                assert msgs[i - 1]["tool_calls"][0]["id"] == m["tool_call_id"]
                if m["content"] == "higher":
                    lo = guessed + 1
                elif m["content"] == "lower":
                    hi = guessed - 1
        turn = sum(1 for m in msgs if m["role"] == "assistant")
        return {
            "content": "",
            "tool_calls": [
                {
                    "id": f"call-{turn}",
                    "type": "function",
                    "function": {"name": "guess", "arguments": json.dumps({"n": (lo + hi) // 2})},
                }
            ],
        }
    text = last_user_text(body)
    if "explode" in text:
        raise ScriptedHTTPError(500, "model server fell over")
    for i, (a, b) in enumerate(SUMS):
        if f"What is {a} + {b}?" in text:
            if i == 4:
                return {"content": "ANSWER: 3"}
            if i == 5:
                return {"content": str(a + b)}
            return {"content": f"ANSWER: {a + b}"}
    return {"content": "no idea"}


REGISTRY_YAML = textwrap.dedent("""\
    environments:
      - name: arith
        family: test
        entry_point: eval_fakes:ArithEnv
        reward: {weights: {correctness: 1.0, format: 0.5}}
      - name: flaky
        family: test
        entry_point: eval_fakes:FlakyEnv
        reward: {weights: {correctness: 1.0, format: 0.5}}
      - name: guess
        family: test
        entry_point: eval_fakes:GuessEnv
        max_turns: 10
        reward: {weights: {correctness: 1.0}}
    """)


def register_fakes(home: Path) -> None:
    """Register the fake envs in the user catalog under ``home`` (ENVHUB_HOME)."""
    path = home / "eval-fakes.yaml"
    path.write_text(REGISTRY_YAML)
    envhub.reset_registry()
    envhub.register(path)
    envhub.reset_registry()


def run_evaluation(cfg, out, model, make_env) -> dict:
    """Run an ``Evaluation`` of ``model`` to the end (closing the model); its summary."""
    import asyncio

    from envhub.evaluate import Evaluation, RunStore

    ev = Evaluation(cfg, model, RunStore(out), make_env)

    async def main():
        try:
            return await ev.run()
        finally:
            await model.aclose()

    return asyncio.run(main())
