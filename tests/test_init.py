"""``envhub init`` writes a folder that passes ``envhub check`` for every family, and the
new-user path: init, edit three lines, check, serve, an episode over HTTP, no PYTHONPATH."""

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from children import stop

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli, a core dependency there
    import tomli as tomllib

import envhub
from envhub.authoring.scaffold import FAMILIES, init, render
from envhub.authoring.selfcheck import FAILED, run_checks, table
from envhub.client.child_server import free_port
from envhub.client.remote_env import RemoteEnv
from envhub.errors import ConfigError
from envhub.registry.catalog import spec as lookup

ROOT = os.path.dirname(os.path.dirname(envhub.__file__))


pytestmark = pytest.mark.usefixtures("clean_user_registry")


CASES = [(f, False) for f in sorted(FAMILIES)] + [
    (f, True) for f in sorted(FAMILIES) if not FAMILIES[f].multi_turn_always
]


@pytest.mark.parametrize(("family", "multi_turn"), CASES)
def test_init_then_check_passes(tmp_path, family, multi_turn):
    name = f"mine-{family}"
    folder = init(name, family, multi_turn, tmp_path)
    expected = {"env.py", f"{name}.yaml", "README.md", "pyproject.toml", "__init__.py"}
    assert expected <= {p.name for p in folder.iterdir()}
    assert (folder / "data" / "sample.jsonl").is_file()
    assert (folder / f"test_mine_{family}.py").is_file()
    spec = lookup(name)
    assert (spec.max_turns > 1) == (multi_turn or FAMILIES[family].multi_turn_always)
    results = run_checks(spec, ["bad_inputs", "gold", "http"] if multi_turn else None)
    assert all(r.outcome != FAILED for r in results), table(spec, results)
    assert [r.outcome for r in results if r.name == "gold"] == ["passed"]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_package_depends_on_envhub_rl_with_the_familys_extra(family):
    """``pip install .`` in a clean venv must bring this project, never PyPI's ``envhub``."""
    project = tomllib.loads(render("wordrev", family)["pyproject.toml"])["project"]
    extra = FAMILIES[family].extra
    assert project["dependencies"] == [f"envhub-rl[{extra}]" if extra else "envhub-rl"]
    declared = tomllib.loads((Path(ROOT) / "pyproject.toml").read_text())["project"]
    assert extra is None or extra in declared["optional-dependencies"]
    assert project["name"] == "envhub-wordrev"


def test_init_refuses_taken_names_and_bad_names(tmp_path):
    with pytest.raises(ConfigError, match="already in the catalog"):
        init("gsm8k", parent=tmp_path)
    with pytest.raises(ConfigError, match="'envhub-rl', which is envhub's own distribution"):
        init("rl", parent=tmp_path)
    with pytest.raises(ConfigError, match="not a usable environment name"):
        init("My Env", parent=tmp_path)
    with pytest.raises(ConfigError, match="unknown family 'chess'"):
        init("x", "chess", parent=tmp_path)
    assert list(tmp_path.iterdir()) == []


def _cli(*args, cwd, check=True, timeout=300):
    env = {**os.environ, "PYTHONPATH": ROOT}  # envhub itself only; never the user's folder
    run = subprocess.run(
        [sys.executable, "-m", "envhub.cli", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    if check:
        assert run.returncode == 0, run.stdout + run.stderr
    return run


def _edit(path, old, new):
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def test_as_a_new_user(tmp_path):
    empty = tmp_path / "work"
    empty.mkdir()
    _cli("init", "wordrev", cwd=empty)
    folder = empty / "wordrev"
    # three edits: the prompt, a weight, and the verifier (now case-sensitive)
    _edit(folder / "wordrev.yaml", '"Reverse the word: {prompt}"', '"Spell backwards: {prompt}"')
    _edit(folder / "wordrev.yaml", "format: 0.1", "format: 0.2")
    _edit(folder / "env.py", "answer.lower() == (task.answer or \"\").strip().lower()",
          "answer == (task.answer or \"\").strip()")  # fmt: skip
    other = tmp_path / "elsewhere"
    other.mkdir()
    checked = _cli("check", "wordrev", cwd=other)
    assert "0 failed" in checked.stdout and "http         passed" in checked.stdout
    port = free_port("127.0.0.1")
    env = {**os.environ, "PYTHONPATH": ROOT}
    server = subprocess.Popen(
        [sys.executable, "-m", "envhub.cli", "serve", "wordrev", "--port", str(port)],
        cwd=other, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        with RemoteEnv(url) as remote:
            first = remote.reset(task_id="rev-0")
            assert first.messages[-1].content == "Spell backwards: stone"
            result = remote.step("<answer>enots</answer>")
            assert result.reward == pytest.approx(1.2) and result.terminated
            remote.reset(task_id="rev-0")
            assert remote.step("<answer>ENOTS</answer>").info.components["correctness"] == 0.0
    finally:
        stop(server)


def test_check_exits_non_zero_and_names_the_failed_check(tmp_path):
    init("brokenrev", parent=tmp_path)
    _edit(tmp_path / "brokenrev" / "env.py", "return Message(role=\"assistant\", content=f\"<answer>",
          "return Message(role=\"assistant\", content=f\"<answer>x")  # fmt: skip
    run = _cli("check", "brokenrev", "--only", "gold", cwd=tmp_path, check=False)
    assert run.returncode == 1
    assert "gold         failed" in run.stdout and "the verifier or the gold is wrong" in run.stdout
    assert _cli("unregister", "brokenrev", cwd=tmp_path).stdout.strip() == (
        "unregistered brokenrev-v1"
    )
