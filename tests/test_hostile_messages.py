"""A corpus of pathological messages against EVERY catalog entry, over every runner.

Beside ``test_all_envs.py`` (the contract on good play), this is the contract on hostile play
(issue 17): huge numbers, deep nesting, lone surrogates, NULs, 20k unclosed tags, a megabyte
of text, mixed scripts and tool calls of every wrong shape (``tests/support/hostile_corpus.py``),
sent at every turn. Each step is answered with a status the model owns (``ok``,
``invalid_action``, ``timeout``; never ``env_error`` or ``infra_error``, which would drop the
sample from training) within the step deadline, and a server is still healthy afterwards.

Runners and what they get (to keep CI to about a minute):

* in-process: every message, through ``step`` at every turn, and through ``verify`` for
  single-turn entries (the ~90 generated ``rg-`` entries on three tasks each);
* HTTP (a server started by the test, in a thread): every message for multi-turn entries, a sample of the
  worst ones for single-turn entries (of the ``rg-`` entries, which share one class: two);
* Docker: the sample, on the multi-turn entries, when an engine answers (else skipped).

Entries tagged ``needs-data`` are skipped with that reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import threading
import time

import httpx
import pytest
from hostile_corpus import MODEL_OWNED, SAMPLE, corpus

import envhub
from envhub.core import STEP_TIMEOUT_S, TaskEnv
from envhub.types import Message

CATALOG = envhub.catalog()
IDS = CATALOG.ids()
GENERATED = "reasoning-gym"
"""The family of generated entries (one class, ~90 reasoning-gym generators): each entry is
played in-process on :data:`GENERATED_TASKS` tasks, and over HTTP on :data:`GENERATED_HTTP`."""
GENERATED_TASKS = 3
GENERATED_HTTP = ("rg-basic_arithmetic-v1", "rg-composite-v1")
HTTP_IDS = [i for i in IDS if CATALOG.spec(i).family != GENERATED or i in GENERATED_HTTP]
DEADLINE_S = STEP_TIMEOUT_S
"""No step may take longer than the step deadline (the server's and the client's are longer)."""


def _spec_or_skip(env_id: str):
    spec = CATALOG.spec(env_id)
    if "needs-data" in spec.tags:
        pytest.skip(f"{env_id} needs a dataset that is not available offline")
    return spec


def _make(env_id: str):
    """The environment, with a few tasks per split for the generated family."""
    spec = CATALOG.spec(env_id)
    if spec.family != GENERATED:
        return envhub.make(env_id)
    return envhub.make(env_id, dataset={**spec.dataset.model_dump(), "size": GENERATED_TASKS})


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
    env = _make(env_id)
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


def _stalled(times: list[float]) -> float:
    """The slowest ``/health`` answer, less what the machine's load alone makes every answer take.

    A blocked event loop (the bug) stalls one answer for the whole parse while the others stay
    fast; a loaded machine slows them all. The median answer stands for the load.
    """
    return max(times) - 9 * statistics.median(times)


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

    from envhub.client.remote_env import RemoteEnv
    from envhub.server.app import create_app

    with running(create_app(_make(env_id))) as url, RemoteEnv(url) as env:
        yield env


@pytest.mark.parametrize("env_id", HTTP_IDS)
def test_over_http(env_id):
    spec = _spec_or_skip(env_id)
    with _served(env_id) as env:
        messages = corpus(_tool_names(env))
        if spec.max_turns == 1:
            messages = [m for m in messages if m[0] in SAMPLE]
        with _watching_health(env.url) as health:
            _play(env, messages)
        assert _stalled(health) < HEALTH_S, f"/health took {max(health):.2f} s"
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
