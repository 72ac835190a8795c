"""``scripts/offline_rootfs.py``'s command line, short of copying a root file system.

Pins what ``main`` decides before it copies anything (which extras, which distributions, the
key, the errors), so splitting ``main`` cannot change it. Building a root is covered by the
offline base image (``scripts/offline-base-image.sh``, ``tests/docker_runner/test_docker.py``).
"""

import sys
from pathlib import Path

import pytest
from repo_scripts import load_script

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rf():
    return load_script("offline_rootfs.py")


@pytest.fixture
def pyproject(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text(
        '[project]\nname = "envhub"\ndependencies = ["pydantic"]\n'
        "[project.optional-dependencies]\n"
        'server = ["fastapi"]\n'
        'ghost = ["envhub-no-such-distribution-xyz"]\n'
        'all = ["envhub[server]"]\n'
    )
    return path


def run_main(rf, monkeypatch, *argv):
    monkeypatch.setattr(sys, "argv", ["offline_rootfs.py", *map(str, argv)])
    rf.main()


def test_key_only_prints_the_content_key_and_copies_nothing(rf, pyproject, tmp_path, capsys,
                                                          monkeypatch):  # fmt: skip
    root, out = tmp_path / "root", tmp_path / "extras.txt"
    run_main(rf, monkeypatch, root, "--pyproject", pyproject, "--extras", "all",
             "--extras-out", out, "--key-only")  # fmt: skip
    reqs = rf.project_requirements(pyproject, ["all"]) + [rf.Requirement(n) for n in rf.ALWAYS]
    dists, missing = rf.resolve(reqs)
    assert missing == [] and "fastapi" in dists
    assert capsys.readouterr().out.strip() == rf.content_key(dists, ["all"])
    assert not root.exists() and not out.exists()


def test_allow_missing_leaves_an_uninstalled_extra_out(rf, pyproject, tmp_path, capsys,
                                                      monkeypatch):  # fmt: skip
    run_main(rf, monkeypatch, tmp_path / "root", "--pyproject", pyproject,
             "--extras", "server,ghost", "--allow-missing", "--key-only")  # fmt: skip
    captured = capsys.readouterr()
    assert "leaving out extras ['ghost']" in captured.err
    dists, _ = rf.resolve(
        rf.project_requirements(pyproject, ["server"]) + [rf.Requirement(n) for n in rf.ALWAYS]
    )
    assert captured.out.strip() == rf.content_key(dists, ["server"])


def test_a_missing_distribution_names_the_fix(rf, pyproject, tmp_path, monkeypatch):
    with pytest.raises(SystemExit) as err:
        run_main(rf, monkeypatch, tmp_path / "root", "--pyproject", pyproject,
                 "--extras", "server,ghost", "--key-only")  # fmt: skip
    message = str(err.value)
    assert "not installed on this machine: envhub-no-such-distribution-xyz" in message
    assert "pip install -e '.[server,ghost]'" in message and "--allow-missing" in message
