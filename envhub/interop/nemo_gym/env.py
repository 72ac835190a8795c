"""A NeMo Gym resources server as an envhub verifier: ``envhub.interop.nemo_gym:NemoGymEnv``.

The tasks are NeMo Gym's own data rows (JSONL: ``responses_create_params`` and the fields its
server's ``/verify`` reads, such as ``expected_answer``); the episode opens with the row's
``responses_create_params.input`` messages, and the model's answer is verified by posting the
row, with the answer as an OpenAI Responses object, to the running server's ``/verify``::

    - name: nemo-math
      entry_point: envhub.interop.nemo_gym:NemoGymEnv
      dataset: {kind: jsonl, path: data/{split}.jsonl}
      options: {base_url: http://127.0.0.1:8002}

NeMo Gym's ``reward`` is the ``reward`` component (the primary one). A server that cannot be
reached, answers 5xx or 429 (capacity) or gives no whole answer within ``timeout_s`` (slow,
or trickling its headers or body) is ``infra_error``; one that rejects the row (another 4xx),
answers no JSON object, a ``reward`` that is no finite number, or a body over the bound is
``env_error`` (the row or the server is wrong, not the model) (:mod:`envhub.interop.replies`).

The model's answer is bounded twice before it is sent: by the environment's
``max_message_chars`` (256,000 characters, :data:`envhub.core.MAX_MESSAGE_CHARS`), and, where
the entry states what its server (or a proxy before it) reads, by ``options.max_body_bytes``
(the whole request, as JSON). A request over it is not sent, and one the server refuses as
too large (413) is charged by :func:`envhub.interop.replies.too_large`: the model's
``invalid_action`` when its answer is most of the request, else the environment's
``env_error`` (the row alone is too large for the server).
"""

from __future__ import annotations

from typing import Any

from envhub.core import TaskEnv
from envhub.errors import ConfigError
from envhub.spec import EnvSpec
from envhub.types import Message, Task

from ..replies import finite_number, post_json

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
"""Responses input roles -> chat roles."""


def responses_object(text: str) -> dict[str, Any]:
    """An OpenAI Responses object (NeMo Gym's ``NeMoGymResponse``) holding one answer."""
    content = [{"type": "output_text", "text": text, "annotations": []}]
    message = {"id": "msg_envhub", "type": "message", "role": "assistant",
               "status": "completed", "content": content}  # fmt: skip
    return {"id": "resp_envhub", "object": "response", "created_at": 0.0, "model": "envhub",
            "output": [message], "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": []}  # fmt: skip


def input_messages(params: dict[str, Any]) -> list[Message]:
    """The chat messages of a Responses request (``instructions`` first, as a system message)."""
    messages = []
    if params.get("instructions"):
        messages.append(Message(role="system", content=params["instructions"]))
    given = params.get("input")
    if isinstance(given, str):
        return [*messages, Message(role="user", content=given)]
    for item in given or []:
        content = item.get("content", "")
        if not isinstance(content, str):
            content = "".join(p.get("text", "") for p in content)
        messages.append(Message(role=ROLES.get(item.get("role"), "user"), content=content))
    return messages


class NemoGymEnv(TaskEnv):
    """Single-turn: a NeMo Gym resources server's ``/verify`` scores each answer."""

    components = frozenset({"reward"})
    primary_component = "reward"

    def __init__(
        self,
        spec: EnvSpec,
        *,
        base_url: str,
        timeout_s: float = 60.0,
        max_body_bytes: int | None = None,
    ) -> None:
        """Verify through the NeMo Gym resources server at ``base_url``.

        ``max_body_bytes``: the most the server reads, where known; a longer request is not
        sent (see the module's docstring for whose it is).
        """
        super().__init__(spec)
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"{spec.name}: options.base_url must be http(s)://HOST:PORT")
        if max_body_bytes is not None and (type(max_body_bytes) is not int or max_body_bytes < 1):
            raise ConfigError(f"{spec.name}: options.max_body_bytes must be a positive integer")
        self.base_url, self.timeout_s = base_url.rstrip("/"), timeout_s
        self.max_body_bytes = max_body_bytes

    def row_to_task(self, row: dict[str, Any], index: int, split: str) -> Task:
        """A NeMo Gym row: its messages open the episode; the whole row goes to ``/verify``."""
        params = row.get("responses_create_params")
        if not isinstance(params, dict):
            raise ConfigError(
                f"{self.spec.name}: row {index} of split {split!r} has no "
                "responses_create_params object: is this NeMo Gym data?"
            )
        prompt = input_messages(params)[-1].content if input_messages(params) else ""
        task_id = str(row.get("task_id", f"{split}/{index}"))
        return Task(task_id=task_id, prompt=prompt, metadata={"nemo_gym_row": row})

    def opening_messages(self, task: Task) -> list[Message]:
        """The row's own input messages."""
        return input_messages(task.metadata["nemo_gym_row"]["responses_create_params"])

    def score(self, task: Task, response: Message) -> tuple[dict[str, float], dict[str, Any]]:
        """Post the row and the answer to ``/verify``; its reward is the component."""
        body = {**task.metadata["nemo_gym_row"], "response": responses_object(response.content)}
        url = f"{self.base_url}/verify"
        reply = post_json(url, body, self.timeout_s, response.content, self.max_body_bytes)
        return {"reward": finite_number(url, reply, "reward")}, {}
