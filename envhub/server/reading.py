"""The server's deadline on reading a request: its headers and its body, whole.

uvicorn bounds neither in time. Its ``timeout_keep_alive`` closes a connection idle *between*
requests (and any byte, however slow, restarts nothing: it is cancelled at the first one);
h11's ``h11_max_incomplete_event_size`` bounds how large the headers grow, not how long they
take. So a client that trickles its headers or its body a byte a second held its connection
for as long as it liked, and, once its headers were in, its request counted among those in
flight while the body dripped (slowloris: four such connections filled ``--max-inflight 2``).

:func:`protocol` makes uvicorn's HTTP protocol (httptools where installed, else h11: the
class uvicorn's ``http="auto"`` picks) with a deadline on each request, ``read_timeout_s``,
counted from when the connection opens, or on a kept-alive connection from the first byte of
the next request, to the last byte of the request's body. Past it, a request whose answer
has not started gets ``408`` (``kind: request_timeout``, ``connection: close``) and the
connection is closed; one the server already answered (it refused it before reading the
body) is closed. The app sees the client leave (``http.disconnect``). A WebSocket's
handshake is a request like any other; the deadline ends where the socket is upgraded.

What the deadline is measured against is uvicorn's own request cycle (its ``cycle``,
``more_body``, ``response_started``); ``tests/server/test_read_deadline.py`` drives both
protocol implementations.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from envhub.wire import ErrorBody

log = logging.getLogger("envhub.server")


def timeout_answer(read_timeout_s: float) -> bytes:
    """The whole ``408`` answer, status line to body, that closes the connection."""
    body = ErrorBody(
        error=f"the request was not received whole within {read_timeout_s:g} s (its headers "
        "and its body): send each request at once (a server behind a slow link: raise "
        "`envhub serve --read-timeout`)",
        kind="request_timeout",
    ).model_dump_json()
    head = (
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body.encode()


class ReadDeadline:
    """Mixin over a uvicorn HTTP protocol class: the deadline on reading each request.

    ``read_timeout_s`` is set by :func:`protocol`. A read starts when the connection opens
    and at the first byte of each later request; it ends when a request newer than the one
    current at its start has its whole body (``more_body`` false). One timer per connection
    serves many reads: a read that ends leaves it to lapse, and a timer that finds a later
    read under way waits out that read's remaining time (a timer armed and cancelled per
    request cost the server more CPU per request than the rest of the deadline).
    """

    read_timeout_s: float = 30.0
    _read_timer: asyncio.TimerHandle | None = None
    _reading: bool = False
    _read_started: float = 0.0
    _read_after: Any = None
    """The request cycle current when the read started (the one it is not about)."""

    def connection_made(self, transport: Any) -> None:
        """Start the connection, and the read of its first request."""
        super().connection_made(transport)  # type: ignore[misc]
        self._start_read()

    def data_received(self, data: bytes) -> None:
        """Start a read at a request's first byte; end it once its body is in."""
        if not self._reading:
            self._start_read()
        super().data_received(data)  # type: ignore[misc]
        self._check_read()

    def on_response_complete(self) -> None:
        """A buffered (pipelined) request may be read whole here, without new data."""
        super().on_response_complete()  # type: ignore[misc]
        self._check_read()

    def handle_websocket_upgrade(self, *args: Any) -> None:
        """The handshake is read: the socket is the WebSocket protocol's from here."""
        self._stop_reads()
        super().handle_websocket_upgrade(*args)  # type: ignore[misc]

    def connection_lost(self, exc: Exception | None) -> None:
        """Nothing left to read."""
        self._stop_reads()
        super().connection_lost(exc)  # type: ignore[misc]

    def _start_read(self) -> None:
        loop = self.loop  # type: ignore[attr-defined]
        self._reading, self._read_after = True, self.cycle  # type: ignore[attr-defined]
        self._read_started = loop.time()
        if self._read_timer is None:
            self._read_timer = loop.call_later(self.read_timeout_s, self._expired)

    def _stop_reads(self) -> None:
        self._reading = False
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _check_read(self) -> None:
        cycle = self.cycle  # type: ignore[attr-defined]
        if cycle is not None and cycle is not self._read_after and not cycle.more_body:
            self._reading = False

    def _expired(self) -> None:
        """408 to a request not read in time (unless answered already); close the connection."""
        self._read_timer = None
        if not self._reading:
            return
        left = self._read_started + self.read_timeout_s - self.loop.time()  # type: ignore[attr-defined]
        if left > 0:  # a later read than the one this timer was set for
            self._read_timer = self.loop.call_later(left, self._expired)  # type: ignore[attr-defined]
            return
        self._reading = False
        transport = self.transport  # type: ignore[attr-defined]
        if transport.is_closing():
            return
        cycle = self.cycle  # type: ignore[attr-defined]
        current = cycle if cycle is not self._read_after else None
        if current is None or not current.response_started:
            transport.write(timeout_answer(self.read_timeout_s))
        if current is not None:  # the app's next receive() says the client left; sends drop
            current.disconnected = True
            current.message_event.set()
        client = self.client  # type: ignore[attr-defined]
        who = f"{client[0]}:{client[1]}" if client else "a client"
        log.warning("%s sent no whole request within %g s: 408, connection closed",
                    who, self.read_timeout_s)  # fmt: skip
        transport.close()


def protocol(read_timeout_s: float, base: type[asyncio.Protocol] | None = None) -> type:
    """An HTTP protocol class for uvicorn, with a deadline on reading each request.

    ``base`` (by default the class uvicorn's ``http="auto"`` picks) with
    :class:`ReadDeadline`'s deadline of ``read_timeout_s``. Pass it as
    ``uvicorn.Config(http=...)``.
    """
    if base is None:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

        base = AutoHTTPProtocol
    attrs = {"read_timeout_s": read_timeout_s, "__doc__": ReadDeadline.__doc__}
    return type(f"ReadDeadline{base.__name__}", (ReadDeadline, base), attrs)
