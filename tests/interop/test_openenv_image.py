"""`options.image`: an OpenEnv environment's image, started and removed by envhub's Docker runner.

The image is the toy OpenEnv server (``tests/support/toy_openenv.py``) on the offline base image
that ``scripts/ci-docker.sh start`` builds (it holds openenv-core: the ``interop-openenv`` extra);
nothing is pulled. Tests marked ``docker`` skip, saying why, without an engine or that base.
"""

from __future__ import annotations

import os
import shutil

import pytest

import envhub
from envhub.errors import InfraError, RegistryError
from envhub.interop.openenv import OpenEnvEnv
from envhub.spec import EnvSpec
from envhub.types import Status

pytest.importorskip(
    "openenv.core.env_server",
    reason="the OpenEnv tests need openenv-core: pip install -c constraints.txt -e '.[interop-openenv]'",
)
from openenv_games import EXPECTED, TOY, play, register, toy_server

TAG = "envhub-test-openenv-toy:latest"
DOCKERFILE = """\
ARG BASE
FROM ${BASE}
COPY toy_openenv.py /srv/toy_openenv.py
USER 10001
CMD ["python3", "/srv/toy_openenv.py", "8000", "0.0.0.0"]
"""


def _docker():
    pytest.importorskip("docker", reason="the Docker SDK: pip install -e '.[docker]'")
    from envhub.docker import containers

    return containers


def _engine_or_skip():
    dk = _docker()
    try:
        return dk.engine()
    except dk.DockerUnavailable as e:
        pytest.skip(f"no Docker engine: {e}")


@pytest.fixture(scope="module")
def toy_image(tmp_path_factory):
    """The toy's image, built on the offline base image (removed after the module)."""
    import docker.errors

    from envhub.docker.image import LABEL_BASE_EXTRAS

    client = _engine_or_skip()
    base = os.environ.get("ENVHUB_DOCKER_BASE_IMAGE") or "envhub-base:offline"
    try:
        extras = (client.images.get(base).labels or {}).get(LABEL_BASE_EXTRAS, "")
    except docker.errors.ImageNotFound:
        pytest.skip(f"no base image {base}: `scripts/ci-docker.sh start` builds it")
    if "interop-openenv" not in extras.split(","):
        pytest.skip(f"base image {base} lacks openenv-core (extras {extras or 'unknown'})")
    folder = tmp_path_factory.mktemp("toy-image")
    shutil.copy(TOY, folder)
    (folder / "Dockerfile").write_text(DOCKERFILE)
    client.images.build(path=str(folder), tag=TAG, buildargs={"BASE": base}, pull=False, rm=True)
    yield TAG
    client.images.remove(TAG, force=True)


def _mine(client, name):
    """This process's containers of entry ``name`` (by the labels the sweep reads)."""
    dk = _docker()
    found = client.containers.list(all=True, filters={"label": f"{dk.LABEL_OWNER}={os.getpid()}"})
    return [c for c in found if c.labels.get(dk.LABEL_ENV) == name]


# ------------------------------------------------------------------ no engine needed


@pytest.mark.parametrize(
    "options",
    [{}, {"base_url": "http://127.0.0.1:1", "image": "x:1"}, {"catalog": "catalog.json"}],
    ids=["neither", "both", "catalog-without-card"],
)
def test_an_entry_gives_base_url_or_image(tmp_path, clean_user_registry, options):
    with pytest.raises(RegistryError, match=r"one of options\.base_url .*, options\.image .*"):
        register(tmp_path, **options)


@pytest.mark.parametrize(
    ("options", "wrong"),
    [
        ({"port": 0}, "options.port"),
        ({"port": "8000"}, "options.port"),
        ({"environment": ["A=1"]}, "options.environment"),
        ({"image": ""}, "options.image"),
    ],
)
def test_bad_image_options_are_refused_at_registration_without_docker(
    tmp_path, clean_user_registry, options, wrong
):
    with pytest.raises(RegistryError, match=wrong.replace(".", r"\.")):
        register(tmp_path, **{"image": TAG, **options})


def test_no_docker_engine_is_infra_error_saying_how_to_start_one(
    tmp_path, clean_user_registry, monkeypatch
):
    dk = _docker()
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/envhub-test.sock")
    monkeypatch.setattr(dk, "_clients", {})
    spec = EnvSpec.model_validate(
        {"name": "guess", "entry_point": "envhub.interop.openenv:OpenEnvEnv", "max_turns": 4}
    )
    with OpenEnvEnv(spec, image=TAG) as env, pytest.raises(InfraError) as err:
        env.reset()
    msg = str(err.value)
    assert TAG in msg and "unix:///nonexistent/envhub-test.sock" in msg
    assert "ci-docker.sh start" in msg and "DOCKER_HOST" in msg
    # registering plays a reset, as with a base_url whose server is down: refused, saying why
    with pytest.raises(InfraError, match="ci-docker.sh start"):
        register(tmp_path, image=TAG)


# ------------------------------------------------------------------ with an engine


@pytest.mark.docker
def test_an_image_missing_from_the_engine_says_how_to_build_or_pull_it(
    tmp_path, clean_user_registry
):
    _engine_or_skip()
    missing = "envhub-test-no-such-openenv:never"
    with pytest.raises(InfraError) as err:  # registering plays a reset
        register(tmp_path, image=missing)
    msg = str(err.value)
    name = "guess"
    assert f"{name}: options.image {missing!r}" in msg and f"`docker pull {missing}`" in msg
    assert "openenv build" in msg and f"docker build -t {missing}" in msg


@pytest.mark.docker
def test_an_openenv_image_plays_like_its_server_and_goes_on_close(
    toy_image, tmp_path, clean_user_registry
):
    client = _engine_or_skip()
    with toy_server() as (url, _):
        by_url = register(tmp_path, "guess-url", base_url=url, action_field="word")
        with envhub.make(by_url) as env:
            served = play(env)
    name = register(tmp_path, image=toy_image, action_field="word", environment={"GUESS_LEVEL": 2})
    with envhub.make(name) as env:
        assert env.base_url.startswith("http://127.0.0.1:")  # loopback only
        assert play(env) == served == EXPECTED
        (container,) = _mine(client, name)
        assert "GUESS_LEVEL=2" in container.attrs["Config"]["Env"]
        assert container.attrs["HostConfig"]["ReadonlyRootfs"] is True
        bound = [b["HostIp"] for bs in (container.ports or {}).values() for b in bs or []]
        assert set(bound) <= {"127.0.0.1"}
        env.fork().close()  # a fork leaves the container to its owner
        container.reload()
        assert container.status == "running" and play(env) == EXPECTED
    assert _mine(client, name) == []


@pytest.mark.docker
def test_a_server_that_never_answers_health_is_infra_error_and_removed(
    toy_image, tmp_path, clean_user_registry
):
    client = _engine_or_skip()
    name = "guess"
    with pytest.raises(InfraError) as err:  # registering plays a reset
        register(tmp_path, name, image=toy_image, port=9, start_timeout_s=3)  # nothing on 9
    msg = str(err.value)
    assert "/health within 3s" in msg and "(options.start_timeout_s: 3)" in msg
    assert _mine(client, name) == []


@pytest.mark.docker
def test_a_container_killed_from_outside_is_replaced_at_the_next_reset(
    toy_image, tmp_path, clean_user_registry
):
    client = _engine_or_skip()
    name = register(tmp_path, image=toy_image, action_field="word")
    with envhub.make(name) as env:
        env.reset(task_id="seed-0")
        (first,) = _mine(client, name)
        first.kill()
        step = env.step("apple")  # the episode died with its container: not the model's doing
        assert step.info.status is Status.INFRA_ERROR
        assert play(env) == EXPECTED
        (second,) = [c for c in _mine(client, name) if c.status != "exited"]
        assert second.id != first.id
    assert _mine(client, name) == []
