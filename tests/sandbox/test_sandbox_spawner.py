"""The spawner (root only): runs start from it, it dies with its server and takes its runs
along, a dead one is replaced, and ``setpriv`` takes over when it is off or cannot start."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from children import children_of
from sandbox_support import ADD_SUITE, FAST, HONEST_ADD, assert_nothing_left, needs_bwrap

from envhub.sandbox import Sandbox, processes_of, procs, run_suite, spawner_client
from envhub.sandbox.spawner_client import SpawnedProcess

pytestmark = [
    needs_bwrap,
    pytest.mark.skipif(os.geteuid() != 0, reason="the spawner is used only as root"),
]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def started(monkeypatch):
    """Every run's top process, as :func:`procs.start` returned it."""
    seen = []
    real = procs.start

    def record(*args, **kwargs):
        proc = real(*args, **kwargs)
        seen.append(proc)
        return proc

    monkeypatch.setattr(procs, "start", record)
    return seen


def uid_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("\nUid:\t", 1)[1].split()[0])


def test_cold_and_tests_runs_go_through_the_spawner(box, started):
    result = box.run_python("print(input()[::-1])", stdin="abc")
    assert result.ok and result.stdout == "cba\n" and result.cgroup
    assert run_suite(box, HONEST_ADD, ADD_SUITE).all_passed
    pid = spawner_client.get(box.python).pid
    assert [type(p) for p in started] == [SpawnedProcess, SpawnedProcess]
    assert all(p.spawner_pid == pid and p.returncode == 0 for p in started)
    assert_nothing_left(result)
    # it stepped into each run's cgroup and uid only while starting it
    assert "envhub-sandbox" not in Path(f"/proc/{pid}/cgroup").read_text()
    assert Path(f"/proc/{pid}/status").read_text().count("\t0\t0\t0\t0\n") == 2  # Uid, Gid


def spawned_output(box, argv: list[str], uid: int, pass_fds=()) -> list[str]:
    """Start ``argv`` through the spawner (no bubblewrap), its stdout lines."""
    proc = spawner_client.get(box.python).spawn(
        argv, uid=uid, env={"PATH": "/usr/bin:/bin"}, pass_fds=pass_fds
    )
    with proc.stdin, proc.stdout, proc.stderr:
        assert proc.wait(10) == 0, proc.stderr.read()
        return proc.stdout.read().decode().split("\n")


def test_a_spawned_process_gets_its_descriptors_uid_and_session_only(box):
    """Below bubblewrap (which closes extra descriptors itself): the spawner's own promise."""
    extra_r, extra_w = os.pipe()
    uid = procs.pick_uid()
    script = "ls /proc/self/fd | tr '\\n' ' '; echo; id -u; id -g; id -G; echo $$; ps -o sid= $$"
    try:
        out = spawned_output(box, ["/bin/sh", "-c", script], uid, pass_fds=[extra_w])
        mask = spawned_output(box, ["/bin/grep", "SigBlk", "/proc/self/status"], uid)
    finally:
        procs.release_uid(uid)
        os.close(extra_r)
        os.close(extra_w)
    # ls: 0-2, the passed descriptor at its own number, and its directory listing
    assert sorted(map(int, out[0].split())) == sorted([0, 1, 2, 3, extra_w])
    assert out[1:4] == [str(uid)] * 3  # uid, gid, and no other group
    assert out[4] == out[5].strip()  # its own session
    assert mask[0].split() == ["SigBlk:", "0000000000000000"]


def test_a_warm_sandbox_comes_from_the_spawner_too(started):
    box = Sandbox(FAST, mode="bwrap", warm=1)
    try:
        box.run_python("pass")
        assert box.wait_warm(20)
        result = box.run_python("print('warm')")
        assert result.warm and result.ok and result.stdout == "warm\n"
        assert all(isinstance(p, SpawnedProcess) for p in started)
    finally:
        box.close()


def test_16_threads_launch_at_once_each_run_its_own_uid(box, started):
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda i: box.run_python(f"print({i} * 3)"), range(16)))
    assert [r.stdout for r in results] == [f"{i * 3}\n" for i in range(16)]
    assert all(r.ok for r in results)
    assert len({r.uid for r in results}) == 16
    assert len(started) == 16 and all(isinstance(p, SpawnedProcess) for p in started)
    for result in results:
        assert_nothing_left(result)


def test_a_killed_spawner_is_restarted_on_the_next_run(box, started):
    assert box.run_python("pass").ok
    old = spawner_client.get(box.python).pid
    os.kill(old, signal.SIGKILL)
    result = box.run_python("print('after')")
    assert result.ok and result.stdout == "after\n"
    assert isinstance(started[-1], SpawnedProcess) and started[-1].spawner_pid != old
    assert spawner_client.get(box.python).pid == started[-1].spawner_pid


def test_a_forked_server_starts_its_own_spawner(box):
    assert box.run_python("pass").ok
    ours = spawner_client.get(box.python).pid
    child = os.fork()
    if child == 0:  # must not talk on its parent's socket (two readers would mix answers)
        try:
            result = box.run_python("print('child')")
            theirs = spawner_client.get(box.python).pid
            os._exit(0 if result.stdout == "child\n" and theirs != ours else 1)
        finally:
            os._exit(2)
    assert os.waitpid(child, 0)[1] == 0
    assert box.run_python("print('parent')").stdout == "parent\n"
    assert spawner_client.get(box.python).pid == ours


def test_server_death_kills_the_spawner_and_every_run_it_started(tmp_path):
    script = textwrap.dedent(
        """
        import threading, time
        from envhub.sandbox import Limits, Sandbox, spawner_client
        box = Sandbox(Limits(wall_s=120), mode="bwrap")
        run = lambda: box.run_python("import time\\ntime.sleep(120)")
        threading.Thread(target=run, daemon=True).start()
        print(spawner_client.get(box.python).pid, flush=True)
        time.sleep(120)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    server = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env)
    try:
        spawner_pid = int(server.stdout.readline())
        deadline = time.monotonic() + 30
        while not (runs := children_of(spawner_pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        (run,) = runs
        uid = uid_of(run)
        assert uid != 0 and processes_of(uid)
    finally:
        server.kill()
        server.wait()
    deadline = time.monotonic() + 10
    while (processes_of(uid) or os.path.exists(f"/proc/{spawner_pid}")) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.05)
    assert processes_of(uid) == []
    assert not os.path.exists(f"/proc/{spawner_pid}")  # reaped by init: gone entirely


def test_ENVHUB_SANDBOX_SPAWNER_0_uses_setpriv(box, started, monkeypatch):
    monkeypatch.setenv("ENVHUB_SANDBOX_SPAWNER", "0")
    result = box.run_python("import os\nprint(os.getuid())")
    assert result.ok and result.stdout == "65534\n" and result.cgroup
    assert run_suite(box, HONEST_ADD, ADD_SUITE).all_passed
    assert [type(p) for p in started] == [subprocess.Popen, subprocess.Popen]
    assert_nothing_left(result)


def test_a_spawner_that_cannot_start_falls_back_to_setpriv(box, started, monkeypatch, caplog):
    monkeypatch.setattr(spawner_client, "SOURCE", "raise SystemExit(3)")
    monkeypatch.setattr(spawner_client, "_SPAWNERS", {})  # as if none had started yet
    monkeypatch.setattr(spawner_client, "_FAILED", {})
    result = box.run_python("print('fallback')")
    assert result.ok and result.stdout == "fallback\n"
    assert isinstance(started[-1], subprocess.Popen)
    assert "spawner of" in caplog.text and "did not start: it exited at once" in caplog.text
    assert box.run_python("pass").ok  # the failure is remembered: no new try for a while
    assert spawner_client._FAILED and isinstance(started[-1], subprocess.Popen)
