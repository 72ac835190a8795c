"""The WebSocket client of ``envhub serve``'s ``/ws``: one session over one connection.

Why not a WebSocket library's connection object: the sync clients of the maintained libraries
run a reader thread per connection (one thread hop per message, 256 threads for 256 sessions),
which costs more CPU than the whole step. Here ``websockets``' sans-I/O protocol does the
framing and the caller's own thread (or event loop) does the I/O, so a step costs one send, one
receive and one pydantic-core parse.

:class:`Channel` holds one session's connection; its calls are plans
(:mod:`envhub.client.plan`), written once and driven with blocking calls on a
:class:`_SyncSocket` or awaited on an :class:`_AsyncSocket` (``HTTPEnv._perform``):

* every call has a deadline (``timeout`` seconds for the answer);
* a dropped connection is reopened and the session resumed by id (``resume``); a step sent
  again carries the same ``seq``, so the server answers it from its record if it was applied;
* a handshake the server or a proxy refuses raises :class:`WsRefused` (the caller falls back to
  HTTP); every other transport failure raises :class:`Transient`, which the client turns into
  ``infra_error`` for that episode only.

The answers are JSON text; :mod:`envhub.client.http_env` parses them into the types of
:mod:`envhub.wire`.
"""

from __future__ import annotations

import asyncio
import json
import math
import socket
import struct
import time
from dataclasses import dataclass
from typing import Any

from websockets.client import ClientProtocol
from websockets.exceptions import WebSocketException
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from ..types import StepResult
from ..wire import OVERLOADED, RETRY_CODES, Backoff, ResetResponse, Transient, raise_for_error
from .plan import Pause, Plan, WsCall, WsOpen

MAX_MESSAGE = 64 * 2**20
"""Largest answer accepted, in bytes (a long transcript of tool results fits)."""


class WsRefused(Exception):
    """The WebSocket handshake was refused (no ``/ws``, or a proxy in between): use HTTP."""


def ws_url(http_url: str) -> str:
    """``http://host:port`` -> ``ws://host:port/ws``."""
    scheme, rest = http_url.split("://", 1)
    return f"{'wss' if scheme == 'https' else 'ws'}://{rest.rstrip('/')}/ws"


class _Framing:
    """``websockets``' sans-I/O client protocol, reduced to what a session needs."""

    def __init__(self, url: str) -> None:
        self.uri = parse_uri(url)
        self.proto = ClientProtocol(self.uri, max_size=MAX_MESSAGE)
        self.proto.send_request(self.proto.connect())
        self._parts: list[bytes] = []
        self.open = False

    def outgoing(self) -> bytes:
        return b"".join(self.proto.data_to_send())

    def send(self, text: str) -> bytes:
        self.proto.send_text(text.encode())
        return self.outgoing()

    def feed(self, data: bytes) -> str | None:
        """Take bytes from the socket; a whole text message when one is complete."""
        if not data:
            self.proto.receive_eof()
            raise ConnectionError("the server closed the connection")
        self.proto.receive_data(data)
        for event in self.proto.events_received():
            if isinstance(event, Response):
                if self.proto.handshake_exc is not None:
                    raise WsRefused(f"WebSocket refused: {self.proto.handshake_exc}")
                self.open = True
            elif isinstance(event, Frame) and event.opcode in (Opcode.TEXT, Opcode.CONT):
                self._parts.append(event.data)
                if event.fin:
                    text, self._parts = b"".join(self._parts).decode(), []
                    return text
            elif isinstance(event, Frame) and event.opcode is Opcode.CLOSE:
                raise ConnectionError("the server closed the WebSocket")
        return None


class _SyncSocket:
    """One blocking connection, driven by the calling thread.

    The deadline is the kernel's (``SO_RCVTIMEO``/``SO_SNDTIMEO``) on a blocking socket, not
    Python's socket timeout: with a Python timeout every ``recv`` and ``send`` is a ``poll``
    first, two system calls and two GIL hand-offs instead of one, which with hundreds of
    threads is most of a step's client CPU.
    """

    def __init__(self, url: str, timeout: float) -> None:
        self.framing = _Framing(url)
        uri = self.framing.uri
        self.sock = socket.create_connection((uri.host, uri.port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(None)
        self.timeout = 0.0
        self._set_timeout(timeout)
        self.sock.sendall(self.framing.outgoing())
        deadline = time.monotonic() + timeout
        while not self.framing.open:
            self._receive(deadline)

    def _set_timeout(self, timeout: float) -> None:
        if timeout != self.timeout:
            seconds = int(timeout)
            tv = struct.pack("ll", seconds, max(int((timeout - seconds) * 1e6), 1000))
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)
            self.timeout = timeout

    def _receive(self, deadline: float) -> str | None:
        try:
            data = self.sock.recv(1 << 16)
        except BlockingIOError:  # SO_RCVTIMEO ran out
            raise TimeoutError("no answer within the deadline") from None
        text = self.framing.feed(data)
        pending = self.framing.outgoing()  # pongs, close answers
        if pending:
            self.sock.sendall(pending)
        if text is None and time.monotonic() > deadline:
            raise TimeoutError("the answer did not complete within the deadline")
        return text

    def send(self, text: str) -> None:
        try:
            self.sock.sendall(self.framing.send(text))
        except BlockingIOError:  # SO_SNDTIMEO ran out: the server reads nothing
            raise TimeoutError("the server took no request within the deadline") from None

    def call(self, text: str, timeout: float) -> str:
        self._set_timeout(timeout)
        self.send(text)
        answer = self._receive(math.inf)  # the common case: the whole answer in one read
        if answer is not None:
            return answer
        deadline = time.monotonic() + timeout
        while answer is None:
            answer = self._receive(deadline)
        return answer

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class _AsyncSocket(asyncio.Protocol):
    """One asyncio connection, as a protocol: bytes go straight from the transport to the framing.

    No stream reader in between (its buffer copy and a future per read): a call creates one
    future, the transport's ``data_received`` completes it when the answer's last frame is in,
    and one timer handle is the call's deadline.
    """

    def __init__(self, framing: _Framing) -> None:
        self.framing = framing
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[str] | None = None
        self.error: BaseException | None = None
        self.handshaking = True

    @classmethod
    async def open(cls, url: str, timeout: float) -> _AsyncSocket:
        framing = _Framing(url)
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(timeout):
            _, self = await loop.create_connection(
                lambda: cls(framing), framing.uri.host, framing.uri.port
            )
            try:
                self.waiter = loop.create_future()
                self.transport.write(framing.outgoing())
                await self.waiter  # the handshake's answer
            except BaseException:
                self.close()
                raise
        self.waiter = None
        return self

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        try:
            text = self.framing.feed(data)
        except Exception as e:  # noqa: BLE001 - handed to the waiting call, which raises it
            self._fail(e)
            return
        pending = self.framing.outgoing()  # pongs, close answers
        if pending:
            self.transport.write(pending)
        waiter = self.waiter
        if text is None and self.handshaking and self.framing.open:
            self.handshaking, text = False, ""
        if text is not None and waiter is not None and not waiter.done():
            waiter.set_result(text)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc or ConnectionError("the server closed the connection"))

    def _fail(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
            self.close()
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(self.error)

    def _expire(self) -> None:
        self._fail(TimeoutError())

    async def call(self, text: str, timeout: float) -> str:
        if self.error is not None:
            raise ConnectionError(f"the connection was lost: {self.error!r}")
        if self.waiter is not None:
            raise RuntimeError("one call at a time per handle: fork() it for concurrent episodes")
        self.waiter = waiter = self.loop.create_future()
        self.transport.write(self.framing.send(text))
        timer = self.loop.call_later(timeout, self._expire)
        try:
            return await waiter
        finally:
            timer.cancel()
            self.waiter = None

    def close(self) -> None:
        transport, self.transport = self.transport, None
        if transport is not None and not self.loop.is_closed():  # else it went with its loop
            transport.abort()


def _frame(op: str, **fields: Any) -> str:
    return json.dumps({"op": op, **{k: v for k, v in fields.items() if v is not None}})


def step_frame(message_json: str, seq: int) -> str:
    """The ``step`` frame around a message already serialised (text or message object)."""
    return f'{{"op":"step","seq":{seq},"message":{message_json}}}'


@dataclass(frozen=True)
class Limits:
    """A channel's limits: what its :class:`~envhub.client.http_env.HTTPEnv` was given."""

    timeout: float
    """Deadline of one answer, in seconds."""
    retries: int
    """Tries after a dropped connection or a refused call (see :class:`envhub.wire.Backoff`)."""
    admission_s: float
    """Seconds a call is sent again while a saturated server refuses it unstarted."""
    max_frame: int = 0
    """The server's body limit (``max_body_bytes``; 0: none known)."""


class _Base:
    """A channel's session, step count and reading of answers (no I/O)."""

    def __init__(self, url: str, limits: Limits) -> None:
        """A channel to the server at ``url``.

        A step frame over the server's limit is not sent: its stand-in says only its size
        (``oversized``), and the server answers the model's ``invalid_action``. A frame over
        the server's WebSocket buffer would cut the connection instead, and a message the
        model made too long must never read as the server's ``infra_error``.
        """
        self.url, self.limits, self.timeout = ws_url(url), limits, limits.timeout
        self.max_frame = limits.max_frame
        self.sid: str | None = None
        self.secret = ""
        self.steps = 0

    def _sized(self, frame: str) -> str:
        """The step ``frame``, or over the server's limit the frame that gives its size."""
        if self.max_frame and len(frame) > self.max_frame:
            return _frame("step", seq=self.steps + 1, oversized=len(frame.encode()))
        return frame

    def _backoff(self) -> Backoff:
        return Backoff(self.limits.retries, self.limits.admission_s)

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
            backoff = backoff or self._backoff()
            pause = backoff.pause(err["kind"] == OVERLOADED)
            if pause is not None:
                return backoff, pause
        raise_for_error(err["code"], err["kind"], err["error"])
        raise AssertionError("unreachable")

    def _dropped(self, error: BaseException, backoff: Backoff | None) -> tuple[Backoff, float]:
        """The pause before reconnecting after ``error``; raises past the retries."""
        backoff = backoff or self._backoff()
        pause = backoff.pause(False)
        if pause is None:
            raise _failure(error, self.timeout) from error
        return backoff, pause

    def _resumed(self, text: str) -> None:
        if text.startswith('{"error"'):
            err = json.loads(text)
            sid, self.sid = self.sid, None
            raise Transient(f"session {sid} lost after a reconnect: {err['error']}")

    def _reset_result(self, text: str) -> ResetResponse:
        result = ResetResponse.model_validate_json(text)
        self.sid, self.secret, self.steps = result.session_id, result.session_secret, 0
        return result

    def _resume_frame(self) -> str:
        return _frame("resume", session_id=self.sid, session_secret=self.secret)

    def forget(self) -> None:
        """Drop the session (after its episode failed)."""
        self.sid, self.steps = None, 0


def _failure(e: BaseException, timeout: float) -> Transient:
    if isinstance(e, TimeoutError):
        return Transient(f"no answer within the deadline of {timeout:g} s")
    return Transient(f"connection failed: {type(e).__name__}: {e}")


_DROPPED = (OSError, EOFError, WebSocketException)
"""What a dropped connection raises (socket errors, a closed stream, a protocol EOF)."""


class Channel(_Base):
    """One session over one WebSocket; its calls are plans (:mod:`envhub.client.plan`).

    The socket is a :class:`_SyncSocket` when the plans are driven with blocking calls, an
    :class:`_AsyncSocket` when awaited: one channel serves one of the two.
    """

    _sock: Any = None

    def _call(self, text: str) -> Plan[str]:
        backoff = pause = None
        while True:
            try:
                if self._sock is None:
                    sock = yield WsOpen(self.url, self.timeout)
                    if self.sid:
                        self._resumed((yield WsCall(sock, self._resume_frame(), self.timeout)))
                    self._sock = sock
                answer = yield WsCall(self._sock, text, self.timeout)
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

    def reset(self, seed: int | None, task_id: str | None) -> Plan[ResetResponse]:
        """Start an episode (the connection's previous session is closed by the server)."""
        return self._reset_result(
            (yield from self._call(_frame("reset", seed=seed, task_id=task_id)))
        )

    def step(self, message_json: str) -> Plan[StepResult]:
        """One step; ``message_json`` is the message (object or string) as JSON."""
        text = yield from self._call(self._sized(step_frame(message_json, self.steps + 1)))
        self.steps += 1
        return StepResult.model_validate_json(text)

    def close_session(self) -> None:
        """Close the session on a blocking connection, if up, without awaiting the answer.

        The server reads the ``close`` before it sees the connection end (TCP keeps the
        order), so the round trip would only wait; a session it never reads expires. An
        asyncio connection just closes: its session expires on the server.
        """
        if self.sid and isinstance(self._sock, _SyncSocket):
            try:
                self._sock.send(_frame("close"))
            except (*_DROPPED, TimeoutError):
                pass
        self.forget()

    def close_socket(self) -> None:
        """Close the connection (the session stays on the server)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def connect(op: WsOpen) -> _SyncSocket:
    """A blocking connection for a plan's :class:`~envhub.client.plan.WsOpen`."""
    return _SyncSocket(op.url, op.timeout)


async def aconnect(op: WsOpen) -> _AsyncSocket:
    """An asyncio connection for a plan's :class:`~envhub.client.plan.WsOpen`."""
    return await _AsyncSocket.open(op.url, op.timeout)
