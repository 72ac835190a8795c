"""A NeMo Gym resources server that misbehaves on purpose, one way per path (issue 33).

``HostileServer()`` listens on 127.0.0.1; a POST to ``/<mode>/verify`` is answered by the
mode's misbehaviour (:data:`MODES`), so one server serves every attack of a test module.
"""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler

from serving import LoopbackHTTPServer

MB = 2**20


def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes, length: bool = True) -> None:
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    if length:
        handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def _trickle(handler: BaseHTTPRequestHandler) -> None:
    """Headers at once, then two bytes a second: never a whole answer."""
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.end_headers()
    for i in range(600):
        handler.wfile.write(b'{"reward": 1.0, "pad": "' if i == 0 else b"xx")
        handler.wfile.flush()
        time.sleep(0.5)


def _slow(handler: BaseHTTPRequestHandler) -> None:
    """A good answer, but only after 4 s: past the client's deadline."""
    time.sleep(4)
    _send(handler, 200, b'{"reward": 1.0}')


def _trickle_headers(handler: BaseHTTPRequestHandler) -> None:
    """The status line and headers one byte every 0.3 s: never a whole head in time."""
    for byte in b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 15\r\n":
        handler.wfile.write(bytes([byte]))
        handler.wfile.flush()
        time.sleep(0.3)


def _huge(handler: BaseHTTPRequestHandler, declared: bool) -> None:
    """A 100 MB answer that would score (``reward`` 1.0), declared or close-delimited."""
    head, tail = b'{"reward": 1.0, "pad": "', b'"}'
    size = 100 * MB
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    if declared:
        handler.send_header("content-length", str(len(head) + size + len(tail)))
    handler.end_headers()
    handler.wfile.write(head)
    for _ in range(size // MB):
        handler.wfile.write(b"x" * MB)
    handler.wfile.write(tail)


READS = 64 * 1024
"""What the ``reads-64k`` server reads: a longer request is refused with 413, as a proxy does."""


def _reads_64k(handler: BaseHTTPRequestHandler) -> None:
    if handler.body_size > READS:
        _send(handler, 413, b'{"detail": "Request Entity Too Large"}')
    else:
        _send(handler, 200, b'{"reward": 1.0}')


MODES = {
    "html": lambda h: _send(h, 200, b"<html><body>502 Bad Gateway</body></html>"),
    "array": lambda h: _send(h, 200, b"[1.0]"),
    "reward-string": lambda h: _send(h, 200, b'{"reward": "1"}'),
    "reward-nan": lambda h: _send(h, 200, b'{"reward": NaN}'),
    "reward-missing": lambda h: _send(h, 200, b'{"score": 1.0}'),
    "server-error": lambda h: _send(h, 500, b'{"detail": "boom"}'),
    "rejected": lambda h: _send(h, 422, b'{"detail": "bad row"}'),
    "rate-limited": lambda h: _send(h, 429, b'{"detail": "rate limited"}'),
    "reward-huge-int": lambda h: _send(h, 200, b'{"reward": 1' + b"0" * 400 + b"}"),
    "trickle": _trickle,
    "slow": _slow,
    "trickle-headers": _trickle_headers,
    "huge-declared": lambda h: _huge(h, True),
    "huge-undeclared": lambda h: _huge(h, False),
    "fine": lambda h: _send(h, 200, b'{"reward": 1.0}'),
    "reads-64k": _reads_64k,
}
"""Each misbehaviour, by the path prefix that asks for it."""


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.body_size = len(self.rfile.read(int(self.headers.get("content-length", "0"))))
        mode = self.path.strip("/").split("/")[0]
        try:
            MODES[mode](self)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading, as it should

    def log_message(self, *args) -> None:
        pass


class HostileServer(LoopbackHTTPServer):
    """The server, on a free port; :attr:`url` + ``/<mode>`` is one misbehaving base URL."""

    def __init__(self) -> None:
        super().__init__(_Handler)
