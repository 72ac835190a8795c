"""A verifiers (v1) taskset as an envhub environment, in a Python that has verifiers.

:func:`envhub.interop.verifiers.VerifiersEnv` builds this where ``verifiers`` imports, which
is the virtual environment envhub makes for it (verifiers 0.4 pins ``mcp==2.0.0``, which
envhub's own MCP extra cannot share).

- The taskset (``environment``: an installed module exporting one ``vf.Taskset`` subclass in
  ``__all__``, as ``vf eval`` loads it; ``args``: its config's fields) gives the tasks: a
  task's id is its ``data.id``, else its index in the taskset.
- An episode opens with the task's system prompt and prompt. The model's answer is scored as
  verifiers scores a rollout: the conversation becomes a trace and the task's ``@vf.reward``
  functions run on it (``Task.score``); each is a component named after it, with its weight.
  A reward function that raises on the reply (verifiers' ``TaskError``) is the model's
  ``invalid_action``, logged, as in a multi-turn episode; verifiers' machinery failing
  (:data:`MACHINERY`) is ``infra_error``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.trace import AgentInfo, TraceTask
from verifiers.v1.types import content_text
from verifiers.v1.utils.generic import concrete_type
from verifiers.v1.utils.loaders import taskset_class

from envhub.core import TaskEnv
from envhub.errors import ConfigError, InfraError, InvalidAction
from envhub.spec import EnvSpec
from envhub.types import Message, Task

log = logging.getLogger(__name__)

MACHINERY = frozenset(
    {
        "ProviderError",
        "HarnessError",
        "ToolsetError",
        "SandboxError",
        "InterceptionError",
        "TunnelError",
    }  # fmt: skip
)
"""verifiers' error types of its machinery (the chat program, its endpoint, a sandbox): an
``infra_error``. Its ``EnvError`` and ``TaskError`` (the environment's or the task's own code
raising) and plain exceptions are the model's, as a reply the environment could not take."""


def load_taskset(environment: str, args: dict[str, Any]) -> vf.Taskset:
    """The taskset ``environment`` names, configured with ``args``."""
    cls = taskset_class(environment)
    config_cls = concrete_type(cls, vf.TasksetConfig) or vf.TasksetConfig
    return cls(config_cls(id=environment, **args))


def rollout_trace(task: vf.Task, messages: list[Message]) -> vf.Trace:
    """The trace of a rollout that said ``messages`` (the prompt's, then the model's)."""
    nodes = []
    for i, m in enumerate(messages):
        kind = {"system": vf.SystemMessage, "user": vf.UserMessage}.get(m.role, vf.AssistantMessage)
        node = vf.MessageNode(
            parent=i - 1 if i else None,
            message=kind(content=m.content),
            sampled=m.role == "assistant",
        )
        nodes.append(node)
    info = TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash)
    return vf.Trace(task=info, agent=AgentInfo(config=vf.AgentConfig()), nodes=nodes)


def weights_of(task: vf.Task) -> dict[str, float]:
    """The task's reward functions and their weights (the rubric)."""
    return {fn.__name__: float(getattr(fn, "_vf_weight", 1.0)) for fn in task.hooks("reward")}


class VerifiersTaskEnv(TaskEnv):
    """Single-turn episodes on a verifiers taskset, scored by its reward functions."""

    def __init__(self, spec: EnvSpec, taskset: vf.Taskset, environment: str):
        """Adopt the taskset; its reward functions and weights become the rubric."""
        if not taskset.bounded:
            raise ConfigError(f"{spec.name}: taskset {environment!r} is infinite; bound it")
        self.vf_tasks = {_task_id(t): t for t in taskset}
        if not self.vf_tasks:
            raise ConfigError(f"{spec.name}: taskset {environment!r} has no tasks")
        weights = weights_of(next(iter(self.vf_tasks.values())))
        self.components = frozenset(weights)  # type: ignore[misc]
        self.primary_component = max(weights, key=weights.__getitem__)  # the heaviest
        reward = spec.reward.model_copy(update={"weights": spec.reward.weights or weights})
        super().__init__(spec.model_copy(update={"reward": reward}))

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        """The taskset's tasks (one split: the taskset is what its ``args`` load)."""
        tasks = [
            Task(task_id=tid, prompt=t.data.prompt_text, metadata={"vf_idx": t.data.idx})
            for tid, t in self.vf_tasks.items()
        ]
        return tasks[:size] if size else tasks

    def opening_messages(self, task: Task) -> list[Message]:
        """The verifiers task's system prompt and prompt (its messages, when a list)."""
        data = self.vf_tasks[task.task_id].data
        msgs = [Message(role="system", content=data.system_prompt)] if data.system_prompt else []
        if isinstance(data.prompt, str) or data.prompt is None:
            return [*msgs, Message(role="user", content=data.prompt or "")]
        return [
            *msgs,
            *(Message(role=m.role, content=content_text(m.content)) for m in data.prompt),
        ]

    def score(self, task: Task, response: Message) -> tuple[dict[str, float], dict[str, Any]]:
        """Run the task's reward functions on the rollout, as verifiers does."""
        vf_task = self.vf_tasks[task.task_id]
        trace = rollout_trace(vf_task, [*self.opening_messages(task), response])
        try:
            asyncio.run(vf_task.score(trace))
        except Exception as e:  # the task's own code, on the model's reply
            said = f"{type(e).__name__}: {str(e)[:300]}"
            if any(type(c).__name__ in MACHINERY for c in _chain(e)):  # wrapped in TaskError
                raise InfraError(f"{self.spec.name}: verifiers failed: {said}") from e
            log.warning("%s: the task's scoring failed: %s", self.spec.name, said)
            raise InvalidAction(f"the verifiers task could not score the reply: {said}") from e
        scores = {name: r.score for name, r in trace.rewards.items() if r is not None}
        return scores, {"verifiers_reward": trace.reward}


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from (verifiers wraps a reward's in TaskError)."""
    seen: list[BaseException] = []
    while exc is not None and exc not in seen and len(seen) < 20:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return seen


def _task_id(task: vf.Task) -> str:
    return str(task.data.id if task.data.id is not None else task.data.idx)
