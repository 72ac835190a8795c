"""The WebSocket wire's I/O: one connection to ``envhub serve``'s ``/ws``, blocking or asyncio.

Why not a WebSocket library's connection object: the sync clients of the maintained libraries
run a reader thread per connection (one thread hop per message, 256 threads for 256 sessions),
which costs more CPU than the whole step. Here ``websockets``' sans-I/O protocol does the
framing (:class:`_Framing`) and the caller's own thread (:class:`_SyncSocket`) or event loop
(:class:`_AsyncSocket`) does the I/O, so a step costs one send, one receive and one
pydantic-core parse.

A socket knows nothing of sessions: :mod:`envhub.client.ws_wire` decides what to send, and
:meth:`envhub.client.pool.Pool.perform` opens (:func:`connect`, :func:`aconnect`) and calls
the sockets a plan asks for. Every call has a deadline; a refused handshake raises
:class:`~envhub.client.transport.WsRefused`, every other failure the socket's own error
(``OSError``, ``TimeoutError``, a protocol error), which the wire's plan reads.
"""

from __future__ import annotations

import asyncio
import math
import socket
import struct
import time

from websockets.client import ClientProtocol
from websockets.exceptions import PayloadTooBig
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from ..errors import EpisodeError
from .plan import WsOpen
from .transport import WsRefused


class LoopGone(ConnectionError):
    """An asyncio connection was called from an event loop other than its own.

    Each ``asyncio.run`` makes a new loop; nothing was sent, a new connection is needed.
    """


class _Framing:
    """``websockets``' sans-I/O client protocol, reduced to what a session needs."""

    def __init__(self, url: str, max_size: int) -> None:
        self.uri = parse_uri(url)
        self.max_size = max_size
        self.proto = ClientProtocol(self.uri, max_size=max_size)
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
        if isinstance(self.proto.parser_exc, PayloadTooBig):  # the server's, not the network's
            raise EpisodeError(
                f"the server at {self.uri.host}:{self.uri.port} answered a message over the "
                f"{self.max_size}-byte reply bound; the rest was not read"
            )
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

    def __init__(self, url: str, timeout: float, max_size: int) -> None:
        self.framing = _Framing(url, max_size)
        uri = self.framing.uri
        self.sock = socket.create_connection((uri.host, uri.port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.sock.settimeout(None)
            self.timeout = 0.0
            self._set_timeout(timeout)
            self.sock.sendall(self.framing.outgoing())
            deadline = time.monotonic() + timeout
            while not self.framing.open:
                self._receive(deadline)
        except BaseException:
            self.close()
            raise

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
    async def open(cls, url: str, timeout: float, max_size: int) -> _AsyncSocket:
        framing = _Framing(url, max_size)
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
        if self.loop is not asyncio.get_running_loop():
            raise LoopGone("this connection belongs to an earlier event loop")
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

    def send(self, text: str) -> None:
        """Write ``text`` at once, awaiting no answer (a ``close``); on this connection's loop.

        Raises:
            ConnectionError: Called from elsewhere (a transport is not thread-safe), or the
                connection is gone.
        """
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not self.loop or self.transport is None or self.error is not None:
            raise ConnectionError("not on this connection's event loop, or the connection is gone")
        self.transport.write(self.framing.send(text))

    def close(self) -> None:
        transport, self.transport = self.transport, None
        if transport is not None and not self.loop.is_closed():  # else it went with its loop
            transport.abort()


def connect(op: WsOpen) -> _SyncSocket:
    """A blocking connection for a plan's :class:`~envhub.client.plan.WsOpen`."""
    return _SyncSocket(op.url, op.timeout, op.max_size)


async def aconnect(op: WsOpen) -> _AsyncSocket:
    """An asyncio connection for a plan's :class:`~envhub.client.plan.WsOpen`."""
    return await _AsyncSocket.open(op.url, op.timeout, op.max_size)
