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

import logging as _logging

from .core import Env, Episode, Feedback, TaskEnv
from .errors import EnvhubError, EnvNotFound, RegistryError
from .make import make
from .registry import catalog, register, reset_registry, spec
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


def _register_gymnasium() -> None:
    """Make ``gymnasium.make("envhub/NAME-vN")`` work once envhub is imported."""
    try:
        from .gym import register_all

        register_all()
    except EnvhubError as e:  # a broken user YAML must not break `import envhub`
        _logging.getLogger("envhub").warning("envhub: gymnasium ids not registered: %s", e)


_register_gymnasium()
