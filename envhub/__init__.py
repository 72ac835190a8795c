"""envhub: a hub of RL environments and verifiers for language models.

>>> import envhub
>>> env = envhub.make("gsm8k")                  # in-process; runner="http" or "docker" too
>>> first = env.reset(seed=0)                   # opening chat messages + info
>>> result = env.step("... #### 42")            # reward, terminated, truncated, info
>>> result.info.components, result.info.status

Importing envhub is light: no torch, ray, vllm, fastapi or environment code is loaded until
an environment is made or served.
"""

from __future__ import annotations

from .authoring.register import register
from .core import Env, Episode, Feedback, TaskEnv
from .errors import EnvhubError, EnvNotFound, RegistryError
from .registry.catalog import catalog, reset_registry, spec
from .registry.make import make
from .spec import EnvSpec
from .types import Info, Message, ResetResult, Score, Status, StepResult, Task

__version__ = "0.1.0"

__all__ = [
    "Env",
    "EnvNotFound",
    "EnvSpec",
    "EnvhubError",
    "Episode",
    "Feedback",
    "Info",
    "Message",
    "RegistryError",
    "ResetResult",
    "Score",
    "Status",
    "StepResult",
    "Task",
    "TaskEnv",
    "make",
    "register",
    "catalog",
    "reset_registry",
    "spec",
]
