"""Environments as packages: a scaffolded folder installed with pip shows up through the
``envhub.environments`` entry-point group, with no registration; a clash names both."""

import os
import shutil
import subprocess
import sys

import pytest

import envhub
from envhub.authoring.scaffold import init

ROOT = os.path.dirname(os.path.dirname(envhub.__file__))


pytestmark = pytest.mark.usefixtures("clean_user_registry")


def _python(code, site, cwd):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, str(site)])}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def test_pip_installed_env_is_found_by_entry_point(tmp_path):
    src = init("pkgrev", parent=tmp_path / "src", register=False)
    site = tmp_path / "site"  # a private install target, put on sys.path of the child
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", "--target", str(site), str(src)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stderr
    [info] = site.glob("envhub_pkgrev-*.dist-info")  # it depends on envhub-rl, not PyPI's envhub
    assert "Requires-Dist: envhub-rl\n" in (info / "METADATA").read_text()
    shutil.rmtree(src)  # the installed copy must stand alone
    code = (
        "import envhub\n"
        "from importlib.metadata import entry_points\n"
        "print([e.name for e in entry_points(group='envhub.environments')])\n"
        "print('pkgrev-v1' in envhub.catalog().ids())\n"
        "e = envhub.make('pkgrev'); e.reset(task_id='rev-1')\n"
        "print(e.step('<answer>revir</answer>').reward)\n"
    )
    run = _python(code, site, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:3] == ["['pkgrev']", "True", "1.1"]
    listed = subprocess.run(
        [sys.executable, "-m", "envhub.cli", "list"], cwd=tmp_path, capture_output=True,
        text=True, env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{site}"}, timeout=120,
    )  # fmt: skip
    assert listed.returncode == 0 and "pkgrev-v1" in listed.stdout

    # the same name registered in the catalog too: an error that names both
    again = init("pkgrev", parent=tmp_path / "again", register=False)
    envhub.register(again / "pkgrev.yaml", link=True)
    clash = _python("import envhub; envhub.catalog()", site, tmp_path)
    assert clash.returncode != 0
    assert "pkgrev-v1 is provided twice: by package 'envhub-pkgrev'" in clash.stderr
    assert "envhub unregister pkgrev-v1" in clash.stderr


@pytest.mark.slow
def test_pip_installed_env_trains_two_steps_with_the_tiny_model(tmp_path):
    import json

    import yaml

    src = init("pkgsum", "math", parent=tmp_path / "src", register=False)
    site = tmp_path / "site"
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", "--target", str(site), str(src)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stderr
    config = yaml.safe_load(open(os.path.join(ROOT, "examples", "tiny.yaml")))
    config["env"] = {"name": "pkgsum", "timeout_s": 30}  # the installed env, as it is
    config["train"]["steps"] = 2
    config["checkpoint"] = {"every": 0}
    (tmp_path / "train.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, str(site)])}
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "envhub.cli", "train", str(tmp_path / "train.yaml"), "--out",
         str(out)], env=env, capture_output=True, text=True, timeout=900, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
