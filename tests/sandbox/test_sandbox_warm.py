"""Warm sandboxes (``Sandbox(warm=N)``): started ahead of their runs, single-use, as safe."""

import gc
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from sandbox_support import ADD_SUITE, FAST, HONEST_ADD, assert_nothing_left, needs_bwrap

from envhub.sandbox import Limits, Sandbox, processes_of, run_suite

pytestmark = needs_bwrap


def wait_warm(box: Sandbox, count: int = 1, timeout_s: float = 20.0) -> list:
    """The warm launches once ``count`` of some kind are ready."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with box._warm.cond:
            ready = [launch for queue in box._warm.ready.values() for launch in queue]
        if len(ready) >= count:
            return ready
        time.sleep(0.02)
    raise AssertionError(f"{count} warm sandbox(es) not ready within {timeout_s}s")


@pytest.fixture
def warm_box():
    box = Sandbox(FAST, mode="bwrap", warm=1)
    yield box
    box.close()


def test_first_run_is_cold_then_warm_runs_match_cold_ones(warm_box):
    first = warm_box.run_python("print(input()[::-1])", stdin="abc")
    assert (first.stdout, first.ok, first.warm) == ("cba\n", True, False)
    wait_warm(warm_box)
    again = warm_box.run_python("print(input()[::-1])", stdin="abc")
    assert (again.stdout, again.ok, again.warm) == ("cba\n", True, True)
    assert again.uid != first.uid  # single-use: a fresh uid per run, warm or not

    report = run_suite(warm_box, HONEST_ADD, ADD_SUITE)  # tests mode: its own kind
    assert report.all_passed and not report.run.warm
    wait_warm(warm_box, 2)
    report = run_suite(warm_box, HONEST_ADD, ADD_SUITE)
    assert report.all_passed and report.run.warm and report.run.hardened
    wrong = run_suite(warm_box, "def add(a, b):\n    return a * b\n", ADD_SUITE)
    assert wrong.passed == 1 and wrong.total == 3


def test_warm_program_sees_only_stdio_and_nothing_of_the_job_channel(warm_box):
    warm_box.run_python("pass")
    wait_warm(warm_box)
    code = "import os\nprint(sorted(int(f) for f in os.listdir('/proc/self/fd')))"
    result = warm_box.run_python(code)
    assert result.warm
    # 0-2 and the descriptor of the listing itself: no job socket, nonce or verdict pipe
    fds = eval(result.stdout)
    assert fds[:3] == [0, 1, 2] and len(fds) <= 4


def test_clock_starts_at_delivery_and_a_hang_is_still_killed(warm_box):
    limits = Limits(wall_s=1.0, cpu_s=4, memory_mb=512, nproc=32, output_bytes=100_000)
    warm_box.run_python("pass", limits=limits)
    wait_warm(warm_box)
    time.sleep(1.5)  # longer than wall_s: the wait before the run does not count
    quick = warm_box.run_python("print('done')", limits=limits)
    assert quick.warm and quick.ok and quick.stdout == "done\n"
    wait_warm(warm_box)
    start = time.monotonic()
    hang = warm_box.run_python("while True: pass", limits=limits)
    assert hang.warm and hang.timed_out and time.monotonic() - start < 5
    assert_nothing_left(hang)


def test_a_daemon_started_by_a_warm_run_does_not_outlive_it(warm_box):
    warm_box.run_python("pass")
    wait_warm(warm_box)
    daemon = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(60)\n"
        "    os._exit(0)\n"
        "print('parent done')\n"
    )
    result = warm_box.run_python(daemon)
    assert result.warm and result.ok
    assert_nothing_left(result)


def test_a_warm_sandbox_killed_while_waiting_falls_back_to_a_cold_start(warm_box):
    warm_box.run_python("pass")
    (launch,) = wait_warm(warm_box)
    os.killpg(launch.proc.pid, signal.SIGKILL)
    launch.proc.wait()
    result = warm_box.run_python("print(6 * 7)")
    assert result.ok and result.stdout == "42\n" and not result.warm


def test_other_limits_are_another_kind(warm_box):
    warm_box.run_python("pass")
    wait_warm(warm_box)
    other = Limits(wall_s=5.0, cpu_s=2, memory_mb=256, nproc=16, output_bytes=1000)
    first = warm_box.run_python("print('x' * 5000)", limits=other)
    assert not first.warm and first.stdout_truncated
    wait_warm(warm_box, 2)
    second = warm_box.run_python("print('x' * 5000)", limits=other)
    assert second.warm and second.stdout_truncated and len(second.stdout) == 1000


def test_close_stops_every_warm_sandbox_and_later_runs_go_cold():
    box = Sandbox(FAST, mode="bwrap", warm=2)
    box.run_python("pass")
    uids = [launch.uid for launch in wait_warm(box, 2)]
    box.close()
    if uids[0] is not None:
        assert all(processes_of(uid) == [] for uid in uids)
    result = box.run_python("print('still works')")
    assert result.ok and not result.warm


def test_a_dropped_sandbox_stops_its_warm_ones():
    box = Sandbox(FAST, mode="bwrap", warm=1)
    box.run_python("pass")
    (launch,) = wait_warm(box)
    proc = launch.proc
    del box, launch
    gc.collect()
    assert proc.wait(timeout=10) is not None


def test_concurrent_warm_runs_mixed_with_hostile_ones():
    box = Sandbox(FAST, mode="bwrap", warm=2)
    box.run_python("pass")
    wait_warm(box, 2)
    hostile = [
        "while True: pass",
        "import os\nwhile True: os.fork()",
        "x = bytearray(1 << 34)",
        "import os\nos.kill(1, 9)\nprint('alive')",
    ]
    jobs = [
        ("honest", f"print({i} * 2)") if i % 2 else ("hostile", hostile[i // 2 % len(hostile)])
        for i in range(16)
    ]
    limits = Limits(wall_s=3.0, cpu_s=2, memory_mb=256, nproc=16, output_bytes=10_000)
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda job: box.run_python(job[1], limits=limits), jobs))
    box.close()
    for i, ((kind, _), result) in enumerate(zip(jobs, results, strict=True)):
        if kind == "honest":
            assert result.ok and result.stdout == f"{i * 2}\n"
        assert_nothing_left(result)
    assert any(r.warm for r in results)


def test_warm_must_not_be_negative():
    with pytest.raises(ValueError, match="warm"):
        Sandbox(FAST, warm=-1)


def test_warm_sandboxes_that_fail_to_start_leave_runs_cold(monkeypatch):
    from envhub.sandbox import parent

    def broken(self, box, job_fd, **kwargs):
        if job_fd is None:  # only the warm starts fail
            raise parent.SandboxError("no room for a warm sandbox")
        return spawn(self, box, job_fd, **kwargs)

    spawn = parent._Launch.spawn
    monkeypatch.setattr(parent._Launch, "spawn", broken)
    box = Sandbox(FAST, mode="bwrap", warm=1)
    try:
        results = [box.run_python(f"print({i})") for i in range(3)]
        assert [r.stdout for r in results] == ["0\n", "1\n", "2\n"]
        assert not any(r.warm for r in results)
        assert not box.wait_warm(0.5) and box._warm.failures >= 1
    finally:
        box.close()
