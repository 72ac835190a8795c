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


def test_an_index_url_is_named_without_its_credentials():
    index = Index("https://me:s3cret@example.org/simple")
    assert index.where == "https://example.org/simple/"
    assert index.url == "https://me:s3cret@example.org/simple/"  # still used to read


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


# ------------------------------------------------------------- a remote index (pypiserver)


def _wait_for(url: str, proc: subprocess.Popen, seconds: float = 60) -> None:
    import time
    import urllib.request

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"pypiserver did not answer at {url} (exit {proc.poll()})")


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    """A loopback pypiserver that takes uploads (any user), wordrev 0.1.0 and 0.2.0 pushed to it."""
    pytest.importorskip("pypiserver")
    pytest.importorskip("twine")
    from envhub.client.child_server import free_port

    root = tmp_path_factory.mktemp("remote")
    (root / "packages").mkdir()
    port = free_port()
    cmd = [sys.executable, "-m", "pypiserver", "run", "-i", "127.0.0.1", "-p", str(port),
           "-a", ".", "-P", ".", "--disable-fallback", str(root / "packages")]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    upload, simple = f"http://127.0.0.1:{port}/", f"http://127.0.0.1:{port}/simple/"
    old = os.environ.get("ENVHUB_HOME")
    os.environ["ENVHUB_HOME"] = str(root / "author-home")
    try:
        _wait_for(simple, proc)
        folder = init("wordrev", parent=root, register=False)
        first = push(str(folder), upload, user="anyone", password="not-checked")
        pyproject = folder / "pyproject.toml"
        pyproject.write_text(
            pyproject.read_text().replace('version = "0.1.0"', 'version = "0.2.0"')
        )
        second = push(str(folder), upload, user="anyone", password="not-checked")
        yield {"upload": upload, "simple": simple, "folder": folder, "root": root,
               "pushed": [first, second]}  # fmt: skip
    finally:
        os.environ.pop("ENVHUB_HOME") if old is None else os.environ.update(ENVHUB_HOME=old)
        reset_registry()
        proc.terminate()
        proc.wait(10)


def test_a_pushed_wheel_carries_its_card_with_a_correct_record(remote):
    import base64
    import csv
    import hashlib
    import io
    import zipfile

    wheel = remote["root"] / "packages" / "envhub_wordrev-0.1.0-py3-none-any.whl"
    assert f"sha256:{sha256(wheel.read_bytes())}" == remote["pushed"][0]["digest"]
    with zipfile.ZipFile(wheel) as z:
        record_name = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
        rows = list(csv.reader(io.StringIO(z.read(record_name).decode())))
        assert sorted(r[0] for r in rows) == sorted(z.namelist())  # every file, nothing more
        for path, digest, size in rows:
            if path == record_name:
                assert digest == size == ""
                continue
            data = z.read(path)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert (digest, int(size)) == (f"sha256={want}", len(data)), path
        card = json.loads(z.read(record_name.replace("RECORD", "envhub-card.json")))
    assert card["environment"] == "wordrev" and card["version"] == "0.1.0"
    assert card["card"]["scores"]["gold"]["solved"] == 1.0
    assert "digest" not in card and "measured" not in card["card"]["scores"]


def test_search_and_pull_read_the_cards_inside_the_wheels_of_a_remote_index(remote, tmp_path):
    from envhub.authoring.hub.pull import search

    found = search("word", remote["simple"])
    assert [(r["environment"], r["version"], r["yanked"]) for r in found] == [
        ("wordrev", "0.1.0", False),
        ("wordrev", "0.2.0", False),
    ]
    assert [r["digest"] for r in found] == [p["digest"] for p in remote["pushed"]]
    assert found[1]["card"]["scores"]["random"]["solved"] < 1.0

    python = _fresh_venv(tmp_path / "venv")
    home = tmp_path / "home"
    pulled = _run(python, home, "-m", "envhub.cli", "pull", "wordrev", "--from", remote["simple"])
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert f"installed wordrev@0.2.0 {remote['pushed'][1]['digest']}" in pulled.stdout
    assert ", 0 failed" in pulled.stdout
    read = _run(python, home, "-c", "from importlib.metadata import distribution as d; "
                "import json; print(json.loads(d('envhub-wordrev').read_text('envhub-card.json'))"
                "['version'])")  # fmt: skip
    assert read.stdout.strip() == "0.2.0", read.stderr
    played = _run(python, home, "-c", PLAY)
    assert played.returncode == 0 and played.stdout.split()[2] == "ok", played.stderr


def test_a_remote_index_refuses_a_version_pushed_again_and_no_password_is_printed(remote, tmp_path):
    other = init("wordrev", parent=tmp_path, register=False)
    (other / "data" / "sample.jsonl").write_text(
        '{"id": "rev-0", "prompt": "stone", "answer": "enots"}\n'
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(ENVHUB_HOME=str(tmp_path / "home"), HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-m", "envhub.cli", "push", str(other), "--to", remote["upload"],
         "--user", "someone", "--password", "s3cret-token"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert out.returncode == 1, out.stdout + out.stderr
    assert "already in the index" in out.stderr and "Bump `version`" in out.stderr
    assert "s3cret-token" not in out.stdout + out.stderr
    names = sorted(p.name for p in (remote["root"] / "packages").iterdir())
    assert names == [f"envhub_wordrev-{v}-py3-none-any.whl" for v in ("0.1.0", "0.2.0")]


def test_yank_on_a_remote_index_is_refused_with_the_way_to_do_it(remote):
    with pytest.raises(ConfigError, match="through the index's own interface"):
        yank("wordrev", "0.1.0", remote["simple"], "wrong")


def test_push_to_a_url_without_twine_names_the_hub_extra(monkeypatch, tmp_path):
    from envhub.authoring.hub.upload import upload
    from envhub.errors import DependencyMissing

    monkeypatch.setitem(sys.modules, "twine.commands.upload", None)
    with pytest.raises(DependencyMissing, match=r"'\.\[hub\]'|envhub-rl\[hub\]"):
        upload(tmp_path / "x.whl", "http://127.0.0.1:9/")


# ------------------------------------------------------------- a venv of its own


HELPER = "envhub_hub_helper"
"""A package the pulled environment needs and this Python lacks (built here, offline)."""


def _helper_wheel(where: Path) -> Path:
    """The helper's wheel in ``where/wheels``; its source in ``where/src`` (for the push)."""
    src = where / "src"
    (src / HELPER).mkdir(parents=True)
    (src / HELPER / "__init__.py").write_text(
        "def normal(text):\n    return text.strip().lower()\n"
    )
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "envhub-hub-helper"\nversion = "1.0"\n'
        f'[tool.setuptools]\npackages = ["{HELPER}"]\n'
    )
    wheels = where / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(wheels), str(src)], check=True, timeout=300)  # fmt: skip
    return wheels


def _needs_helper(folder: Path) -> None:
    """Make the scaffolded environment import the helper and declare it a dependency."""
    env_py = folder / "env.py"
    code = env_py.read_text().replace("import re\n", f"import re\n\nimport {HELPER}\n", 1)
    code = code.replace(
        'answer.lower() == (task.answer or "").strip().lower()',
        f'{HELPER}.normal(answer) == {HELPER}.normal(task.answer or "")',
    )
    assert HELPER + ".normal" in code
    env_py.write_text(code)
    pyproject = folder / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace("dependencies = [", 'dependencies = ["envhub-hub-helper", ')
    )


def test_pull_into_a_venv_of_its_own_serves_the_environment_from_there(tmp_path, monkeypatch):
    import importlib.util

    import envhub
    from envhub.authoring.hub.pull import pull
    from envhub.authoring.selfcheck import FAILED, run_checks
    from envhub.client.venv import python_of
    from envhub.registry.catalog import catalog, spec
    from envhub.registry.pins import pin

    wheels = _helper_wheel(tmp_path / "helper")
    monkeypatch.setenv("ENVHUB_HOME", str(tmp_path / "author"))
    folder = init("revvenv", parent=tmp_path, register=False)
    _needs_helper(folder)
    monkeypatch.syspath_prepend(str(tmp_path / "helper" / "src"))  # the author has the helper
    try:
        record = push(str(folder), tmp_path / "index")
    finally:
        sys.modules.pop(HELPER, None)
        sys.path.remove(str(tmp_path / "helper" / "src"))
        reset_registry()
    assert importlib.util.find_spec(HELPER) is None  # this Python lacks it

    monkeypatch.setenv("ENVHUB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # the helper comes from these wheels, offline
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    venv = tmp_path / "own-venv"
    try:
        got, yanked = pull("revvenv", str(tmp_path / "index"), venv, inherit=True)
        assert yanked is None
        assert got == {"version": "0.1.0", "digest": record["digest"],
                       "index": str(tmp_path / "index"), "venv": str(venv.resolve())}  # fmt: skip
        s = spec("revvenv")
        assert s.venv == str(venv.resolve()) and "revvenv" in catalog().names()
        assert pin(s).digest == record["digest"] and pin(s).version == "0.1.0"

        with envhub.make("revvenv") as env:  # served from the venv, played from here
            env.reset(task_id="rev-0")
            step = env.step("<answer> ENOTS </answer>")  # the helper's normal() says equal
        assert step.info.components["correctness"] == 1.0 and step.info.status.value == "ok"
        assert importlib.util.find_spec(HELPER) is None
        with pytest.raises(ConfigError, match="the 'docker' runner cannot reach"):
            envhub.make("revvenv", runner="docker")

        results = run_checks(s)  # run in the venv: its code imports there only
        assert [r.name for r in results] == ["determinism", "bad_inputs", "gold", "gymnasium",
                                             "http"]  # fmt: skip
        assert not [r for r in results if r.outcome == FAILED], results
        assert "full correctness" in results[2].detail

        probe = "import envhub_hub_helper, envhub, sys; print(envhub.__file__)"
        there = subprocess.run([str(venv / "bin" / "python"), "-c", probe],
                               capture_output=True, text=True, timeout=120)  # fmt: skip
        assert there.returncode == 0, there.stderr
        assert there.stdout.strip() == str(REPO / "envhub" / "__init__.py")  # this checkout

        from typer.testing import CliRunner

        from envhub.authoring.register import unregister
        from envhub.cli import app

        listed = CliRunner().invoke(app, ["list"])
        row = next(line for line in listed.stdout.splitlines() if line.startswith("revvenv "))
        assert f"[served from the venv {venv.resolve()}]" in row

        assert unregister("revvenv") == ["revvenv-v1"]  # forgets the registration, not the venv
        assert "revvenv" not in catalog().names() and python_of(venv).exists()
    finally:
        reset_registry()


def test_a_name_pulled_into_this_python_is_not_pulled_into_a_venv_too(index, tmp_path, monkeypatch):
    from envhub.authoring.hub.pull import pull
    from envhub.registry.pins import pulled_path

    folder, _ = index
    monkeypatch.setenv("ENVHUB_HOME", str(tmp_path / "home"))
    pulled_path().parent.mkdir(parents=True)
    pulled_path().write_text(json.dumps({"wordrev": {"version": "0.1.0", "digest": "sha256:ab",
                                                     "index": str(folder)}}))  # fmt: skip
    with pytest.raises(ConfigError, match="pulled into this Python.*pip uninstall"):
        pull("wordrev", str(folder), tmp_path / "venv")
    assert not (tmp_path / "venv").exists()
