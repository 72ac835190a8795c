"""OpenEnv 0.10's discovery catalog, both ways, against the real ``openenv`` 0.10 (its venv).

Out: ``envhub catalog export --format openenv`` writes a snapshot that OpenEnv's own
``openenv discover`` loads (its digest checked) and searches. In: a catalog that OpenEnv's own
``openenv catalog build`` made from a git repository holding the toy environment is listed by
``envhub catalog list`` from a loopback URL, and its card plays through ``envhub.make``:
envhub fetches the card's commit (git, redirected to the local repository, offline) and runs
its server with the venv's Python.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from openenv_games import EXPECTED, TOY, play, register

import envhub
from envhub.errors import EnvhubError, InfraError
from envhub.interop.openenv.catalog import digest, export

GITHUB = "https://github.com/envhub-test/toys.git"
"""The repository the toy catalog names; git is told to fetch it from a local one."""
REVISION = "ab" * 20


def _envhub(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "envhub.cli", *args], capture_output=True, text=True, timeout=300
    )


def _export(path: Path) -> None:
    done = _envhub(
        "catalog",
        "export",
        "--format",
        "openenv",
        "--publisher",
        "example.org",
        "--source",
        "https://github.com/envhub-dev/envhub.git",
        "--revision",
        REVISION,
        "--builtin-only",
        "-o",
        str(path),
    )
    assert done.returncode == 0, done.stderr


def _discover(python: Path, catalog: Path, query: str) -> subprocess.CompletedProcess:
    openenv = python.parent / "openenv"
    return subprocess.run(
        [str(openenv), "discover", query, "--catalog", str(catalog), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_envhubs_cards_are_a_catalog_that_openenv_loads_and_searches(openenv10_python, tmp_path):
    path = tmp_path / "catalog.json"
    _export(path)
    snapshot = json.loads(path.read_text())
    found = _discover(openenv10_python, path, "grade school math word problems")
    assert found.returncode == 0, found.stderr
    answer = json.loads(found.stdout)
    assert answer["snapshot"] == snapshot["digest"]
    top = answer["results"][0]
    assert top["displayName"] == "gsm8k" and top["data"]["source"]["path"] == "environments/gsm8k"
    assert top["metadata"]["envhub"]["serve"] == "envhub serve gsm8k --openenv"
    listed = [
        json.loads(line)
        for line in _envhub("catalog", "list", str(tmp_path)).stdout.split("\n")
        if line
    ]
    assert {c["name"] for c in listed} >= {"gsm8k", "wordle", "sql"}
    snapshot["entries"][0]["description"] = "tampered"
    path.write_text(json.dumps(snapshot))
    assert _discover(openenv10_python, path, "math").returncode != 0  # OpenEnv refuses it...
    refused = _envhub("catalog", "list", str(path))
    assert (
        refused.returncode == 1 and "does not match its digest" in refused.stderr
    )  # ...and so do we


def test_a_card_missing_or_envhubs_own_is_refused_at_registration(tmp_path, clean_user_registry):
    _export(tmp_path / "catalog.json")
    with pytest.raises(EnvhubError, match=r"no card named 'gsm8kk' .*Did you mean gsm8k\?"):
        register(tmp_path, "nope", catalog=str(tmp_path), card="gsm8kk")
    with pytest.raises(EnvhubError, match="envhub's own environment gsm8k-v1: play it by name"):
        register(tmp_path, "own", catalog=str(tmp_path), card="gsm8k")


def _git(repo: Path, *args: str) -> str:
    identity = ["-c", "user.name=test", "-c", "user.email=test@example.org"]
    done = subprocess.run(
        ["git", "-C", str(repo), *identity, *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _toy_repository(root: Path) -> Path:
    """A git repository holding the toy as an OpenEnv environment folder, ``envs/guess``."""
    folder = root / "envs" / "guess"
    (folder / "server").mkdir(parents=True)
    shutil.copy(TOY, folder / "server" / "app.py")
    (folder / "openenv.yaml").write_text(
        "spec_version: 1\nname: guess\ntype: space\nruntime: fastapi\napp: server.app:app\n"
        "port: 8000\ndescription: Guess the seed's fruit, told earlier or later each turn.\n"
    )
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "the toy")
    return root


@contextlib.contextmanager
def _serving(folder: Path):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_card_of_openenvs_own_catalog_plays_through_envhub_make(
    openenv10_python, tmp_path, clean_user_registry, monkeypatch
):
    repo = _toy_repository(tmp_path / "toys")
    site = tmp_path / "site"
    site.mkdir()
    built = subprocess.run(
        [
            str(openenv10_python.parent / "openenv"),
            "catalog",
            "build",
            "--repository",
            str(repo),
            "--repository-uri",
            GITHUB,
            "--publisher",
            "example.org",
            "--output",
            str(site / "catalog.json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")  # git fetches GITHUB from the local repository
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.file://{repo}.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", GITHUB)
    with _serving(site) as url:
        listed = _envhub("catalog", "list", url + "/catalog.json")
        assert listed.returncode == 0, listed.stderr
        card = json.loads(listed.stdout)
        assert card["name"] == "guess" and card["source"]["path"] == "envs/guess"
        assert card["source"]["revision"] == _git(repo, "rev-parse", "HEAD")
        name = register(
            tmp_path,
            "guess",
            catalog=url + "/catalog.json",
            card="guess",
            python=str(openenv10_python),
            action_field="word",
        )
        with envhub.make(name) as env:
            assert play(env) == EXPECTED


def test_a_card_whose_source_cannot_be_fetched_is_infra_error(
    openenv10_python, tmp_path, clean_user_registry, monkeypatch
):
    repo = _toy_repository(tmp_path / "toys")
    built = subprocess.run([str(openenv10_python.parent / "openenv"), "catalog", "build",
                            "--repository", str(repo), "--repository-uri", GITHUB,
                            "--publisher", "example.org", "--output", str(tmp_path / "c.json")],
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert built.returncode == 0, built.stderr
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")  # the repository is gone
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.file://{tmp_path / 'gone'}.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", GITHUB)
    with pytest.raises(InfraError, match="cannot fetch the card's source"):  # registering resets
        register(tmp_path, "gone", catalog=str(tmp_path / "c.json"), card="guess",
                 python=str(openenv10_python), action_field="word")  # fmt: skip


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("revision", "../../../../tmp/x", "not one commit and a relative path"),
        ("path", "../../outside", "not one commit and a relative path"),
        ("path", "/etc", "not one commit and a relative path"),
        ("uri", "--upload-pack=touch /tmp/pwned", "not a GitHub clone URI"),
        ("uri", "ext::sh -c touch% /tmp/pwned", "not a GitHub clone URI"),
    ],
)
def test_a_hostile_cards_source_is_refused_before_git_runs(
    tmp_path, clean_user_registry, field, value, says
):
    """A card (its digest re-stamped, as its author can) that would steer git or the folder."""
    snapshot = export([envhub.spec("gsm8k")], publisher="example.org",
                      source_uri="https://github.com/evil/cards.git", revision=REVISION)  # fmt: skip
    entry = snapshot["entries"][0]
    entry["metadata"] = {}  # not envhub's own card
    entry["data"]["source"][field] = value
    snapshot["digest"] = digest(snapshot)
    (tmp_path / "catalog.json").write_text(json.dumps(snapshot))
    with pytest.raises(EnvhubError, match=says):
        register(tmp_path, "evil", catalog=str(tmp_path), card="gsm8k")
    assert not Path("/tmp/pwned").exists()
