"""The ``agent:`` section of the train and eval configs: :class:`AgentConfig`.

See :mod:`envhub.gateway.agent` for how an agent is run and what each field bounds.
"""

from __future__ import annotations

import shlex
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .episodes import Budget


class AgentConfig(BaseModel):
    """The ``agent:`` section of the train and eval configs."""

    model_config = ConfigDict(extra="forbid")

    command: list[str] | None = None
    """The program, run once per episode: a list of arguments, or a string split as a shell
    would (``agent.command="python my_agent.py --fast"``)."""
    callable: str | None = None
    """``module:function``: an async function ``fn(client, task)`` run in-process."""
    concurrency: int = Field(default=8, ge=1)
    """Agent episodes in flight at once."""
    timeout_s: float = Field(default=300.0, gt=0)
    """Seconds one run may take, past which the program is killed (status ``timeout``). Time
    with one of its model calls in flight at the gateway is not counted: a loaded engine's
    queue is the machinery's, not the model's."""
    max_calls: int = Field(default=32, ge=1)
    """Model calls per episode."""
    max_tokens: int = Field(default=4096, ge=1)
    """Sampled tokens per episode, over all its calls."""
    memory_mb: int = Field(default=2048, ge=64)
    """Memory of the program's whole process tree (a cgroup, where the host allows one)."""
    max_processes: int = Field(default=256, ge=4)
    """Processes of the program's tree at once (cgroup pids cap, or RLIMIT_NPROC)."""

    @field_validator("command", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                value = shlex.split(value)
            except ValueError as e:
                raise ValueError(
                    f"agent.command {value!r} does not split as a shell would: {e}"
                ) from None
        if value is not None and not value:
            raise ValueError("agent.command is empty; give the program to run")
        return value

    @field_validator("callable")
    @classmethod
    def _dotted(cls, value: str | None) -> str | None:
        if value is not None and (value.count(":") != 1 or not all(value.split(":"))):
            raise ValueError(f"agent.callable must be 'module:function', got {value!r}")
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> AgentConfig:
        if (self.command is None) == (self.callable is None):
            raise ValueError("give the agent exactly one of `command` and `callable`")
        return self

    @property
    def budget(self) -> Budget:
        """The per-episode budget at the gateway."""
        return Budget(max_calls=self.max_calls, max_tokens=self.max_tokens)
