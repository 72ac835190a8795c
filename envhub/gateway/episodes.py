"""Per-episode credentials and budgets: :class:`Episodes` and :class:`GatewayEpisode`.

Every episode gets a random API key (``secrets.token_urlsafe``). A request is served only
with the key of a live episode; anything else is refused with 401, so one episode can neither
see nor extend another's calls (each key maps to its own :class:`~.recording.Recorder`).

Budgets: ``max_calls`` calls and ``max_tokens`` sampled tokens per episode. A call past
either is refused with a clear error and the episode ends *truncated*: later calls with its
key are refused too, and whoever runs the agent ends it (see :mod:`envhub.gateway.agent`).
A call's own ``max_tokens`` is cut to what the budget has left.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from envhub.engines.chat import ChatFormatter
from envhub.errors import EnvhubError

from .recording import Recorder


class BudgetExhausted(EnvhubError):
    """The episode spent its ``max_calls`` or ``max_tokens``: it ends truncated."""


@dataclass(frozen=True)
class Budget:
    """What one episode may spend at the gateway."""

    max_calls: int = 64
    """Chat completions per episode."""
    max_tokens: int = 16384
    """Sampled tokens per episode, over all its calls."""

    def __post_init__(self) -> None:
        if self.max_calls < 1 or self.max_tokens < 1:
            raise ValueError(
                f"max_calls and max_tokens must be >= 1, got {self.max_calls}, {self.max_tokens}"
            )


@dataclass
class GatewayEpisode:
    """One live episode: its key, budget, recorder and the failures the gateway saw."""

    id: str
    key: str
    budget: Budget
    recorder: Recorder
    opened: float = field(default_factory=time.monotonic)
    requests: int = 0
    """Requests that reached the gateway with this key (served or not)."""
    truncated: str | None = None
    """Why the episode was cut off (a budget), or None."""
    infra_error: str | None = None
    """A failure of the machinery behind a call (backend down, gateway bug), or None."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    _waited: float = field(default=0.0, init=False, repr=False)
    _wait_since: float = field(default=0.0, init=False, repr=False)
    stepper: Any = None
    """``async (reply) -> step result dict``: the environment behind the episode URL, or None
    (see :meth:`envhub.gateway.service.Gateway.step`)."""
    stepped: set[int] = field(default_factory=set)
    """Calls whose reply has stepped the environment (each at most once)."""
    env_done: bool = False
    """The environment ended the episode through the episode URL."""
    closed: bool = False
    """The key is revoked; a call still in flight then is answered but not recorded."""

    def admit(self) -> int:
        """Reserve one call; returns the most tokens it may sample.

        Raises:
            BudgetExhausted: the episode is out of calls or tokens (it is now truncated).
        """
        with self.lock:
            self.requests += 1
            if self.truncated:
                raise BudgetExhausted(f"the episode already ended: {self.truncated}")
            calls = len(self.recorder.calls) + self.in_flight
            if calls >= self.budget.max_calls:
                self.truncated = f"max_calls={self.budget.max_calls} reached"
                raise BudgetExhausted(f"episode budget exhausted: {self.truncated}")
            left = self.budget.max_tokens - self.recorder.sampled_tokens
            if left <= 0:
                self.truncated = f"max_tokens={self.budget.max_tokens} reached"
                raise BudgetExhausted(f"episode budget exhausted: {self.truncated}")
            if self.in_flight == 0:
                self._wait_since = time.monotonic()
            self.in_flight += 1
            return left

    def release(self) -> None:
        """The reserved call ended (recorded or failed)."""
        with self.lock:
            self.in_flight -= 1
            if self.in_flight == 0:
                self._waited += time.monotonic() - self._wait_since

    def waited_s(self) -> float:
        """Seconds so far with at least one model call of this episode in flight.

        That time is the machinery's (queued behind other episodes, generating): an agent's
        ``timeout_s`` does not count it (:mod:`envhub.gateway.agent`).
        """
        with self.lock:
            now = time.monotonic() - self._wait_since if self.in_flight else 0.0
            return self._waited + now


class Episodes:
    """The live episodes of one gateway, by key. Thread-safe."""

    def __init__(self, chat: ChatFormatter | None) -> None:
        """``chat``: the backend's formatter (None: record messages only)."""
        self.chat = chat
        self._by_key: dict[str, GatewayEpisode] = {}
        self._lock = threading.Lock()

    def open(self, episode_id: str | None = None, budget: Budget | None = None) -> GatewayEpisode:
        """A new episode with a fresh random key."""
        key = "eh-" + secrets.token_urlsafe(24)
        ep = GatewayEpisode(
            id=episode_id or secrets.token_hex(6),
            key=key,
            budget=budget or Budget(),
            recorder=Recorder(self.chat),
        )
        with self._lock:
            self._by_key[key] = ep
        return ep

    def get(self, key: str | None) -> GatewayEpisode | None:
        """The live episode of ``key``, or None (an unknown or closed key)."""
        if not key:
            return None
        with self._lock:
            return self._by_key.get(key)

    def by_id(self, episode_id: str) -> GatewayEpisode | None:
        """The live episode named ``episode_id``, or None."""
        with self._lock:
            return next((e for e in self._by_key.values() if e.id == episode_id), None)

    def close(self, ep: GatewayEpisode) -> None:
        """Revoke the episode's key; its record stays with the caller."""
        with self._lock:
            self._by_key.pop(ep.key, None)
        with ep.lock:
            ep.closed = True

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_key)
