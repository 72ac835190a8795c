"""`envhub.interop.openenv:OpenEnvEnv`: an OpenEnv server (openenv-core's own) played by envhub."""

from __future__ import annotations

import pytest

import envhub
from envhub.types import Status

pytest.importorskip(
    "openenv.core.env_server",
    reason="the OpenEnv tests need openenv-core: pip install -c constraints.txt -e '.[interop-openenv]'",
)
from children import stop
from openenv_games import EXPECTED, play, register, toy_server


@pytest.fixture(scope="module")
def toy():
    with toy_server() as (url, _):
        yield url


def _register(tmp_path, url, name="guess", **options):
    return register(tmp_path, name, base_url=url, **options)


def test_an_openenv_server_plays_the_same_in_process_and_over_http(
    toy, tmp_path, clean_user_registry
):
    name = _register(tmp_path, toy, action_field="word", template="{feedback} ({guesses})")
    with envhub.make(name) as env:
        assert play(env) == EXPECTED
        env.reset(task_id="seed-2")
        step = env.step("damson")
        assert step.messages[0].content == "earlier (1)"
        assert step.info.components == {"reward": 0.0} and not step.terminated
    with envhub.make(name, runner="http") as env:
        assert play(env) == EXPECTED


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
