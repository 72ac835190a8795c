"""``mcp_tools``: an environment whose tools come from a small MCP server started by the test.

The server is ``envhub/envs/mcp_tools/demo_server.py`` (a calculator, a capitals table and a sum),
run as a child process on a loopback port and stopped by its PID; the environment is the
example ``examples/mcp_tools.yaml`` pointed at it.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip(
    "mcp", reason="the mcp extra is not installed: pip install -c constraints.txt -e '.[mcp]'"
)

from mcp import MCPError

from envhub.client.child_server import free_port
from envhub.envs.mcp_tools.client import sort_failure
from envhub.envs.mcp_tools.grading import matches
from envhub.errors import ConfigError, GoldAnswerError, InfraError, InvalidAction
from envhub.registry.catalog import load_file
from envhub.registry.make import apply_overrides, make_local
from envhub.types import FunctionCall, Message, Status, StepResult, ToolCall

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "mcp_tools.yaml"
DEMO = ("-m", "envhub.envs.mcp_tools.demo_server", "--port")
HOSTILE = (str(ROOT / "tests" / "support" / "hostile_mcp.py"),)
"""A server whose answers the model's arguments steer (tests/support/hostile_mcp.py)."""


def start_server(port: int | None = None, args: tuple[str, ...] = DEMO):
    port = port or free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, *args, str(port)]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            assert proc.poll() is None, "the demo MCP server exited at start"
            time.sleep(0.1)
    stop(proc)
    raise AssertionError("the demo MCP server did not open its port within 30 s")


def stop(proc: subprocess.Popen) -> None:
    proc.kill()
    proc.wait(10)


@pytest.fixture(scope="module")
def server_url():
    proc, url = start_server()
    yield url
    stop(proc)


@pytest.fixture(scope="module")
def hostile_url():
    proc, url = start_server(args=HOSTILE)
    yield url
    stop(proc)


def make_env(url: str, **mcp):
    ((spec, _),) = load_file(EXAMPLE)
    spec = apply_overrides(spec, {"mcp": {"url": url, "timeout_s": 5, **mcp}})
    return make_local(spec)


def call(name: str, **arguments) -> Message:
    fn = FunctionCall(name=name, arguments=json.dumps(arguments))
    return Message(role="assistant", content="", tool_calls=[ToolCall(id="c1", function=fn)])


def text_call(body: str) -> Message:
    return Message(role="assistant", content=f"<tool_call>{body}</tool_call>")


def answer(text: str) -> Message:
    return Message(role="assistant", content=f"<answer>{text}</answer>")


def test_the_servers_tools_are_the_envs_tools_and_a_played_episode_pays_the_gold(server_url):
    env = make_env(server_url, tools=None)
    try:
        by_name = {t["function"]["name"]: t["function"] for t in env.tools()}
        assert set(by_name) == {"calculate", "capital", "total"}
        op = by_name["calculate"]["parameters"]["properties"]["op"]
        assert op["enum"] == ["+", "-", "*", "/"]
        opening = env.reset(task_id="q1")
        assert "calculate" in opening.messages[0].content  # described for text calls
        assert [t["function"]["name"] for t in opening.info.tools] == list(by_name)
        product = env.step(call("calculate", a=19, op="*", b=23))
        assert product.info.status is Status.OK and not product.done
        assert product.messages[0].role == "tool" and product.messages[0].content == "437"
        looked_up = env.step(text_call('{"name": "capital", "arguments": {"country": "Peru"}}'))
        assert "<tool_response>\nLima\n</tool_response>" in looked_up.messages[0].content
        final = env.step(answer("437"))
        assert final.terminated and final.info.status is Status.OK
        assert final.info.components["correctness"] == 1.0
        assert final.info.components["tool_calls"] == 2.0
        assert final.reward == pytest.approx(1.0 + 0.1 - 0.02)
        env.reset(task_id="q2")
        assert env.step(answer("Paris")).info.components["correctness"] == 0.0
    finally:
        env.close()


def test_a_tool_error_from_the_server_is_shown_to_the_model_and_the_episode_goes_on(server_url):
    env = make_env(server_url)
    try:
        env.reset(task_id="q2")
        failed = env.step(call("calculate", a=1, op="/", b=0))
        shown = failed.messages[0].content
        assert shown.startswith("Error: ") and "division by zero" in shown
        assert failed.info.status is Status.OK and not failed.done
        unknown = env.step(call("capital", country="Atlantis"))
        shown = unknown.messages[0].content
        assert shown.startswith("Error: ") and "unknown country 'Atlantis'" in shown
        final = env.step(answer("Lima"))
        assert final.info.components["correctness"] == 1.0
        assert final.info.components["tool_errors"] == 2.0
    finally:
        env.close()


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (call("calculator", a=1, op="+", b=2), "unknown tool 'calculator'"),
        (call("calculate", a="x", op="+", b=2), "must be of type number"),
        (call("calculate", a=1, op="%", b=2), "must be one of"),
        (
            text_call(
                '{"name": "total", "arguments": {"numbers": ' + "[" * 5000 + "]" * 5000 + "}}"
            ),
            "nested too deeply",
        ),
        (call("total", numbers=json.loads("[" * 40 + "]" * 40)), "nested deeper than 16"),
        (call("capital", country="x" * 20_000), "at most 8000 are sent"),
        (call("total", numbers=[1.5] * 3000), "at most 8000 are sent"),
    ],
    ids=[
        "unknown-tool",
        "bad-type",
        "bad-enum",
        "deep-json-text",
        "deep-json",
        "huge-string",
        "huge-list",
    ],
)
def test_a_hostile_tool_call_is_the_models_invalid_action(server_url, message, error):
    env = make_env(server_url, tools=None)
    try:
        env.reset(task_id="q1")
        result = env.step(message)
        assert result.info.status is Status.INVALID_ACTION, result.info.error
        assert error in result.info.error
        assert not result.done and "Error: " in result.messages[0].content
        after = env.step(call("calculate", a=19, op="*", b=23))  # the episode goes on
        assert after.info.status is Status.OK and after.messages[0].content == "437"
    finally:
        env.close()


def test_a_server_killed_mid_episode_is_infra_error_nothing_hangs_and_a_restart_is_found():
    proc, url = start_server()
    env = make_env(url)
    try:
        env.reset(task_id="q1")
        assert env.step(call("calculate", a=2, op="+", b=2)).messages[0].content == "4"
        stop(proc)
        started = time.monotonic()
        result = env.step(call("calculate", a=19, op="*", b=23))
        assert time.monotonic() - started < 10
        assert result.info.status is Status.INFRA_ERROR, result.info
        assert url in result.info.error and result.truncated
        assert result.info.components == {} and result.reward == 0.0
        with pytest.raises(InfraError, match="check that the server is running"):
            make_env(url).reset(task_id="q1")
        proc, _ = start_server(int(url.rsplit(":", 1)[1].split("/")[0]))  # restarted
        env.reset(task_id="q1")  # the next episode reconnects
        assert env.step(call("calculate", a=19, op="*", b=23)).messages[0].content == "437"
    finally:
        stop(proc) if proc.poll() is None else None
        env.close()


def test_an_allow_list_naming_a_tool_the_server_lacks_is_a_config_error(server_url):
    env = make_env(server_url, tools=["calculate", "weather"])
    with pytest.raises(ConfigError, match=r"\['weather'\].*offers \['calculate'"):
        env.tools()


def test_bad_mcp_options_are_config_errors_naming_the_fix():
    with pytest.raises(ConfigError, match="must be an http"):
        make_env("ws://127.0.0.1:1/mcp")
    with pytest.raises(ConfigError, match="must stay under the step deadline"):
        make_env("http://127.0.0.1:1/mcp", timeout_s=30)


@pytest.mark.parametrize(
    ("given", "gold", "expected"),
    [
        ("42.0", "42", True),
        ("1,591", "1591", True),
        ("forty-two", "42", False),
        ("41.9", "42", False),
        ("paris.", "Paris", True),
        ("New  york", "new york", True),
        ("Paris, France", "Paris", False),
        ("nan", "42", False),
        ("1e400", "1e400", False),
    ],
)
def test_grading_matches_numbers_by_value_and_text_normalised(given, gold, expected):
    if gold == "1e400":  # an infinite gold is no number: compared as text
        expected = True
        given = gold
    assert matches(given, gold) is expected


def test_a_missing_gold_is_the_envs_error_not_a_reward():
    with pytest.raises(GoldAnswerError):
        matches("42", None)


@contextlib.contextmanager
def tcp_listener(answer: bytes | None):
    """A loopback port that answers ``answer`` to any request, or never answers (``None``)."""
    sock = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def serve():
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            held.append(conn)
            if answer is not None:
                conn.recv(65536)
                conn.sendall(answer)
                conn.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        sock.close()
        for conn in held:
            conn.close()


NOT_MCP = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nhello"


@pytest.mark.parametrize(
    ("answer", "error"),
    [(None, "got no answer within 1 s"), (NOT_MCP, "failed")],
    ids=["silent", "not-mcp"],
)
def test_a_silent_or_non_mcp_server_is_infra_error_within_the_deadline(answer, error):
    with tcp_listener(answer) as url:
        env = make_env(url, timeout_s=1)
        started = time.monotonic()
        with pytest.raises(InfraError, match=error):
            env.reset(task_id="q1")
        assert time.monotonic() - started < 8
        env.close()


@pytest.mark.parametrize(("code", "status"), [(-32602, InvalidAction), (-32603, InfraError)])
def test_a_refusal_of_the_calls_params_is_the_models_any_other_protocol_error_infra(code, status):
    refusal = BaseExceptionGroup("task group", [MCPError(code, "bad params")])
    assert isinstance(sort_failure("http://x/mcp", "tool 't'", refusal, True), status)
    listing = sort_failure("http://x/mcp", "list_tools", MCPError(-32602, "x"), False)
    assert isinstance(listing, InfraError)  # the listing is no call of the model's


def test_forks_share_the_connection_and_play_concurrently(server_url):
    env = make_env(server_url)

    def play(i: int) -> str:
        fork = env.fork()
        fork.reset(task_id="q1")
        result = fork.step(call("calculate", a=i, op="*", b=3))
        assert result.info.status is Status.OK, result.info.error
        return result.messages[0].content

    try:
        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(play, range(32))) == [str(i * 3) for i in range(32)]
    finally:
        env.close()


@pytest.mark.parametrize(
    "message",
    [
        call("refuse", code=-32603),
        call("refuse", code=-32000),  # the code the SDK also gives a closed connection
        call("refuse", code=12345),
        call("shaped", n=-1),  # an answer that breaks the tool's own output schema
    ],
    ids=["internal-error", "server-error-code", "odd-code", "bad-output-shape"],
)
def test_a_failure_the_model_steers_the_server_into_is_a_tool_error_not_infra(hostile_url, message):
    env = make_env(hostile_url, tools=None)
    try:
        env.reset(task_id="q1")
        failed = env.step(message)
        assert failed.info.status is Status.OK, failed.info.error
        assert not failed.done
        assert failed.messages[0].content.startswith("Error: the server failed this call")
        after = env.step(call("echo", text="still here"))  # the connection was kept
        assert after.info.status is Status.OK and after.messages[0].content == "still here"
        final = env.step(answer("437"))
        assert final.info.components["tool_errors"] == 1.0
    finally:
        env.close()


def test_a_slow_call_the_model_chose_is_its_timeout_and_the_episode_goes_on(hostile_url):
    env = make_env(hostile_url, tools=None, timeout_s=1)
    try:
        env.reset(task_id="q1")
        slow = Message(
            role="assistant",
            tool_calls=[
                ToolCall(id="c1", function=FunctionCall(name="wait", arguments='{"seconds": 5}')),
                ToolCall(id="c2", function=FunctionCall(name="echo", arguments='{"text": "x"}')),
            ],
        )
        started = time.monotonic()
        result = env.step(slow)
        assert time.monotonic() - started < 4  # the deadline and a probe, not the 5 s asked
        assert result.info.status is Status.TIMEOUT and not result.done
        assert "gave no answer within 1 s" in result.info.error
        shown = [m.content for m in result.messages]
        assert "the server answers others" in shown[0] and "not run" in shown[1]
        after = env.step(call("echo", text="on"))
        assert after.info.status is Status.OK and after.messages[0].content == "on"
        final = env.step(answer("437"))
        assert final.info.components["invalid_calls"] == 1.0
        assert final.info.components["tool_calls"] == 2.0  # the call not run is not counted
    finally:
        env.close()


def while_a_call_is_in_flight(url: str, disturb) -> StepResult:
    """Run ``disturb(other_fork)`` while a fork's 1.5 s call is in flight; that call's result."""
    env = make_env(url, tools=None)
    patient, other = env.fork(), env.fork()
    patient.reset(task_id="q1")
    other.reset(task_id="q1")
    try:
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(patient.step, call("wait", seconds=1.5))
            time.sleep(0.5)  # the patient call is in flight on the shared connection
            disturb(other)
            return waiting.result(15)
    finally:
        env.close()


def test_one_episodes_failed_call_never_fails_another_episodes_call_in_flight(hostile_url):
    refused = []
    waited = while_a_call_is_in_flight(
        hostile_url, lambda other: refused.append(other.step(call("refuse", code=-32603)))
    )
    assert waited.info.status is Status.OK, waited.info.error
    assert waited.messages[0].content == "wait done"
    assert refused[0].info.status is Status.OK


def test_an_episode_that_ends_and_closes_its_fork_never_cuts_another_episodes_call(hostile_url):
    def end_and_close(other) -> None:
        assert other.step(answer("437")).done
        other.close()  # what a server's session table does when an episode ends

    waited = while_a_call_is_in_flight(hostile_url, end_and_close)
    assert waited.info.status is Status.OK, waited.info.error
    assert waited.messages[0].content == "wait done"
