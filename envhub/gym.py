"""Gymnasium adapter: every catalog entry as ``gymnasium.make("envhub/NAME-vN")``.

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

from .types import Message

if TYPE_CHECKING:
    from .core import Env

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
        from .make import make

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

    Called when gymnasium is imported after (or before) envhub (see :mod:`envhub.gym_ids`);
    call it again after ``envhub.register(...)`` to add new entries in a running process.
    """
    from .registry import catalog

    ids = []
    reg = catalog()
    for env_id in reg.ids():
        gym_id = f"{NAMESPACE}/{env_id}"
        if gym_id not in gymnasium.registry:
            gymnasium.register(
                id=gym_id,
                entry_point="envhub.gym:GymEnv",
                kwargs={"name": env_id},
                disable_env_checker=True,
            )
        ids.append(gym_id)
    return ids
