"""`envhub.interop.openenv:OpenEnvEnv`: an OpenEnv server (openenv-core's own) played by envhub."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import envhub
from envhub.client.child_server import free_port
from envhub.types import Status

pytest.importorskip(
    "openenv.core.env_server",
    reason="the OpenEnv tests need openenv-core: pip install -c constraints.txt -e '.[interop-openenv]'",
)
from children import stop

TOY = Path(__file__).parents[1] / "support" / "toy_openenv.py"


@contextlib.contextmanager
def toy_server():
    """The toy OpenEnv server in a process of its own (so a test can kill it)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(TOY), str(port)])
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(url + "/health", timeout=0.5).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    try:
        yield url, proc
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def toy():
    with toy_server() as (url, _):
        yield url


def _register(tmp_path, url, name="guess", **options):
    opts = ", ".join(f"{k}: {v!r}" for k, v in {"base_url": url, **options}.items())
    (tmp_path / f"{name}.yaml").write_text(
        f"name: {name}\nentry_point: envhub.interop.openenv:OpenEnvEnv\nmax_turns: 4\n"
        f"dataset: {{size: 8}}\noptions: {{{opts}}}\n"
    )
    envhub.register(tmp_path / f"{name}.yaml")
    return name


GAMES = {  # seed -> guesses; the word of seed s is WORDS[s % 4] (apple berry cherry damson)
    "seed-0": ["apple"],
    "seed-2": ["damson", "cherry"],
    "seed-3": ["apple", "berry", "cherry"],
}
"""Each guess list and the rewards the toy's rules give: 1.0 for the right word, else 0."""


def _play(env) -> dict[str, list[float]]:
    rewards = {}
    for task_id, guesses in GAMES.items():
        opened = env.reset(task_id=task_id)
        assert "guess a fruit" in opened.messages[-1].content
        rewards[task_id] = [env.step(word).reward for word in guesses]
    return rewards


def test_an_openenv_server_plays_the_same_in_process_and_over_http(
    toy, tmp_path, clean_user_registry
):
    name = _register(tmp_path, toy, action_field="word", template="{feedback} ({guesses})")
    expected = {"seed-0": [1.0], "seed-2": [0.0, 1.0], "seed-3": [0.0, 0.0, 0.0]}
    with envhub.make(name) as env:
        assert _play(env) == expected
        env.reset(task_id="seed-2")
        step = env.step("damson")
        assert step.messages[0].content == "earlier (1)"
        assert step.info.components == {"reward": 0.0} and not step.terminated
    with envhub.make(name, runner="http") as env:
        assert _play(env) == expected


def test_without_action_field_the_message_is_the_actions_json(toy, tmp_path, clean_user_registry):
    name = _register(tmp_path, toy)
    with envhub.make(name) as env:
        env.reset(task_id="seed-1")
        step = env.step('{"word": "berry"}')
        assert step.reward == 1.0 and step.terminated
        assert '"feedback": "correct"' in step.messages[0].content


@pytest.mark.parametrize(
    "message", ['{"wrd": "berry"}', "berry", "[1, 2]", '{"word": "boom"}', '{"word": 3}']
)
def test_a_refused_action_is_the_models_invalid_action_and_the_game_goes_on(
    toy, tmp_path, clean_user_registry, message
):
    name = _register(tmp_path, toy)
    with envhub.make(name) as env:
        env.reset(task_id="seed-1")
        step = env.step(message)
        assert step.info.status is Status.INVALID_ACTION and step.reward == 0.0
        assert not step.terminated and not step.truncated
        assert env.step('{"word": "berry"}').reward == 1.0


def test_a_dead_openenv_server_is_infra_error(tmp_path, clean_user_registry):
    with toy_server() as (url, proc):
        name = _register(tmp_path, url, action_field="word")
        with envhub.make(name) as env:
            env.reset(task_id="seed-0")
            stop(proc)
            step = env.step("berry")
            assert step.info.status is Status.INFRA_ERROR
            with pytest.raises(envhub.errors.InfraError, match="cannot reach the OpenEnv server"):
                env.reset(task_id="seed-0")
