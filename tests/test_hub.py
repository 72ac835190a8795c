"""The hub, offline (issue 35, point 5): push to a folder index, serve it on a loopback HTTP
server, pull by NAME@VERSION into a fresh virtual environment and play, search; a tampered
file is refused by its digest; a yanked version is never picked unless pinned.

The fresh venv sees this checkout and the test's own site-packages through a ``.pth`` file (so
envhub and its dependencies are importable without a package index); what ``pull`` installs
with pip lands in the fresh venv alone.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import sysconfig
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from envhub.authoring.hub.index import Index, Link, parse_page, sha256
from envhub.authoring.hub.pull import choose
from envhub.authoring.hub.push import push, yank
from envhub.authoring.scaffold import init
from envhub.errors import ConfigError
from envhub.registry.catalog import reset_registry

REPO = Path(__file__).resolve().parents[1]


def test_a_page_gives_each_files_digest_and_yank():
    page = (
        '<a href="a-0.1.0-py3-none-any.whl#sha256=ab">a-0.1.0-py3-none-any.whl</a>\n'
        '<a href="a-0.2.0-py3-none-any.whl#sha256=cd" data-yanked="broken">x</a>\n'
        '<a href="a-0.3.0-py3-none-any.whl" data-yanked>x</a>'
    )
    assert parse_page(page) == [
        Link("a-0.1.0-py3-none-any.whl", "ab", None),
        Link("a-0.2.0-py3-none-any.whl", "cd", "broken"),
        Link("a-0.3.0-py3-none-any.whl", None, ""),
    ]


def test_the_newest_live_version_is_picked_and_a_pin_is_honoured():
    links = [
        Link("a-0.9.0-py3-none-any.whl", "1", None),
        Link("a-0.10.0-py3-none-any.whl", "2", None),
        Link("a-0.11.0-py3-none-any.whl", "3", "bad data"),
        Link("a-0.11.0.card.json", "4", None),
    ]
    assert choose("a", None, links).version == "0.10.0"  # 0.10 > 0.9; 0.11 is yanked
    assert choose("a", "0.11.0", links).yanked == "bad data"
    with pytest.raises(ConfigError, match=r"a@1\.0 is not in the index"):
        choose("a", "1.0", links)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """A folder index holding wordrev 0.1.0 and 0.2.0 (yanked), served on a loopback port."""
    root = tmp_path_factory.mktemp("hub")
    old = os.environ.get("ENVHUB_HOME")
    os.environ["ENVHUB_HOME"] = str(root / "author-home")
    try:
        folder = init("wordrev", parent=root)
        push(str(folder), root / "index")
        pyproject = folder / "pyproject.toml"
        pyproject.write_text(
            pyproject.read_text().replace('version = "0.1.0"', 'version = "0.2.0"')
        )
        push(str(folder), root / "index")
        yank("wordrev", "0.2.0", root / "index", "the gold answers were wrong")
    finally:
        os.environ.pop("ENVHUB_HOME") if old is None else os.environ.update(ENVHUB_HOME=old)
        reset_registry()  # the author's registration must not outlive the fixture's home
    handler = functools.partial(_Quiet, directory=str(root / "index"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root / "index", f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _fresh_venv(where: Path) -> Path:
    """A new venv that imports this checkout and this test's packages; pip installs stay in it."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    python = where / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    Path(site, "envhub-test.pth").write_text(f"{REPO}\n{sysconfig.get_paths()['purelib']}\n")
    return python


def _run(python: Path, home: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ENVHUB_INDEX")}
    env.update(ENVHUB_HOME=str(home), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    return subprocess.run([python, *args], capture_output=True, text=True, timeout=timeout, env=env)


PLAY = """
import envhub
env = envhub.make("wordrev")
env.reset(task_id="rev-0")
step = env.step("<answer>enots</answer>")
print(step.reward, step.info.components["correctness"], step.info.status.value)
"""


def test_pull_into_a_fresh_venv_installs_the_pushed_version_and_it_plays(index, tmp_path):
    folder, url = index
    python = _fresh_venv(tmp_path / "venv")
    home = tmp_path / "home"
    pulled = _run(python, home, "-m", "envhub.cli", "pull", "wordrev", "--from", url)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    digest = sha256(
        (folder / "envhub-wordrev" / "envhub_wordrev-0.1.0-py3-none-any.whl").read_bytes()
    )
    assert f"installed wordrev@0.1.0 sha256:{digest} from {url}" in pulled.stdout  # 0.2.0 is yanked
    assert "gold" in pulled.stdout and ", 0 failed" in pulled.stdout  # envhub check ran
    record = json.loads((home / "hub" / "pulled.json").read_text())
    assert record["wordrev"] == {"version": "0.1.0", "digest": f"sha256:{digest}", "index": url}
    played = _run(python, home, "-c", PLAY)
    assert played.returncode == 0, played.stderr
    reward, correct, status = played.stdout.split()
    assert float(reward) > 1.0 and float(correct) == 1.0 and status == "ok"

    pinned = _run(python, home, "-m", "envhub.cli", "pull", "wordrev@0.2.0", "--from", url,
                  "--no-check")  # fmt: skip
    assert pinned.returncode == 0, pinned.stderr
    assert "warning: wordrev@0.2.0 is yanked (the gold answers were wrong)" in pinned.stderr
    assert "installed wordrev@0.2.0" in pinned.stdout


def test_a_file_that_does_not_match_its_digest_is_refused(index, tmp_path):
    folder, _ = index
    tampered = tmp_path / "index"
    subprocess.run(["cp", "-r", str(folder), str(tampered)], check=True)
    wheel = tampered / "envhub-wordrev" / "envhub_wordrev-0.1.0-py3-none-any.whl"
    wheel.write_bytes(wheel.read_bytes() + b"\0")  # the page still lists the pushed digest
    python = _fresh_venv(tmp_path / "venv")
    out = _run(python, tmp_path / "home", "-m", "envhub.cli", "pull", "wordrev", "--from",
               str(tampered))  # fmt: skip
    assert out.returncode == 1, out.stdout + out.stderr
    assert "does not match its digest" in out.stderr and "nothing installed" in out.stderr
    listed = _run(python, tmp_path / "home", "-m", "pip", "list")
    assert "envhub-wordrev" not in listed.stdout


def test_search_lists_the_cards_and_marks_the_yanked_version(index):
    _, url = index
    from envhub.authoring.hub.pull import search

    found = search("WORD", url)
    assert [(r["environment"], r["version"], r["yanked"]) for r in found] == [
        ("wordrev", "0.1.0", False),
        ("wordrev", "0.2.0", True),
    ]
    assert found[0]["card"]["scores"]["gold"]["solved"] == 1.0
    assert search("no such words", url) == []
    assert Index(url).projects() == ["envhub-wordrev"]


def test_a_version_is_pushed_once(index, tmp_path, monkeypatch):
    folder, _ = index
    monkeypatch.setenv("ENVHUB_HOME", str(tmp_path / "home"))
    other = init("wordrev", parent=tmp_path, register=False)
    (other / "data" / "sample.jsonl").write_text(
        '{"id": "rev-0", "prompt": "stone", "answer": "enots"}\n'
    )
    try:
        with pytest.raises(ConfigError, match="already in the index with another digest"):
            push(str(other), folder)
    finally:
        reset_registry()


def test_a_name_already_in_the_catalog_is_refused_before_anything_is_installed(index, monkeypatch):
    folder, _ = index
    monkeypatch.setenv("ENVHUB_HOME", str(folder.parent / "author-home"))  # wordrev registered
    from envhub.authoring.hub.pull import pull

    reset_registry()
    try:
        with pytest.raises(
            ConfigError, match="already in the catalog here.*envhub unregister wordrev"
        ):
            pull("wordrev", str(folder))
    finally:
        reset_registry()
