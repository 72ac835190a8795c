"""Gymnasium adapter: every catalog entry as ``gymnasium.make("envhub/NAME-vN")``.

Importing this module registers the ids, as a Gymnasium environment package does
(``import ale_py; gymnasium.register_envs(ale_py)``). Gymnasium's own ``module:id`` form
imports it for you::

    gymnasium.make("envhub.registry.gym:envhub/gsm8k-v1")

or, once imported, ``gymnasium.register_envs(envhub.registry.gym)`` and
``gymnasium.make("envhub/gsm8k-v1")``. ``import envhub`` alone does not import gymnasium (about
0.3 s with numpy) nor read the catalog for it. After ``envhub.register(...)`` in a running
process, :func:`register_all` adds the new entries.

Observations and actions are text. The observation is the text of the environment's new
messages (the opening prompt after ``reset``); the full messages, the reward components and
the status are in ``info``. ``reset(options={"task_id": ...})`` picks a task.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import TYPE_CHECKING, Any

import gymnasium
from gymnasium import spaces

from ..errors import EnvhubError
from ..types import Message
from .catalog import catalog
from .make import make

if TYPE_CHECKING:
    from ..core import Env

log = logging.getLogger("envhub")

NAMESPACE = "envhub"
MAX_TEXT = 100_000


@functools.cache
def charset() -> str:
    """Every character of the Basic Multilingual Plane except the surrogates (built once)."""
    return "".join(chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF)


BEYOND_BMP = re.compile("[\U00010000-\U0010ffff]")
"""Characters the observation space cannot hold (emoji, some scripts): shown as U+FFFD."""


def _text(messages: list[Message]) -> str:
    """The observation: the messages' text, cut at MAX_TEXT, within the space's charset."""
    return BEYOND_BMP.sub("\ufffd", "\n\n".join(m.content for m in messages)[:MAX_TEXT])


class GymEnv(gymnasium.Env):
    """A gymnasium view of an envhub environment (text in, text out)."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, name: str, runner: str | None = None, **overrides: Any) -> None:
        """Make the envhub environment ``name`` on ``runner`` with ``overrides``."""
        self._adopt(make(name, runner, **overrides))

    @classmethod
    def over(cls, env: Env) -> GymEnv:
        """The view over an environment made already (an unlisted spec, ``envhub check``)."""
        view = cls.__new__(cls)
        view._adopt(env)
        return view

    def _adopt(self, env: Env) -> None:
        self.env = env
        self.observation_space = spaces.Text(max_length=MAX_TEXT, min_length=0, charset=charset())
        self.action_space = spaces.Text(max_length=4096, min_length=0, charset=charset())

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start an episode; ``options={"task_id": ...}`` chooses the task."""
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(2**31))
        task_id = (options or {}).get("task_id")
        result = self.env.reset(seed=seed, task_id=task_id)
        info = result.info.model_dump(mode="json")
        info["messages"] = [m.model_dump(exclude_none=True) for m in result.messages]
        return _text(result.messages), info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Send the assistant's text."""
        result = self.env.step(Message(role="assistant", content=str(action)))
        info = result.info.model_dump(mode="json")
        info["messages"] = [m.model_dump(exclude_none=True) for m in result.messages]
        return _text(result.messages), result.reward, result.terminated, result.truncated, info

    def close(self) -> None:
        """Close the underlying environment."""
        self.env.close()


def register_all() -> list[str]:
    """Register every catalog entry with gymnasium; returns the ids.

    Called when this module is imported; call it again after ``envhub.register(...)`` to add
    new entries in a running process.
    """
    ids = []
    reg = catalog()
    for env_id in reg.ids():
        gym_id = f"{NAMESPACE}/{env_id}"
        if gym_id not in gymnasium.registry:
            gymnasium.register(
                id=gym_id,
                entry_point=f"{__name__}:GymEnv",
                kwargs={"name": env_id},
                disable_env_checker=True,
            )
        ids.append(gym_id)
    return ids


def _register_on_import() -> None:
    """Register the ids; a broken user YAML logs a warning rather than breaking the import."""
    try:
        register_all()
    except EnvhubError as e:
        log.warning("envhub: gymnasium ids not registered: %s", e)


_register_on_import()
