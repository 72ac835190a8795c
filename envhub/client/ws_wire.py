"""The WebSocket wire: the :class:`~envhub.client.transport.Wire` over ``envhub serve``'s ``/ws``.

An episode's reset, steps and ``finish`` go over one persistent connection (a
:class:`Channel`), a call one frame each way; everything else (verification, listings, a last
``close``) goes over the :class:`~envhub.client.http_wire.HttpWire` under it, which shares its
:class:`~envhub.client.transport.Session`. A wire keeps two channels, one for the plans driven
with blocking calls and one for the awaited ones, because an asyncio connection belongs to its
event loop; the sockets are :mod:`envhub.client.ws_socket`'s.

* every call has a deadline (``timeout`` seconds for the answer);
* a dropped connection is reopened and the session resumed by id and secret (``resume``); a
  step sent again carries the same ``seq``, so the server answers it from its record if it
  was applied;
* a handshake the server or a proxy refuses raises
  :class:`~envhub.client.transport.WsRefused` (the environment falls back to the HTTP wire);
  every other failure raises :class:`~envhub.wire.Transient`, which the environment turns into
  ``infra_error`` for that episode only;
* an answer over :func:`~envhub.client.reading.reply_limit` (of the server's body limit), or
  one that is not the body asked for, is the server's: :class:`~envhub.errors.EpisodeError`,
  ``env_error``, and the connection is closed.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel
from websockets.exceptions import WebSocketException

from ..errors import EpisodeError
from ..types import ResetResult, Score, StepResult, Task
from ..wire import (
    OVERLOADED,
    RETRY_CODES,
    Backoff,
    EnvInfo,
    ResetResponse,
    Transient,
    raise_for_error,
)
from .http_wire import HttpWire
from .plan import Pause, Plan, WsCall, WsOpen
from .reading import parsed, reply_limit
from .transport import Items, Limits, Session
from .ws_socket import LoopGone

M = TypeVar("M", bound=BaseModel)

_DROPPED = (OSError, EOFError, WebSocketException)
"""What a dropped connection raises (socket errors, a closed stream, a protocol EOF)."""


def ws_url(http_url: str) -> str:
    """``http://host:port`` -> ``ws://host:port/ws``."""
    scheme, rest = http_url.split("://", 1)
    return f"{'wss' if scheme == 'https' else 'ws'}://{rest.rstrip('/')}/ws"


def _frame(op: str, **fields: Any) -> str:
    return json.dumps({"op": op, **{k: v for k, v in fields.items() if v is not None}})


def step_frame(message_json: str, seq: int) -> str:
    """The ``step`` frame around a message already serialised (text or message object)."""
    return f'{{"op":"step","seq":{seq},"message":{message_json}}}'


class WsWire:
    """One handle's episodes over the WebSocket; the rest over the HTTP wire under it."""

    name = "ws"

    def __init__(self, http: HttpWire) -> None:
        """Over ``http``'s server, in ``http``'s session and within its limits."""
        self.http, self.session = http, http.session
        url = ws_url(http.pool.url)
        self._channels = (
            Channel(url, http.limits, self.session),  # driven with blocking calls
            Channel(url, http.limits, self.session),  # awaited
        )

    @property
    def info(self) -> EnvInfo:
        """The server's ``/info``."""
        return self.http.info

    def reset(self, seed: int | None, task_id: str | None, aio: bool = False) -> Plan[ResetResult]:
        """Start an episode on the driver's connection."""
        return self._channels[aio].reset(seed, task_id)

    def step(self, message_json: str, aio: bool = False) -> Plan[StepResult]:
        """One step on the driver's connection."""
        return self._channels[aio].step(message_json)

    def finish(self, aio: bool = False) -> Plan[StepResult]:
        """End the episode from outside on the driver's connection: its final accounting."""
        return self._channels[aio].finish()

    def verify(self, items: Items) -> Plan[list[Score]]:
        """``POST /verify`` (the HTTP wire's)."""
        return self.http.verify(items)

    def tasks(self, split: str | None) -> Plan[list[Task]]:
        """``GET /tasks`` (the HTTP wire's)."""
        return self.http.tasks(split)

    def close(self) -> None:
        """Close the episode under way and both connections.

        On the connection that drives it, a ``close`` frame is sent without awaiting the
        answer: the server reads it before it sees the connection end (TCP keeps the order), so
        the round trip would only wait (an asyncio connection writes it only from its own
        running loop: a server closing a remote episode on its loop sends no blocking request).
        Otherwise ``POST /close`` does it.
        """
        blocking, awaited = self._channels
        blocking.close_session()
        awaited.close_session()
        blocking.close_socket()
        awaited.close_socket()
        self.http.close()


class Channel:
    """One WebSocket connection of a wire; its calls are plans (:mod:`envhub.client.plan`).

    Its socket is a blocking one when the plans are driven, an asyncio one when awaited. It
    keeps no session of its own: only which session it drives on the server (``attached``).
    """

    def __init__(self, url: str, limits: Limits, session: Session) -> None:
        """A channel to ``url`` (``ws://host:port/ws``) within ``limits``, in ``session``."""
        self.url, self.limits, self.session = url, limits, session
        self.timeout = limits.timeout
        self.max_size = reply_limit(limits.max_body)
        """The longest answer read (:func:`~envhub.client.reading.reply_limit`)."""
        self._sock: Any = None
        self.attached: str | None = None
        """The session id this connection drives on the server (set by reset and resume)."""

    def _call(self, text: str, needs_session: bool) -> Plan[str]:
        """Send ``text`` and read its answer, reconnecting and resuming past drops."""
        backoff = pause = None
        while True:
            try:
                if self._sock is None:
                    self._sock = yield WsOpen(self.url, self.timeout, self.max_size)
                s = self.session
                if s.live and self.attached != s.id:
                    error = yield from self._attach()
                    if error is not None and needs_session:
                        raise Transient(f"session {s.id} lost after a reconnect: {error}")
                answer = yield WsCall(self._sock, text, self.timeout)
            except LoopGone:
                self.close_socket()
                continue  # nothing was sent: a connection on this loop, at once
            except EpisodeError:  # an answer over the bound: the rest of it is not read
                self.close_socket()
                raise
            except TimeoutError as e:
                self.close_socket()
                raise _failure(e, self.timeout) from e
            except _DROPPED as e:
                self.close_socket()
                backoff, pause = self._dropped(e, backoff)
            else:
                backoff, pause = self._pause(answer, backoff)
                if pause is None:
                    return answer
            yield Pause(pause)

    def _attach(self) -> Plan[str | None]:
        """Resume the episode under way on this connection; the server's error if it cannot."""
        s = self.session
        frame = _frame("resume", session_id=s.id, session_secret=s.secret)
        answer = yield WsCall(self._sock, frame, self.timeout)
        if answer.startswith('{"error"'):
            s.end()
            return json.loads(answer)["error"]
        self.attached = s.id
        return None

    def reset(self, seed: int | None, task_id: str | None) -> Plan[ResetResult]:
        """Start an episode (the server closes the connection's previous session)."""
        text = yield from self._call(_frame("reset", seed=seed, task_id=task_id), False)
        result = self.session.opened(self._parsed(ResetResponse, text, "reset"))
        self.attached = self.session.id
        return result

    def step(self, message_json: str) -> Plan[StepResult]:
        """One step; ``message_json`` is the message (object or string) as JSON.

        A frame over the server's limit is not sent: its stand-in says only its size
        (``oversized``), and the server answers the model's ``invalid_action``. A frame over
        the server's WebSocket buffer would cut the connection instead, and a message the
        model made too long must never read as the server's ``infra_error``.
        """
        seq = self.session.steps + 1
        frame = step_frame(message_json, seq)
        if self.limits.max_body and len(frame) > self.limits.max_body:
            frame = _frame("step", seq=seq, oversized=len(frame.encode()))
        text = yield from self._call(frame, True)
        return self.session.stepped(self._parsed(StepResult, text, "step"))

    def finish(self) -> Plan[StepResult]:
        """End the episode from outside (``Env.finish``): its final accounting."""
        text = yield from self._call(_frame("finish"), True)
        return self.session.stepped(self._parsed(StepResult, text, "finish"))

    def _parsed(self, model: type[M], text: str, op: str) -> M:
        """``text`` as ``model``; any other answer is the server's (``env_error``)."""
        return parsed(model, text, f"the server at {self.url} ({op})")

    def _pause(self, text: str, backoff: Backoff | None) -> tuple[Backoff | None, float | None]:
        """``(backoff, None)`` if ``text`` is the answer, else the pause before sending again.

        An error frame is the only answer whose first key is ``error`` (see
        :func:`envhub.wire.error_frame`), so a result is never parsed twice. Errors that are
        not sent again are raised.
        """
        if not text.startswith('{"error"'):
            return backoff, None
        err = json.loads(text)
        if err["code"] in RETRY_CODES:
            backoff = backoff or Backoff(self.limits.retries, self.limits.admission_s)
            pause = backoff.pause(err["kind"] == OVERLOADED)
            if pause is not None:
                return backoff, pause
        raise_for_error(err["code"], err["kind"], err["error"])
        raise AssertionError("unreachable")

    def _dropped(self, error: BaseException, backoff: Backoff | None) -> tuple[Backoff, float]:
        """The pause before reconnecting after ``error``; raises past the retries."""
        backoff = backoff or Backoff(self.limits.retries, self.limits.admission_s)
        pause = backoff.pause(False)
        if pause is None:
            raise _failure(error, self.timeout) from error
        return backoff, pause

    def close_session(self) -> None:
        """Send ``close`` for the episode under way if this connection drives it."""
        s = self.session
        if not (s.live and self.attached == s.id and self._sock is not None):
            return
        try:
            self._sock.send(_frame("close"))
        except (*_DROPPED, TimeoutError):
            return  # the HTTP wire closes it
        s.end()

    def close_socket(self) -> None:
        """Close the connection (the session stays on the server)."""
        if self._sock is not None:
            self._sock.close()
            self._sock, self.attached = None, None


def _failure(e: BaseException, timeout: float) -> Transient:
    if isinstance(e, TimeoutError):
        return Transient(f"no answer within the deadline of {timeout:g} s")
    return Transient(f"connection failed: {type(e).__name__}: {e}")
