"""An ``envhub serve`` look-alike that floods its answers on purpose (issue 33).

``HostileEnvhub()`` speaks envhub's HTTP routes on 127.0.0.1: ``{url}/<mode>`` is a base URL
whose ``/info`` and ``/reset`` answer well and whose ``/step`` and ``/verify`` answer as the mode
says (:data:`MODES`); under ``reset-<mode>`` the reset does. It has no ``/ws``, so ``transport="auto"`` falls back to HTTP.
``HostileEnvhubWs()`` is the same over the WebSocket (``/info`` over HTTP, the episode on
``/ws``): a step is answered with a message over the client's bound, in fragments.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler

from serving import LoopbackHTTPServer
from websockets.exceptions import ConnectionClosed
from websockets.sync.server import serve

MB = 2**20
HUGE = 100 * MB
"""Over the client's reply bound (64 MiB)."""

INFO = {
    "name": "hostile",
    "version": 1,
    "id": "hostile-v1",
    "spec": {"name": "hostile", "entry_point": "dummy_envs:EchoEnv"},
    "server": {"max_body_bytes": 4_000_000},
}
PAD = "@PAD@"
"""Where a flood's padding goes: a string field, so that the answer read whole would pay."""
RESET = {
    "messages": [{"role": "user", "content": f"2+2?{PAD}"}],
    "info": {"task_id": "t0"},
    "session_id": "s0",
    "session_secret": "secret",
}
STEP = {
    "messages": [{"role": "user", "content": f"Correct.{PAD}"}],
    "reward": 1.0,
    "terminated": True,
    "truncated": False,
    "info": {"task_id": "t0", "components": {"correctness": 1.0}},
}
SCORES = {"scores": [{"reward": 1.0, "components": {"correctness": 1.0}, "error": PAD}]}


def _send(handler: BaseHTTPRequestHandler, body: bytes, status: int = 200) -> None:
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def _flood(handler: BaseHTTPRequestHandler, how: str, answer: dict) -> None:
    """``answer`` padded to 100 MiB: declared, close-delimited, or chunked without end.

    Read whole, it is a valid answer that pays 1.0: a client that reads it has no bound.
    """
    head, tail = (part.encode() for part in json.dumps(answer).split(PAD))
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    if how == "declared":
        handler.send_header("content-length", str(len(head) + HUGE + len(tail)))
    if how == "endless":
        handler.send_header("transfer-encoding", "chunked")
    handler.end_headers()
    if how == "endless":
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(head), head))
        while True:  # until the client hangs up
            handler.wfile.write(b"%x\r\n%s\r\n" % (MB, b"x" * MB))
    handler.wfile.write(head)
    for _ in range(HUGE // MB):
        handler.wfile.write(b"x" * MB)
    handler.wfile.write(tail)
    handler.close_connection = True


def _fine(answer: dict) -> bytes:
    return json.dumps(answer).replace(PAD, "").encode()


MODES = {
    "huge-declared": lambda h, answer: _flood(h, "declared", answer),
    "huge-undeclared": lambda h, answer: _flood(h, "undeclared", answer),
    "huge-endless": lambda h, answer: _flood(h, "endless", answer),
    "html": lambda h, answer: _send(h, b"<html><body>502 Bad Gateway</body></html>"),
    "fine": lambda h, answer: _send(h, _fine(answer)),
}
"""Each misbehaviour of ``/step`` and ``/verify``, by the path prefix that asks for it."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path.endswith("/info"):
            _send(self, json.dumps(INFO).encode())
        else:
            _send(self, b'{"error": "not found"}', 404)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        mode, _, route = self.path.strip("/").rpartition("/")
        try:
            if route == "reset" and mode.startswith("reset-"):
                MODES[mode.removeprefix("reset-")](self, RESET)
            elif route == "reset":
                _send(self, _fine(RESET))
            elif route in ("step", "verify"):
                MODES[mode](self, STEP if route == "step" else SCORES)
            else:
                _send(self, b"{}")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client stopped reading, as it should

    def log_message(self, *args) -> None:
        pass


class HostileEnvhub(LoopbackHTTPServer):
    """The HTTP server on a free port; :attr:`url` + ``/<mode>`` is one misbehaving base URL."""

    def __init__(self) -> None:
        super().__init__(_Handler)


def _info_over_http(connection, request):
    """``GET /info`` answered before the WebSocket handshake; ``/ws`` goes on to it."""
    if request.path == "/info":
        return connection.respond(200, json.dumps(INFO))
    return None


def _fragments(answer: dict):
    """``answer`` padded to 100 MiB, as one message in fragments of 1 MiB (each under the bound)."""
    head, tail = json.dumps(answer).split(PAD)
    yield head
    for _ in range(HUGE // MB):
        yield "x" * MB
    yield tail


def _ws_handler(connection) -> None:
    try:
        for raw in connection:
            op = json.loads(raw).get("op")
            if op == "reset":
                connection.send(_fine(RESET).decode())
            elif op == "step":
                connection.send(_fragments(STEP))
            else:
                return
    except ConnectionClosed:
        return  # the client hung up on the flood, as it should


class HostileEnvhubWs:
    """The WebSocket server on a free port; its :attr:`url` floods every step."""

    def __init__(self) -> None:
        self.server = serve(
            _ws_handler, "127.0.0.1", 0, process_request=_info_over_http, max_size=MB
        )
        self.url = f"http://127.0.0.1:{self.server.socket.getsockname()[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
