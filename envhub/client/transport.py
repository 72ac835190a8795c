"""The one protocol both wires speak: :class:`Wire`, with the :class:`Session` it carries.

:class:`~envhub.client.remote_env.RemoteEnv` holds one wire and delegates every call to it; it
never asks which wire it holds. Two implement :class:`Wire`:

* :class:`~envhub.client.http_wire.HttpWire`, the JSON routes (``POST /reset``, ``/step``,
  ``/finish``, ``/verify``, ``/close``, ``GET /tasks``);
* :class:`~envhub.client.ws_wire.WsWire`, the episode over one persistent WebSocket per
  driver (a step, and ``finish``, one frame each way), with an :class:`HttpWire` under it for
  what is not the episode's (verification, listings, a last ``close``) and for the fallback.

Every call of a wire is a plan (:mod:`envhub.client.plan`): written once, driven with blocking
calls or awaited. ``reset``, ``step`` and ``finish`` take ``aio``, which says which of the two
drivers runs the plan: an asyncio connection belongs to its event loop, so the WebSocket wire
keeps one connection per driver (the HTTP wire ignores it: its driver picks the client).

The request and response bodies are the models of :mod:`envhub.wire` (a different thing: the
schema both sides validate). A wire raises :class:`~envhub.wire.Transient` for a failure of the
server or the network, which the environment turns into ``infra_error``, and
:class:`WsRefused` when a WebSocket handshake is refused, which it answers by taking the HTTP
wire for good (``transport="auto"``) or by raising (``transport="ws"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..types import Message, ResetResult, Score, StepResult, Task
from ..wire import EnvInfo, ResetResponse

if TYPE_CHECKING:
    from .plan import Plan


class WsRefused(Exception):
    """The WebSocket handshake was refused (no ``/ws``, or a proxy in between): use HTTP."""


@dataclass(frozen=True, slots=True)
class Limits:
    """A wire's limits: what its :class:`~envhub.client.remote_env.RemoteEnv` was given."""

    timeout: float
    """Deadline of one answer, in seconds."""
    retries: int
    """Tries after a dropped connection or a refused call (see :class:`envhub.wire.Backoff`)."""
    admission_s: float
    """Seconds a call is sent again while a saturated server refuses it unstarted."""
    max_body: int = 0
    """The server's body limit (``max_body_bytes`` of ``/info``; 0: none known). A step over it
    is sent as its size alone (``oversized``) and answered as the model's ``invalid_action``."""


@dataclass(slots=True)
class Session:
    """The client's record of its session on the server: the one place it is kept.

    Both wires read and write this object, the WebSocket connections included (a connection
    remembers only which session id it drives on the server), so the id, the secret and the
    step count can never disagree between a wire and the environment.
    """

    id: str | None = None
    """The session the last reset opened (kept after its episode ended, until the next reset)."""
    secret: str = ""
    """Its ``session_secret``: every later call on the session carries it."""
    steps: int = 0
    """Steps the server applied in this episode; the next step's ``seq`` is ``steps + 1``, so a
    step sent again after a lost answer is answered from the server's record, not applied."""
    live: bool = False
    """An episode is under way: reset, and not yet ended or failed."""

    def opened(self, answer: ResetResponse) -> ResetResult:
        """Take the session ``answer`` opened; the episode's opening."""
        self.id, self.secret = answer.session_id, answer.session_secret
        self.steps, self.live = 0, True
        return ResetResult.model_construct(messages=answer.messages, info=answer.info)

    def stepped(self, result: StepResult) -> StepResult:
        """Count a step the server applied (``result``); the episode ends with it if it ends."""
        self.steps += 1
        if result.terminated or result.truncated:
            self.live = False
        return result

    def end(self) -> None:
        """The episode is over for this client (closed, or failed as ``infra_error``)."""
        self.live = False


Items = Sequence[tuple[Task | str, Message | str]]
"""Pairs to verify: a task (or its id) and a response."""


@runtime_checkable
class Wire(Protocol):
    """What carries one handle's calls to ``envhub serve``; every call a plan.

    ``session`` is the handle's :class:`Session`; ``http`` is the HTTP wire (the wire itself,
    or the one under a WebSocket wire, sharing its session), which a refused WebSocket falls
    back to.
    """

    name: str
    """``ws`` or ``http``."""
    session: Session
    http: Wire
    """The HTTP wire: this one, or the one under a WebSocket wire."""

    def reset(self, seed: int | None, task_id: str | None, aio: bool) -> Plan[ResetResult]:
        """Start an episode (the session's previous one, if any, is closed on the server)."""
        ...

    def step(self, message_json: str, aio: bool) -> Plan[StepResult]:
        """One step; ``message_json`` is the message (object or string), serialised once."""
        ...

    def finish(self, aio: bool) -> Plan[StepResult]:
        """End the episode from outside: its final accounting."""
        ...

    def verify(self, items: Items) -> Plan[list[Score]]:
        """Verify ``items`` in one request."""
        ...

    def tasks(self, split: str | None) -> Plan[list[Task]]:
        """Every task of ``split``."""
        ...

    @property
    def info(self) -> EnvInfo:
        """The server's ``/info`` (read once, when the pool was made)."""
        ...

    def close(self) -> None:
        """Close the session on the server, if one is under way, and the wire's connections."""
        ...
