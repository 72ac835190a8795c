"""A corpus of pathological messages against EVERY catalog entry, over every runner.

Beside ``test_all_envs.py`` (the contract on good play), this is the contract on hostile play
(issue 17): huge numbers, deep nesting, lone surrogates, NULs, 20k unclosed tags, a megabyte
of text, mixed scripts and tool calls of every wrong shape, sent at every turn. Each step is
answered with a status the model owns (``ok``, ``invalid_action``, ``timeout``; never
``env_error`` or ``infra_error``, which would drop the sample from training) within the step
deadline, and a server is still healthy afterwards.

Runners and what they get (to keep CI to about a minute):

* in-process: every message, through ``step`` at every turn, and through ``verify`` for
  single-turn entries;
* HTTP (a server started by the test, in a thread): every message for multi-turn entries, a sample of the
  worst ones for single-turn entries;
* Docker: the sample, on the multi-turn entries, when an engine answers (else skipped).

Entries tagged ``needs-data`` are skipped with that reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time

import httpx
import pytest

import envhub
from envhub.core import STEP_TIMEOUT_S, TaskEnv
from envhub.types import FunctionCall, Message, Status, ToolCall

CATALOG = envhub.catalog()
IDS = CATALOG.ids()
MODEL_OWNED = {Status.OK, Status.INVALID_ACTION, Status.TIMEOUT}
DEADLINE_S = STEP_TIMEOUT_S
"""No step may take longer than the step deadline (the server's and the client's are longer)."""
DEEP = "[" * 50_000 + "]" * 50_000
TAGS = ("move", "moves", "column", "guess", "answer", "think", "tool_call")


def _call(name: str, arguments: str, i: int = 0) -> ToolCall:
    return ToolCall(id=f"c{i}", function=FunctionCall(name=name, arguments=arguments))


def _structured(*calls: ToolCall, content: str = "") -> Message:
    return Message(role="assistant", content=content, tool_calls=list(calls))


def _wrong_calls(tool: str) -> list[tuple[str, Message | str]]:
    """Tool calls of every wrong shape, to ``tool`` (one of the env's, or a made-up one)."""
    bad_args = ["[]", "null", "123", '"text"', "{bad", '{"query": 5}', '{"query": ""}',
                '{"query": "x", "extra": 1}', '{"k": "ten"}', DEEP, "9" * 5000,
                '{"query": "\\ud800", "doc_id": "\\udc00"}']  # fmt: skip
    text_shapes = ["[]", "null", '{"name": 5}', '{"arguments": {}}', '[{"name": "x"}, 1]',
                   f'{{"name": "{tool}", "arguments": {DEEP}}}',
                   json.dumps([{"name": tool, "arguments": {}}] * 2000),
                   f'{{"name": "{tool}", "arguments": {{"query": "\\ud800"}}}}']  # fmt: skip
    return [
        (f"structured {tool} args", _structured(*(_call(tool, a, i) for i, a in enumerate(bad_args)))),
        ("structured unknown tool", _structured(_call("rm_rf", "{}"), _call("", "{}", 1))),
        ("structured 500 calls", _structured(*(_call(tool, "{}", i) for i in range(500)))),
        (f"text {tool} shapes", "".join(f"<tool_call>{b}</tool_call>" for b in text_shapes)),
        ("text closing before opening", "</tool_call><tool_call></tool_call>" * 100),
    ]  # fmt: skip


def corpus(tools: list[str]) -> list[tuple[str, Message | str]]:
    """The pathological messages, named; tool calls target ``tools`` (and unknown tools)."""
    messages: list[tuple[str, Message | str]] = [
        ("huge numbers", "<move>" + "9" * 5000 + "</move> " + "7" * 5000 + " \\boxed{" + "9" * 5000 + "}"),
        ("huge code expression", "```python\nx = " + "+".join(["1"] * 100_000) + "\n```"),
        ("deep code expression", "```python\nx = " + "+".join(["1"] * 30_000) + "\n```"),
        ("deep parentheses", "```sql\nSELECT " + "(" * 20_000 + "1" + ")" * 20_000 + "\n```"
         " \\boxed{" + "(" * 20_000 + "}"),
        ("deep json", f"<tool_call>{DEEP}</tool_call> <answer>{DEEP}</answer>"),
        ("lone surrogates", "\ud800 <answer>\udfff</answer> <guess>\ud800</guess> "
         "```sql\nSELECT '\ud800'\n``` \\boxed{\ud800}"),
        ("NULs", "\x00" * 1000 + "<answer>\x00</answer><move>\x004</move>"
         "```python\n\x00\n```\n```sql\nSELECT '\x00'\n```\n#### 4\x00"),
        ("megabyte of text", "a" * 1_000_000),
        ("megabyte of code", "```python\n" + "x = 1\n" * 170_000 + "```"),
        ("mixed scripts", "Ответ: <answer>東京 مرحبا 🙂 ẞ İ</answer> <move>٤</move> "
         "<guess>ＣＲＡＮＥ</guess> <moves>↑↓←→</moves> \\boxed{٤٢} #### ४२"),
        ("unclosed fences", "```python\n" * 20_000),
        ("20k unclosed boxes", "\\boxed{" * 20_000 + " #### " * 20_000),
        ("towers and factorials", "\\boxed{10^{10^{10^{10}}}} \\boxed{100000!} #### 9^9^9^9"),
        ("nested fractions", "\\boxed{" + "\\frac{1}{" * 3000 + "2" + "}" * 3001),
    ]  # fmt: skip
    messages += [(f"20k unclosed <{t}>", f"<{t}>" * 20_000) for t in TAGS]
    messages.append(("20k mixed unclosed tags", "".join(f"<{t}>" for t in TAGS) * 3000))
    for tool in [*tools, "search"][:2]:
        messages += _wrong_calls(tool)
    return messages


SAMPLE = (
    "huge numbers",
    "huge code expression",
    "deep json",
    "lone surrogates",
    "NULs",
    "megabyte of text",
    "20k mixed unclosed tags",
    "20k unclosed <tool_call>",
    "20k unclosed boxes",
)
"""The messages every runner gets; the in-process runner (and HTTP for multi-turn) get all."""


def _spec_or_skip(env_id: str):
    spec = CATALOG.spec(env_id)
    if "needs-data" in spec.tags:
        pytest.skip(f"{env_id} needs a dataset that is not available offline")
    return spec


def _tool_names(env) -> list[str]:
    return [t["function"]["name"] for t in env.info().get("tools", [])]


def _play(env, messages: list[tuple[str, Message | str]]) -> None:
    """Send the messages in turn, each at a later turn of the running episode (a new episode
    when one ends), and hold every step to the status and deadline contract."""
    env.reset(seed=0)
    for seed, (name, message) in enumerate(messages, start=1):
        start = time.perf_counter()
        result = env.step(message)
        elapsed = time.perf_counter() - start
        where = f"{env.spec.name if hasattr(env, 'spec') else env}: {name!r}"
        assert result.info.status in MODEL_OWNED, (
            f"{where} -> {result.info.status}: {result.info.error}"
        )
        assert elapsed < DEADLINE_S, f"{where} took {elapsed:.1f} s"
        json.dumps(result.model_dump(), ensure_ascii=False).encode("utf-8")
        if result.done:
            env.reset(seed=seed)


@pytest.mark.parametrize("env_id", IDS)
def test_in_process(env_id):
    spec = _spec_or_skip(env_id)
    env = envhub.make(env_id)
    assert isinstance(env, TaskEnv)
    messages = corpus(_tool_names(env))
    _play(env, messages)
    if spec.max_turns == 1:
        task_id = env.tasks()[0].task_id
        scores = env.verify_batch([(task_id, m) for _, m in messages])
        bad = [
            (n, s.status, s.error)
            for (n, _), s in zip(messages, scores, strict=True)
            if s.status not in MODEL_OWNED
        ]
        assert bad == []


def _healthy(env) -> None:
    assert httpx.get(env.url + "/health", timeout=2.0).json() == {"status": "ok"}


HEALTH_S = 1.5
"""Slowest ``/health`` answer allowed while hostile messages are parsed (a 2 MB expression
stalled it 2-3 s, issue 17); loose, for a shared CI machine."""


@contextlib.contextmanager
def _watching_health(url: str):
    """Poll ``/health`` in the background; yields the list of its answer times."""
    times: list[float] = []
    stop = threading.Event()

    def poll() -> None:
        with httpx.Client(timeout=10.0) as client:
            while True:  # at least once, however short the play
                start = time.perf_counter()
                client.get(url + "/health")
                times.append(time.perf_counter() - start)
                if stop.wait(0.05):
                    break

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield times
    finally:
        stop.set()
        thread.join(15)


@contextlib.contextmanager
def _served(env_id: str):
    """An HTTP client of ``env_id`` served by this test (uvicorn in a thread: starts in
    0.5 s where ``envhub serve`` in a process takes 5-15 s on a loaded CI machine; the Docker
    runner below runs the real ``envhub serve``)."""
    from serving import running

    from envhub.remote import HTTPEnv
    from envhub.server.app import create_app

    with running(create_app(envhub.make(env_id))) as url, HTTPEnv(url) as env:
        yield env


@pytest.mark.parametrize("env_id", IDS)
def test_over_http(env_id):
    spec = _spec_or_skip(env_id)
    with _served(env_id) as env:
        messages = corpus(_tool_names(env))
        if spec.max_turns == 1:
            messages = [m for m in messages if m[0] in SAMPLE]
        with _watching_health(env.url) as health:
            _play(env, messages)
        assert max(health) < HEALTH_S, f"/health took {max(health):.2f} s"
        _healthy(env)
        if spec.max_turns == 1:
            task_id = env.tasks()[0].task_id
            scores = env.verify_batch([(task_id, m) for _, m in messages])
            assert [s.status for s in scores if s.status not in MODEL_OWNED] == []
        _healthy(env)


def _engine_or_skip() -> None:
    from envhub.errors import DependencyMissing
    from envhub.server import docker as dk

    if not os.environ.get("DOCKER_HOST"):
        pytest.skip("Docker runner: DOCKER_HOST is unset (scripts/ci-docker.sh start sets it)")
    try:
        dk.engine()
    except (DependencyMissing, dk.DockerUnavailable) as e:
        pytest.skip(f"Docker runner: no engine answers: {e}")


@pytest.mark.docker
@pytest.mark.parametrize("env_id", [i for i in IDS if CATALOG.spec(i).max_turns > 1])
def test_in_docker(env_id):
    _spec_or_skip(env_id)
    _engine_or_skip()
    with envhub.make(env_id, runner="docker") as env:
        messages = [m for m in corpus(_tool_names(env)) if m[0] in SAMPLE]
        _play(env, messages)
        _healthy(env)
