"""Nothing outlives its owner, and servers stop when asked (issue 21, points 1 and 3).

The attacks: ``envhub serve`` started as a script's background job (SIGINT ignored) and
stopped with Ctrl-C; a script that makes an env with ``runner="http"`` and is killed with
SIGKILL (no ``atexit``), that raises after making it, or that made it from a worker thread
which has ended (the kernel's parent-death signal follows the thread, not the process).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from children import SIGINT_IGNORED, alive, children_of, stop, wait_gone, wait_health

from envhub import lifetime
from envhub.client.child_server import free_port

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_envhub_serve_stops_on_a_signal_with_sigint_ignored(sig):
    port = free_port()
    cmd = [sys.executable, "-m", "envhub.cli", "serve", "gsm8k", "--port", str(port)]
    proc = subprocess.Popen([*SIGINT_IGNORED, *cmd], stderr=subprocess.PIPE, text=True)
    wait_health(f"http://127.0.0.1:{port}", proc)
    started = time.monotonic()
    assert stop(proc, sig, timeout=15) == 0, proc.stderr.read()
    assert time.monotonic() - started < 10
    assert "Traceback" not in proc.stderr.read()


PARENT = """
import os, sys, threading, time
import envhub

def make():
    global env
    env = envhub.make("gsm8k", runner="http")
    print(env._owner.proc.pid, flush=True)

if sys.argv[1] == "thread":
    worker = threading.Thread(target=make)
    worker.start()
    worker.join()  # the thread that started the server has ended
    time.sleep(1.5)
    assert env.reset(seed=0).messages, "the server died with the thread that started it"
    print("thread ended, server alive", flush=True)
else:
    make()
if sys.argv[1] == "raise":
    raise RuntimeError("the script fails after make()")
time.sleep(300)
"""


def _parent(tmp_path: Path, how: str) -> tuple[subprocess.Popen, int, Path]:
    """A script that makes gsm8k over HTTP (``how``), its server's pid and its TMPDIR."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(REPO)}
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(PARENT))
    proc = subprocess.Popen(
        [sys.executable, str(script), how], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    line = proc.stdout.readline()
    if not line.strip().isdigit():
        stop(proc, signal.SIGKILL)
        pytest.fail(f"the parent script did not start a server: {line}{proc.stderr.read()}")
    return proc, int(line), tmp


def _assert_nothing_left(server: int, workers: list[int], tmp: Path) -> None:
    assert wait_gone([server, *workers], timeout=10) == [], "the server outlived its owner"
    assert list(tmp.iterdir()) == [], "the server's temporary log was left behind"


@pytest.mark.parametrize("how", ["main", "thread"])
def test_a_killed_script_takes_its_http_server_along(tmp_path, how):
    proc, server, tmp = _parent(tmp_path, how)
    try:
        if how == "thread":
            assert proc.stdout.readline().strip() == "thread ended, server alive"
        workers = children_of(server)  # gsm8k's answer-checking worker processes
        assert alive(server) and workers
    finally:
        stop(proc, signal.SIGKILL)
    _assert_nothing_left(server, workers, tmp)


def test_a_script_that_raises_after_make_takes_its_http_server_along(tmp_path):
    proc, server, tmp = _parent(tmp_path, "raise")
    workers = children_of(server)
    try:
        assert proc.wait(60) == 1
    finally:
        stop(proc, signal.SIGKILL)
    assert "the script fails after make()" in proc.stderr.read()
    _assert_nothing_left(server, workers, tmp)


def test_a_process_started_by_hand_follows_no_parent(monkeypatch):
    monkeypatch.delenv(lifetime.PARENT_PID, raising=False)
    assert lifetime.follow_parent() is False


def test_a_child_told_its_parent_is_gone_stops_at_once():
    code = (
        "import time\nfrom envhub.lifetime import follow_parent, stop_signals\n"
        "with stop_signals():\n    try:\n        follow_parent()\n        time.sleep(30)\n"
        "    except KeyboardInterrupt:\n        print('stopped')\n"
    )
    env = {**os.environ, lifetime.PARENT_PID: "1", "PYTHONPATH": str(REPO)}  # not our parent
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=20
    )
    assert out.returncode == 0 and out.stdout == "stopped\n", out.stderr
