"""The core reaches the parts above it only through entry points (issue 13, point 1).

``envhub.cli`` gets ``serve``/``docker``/``eval``/``train`` from the ``envhub.cli`` group, and
``make(..., runner="docker")`` its runner from ``envhub.runners``; a part that cannot load
keeps its verb and names the install command; a YAML naming an old top-level package is told
the new path. Entry points need the install's metadata (``pip install -e .``).
"""

from __future__ import annotations

import re
import sys
from importlib.metadata import EntryPoint

import pytest
import typer
from typer.testing import CliRunner

import envhub
from envhub import cli, make
from envhub.errors import ConfigError, DependencyMissing, EnvhubError
from envhub.install import install_command


def _verbs(app: typer.Typer) -> set[str]:
    return set(typer.main.get_command(app).commands)


def test_the_parts_register_their_verbs():
    assert {"serve", "docker", "eval", "train", "convert-smollm2"} <= _verbs(cli.app)
    assert {"list", "info", "tasks", "verify", "register", "init", "check"} <= _verbs(cli.app)


def test_a_part_that_cannot_load_keeps_its_verb_and_names_the_install(monkeypatch):
    broken = EntryPoint("serve", "envhub_no_such_part.cli:register [server]", "envhub.cli")
    monkeypatch.setattr(cli, "entry_points", lambda group: {"serve": broken})
    app = typer.Typer()

    @app.callback()
    def _root() -> None: ...

    assert cli.add_parts(app) == ["serve"]
    assert "serve" in _verbs(app)
    res = CliRunner().invoke(app, ["serve", "gsm8k", "--port", "1"])
    assert res.exit_code == 1
    assert install_command(["server"]) in res.output


def test_no_registered_parts_says_the_metadata_is_stale(monkeypatch):
    import envhub.install

    monkeypatch.setattr(envhub.install, "checkout", lambda: None)  # an installed wheel
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group: [])
    app = typer.Typer()
    assert cli.add_parts(app) == []
    assert "Reinstall envhub" in app.info.epilog


def test_the_docker_runner_comes_from_its_entry_point():
    from envhub.docker import make_env
    from envhub.registry.make import runner_for

    assert runner_for("docker") is make_env
    with pytest.raises(ConfigError, match="unknown runner 'nope'.*'docker'"):
        runner_for("nope")


def test_interop_starts_an_openenv_image_with_the_docker_parts_run_image(monkeypatch):
    """Interop imports the Docker part (the layout allows it): no entry point in between."""
    import envhub.docker
    from envhub.interop.openenv.image import ImageServer
    from envhub.spec import EnvSpec

    started = []

    class Handle:
        url = "http://127.0.0.1:9"

    def run_image(spec, image, **kwargs):
        started.append((spec.name, image, kwargs["port"]))
        return Handle()

    monkeypatch.setattr(envhub.docker, "run_image", run_image)
    spec = EnvSpec(name="oe-guess", entry_point="x:y")
    server = ImageServer(spec, "guess-env:latest", 8000, {}, start_timeout_s=5)
    assert server.url() == Handle.url and started == [("oe-guess", "guess-env:latest", 8000)]


def test_a_runner_whose_extra_is_missing_names_the_install(monkeypatch):
    make_module = sys.modules["envhub.registry.make"]
    broken = EntryPoint("docker", "envhub_no_such_part.docker:make_env [docker]", "envhub.runners")
    monkeypatch.setattr(make_module, "_plugin_runners", lambda: {"docker": broken})
    with pytest.raises(DependencyMissing, match=re.escape(install_command(["docker"]))):
        make("gsm8k", runner="docker")


def test_an_old_entry_point_gets_the_new_path(tmp_path):
    yaml = tmp_path / "old.yaml"
    yaml.write_text(
        "environments:\n"
        "  - name: old-math\n"
        "    version: 1\n"
        "    family: math\n"
        "    entry_point: envs.math.env:MathEnv\n"
        "    dataset: {kind: builtin, generator: gsm8k}\n"
    )
    with pytest.raises(EnvhubError) as err:  # the registration refuses the file
        envhub.register(str(yaml))
    assert "did you mean envhub.envs.math.env:MathEnv?" in str(err.value)
