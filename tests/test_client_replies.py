"""A remote envhub server that floods its answers is the environment's fault, read bounded (issue 33).

The runners' client reads every answer within :func:`envhub.client.reading.reply_limit`: a
step or verification answered with 100 MiB (declared, close-delimited, or chunked without
end) ends ``env_error`` with the rest unread, on both drivers and both wires, and what the
client holds stays near the bound. An answer that is not the body asked for is the server's
``env_error`` too, never a crash of the caller and never the model's.
"""

from __future__ import annotations

import asyncio
import tracemalloc

import pytest
from hostile_envhub import HostileEnvhub, HostileEnvhubWs

from envhub.client.reading import MIN_REPLY_BYTES
from envhub.client.remote_env import RemoteEnv
from envhub.errors import EpisodeError
from envhub.types import Status

FLOODS = ["huge-declared", "huge-undeclared", "huge-endless"]


@pytest.fixture(scope="module")
def hostile():
    server = HostileEnvhub()
    yield server
    server.close()


def _peak(call):
    """``call()`` and the most memory Python held while it ran, in bytes."""
    tracemalloc.start()
    try:
        return call(), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("mode", FLOODS)
@pytest.mark.parametrize("transport", ["http", "auto"])  # auto: /ws refused, HTTP for good
def test_a_flooded_step_is_env_error_and_read_bounded(hostile, mode, transport):
    env = RemoteEnv(f"{hostile.url}/{mode}", timeout=10, transport=transport)
    env.reset()
    step, peak = _peak(lambda: env.step("4"))
    env.close()
    assert (step.info.status, step.reward, step.truncated) == (Status.ENV_ERROR, 0.0, True)
    assert f"over the {MIN_REPLY_BYTES}-byte reply bound" in step.info.error
    assert peak < 2 * MIN_REPLY_BYTES


@pytest.mark.parametrize("mode", FLOODS)
def test_an_awaited_flooded_step_is_env_error(hostile, mode):
    env = RemoteEnv(f"{hostile.url}/{mode}", timeout=10, transport="http")

    async def episode():
        await env.areset()
        return await env.astep("4")

    step = asyncio.run(episode())
    env.close()
    assert (step.info.status, step.reward) == (Status.ENV_ERROR, 0.0)
    assert "reply bound" in step.info.error


@pytest.mark.parametrize("mode", FLOODS)
def test_a_flooded_verification_is_env_error(hostile, mode):
    env = RemoteEnv(f"{hostile.url}/{mode}", timeout=10, transport="http")
    score = env.verify("t0", "4")
    env.close()
    assert (score.status, score.reward) == (Status.ENV_ERROR, 0.0)
    assert "reply bound" in score.error


def test_a_step_flooded_over_the_websocket_is_env_error():
    server = HostileEnvhubWs()
    try:
        env = RemoteEnv(server.url, timeout=10, transport="ws")
        env.reset()
        step, peak = _peak(lambda: env.step("4"))
        env.close()
    finally:
        server.close()
    assert (step.info.status, step.reward) == (Status.ENV_ERROR, 0.0)
    assert "reply bound; the rest was not read" in step.info.error
    assert peak < 2 * MIN_REPLY_BYTES


def test_an_answer_that_is_no_step_is_env_error_not_a_crash(hostile):
    env = RemoteEnv(f"{hostile.url}/html", timeout=10, transport="http")
    env.reset()
    step = env.step("4")
    score = env.verify("t0", "4")
    env.close()
    assert (step.info.status, step.reward) == (Status.ENV_ERROR, 0.0)
    assert "answered no valid StepResult" in step.info.error
    assert score.status is Status.ENV_ERROR and "no valid VerifyResponse" in score.error


def test_a_flooded_reset_raises_the_servers_fault(hostile):
    env = RemoteEnv(f"{hostile.url}/reset-huge-endless", timeout=10, transport="http")
    with pytest.raises(EpisodeError, match="reply bound") as caught:
        env.reset()
    env.close()
    assert caught.value.status is Status.ENV_ERROR


def test_a_well_behaved_server_still_pays(hostile):
    env = RemoteEnv(f"{hostile.url}/fine", timeout=10, transport="http")
    env.reset()
    step = env.step("4")
    env.close()
    assert (step.info.status, step.reward) == (Status.OK, 1.0)
