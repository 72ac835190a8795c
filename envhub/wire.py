"""The wire schema: every request and response body of ``envhub serve``, written once.

The server (``envhub/server/``) validates with these models and the clients
(:mod:`envhub.client.http_wire`, :mod:`envhub.client.ws_wire`) build and read the same ones, so a
field is added, renamed or documented in one place. The episode's own types
(:class:`~envhub.types.Message`,
:class:`~envhub.types.StepResult`, ...) live in :mod:`envhub.types`; this module adds the
envelopes around them.

Two transports carry the same bodies:

* **HTTP**: ``POST /reset`` (:class:`ResetRequest` -> :class:`ResetResponse`), ``POST /step``
  (:class:`StepRequest` -> :class:`~envhub.types.StepResult`), ``POST /close``, ``POST
  /verify``; errors are :class:`ErrorBody` with a 4xx/5xx status.
* **WebSocket** ``/ws``: one connection carries one session's episodes. Each text frame the
  client sends is a :class:`WsRequest` (``op`` names the call); the server answers each with
  one frame holding either the call's body or an :class:`ErrorBody` plus ``code`` (the HTTP
  status the same error would get). Calls on one connection are answered in order.

Why ``seq`` on a step: after a dropped connection the client reconnects, resumes its session
by id and sends the step again. If the server had already applied it (the answer was lost on
the way), it answers the stored result instead of stepping twice, so a reconnect never plays
a move twice.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .errors import ConfigError, EpisodeStateError, NotSupported, TaskNotFound, TransportError
from .types import Message, ResetResult, Score, StepResult, Task

__all__ = [
    "CloseRequest",
    "ERRORS_BY_KIND",
    "EnvInfo",
    "ErrorBody",
    "FinishRequest",
    "ResetRequest",
    "ResetResponse",
    "SessionState",
    "StepRequest",
    "StepResult",
    "TaskPage",
    "Transient",
    "Backoff",
    "VerifyItem",
    "VerifyRequest",
    "VerifyResponse",
    "WsError",
    "WsRequest",
    "raise_for_error",
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorBody(_Body):
    """Every error answer: a message and a machine-readable kind."""

    error: str
    kind: str


class ResetRequest(_Body):
    """Start an episode in a new session."""

    seed: int | None = None
    task_id: str | None = None
    close_session: str | None = None
    """A previous session of the same client to close first."""
    close_secret: str | None = None
    """The ``session_secret`` of ``close_session``."""


class ResetResponse(ResetResult):
    """The opening messages and info, plus the session to step in and its secret."""

    session_id: str
    session_secret: str
    """Only the opener gets it; every later call on the session (HTTP ``/step``, ``/finish``,
    ``/close``; WebSocket ``resume``) must carry it. The id alone is not a credential."""


class StepRequest(_Body):
    """One assistant message for a session's episode: a message object or its text."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"session_id": "SESSION", "session_secret": "SECRET", "message": "42"},
                {
                    "session_id": "SESSION",
                    "session_secret": "SECRET",
                    "message": {"role": "assistant", "content": "42"},
                },
            ]
        }
    )

    session_id: str
    session_secret: str
    """The secret :class:`ResetResponse` gave with ``session_id``."""
    seq: int | None = Field(None, ge=1)
    """The client's count of steps in this episode, this one included (optional): a step the
    server already applied is answered from its record, not applied again."""
    message: Message | str | None = None
    """The assistant's message; leave it out only with ``oversized``."""
    oversized: int | None = Field(None, ge=1)
    """Instead of ``message``: the size in bytes of a message the client did not send because
    it is over the server's ``max_body_bytes`` (``/info``). The step is the model's
    ``invalid_action`` and ends the episode, as a body over the limit would."""

    @model_validator(mode="after")
    def _one_message(self) -> StepRequest:
        if (self.message is None) == (self.oversized is None):
            raise ValueError("give exactly one of message, oversized")
        return self


class FinishRequest(_Body):
    """End a session's episode from outside and get its final accounting."""

    session_id: str
    session_secret: str


class CloseRequest(_Body):
    """End a session."""

    session_id: str
    session_secret: str


class SessionState(_Body):
    """Where a session's episode stands (WebSocket ``state``, and the answer to ``resume``)."""

    session_id: str
    task_id: str
    steps: int
    """Steps applied so far (the ``seq`` of the last one)."""
    done: bool


class VerifyItem(_Body):
    """One response to verify against a task given by id, by gold answer, or in full."""

    task_id: str | None = None
    gold: str | None = None
    task: Task | None = None
    response: Message | str | None = None
    """The response to verify; leave it out only with ``oversized``."""
    oversized: int | None = Field(None, ge=1)
    """Instead of ``response``: the size in bytes of a response the client did not send
    because it is over the server's ``max_body_bytes``: the model's ``invalid_action``."""

    @model_validator(mode="after")
    def _one_task(self) -> VerifyItem:
        given = [k for k in ("task_id", "gold", "task") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of task_id, gold, task (got {given or 'none'})")
        if (self.response is None) == (self.oversized is None):
            raise ValueError("give exactly one of response, oversized")
        return self


class VerifyRequest(_Body):
    """A batch of responses to verify."""

    items: list[VerifyItem] = Field(min_length=1)


class VerifyResponse(_Body):
    """One score per item, in order."""

    scores: list[Score]


class TaskPage(_Body):
    """A page of the task listing."""

    tasks: list[Task]
    total: int


class EnvInfo(BaseModel):
    """``GET /info``: what a client may rely on about the environment and the server.

    The named fields are always there (the :class:`~envhub.core.Env` contract, served);
    environments may add keys of their own (a family, a description, components and weights).
    """

    model_config = ConfigDict(extra="allow")

    name: str
    version: int | str
    id: str
    primary_component: str = "correctness"
    """The reward component that says a task was solved (pass@k counts it)."""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    """The tools offered to the model (OpenAI function form)."""
    spec: dict[str, Any]
    """The catalog entry, as :class:`~envhub.spec.EnvSpec` validates it."""
    server: dict[str, Any] = Field(default_factory=dict)
    """The server's limits (``max_body_bytes``, sessions, deadlines)."""


# ---------------------------------------------------------------------------- WebSocket

WsOp = Literal["reset", "step", "finish", "close", "state", "resume"]


class WsRequest(_Body):
    """One call on the WebSocket ``/ws``; the fields used depend on ``op``.

    * ``reset``: ``seed``, ``task_id`` -> :class:`ResetResponse` (the connection's previous
      session, if any, is closed first);
    * ``step``: ``message`` (or ``oversized``, see :class:`StepRequest`), ``seq`` ->
      :class:`~envhub.types.StepResult`;
    * ``finish``: end the episode from outside -> its final :class:`~envhub.types.StepResult`;
    * ``close``: -> ``{"closed": bool}``;
    * ``state``: -> :class:`SessionState`;
    * ``resume``: ``session_id`` and ``session_secret`` -> :class:`SessionState`, after a
      dropped connection.

    A connection's own session needs no secret: the connection that reset or resumed it is
    the only one that drives it.
    """

    op: WsOp
    seed: int | None = None
    task_id: str | None = None
    message: Message | str | None = None
    seq: int | None = Field(None, ge=1)
    oversized: int | None = Field(None, ge=1)
    session_id: str | None = None
    session_secret: str | None = None


class WsError(ErrorBody):
    """An error answer on the WebSocket: the body of HTTP plus its status ``code``."""

    code: int


def error_frame(code: int, kind: str, message: str) -> dict[str, Any]:
    """The WebSocket answer for an error (the same ``kind`` HTTP would send with ``code``)."""
    return {"error": message, "kind": kind, "code": code}


# ---------------------------------------------------------------------------- what errors mean

RETRY_CODES = (429, 503)
OVERLOADED = "overloaded"
"""The ``kind`` of a refusal of work the server never started: sent again without charge."""
ERRORS_BY_KIND: dict[str, type[Exception]] = {
    "task_not_found": TaskNotFound,
    "episode_state": EpisodeStateError,
    "not_supported": NotSupported,
    "config": ConfigError,
    "invalid_request": ValueError,
}
"""Error kinds that are the caller's, raised as the exceptions the in-process env raises."""


class Transient(Exception):
    """A failure of the server or the network: ``infra_error`` for the episode."""


class Backoff:
    """When a client sends a call again, shared by the HTTP and WebSocket clients.

    Two budgets, kept apart on purpose. An ``overloaded`` answer (the server is busy with other
    episodes and never started the call) is sent again for up to ``admission_s`` seconds from
    the first refusal, uncounted: queueing is never the model's fault. Any other failure (a
    dropped connection, another 429/503) gets ``retries`` more tries. Past either budget the
    call is the machinery's failure (``infra_error``). Made at a call's first failure only.
    """

    def __init__(self, retries: int, admission_s: float) -> None:
        """Allow ``retries`` tries after failures and ``admission_s`` of overload waits."""
        self.tries, self.retries = 0, retries
        self.until = time.monotonic() + admission_s

    def pause(self, overloaded: bool, retry_after: float | None = None) -> float | None:
        """Seconds to wait before sending again, or ``None`` to give up."""
        left = self.until - time.monotonic()
        if overloaded and left > 0:
            return min(0.5 if retry_after is None else retry_after, left)
        if self.tries >= self.retries:
            return None
        self.tries += 1
        return min(0.05 * 2**self.tries, 2.0) if retry_after is None else retry_after


def raise_for_error(code: int, kind: str, message: str) -> None:
    """Raise what an error answer means: :class:`Transient` for the server's, else the caller's."""
    if code in RETRY_CODES or code >= 500:
        raise Transient(f"server answered {code} {kind}: {message[:300]}")
    raise ERRORS_BY_KIND.get(kind, TransportError)(message)
