"""A request the server cannot read whole in time holds nothing (slowloris; red team B9).

Each attack is played against both of uvicorn's HTTP protocols (httptools and h11) wrapped by
:func:`envhub.server.reading.protocol`: a body trickled a byte at a time gets 408 and its
connection closed at the read deadline (it used to be answered after 99 s); trickled headers,
and a connection that sends nothing, are closed too; connections that sent their headers and
one byte of body hold no place among the requests in flight (four of them used to fill
``--max-inflight 2``, so a legitimate reset got 503). What must not change: a request sent at
once on a kept-alive connection after a long pause, a step that works longer than the
deadline once its body is in, a WebSocket session that outlives it.
"""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest
from serving import running
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from websockets.sync.client import connect

import envhub
from envhub.server.app import ServerSettings, create_app
from envhub.server.reading import ReadDeadline, protocol

READ_S = 0.5


@pytest.fixture(params=[HttpToolsProtocol, H11Protocol], ids=["httptools", "h11"])
def served(request, dummy_registry):
    """The echo served with a read deadline of 0.5 s and two requests in flight at most."""
    settings = ServerSettings(read_timeout_s=READ_S, max_inflight=2, answers=True)
    app = create_app(envhub.make("echo"), settings)
    with running(app, http=protocol(READ_S, request.param)) as url:
        yield url, int(url.rsplit(":", 1)[1])


def _open(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _head(path: str, length: int) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"content-length: {length}\r\n\r\n"
    ).encode()


def _trickle(sock: socket.socket, data: bytes, every_s: float, limit_s: float) -> bytes:
    """Send ``data`` a byte every ``every_s`` until the server answers; what it answered."""
    sock.settimeout(every_s)
    started = time.monotonic()
    for byte in data:
        try:
            sock.sendall(bytes([byte]))
            answer = sock.recv(65536)
            return answer
        except TimeoutError:
            pass
        except OSError:
            return b""
        if time.monotonic() - started > limit_s:
            return b"STILL OPEN"
    return b"SENT WHOLE"


def _closed(sock: socket.socket) -> bool:
    """True once the server has closed the connection (it reads as EOF)."""
    sock.settimeout(5)
    try:
        while sock.recv(65536):
            pass
    except OSError:
        return True
    return True


def _response(sock: socket.socket) -> bytes:
    """One whole answer (head and ``content-length`` bytes of body) read from ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))  # fmt: skip
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def _status_and_body(answer: bytes) -> tuple[int, dict]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def _reset(url: str) -> dict:
    return httpx.post(url + "/reset", json={"task_id": "train/0"}, timeout=10).json()


def test_a_trickled_step_body_gets_408_at_the_deadline_and_is_closed(served):
    url, port = served
    opened = _reset(url)
    body = json.dumps({**{k: opened[k] for k in ("session_id", "session_secret")},
                       "message": "alpha"}).encode()  # fmt: skip
    with _open(port) as sock:
        sock.sendall(_head("/step", len(body)))
        started = time.monotonic()
        answer = _trickle(sock, body, 0.1, limit_s=10)
        took = time.monotonic() - started
        assert _closed(sock)
    status, error = _status_and_body(answer)
    assert (status, error["kind"]) == (408, "request_timeout")
    assert "not received whole within 0.5 s" in error["error"]
    assert took < READ_S + 1.5


def test_trickled_headers_get_408_and_are_closed(served):
    _, port = served
    with _open(port) as sock:
        started = time.monotonic()
        answer = _trickle(sock, b"POST /reset HTTP/1.1\r\nhost: 127.0.0.1\r\nx-a: " + b"a" * 200,
                          0.1, limit_s=10)  # fmt: skip
        took = time.monotonic() - started
        assert _closed(sock)
    assert answer.startswith(b"HTTP/1.1 408 ") and took < READ_S + 1.5


def test_a_connection_that_sends_nothing_is_closed(served):
    _, port = served
    with _open(port) as sock:
        started = time.monotonic()
        assert sock.recv(65536).startswith(b"HTTP/1.1 408 ")
        assert _closed(sock) and time.monotonic() - started < READ_S + 1.5


def test_bodies_that_trickle_hold_no_place_in_flight(served):
    """The attack: four connections send headers and one byte; a real reset must get in."""
    url, port = served
    socks = [_open(port) for _ in range(4)]
    try:
        for sock in socks:
            sock.sendall(_head("/reset", 100) + b"{")
        time.sleep(0.1)
        answers = [httpx.post(url + "/reset", json={"seed": 0}, timeout=10) for _ in range(3)]
        metrics = httpx.get(url + "/metrics", timeout=10).json()
    finally:
        for sock in socks:
            sock.close()
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert metrics.get("rejected_overload", 0) == 0


def test_a_request_sent_at_once_after_a_long_pause_is_read(served):
    """The deadline starts at a kept-alive connection's next byte, not at its last answer."""
    url, _ = served
    with httpx.Client(base_url=url, timeout=10) as client:
        assert client.post("/reset", json={"seed": 0}).status_code == 200
        time.sleep(READ_S * 2)  # idle, within uvicorn's keep-alive (5 s)
        assert client.post("/reset", json={"seed": 1}).status_code == 200


def test_a_later_request_gets_its_whole_deadline_on_a_kept_alive_connection(served):
    """Each request has the whole deadline from its first byte, whatever came before it."""
    _, port = served
    body = b'{"seed": 0}'
    with _open(port) as sock:
        sock.sendall(_head("/reset", len(body)) + body)
        assert _response(sock).startswith(b"HTTP/1.1 200 ")
        time.sleep(READ_S * 0.8)
        started = time.monotonic()
        sock.sendall(_head("/reset", 100) + b"{")
        sock.settimeout(10)
        answer = sock.recv(65536)
        took = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert READ_S * 0.9 < took < READ_S + 1.0


def test_a_step_that_works_past_the_deadline_once_read_is_answered(served):
    url, _ = served
    opened = _reset(url)
    secret = {k: opened[k] for k in ("session_id", "session_secret")}
    step = httpx.post(url + "/step", json={**secret, "message": "slow 1"}, timeout=10)
    assert step.status_code == 200 and step.json()["info"]["status"] == "ok"


def test_a_websocket_session_outlives_the_deadline(served):
    url, _ = served
    with connect(url.replace("http", "ws", 1) + "/ws") as ws:
        ws.send(json.dumps({"op": "reset", "task_id": "train/0"}))
        assert "session_id" in json.loads(ws.recv(timeout=10))
        time.sleep(READ_S * 3)
        ws.send(json.dumps({"op": "step", "message": "alpha"}))
        assert json.loads(ws.recv(timeout=10))["info"]["status"] == "ok"


def test_envhub_serve_runs_the_deadline(monkeypatch, dummy_registry):
    """``envhub serve --read-timeout S`` hands uvicorn the protocol with that deadline."""
    import contextlib

    import uvicorn

    from envhub.server import cli

    seen = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets: seen.append(self.config))
    monkeypatch.setattr(cli, "stop_signals", contextlib.nullcontext)
    monkeypatch.setattr(cli, "follow_parent", lambda: None)
    cli.serve("echo", port=0, read_timeout=7.0)
    (config,) = seen
    assert issubclass(config.http, ReadDeadline) and config.http.read_timeout_s == 7.0
