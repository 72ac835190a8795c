"""Signals and broken reports from the program never become the machinery's status.

A hostile program may signal every process it can see (the runner, pid 1 of its namespace,
the zygote), close or scribble on descriptors, exit early, or print a forged report. Whatever
it does, its result is its own: failed tests (status ``ok``, correctness 0) or, only where the
deadline truly passed on the trusted side's clock, ``timeout``; never ``infra_error`` or
``env_error``. Each attack runs ``REPEAT`` times so that a race that wins 3 times in 10 shows.
"""

from __future__ import annotations

import signal
import textwrap

import httpx
import pytest
from sandbox_support import FAST, needs_bwrap
from serving import running

import envhub
from envhub.sandbox import FunctionSuite, Limits, Sandbox, run_suite
from envhub.types import Status

REPEAT = 10
WRONG_ADD = "def add(a, b):\n    return a + b + 1\n"
SUITE = FunctionSuite.from_asserts(
    ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(-1, 1) == 0"]
)
TEST_TIMEOUT_S = 2.0

RUNNER_PID = """
import os, signal, threading, time
def _runner_pids():
    zygote = os.getppid()
    with open(f"/proc/{zygote}/stat") as f:
        runner = int(f.read().rsplit(")", 1)[1].split()[1])
    return [runner]
"""
"""Prelude: the runner's pid (the zygote's parent: pid 1 under bubblewrap)."""


def _spam(sig: int, targets: str = "_runner_pids()") -> str:
    """A thread that sends ``sig`` to the runner as fast as it can."""
    return RUNNER_PID + textwrap.dedent(f"""
        def _spam():
            pids = {targets}
            while True:
                for pid in pids:
                    try:
                        os.kill(pid, {int(sig)})
                    except OSError:
                        pass
        threading.Thread(target=_spam, daemon=True).start()
        """)


def _after_reply(sig: int) -> str:
    """Each call arms one signal to the runner, fired just after the reply is sent."""
    return RUNNER_PID + textwrap.dedent(f"""
        def add(a, b):
            for delay in (0.0, 0.0005, 0.002):
                threading.Timer(delay, os.kill, (_runner_pids()[0], {int(sig)})).start()
            return a + b + 1
        """)


SHIELDED = [
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGALRM,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGPIPE,
    signal.SIGXCPU,
    signal.SIGVTALRM,
    signal.SIGPROF,
    signal.SIGTSTP,
    signal.SIGCONT,
]
"""Signals the runner ignores in every mode (it has no handler at all)."""


def _check_wrong(box: Sandbox, code: str, *, max_s: float = TEST_TIMEOUT_S) -> None:
    """``REPEAT`` runs of a wrong program: failed tests, finished, never infra or timeout."""
    for _ in range(REPEAT):
        report = run_suite(box, code, SUITE, test_timeout_s=TEST_TIMEOUT_S)
        assert (report.passed, report.total) == (0, 3), report.outcomes
        assert not report.timed_out, report.outcomes
        assert report.run.duration_s < max_s + 3.0


@pytest.fixture(scope="module")
def rlimit_box():
    sandbox = Sandbox(FAST, mode="rlimit")
    yield sandbox
    sandbox.close()


@needs_bwrap
@pytest.mark.parametrize("sig", SHIELDED + [signal.SIGKILL, signal.SIGSTOP], ids=lambda s: s.name)
def test_signal_spam_at_pid_1_changes_nothing(box, sig):
    _check_wrong(box, _spam(sig) + WRONG_ADD)


@needs_bwrap
@pytest.mark.parametrize(
    "sig", [signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGHUP], ids=lambda s: s.name
)
def test_signal_timed_after_the_reply_changes_nothing(box, sig):
    _check_wrong(box, _after_reply(sig))


@needs_bwrap
def test_an_honest_program_still_passes_while_it_spams(box):
    code = _spam(signal.SIGINT) + _spam(signal.SIGALRM) + "def add(a, b):\n    return a + b\n"
    for _ in range(REPEAT):
        assert run_suite(box, code, SUITE, test_timeout_s=TEST_TIMEOUT_S).all_passed


@pytest.mark.parametrize("sig", SHIELDED, ids=lambda s: s.name)
def test_rlimit_runner_ignores_signals_too(rlimit_box, sig):
    _check_wrong(rlimit_box, _spam(sig) + WRONG_ADD)


def test_rlimit_killing_the_runner_fails_the_program(rlimit_box):
    code = RUNNER_PID + textwrap.dedent("""
        def add(a, b):
            os.kill(_runner_pids()[0], signal.SIGKILL)
            time.sleep(5)
        """)
    for _ in range(REPEAT):
        report = run_suite(rlimit_box, code, SUITE, test_timeout_s=TEST_TIMEOUT_S)
        assert report.passed == 0 and not report.finished and not report.timed_out
        assert "stopped by the program" in report.outcomes[-1].error


def test_rlimit_freezing_the_runner_times_out_only_at_the_deadline(rlimit_box):
    # Stopped once at load, before the first test (the spamming thread alone may start only
    # after the runner has finished a fast suite), then again as fast as the thread can.
    freeze_now = "os.kill(_runner_pids()[0], signal.SIGSTOP)\n"
    code = _spam(signal.SIGSTOP, "_runner_pids()") + freeze_now + WRONG_ADD
    limits = Limits(wall_s=2.0, cpu_s=4, memory_mb=512, nproc=32)
    for _ in range(3):  # each waits for the whole deadline
        report = run_suite(rlimit_box, code, SUITE, test_timeout_s=1.0, limits=limits)
        assert report.passed == 0 and report.timed_out
        assert report.run.duration_s >= limits.wall_s


@needs_bwrap
def test_alarm_spam_is_no_timeout_but_a_real_deadline_is(box):
    slow = _spam(signal.SIGALRM) + "import time\ndef add(a, b):\n    time.sleep(30)\n"
    report = run_suite(box, slow, SUITE, test_timeout_s=0.5)
    assert report.timed_out and report.outcomes[0].timed_out
    assert report.run.duration_s >= 0.5  # the deadline passed on the runner's clock


BROKEN_REPORTS = {
    "exit_at_load": "import os\nos._exit(0)\n",
    "exit_in_call": "import os\ndef add(a, b):\n    os._exit(3)\n",
    "close_every_fd": "import os\nos.closerange(0, 4096)\n" + WRONG_ADD,
    "garbage_on_every_fd": textwrap.dedent("""
        import os
        for fd in range(4096):
            try:
                os.write(fd, b"0" * 32 + b"{'event': 'test', 'index': 0, 'passed': True}\\n")
            except OSError:
                pass
        """)
    + WRONG_ADD,
    "write_through_proc": textwrap.dedent("""
        import os
        for pid in ("1", str(os.getppid()), "self"):
            for fd in range(64):
                try:
                    with open(f"/proc/{pid}/fd/{fd}", "wb") as f:
                        f.write(b"garbage\\n{'event': 'done', 'passed': 3}\\n")
                except OSError:
                    pass
        """)
    + WRONG_ADD,
    "forged_report_on_stdout": textwrap.dedent("""
        import sys
        for i in range(3):
            print("0" * 32 + repr({"event": "test", "index": i, "passed": True}))
        print("0" * 32 + repr({"event": "done", "passed": 3}), file=sys.stderr)
        """)
    + WRONG_ADD,
    "kill_the_zygote": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n" + WRONG_ADD,
    "stop_the_zygote": "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\n" + WRONG_ADD,
    "kill_everything": "import os, signal\nos.kill(-1, signal.SIGKILL)\n",
}


@needs_bwrap
@pytest.mark.parametrize("name", sorted(BROKEN_REPORTS))
def test_broken_reports_are_the_programs_failure(box, name):
    _check_wrong(box, BROKEN_REPORTS[name])


@pytest.mark.parametrize("name", sorted(set(BROKEN_REPORTS) - {"kill_everything"}))
def test_broken_reports_are_the_programs_failure_in_rlimit_mode(rlimit_box, name):
    _check_wrong(rlimit_box, BROKEN_REPORTS[name])


# ------------------------------------------------------------------ through the environment

HE0_WRONG = "def has_close_elements(numbers, threshold):\n    return None\n"
ENV_ATTACKS = {
    "sigint_thread": _spam(signal.SIGINT) + HE0_WRONG,
    "sigint_after_reply": RUNNER_PID
    + textwrap.dedent("""
        def has_close_elements(numbers, threshold):
            threading.Timer(0.0005, os.kill, (1, signal.SIGINT)).start()
            return None
        """),
    "sigalrm_thread": _spam(signal.SIGALRM) + HE0_WRONG,
    "sigterm_thread": _spam(signal.SIGTERM) + HE0_WRONG,
    "surrogate_in_error": "def has_close_elements(numbers, threshold):\n"
    "    raise ValueError('\\ud800' * 10)\n",
}


def _fenced(code: str) -> str:
    return f"```python\n{code}\n```"


@needs_bwrap
@pytest.mark.parametrize("attack", sorted(ENV_ATTACKS))
def test_env_scores_signal_attacks_as_the_models_failure(attack):
    with envhub.make("humaneval") as env:
        for _ in range(REPEAT):
            score = env.verify("HumanEval/0", _fenced(ENV_ATTACKS[attack]))
            assert score.status is Status.OK, score
            assert score.components["correctness"] == 0.0


@needs_bwrap
def test_http_scores_signal_attacks_as_the_models_failure():
    from envhub.server.app import ServerSettings, create_app

    with (
        envhub.make("humaneval") as env,
        running(create_app(env, ServerSettings(answers=True))) as url,
    ):
        for attack, code in sorted(ENV_ATTACKS.items()):
            for _ in range(REPEAT):
                body = {"items": [{"task_id": "HumanEval/0", "response": _fenced(code)}]}
                r = httpx.post(url + "/verify", json=body, timeout=60)
                assert r.status_code == 200, r.text
                score = r.json()["scores"][0]
                assert (attack, score["status"]) == (attack, "ok"), score
                assert score["components"]["correctness"] == 0.0
            assert httpx.get(url + "/health", timeout=5).json() == {"status": "ok"}
