"""A misbehaving OpenEnv server is never the model's fault, and never a reward (issue 33).

An answer to a reset or a step must be an ``observation`` frame whose ``data`` is an object:
a frame with no ``type`` that says ``reward: 1.0, done: true``, a ``state`` frame, ``data``
null, false or 0 are the server's ``env_error``, never an empty observation that pays.

Each misbehaviour of :mod:`hostile_openenv` is played through ``OpenEnvEnv``: a bad step
answer is ``env_error`` (or ``infra_error`` for a session the server dropped), never the
model's ``invalid_action``; a bad reset answer is an error the caller sees, never a
``JSONDecodeError``. Each is played both ways: with the sync API (a blocking connection) and
awaited (an asyncio connection, as a server plays it), with the same statuses.
"""

from __future__ import annotations

import asyncio
import re
import time

import pytest
from hostile_openenv import HostileOpenEnv

import envhub
from envhub.errors import EpisodeError, InfraError
from envhub.interop.openenv.env import OpenEnvEnv
from envhub.spec import EnvSpec
from envhub.types import Status


@pytest.fixture(scope="module")
def hostile():
    server = HostileOpenEnv()
    yield server
    server.close()


def _env(tmp_path, base_url: str, timeout_s: float = 5):
    (tmp_path / "hostile.yaml").write_text(
        "name: hostile-openenv\nentry_point: envhub.interop.openenv:OpenEnvEnv\nmax_turns: 4\n"
        f"dataset: {{size: 2}}\noptions: {{base_url: {base_url!r}, action_field: word, "
        f"timeout_s: {timeout_s}}}\n"
    )
    envhub.register(tmp_path / "hostile.yaml")
    return envhub.make("hostile-openenv")


def _play(env, awaited: bool, message: str | None = "apple"):
    """Reset on seed 0, then step ``message`` (none: only the reset): sync or awaited."""
    if not awaited:
        env.reset(seed=0)
        return None if message is None else env.step(message)

    assert type(env).async_steps  # awaited natively, not on a thread

    async def play():
        try:
            await env.areset(seed=0)
            return None if message is None else await env.astep(message)
        finally:
            await asyncio.to_thread(env.close)  # the connection closed on its own loop

    return asyncio.run(play())


BOTH = pytest.mark.parametrize("awaited", [False, True], ids=["sync", "awaited"])


@pytest.mark.parametrize(
    ("mode", "status", "says"),
    [
        ("step-html", Status.ENV_ERROR, "OpenEnv server (step) answered with no JSON"),
        ("step-done-string", Status.ENV_ERROR, "done='false', not true or false"),
        ("step-reward-string", Status.ENV_ERROR, "reward='1', not a number"),
        ("step-binary", Status.ENV_ERROR, "answered step with a binary frame"),
        ("step-array", Status.ENV_ERROR, "answered a list, not a JSON object"),
        ("step-expired", Status.INFRA_ERROR, "SESSION_ERROR: expired"),
        ("step-error-data-list", Status.ENV_ERROR, "error frame holds a list, not an object"),
        ("step-error-code-list", Status.ENV_ERROR, "has code ['VALIDATION_ERROR'], not a string"),
        ("step-capacity", Status.INFRA_ERROR, "CAPACITY_REACHED: 8 of 8"),
        ("step-no-type", Status.ENV_ERROR, "frame of type None, not an observation"),
        ("step-type-state", Status.ENV_ERROR, "frame of type 'state', not an observation"),
        ("step-type-list", Status.ENV_ERROR, "frame of type ['observation'], not an"),
        ("step-data-null", Status.ENV_ERROR, "step data is null, not an object"),
        ("step-data-false", Status.ENV_ERROR, "step data is bool False, not an object"),
        ("step-data-zero", Status.ENV_ERROR, "step data is int 0, not an object"),
        ("step-data-missing", Status.ENV_ERROR, "step data is null, not an object"),
        ("step-reward-huge-int", Status.ENV_ERROR, "reward=1000000000000"),
    ],
)
@BOTH
def test_a_bad_step_answer_is_the_servers_fault(
    hostile, tmp_path, clean_user_registry, mode, status, says, awaited
):
    with _env(tmp_path, f"{hostile.url}/{mode}") as env:
        step = _play(env, awaited)
    assert (step.info.status, step.reward) == (status, 0.0)
    assert says in step.info.error


@pytest.mark.parametrize("mode", ["step-slow", "step-trickle"])
@BOTH
def test_a_step_not_answered_in_time_is_infra_error_not_the_models_timeout(
    hostile, tmp_path, clean_user_registry, mode, awaited
):
    """The remote's delay (slow, or a message trickled in fragments) is the machinery's."""
    with _env(tmp_path, f"{hostile.url}/{mode}", timeout_s=1) as env:
        started = time.monotonic()
        step = _play(env, awaited)
        took = time.monotonic() - started
    assert (step.info.status, step.reward) == (Status.INFRA_ERROR, 0.0)
    assert "did not answer step within 1 s" in step.info.error
    assert took < 2.5


@pytest.mark.parametrize("mode", ["reset-slow", "reset-trickle"])
@BOTH
def test_a_reset_not_answered_in_time_is_infra_error(
    hostile, tmp_path, clean_user_registry, mode, awaited
):
    with (
        pytest.raises(InfraError, match="did not answer reset within 1 s"),
        _env(tmp_path, f"{hostile.url}/{mode}", timeout_s=1) as env,
    ):
        _play(env, awaited, None)


@BOTH
def test_a_validation_error_with_nonsense_fields_is_still_the_models_and_bounded(
    hostile, tmp_path, clean_user_registry, awaited
):
    with _env(tmp_path, f"{hostile.url}/step-validation-garbage") as env:
        step = _play(env, awaited)
    assert step.info.status is Status.INVALID_ACTION and step.reward == 0.0
    assert "VALIDATION_ERROR: Invalid message (" in step.messages[0].content
    assert len(step.messages[0].content) < 2500


BAD_RESETS = [
    ("reset-garbage", "OpenEnv server (reset) answered with no JSON"),
    ("reset-observation-list", "reset observation is not an object"),
    ("reset-type-state", "answered reset with a frame of type 'state', not an observation"),
    ("reset-data-null", "reset data is null, not an object"),
]


@pytest.mark.parametrize(("mode", "says"), BAD_RESETS)
def test_a_bad_reset_answer_is_the_servers_error(
    hostile, tmp_path, clean_user_registry, mode, says
):
    with (
        pytest.raises(EpisodeError, match=re.escape(says)),
        _env(tmp_path, f"{hostile.url}/{mode}") as env,
    ):
        env.reset(seed=0)


@pytest.mark.parametrize(("mode", "says"), BAD_RESETS)
def test_a_bad_reset_answer_awaited_is_the_servers_error_too(hostile, mode, says):
    spec = EnvSpec(name="hostile-openenv", max_turns=4, dataset={"size": 2})
    env = OpenEnvEnv(spec, base_url=f"{hostile.url}/{mode}", action_field="word", timeout_s=5)
    with pytest.raises(EpisodeError, match=re.escape(says)):
        _play(env, True, None)


@BOTH
def test_a_well_behaved_server_still_pays(hostile, tmp_path, clean_user_registry, awaited):
    with _env(tmp_path, f"{hostile.url}/fine") as env:
        step = _play(env, awaited)
    assert (step.info.status, step.reward, step.terminated) == (Status.OK, 1.0, True)


@pytest.mark.parametrize("message", ["[" * 100_000, '{"a":' * 50_000, "1" * 5000])
@BOTH
def test_an_action_json_nested_past_the_parsers_depth_is_the_models(
    hostile, tmp_path, clean_user_registry, message, awaited
):
    """Without ``action_field`` the model writes the action's JSON: JSON nested deeper than the
    parser goes (a ``RecursionError``, no ``JSONDecodeError``) was the environment's
    ``env_error``, so a model escaped its reward by writing ``[[[[...``."""
    (tmp_path / "json.yaml").write_text(
        "name: json-openenv\nentry_point: envhub.interop.openenv:OpenEnvEnv\nmax_turns: 4\n"
        f"dataset: {{size: 2}}\noptions: {{base_url: {hostile.url + '/fine'!r}, timeout_s: 5}}\n"
    )
    envhub.register(tmp_path / "json.yaml")
    with envhub.make("json-openenv") as env:
        step = _play(env, awaited, message)
    assert (step.info.status, step.reward) == (Status.INVALID_ACTION, 0.0)
    assert "not the action's JSON" in step.info.error


@pytest.mark.parametrize("message", ["😀" * 200_000, "\x00" * 200_000])
@BOTH
def test_an_action_too_big_for_the_servers_frame_bound_is_the_models(
    hostile, tmp_path, clean_user_registry, message, awaited
):
    """A message within envhub's 256,000 characters is a frame of up to 12 bytes a character
    (JSON escapes): over ``websockets``' 1 MiB bound, the server closes with 1009 (message too
    big). That was ``infra_error``, so a model escaped its reward with a long reply: it is the
    model's ``invalid_action``, and the episode ends (the connection is gone)."""
    with _env(tmp_path, f"{hostile.url}/fine") as env:
        step = _play(env, awaited, message)
    assert (step.info.status, step.reward, step.terminated) == (Status.INVALID_ACTION, 0.0, True)
    assert "too big for the OpenEnv server" in step.info.error
