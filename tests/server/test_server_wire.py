"""What the server says to a person: offline /docs, forgiving bodies, one-line client errors."""

import logging
import re

import httpx
import pytest
from serving import running

import envhub
from envhub.server.app import ServerSettings, create_app


@pytest.fixture
def env(dummy_registry):
    return envhub.make("echo")


@pytest.fixture
def app(env):
    return create_app(env, ServerSettings(max_body_bytes=4096, answers=True))


@pytest.fixture
def url(app):
    with running(app) as u:
        yield u


def test_docs_and_every_asset_come_from_the_server_itself(url):
    page = httpx.get(url + "/docs")
    assert page.status_code == 200
    refs = re.findall(r"""(?:src|href)=["']([^"']+)["']|url: *["']([^"']+)["']""", page.text)
    refs = [a or b for a, b in refs]
    assert any(r.endswith(".js") for r in refs) and any(r.endswith(".css") for r in refs)
    for ref in refs:
        assert ref.startswith("/"), f"/docs refers to {ref}, outside the server (needs network)"
        r = httpx.get(url + ref)
        assert r.status_code == 200 and len(r.content) > 100, ref
    assert "openapi" in httpx.get(url + "/openapi.json").json()
    assert "http://" not in page.text and "https://" not in page.text


def _session(url):
    """The ``session_id`` and ``session_secret`` of a new episode, as a body to extend."""
    opened = httpx.post(url + "/reset", json={"task_id": "train/0"}).json()
    return {k: opened[k] for k in ("session_id", "session_secret")}


def test_step_takes_a_plain_string_or_a_message_object(url):
    r = httpx.post(url + "/step", json={**_session(url), "message": "alpha"})
    assert r.status_code == 200 and r.json()["info"]["status"] == "ok"
    assert r.json()["reward"] == 1.5
    obj = {"role": "assistant", "content": "alpha"}
    r = httpx.post(url + "/step", json={**_session(url), "message": obj})
    assert r.status_code == 200 and r.json()["reward"] == 1.5


def test_422_shows_the_expected_shape(url):
    r = httpx.post(url + "/step", json={"session": "x", "text": "hi"})
    assert r.status_code == 422 and r.json()["kind"] == "invalid_request"
    error = r.json()["error"]
    assert "session_id" in error and "expected a body like" in error
    assert '"message": "42"' in error


def test_malformed_json_says_send_json_and_where(url):
    r = httpx.post(
        url + "/step",
        content=b'{"session_id": "s",\n "message": hello}',
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 422 and r.json()["kind"] == "invalid_request"
    assert "send JSON" in r.json()["error"] and "line 2 column 13" in r.json()["error"]


def test_chunked_body_over_the_limit_is_413_in_the_servers_shape(url):
    def chunks():
        yield b'{"items": [{"task_id": "train/0", "response": "'
        for _ in range(10):
            yield b"x" * 1000
        yield b'"}]}'

    r = httpx.post(url + "/verify", content=chunks(), headers={"content-type": "application/json"})
    assert r.request.headers.get("transfer-encoding") == "chunked"
    assert r.status_code == 413
    assert r.json() == {"error": "request body over 4096 bytes", "kind": "too_large"}


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def server_logs():
    handler = _Lines()
    names = ("uvicorn.error", "envhub.server")
    for name in names:
        logging.getLogger(name).addHandler(handler)
    yield handler.records
    for name in names:
        logging.getLogger(name).removeHandler(handler)


def test_a_bad_request_logs_one_line_and_a_bug_keeps_its_traceback(env, url, server_logs):
    session = _session(url)
    bad = [
        httpx.post(url + "/reset", json={"task_id": "no-such-task"}),
        httpx.get(url + "/tasks", params={"limit": 0}),
        httpx.post(url + "/step", json={**session, "message": {"role": "user"}}),
        httpx.post(url + "/verify", json={"items": [{"task_id": "nope", "response": "x"}]}),
        httpx.post(url + "/step", content=b"{", headers={"content-type": "application/json"}),
    ]
    assert [r.status_code for r in bad] == [404, 422, 422, 404, 422]
    assert len(server_logs) == len(bad)
    for record in server_logs:
        assert record.levelno == logging.WARNING and record.exc_info is None
        assert "\n" not in record.getMessage()
    server_logs.clear()

    def broken(split=None):
        raise RuntimeError("a real bug")

    env.tasks = broken  # a genuine bug in the served env: a 500 whose traceback is logged
    r = httpx.get(url + "/tasks")
    assert r.status_code == 500 and r.json()["kind"] == "internal"
    assert any(rec.exc_info and rec.levelno >= logging.ERROR for rec in server_logs)
