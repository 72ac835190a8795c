"""Runner parity: the same seeds and actions through the in-process, HTTP and Docker runners
give identical observations, rewards, flags and infos, for one environment of every family in
the catalog at test time.

The remote runs go over both transports (the WebSocket ``/ws`` and the HTTP routes).
The in-process run records a transcript: per seed, ``reset`` and then the environment's own
reference actions (one seed starts with a wrong answer first, so failing rewards are compared
too). The HTTP and Docker runs replay the recorded actions and must reproduce every result.
The Docker part skips with the reason when no engine is reachable.
"""

from __future__ import annotations

import os

import httpx
import pytest

import envhub
from envhub.core import TaskEnv
from envhub.registry.catalog import catalog, spec
from envhub.types import Message

SEEDS = (0, 1, 2)
WRONG = "I am not sure; my final answer is 12345."


def _one_per_family() -> list[str]:
    """First catalog entry of each family whose data is offline (no hub dataset)."""
    chosen: dict[str, str] = {}
    for name in catalog().names():
        s = spec(name)
        if s.dataset.kind != "hf" and s.family not in chosen:
            chosen[s.family] = name
    return [chosen[f] for f in sorted(chosen)]


NAMES = _one_per_family()


PROVENANCE = {"sandbox"}
"""Info keys that say *where* a step ran, not what it gave: the code sandbox is bubblewrap on
the host and inside a container alike, but it is provenance, not a result. Only these are
left out of the comparison; observations, rewards, components, status and flags all count."""


def _dump(result) -> dict:
    data = result.model_dump(mode="json")
    for key in PROVENANCE:
        data["info"].pop(key, None)
    return data


def _transcript(name: str) -> list[tuple[int, list[Message], list[dict]]]:
    """Per seed: the actions played and every result (reset first), in process."""
    env = envhub.make(name, runner="local")
    runs = []
    try:
        for seed in SEEDS:
            results = [_dump(env.reset(seed=seed))]
            actions: list[Message] = []
            done = False
            while not done and len(actions) < env.spec.max_turns:
                action = None
                if isinstance(env, TaskEnv) and not (seed == 0 and not actions):
                    action = env.reference_action(env._episode)
                action = action or Message(role="assistant", content=WRONG)
                actions.append(action)
                step = env.step(action)
                results.append(_dump(step))
                done = step.terminated or step.truncated
            runs.append((seed, actions, results))
    finally:
        env.close()
    return runs


def _replay(env, runs) -> None:
    for seed, actions, expected in runs:
        got = [_dump(env.reset(seed=seed))]
        got += [_dump(env.step(a)) for a in actions]
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            assert g == e, f"seed {seed}, {'reset' if i == 0 else f'step {i}'} differs"


def _assert_all_over_ws(env, runs) -> None:
    """Every reset and step of the replay went over ``/ws``, none over the HTTP routes.

    ``ws_calls`` counts the server's WebSocket calls: a client that fell back to HTTP (a
    refused handshake, a step sent over ``/step``) leaves it short.
    """
    calls = sum(len(results) for _, _, results in runs)
    metrics = httpx.get(env.url + "/metrics", timeout=10).json()
    assert env.transport == "ws"
    assert metrics.get("ws_calls", 0) >= calls, (metrics, calls)


@pytest.fixture(scope="module", params=NAMES)
def transcript(request):
    return request.param, _transcript(request.param)


def test_catalog_has_families():
    assert len(NAMES) >= 2, NAMES


def test_transcripts_are_meaningful(transcript):
    name, runs = transcript
    rewards = [r["reward"] for _, _, results in runs for r in results[1:]]
    assert len(rewards) >= len(SEEDS), f"{name}: no steps were played"
    assert all(r["info"]["status"] in ("ok", "invalid_action") for _, _, rs in runs for r in rs), (
        name
    )


def test_in_process_is_deterministic(transcript):
    name, runs = transcript
    with envhub.make(name, runner="local") as env:
        _replay(env, runs)


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_http_parity(transcript, transport):
    name, runs = transcript
    with envhub.make(name, runner="http", transport=transport) as env:
        assert env.transport == transport
        _replay(env, runs)
        if transport == "ws":
            _assert_all_over_ws(env, runs)


@pytest.fixture(scope="module")
def docker_image():
    from envhub.docker import containers as dk
    from envhub.docker.image import image_for
    from envhub.errors import DependencyMissing

    try:
        client = dk.engine()
    except (DependencyMissing, dk.DockerUnavailable) as e:
        pytest.skip(f"no Docker engine: {e}")
    pinned = os.environ.get("ENVHUB_DOCKER_IMAGE")
    os.environ["ENVHUB_DOCKER_IMAGE"] = pinned or image_for(client, [])
    yield client
    if pinned is None:
        del os.environ["ENVHUB_DOCKER_IMAGE"]
    left = client.containers.list(all=True, filters={"label": f"{dk.LABEL_OWNER}={os.getpid()}"})
    assert [c.name for c in left] == []


@pytest.mark.docker
def test_docker_parity(transcript, docker_image):
    name, runs = transcript
    with envhub.make(name, runner="docker") as env:  # the WebSocket by default
        _replay(env, runs)
        _assert_all_over_ws(env, runs)
