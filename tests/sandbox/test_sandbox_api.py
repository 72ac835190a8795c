"""The sandbox's own API: runs, limits, the plain-data codec, suites, and infra failures."""

import math
import os
import shutil
import subprocess
import tempfile

import pytest
from sandbox_support import ADD_SUITE, HONEST_ADD, assert_nothing_left, needs_bwrap

from envhub.errors import ConfigError, InfraError
from envhub.sandbox import (
    FunctionSuite,
    Limits,
    Sandbox,
    SandboxError,
    SandboxUnavailable,
    called_names,
    normalize_output,
    run_io_tests,
    run_suite,
)
from envhub.sandbox import _runner as runner

# --------------------------------------------------------------------------- codec


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        -7,
        10**50,
        1.5,
        -0.0,
        float("inf"),
        float("-inf"),
        2 - 3j,
        "",
        "a\nb'\"\\",
        b"\x00\xff",
        [1, [2, (3,)]],
        (),
        (1,),
        {"a": [1, 2], 3: None},
        {1, 2},
        frozenset({"x"}),
        set(),
        {(1, 2): frozenset()},
    ],
)
def test_codec_round_trips_plain_data(value):
    text = runner.encode(value)
    assert "\n" not in text
    back = runner.decode(text)
    assert back == value and type(back) is type(value)


def test_codec_nan_and_opaque():
    assert math.isnan(runner.decode(runner.encode(float("nan"))))
    opaque = runner.decode(runner.encode(object()))
    assert isinstance(opaque, runner.Opaque) and opaque != opaque and not opaque
    assert opaque.type_name == "object"


def test_codec_strips_subclasses_to_their_data():
    class Evil(int):
        def __eq__(self, other):
            return True

    class EvilStr(str):
        def __eq__(self, other):
            return True

    back = runner.decode(runner.encode([Evil(3), EvilStr("x")]))
    assert back == [3, "x"] and type(back[0]) is int and type(back[1]) is str
    assert back[0] != 4


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "open('/etc/passwd')",
        "[x for x in ()]",
        "a.b",
        "float('1e3')",
        "lambda: 0",
        "{**{}}",
        "...",
    ],
)
def test_decode_refuses_anything_but_plain_data(text):
    with pytest.raises((ValueError, SyntaxError)):
        runner.decode(text)


# --------------------------------------------------------------------------- suites


HUMANEVAL_STYLE = """
METADATA = {"author": "x"}


def check(candidate):
    assert True, "trivial"
    assert candidate(1, 2) == 3
    x = candidate(2, 2)
    assert x == 4
    for i in range(3):
        assert candidate(i, i) == 2 * i
"""


def test_check_function_is_split_into_tests():
    suite = FunctionSuite.from_check_function(HUMANEVAL_STYLE, "add", setup="import math")
    assert suite.functions == ("add",)
    tests = suite.tests
    assert [t.label for t in tests] == [
        "assert candidate(1, 2) == 3",
        "assert x == 4",
        "for i in range(3): assert candidate(i, i) == 2 * i",
    ]
    setup = [s.code for s in suite.steps if not s.is_test]
    assert setup[0] == "import math" and 'METADATA = {"author": "x"}' in setup
    assert "assert True" in " ".join(setup)  # a constant assert is not a test


def test_bad_suites_are_config_errors():
    with pytest.raises(ConfigError, match="check"):
        FunctionSuite.from_check_function("def helper(c):\n    pass\n", "f")
    with pytest.raises(ConfigError, match="not valid Python"):
        FunctionSuite.from_asserts(["assert f(1) =="])
    with pytest.raises(ConfigError, match="nothing to check"):
        FunctionSuite.from_asserts(["assert True", "x = f(1)"])


def test_called_names_skips_builtins_and_setup():
    names = called_names(["assert sorted(f(g(1))) == helper(2)"], "def helper(x): return x")
    assert names == ["f", "g"]


def test_normalize_output():
    assert normalize_output("1 2  \n3\n\n") == normalize_output("1 2\n3")


# --------------------------------------------------------------------------- runs


@needs_bwrap
def test_run_python_stdin_files_and_args(box):
    code = "import sys\nprint(open('data.txt').read().strip(), input(), sys.argv[1:])"
    result = box.run_python(code, stdin="from stdin", files={"data.txt": "from file"}, args=["a"])
    assert result.ok and result.stdout == "from file from stdin ['a']\n"
    assert result.mode == "bwrap" and not result.hardened  # exec mode: nothing left to guard
    assert_nothing_left(result)


@needs_bwrap
def test_run_argv_and_exit_code(box):
    result = box.run(["/bin/sh", "-c", "echo hi; exit 3"])
    assert result.exit_code == 3 and result.stdout == "hi\n" and not result.ok
    missing = box.run(["/no/such/program"])
    assert missing.exit_code == 127 and "cannot run" in missing.stderr


@needs_bwrap
def test_program_sees_nobody_and_a_small_world(box):
    code = "import os\nprint(os.getuid(), os.getgid(), sorted(os.listdir('/')), os.getcwd())"
    result = box.run_python(code)
    assert result.stdout.split()[:2] == ["65534", "65534"]
    assert "etc" not in result.stdout and "root" not in result.stdout and "/tmp" in result.stdout


@needs_bwrap
def test_huge_ints_cross_the_boundary(box):
    suite = FunctionSuite.from_asserts(["assert big(5000) == 10**5000"])
    assert run_suite(box, "def big(n):\n    return 10**n", suite).all_passed


@needs_bwrap
def test_suite_counts_every_test_and_reports_failures(box):
    code = "def add(a, b):\n    return a + b if a != 2 else 5\n"
    report = run_suite(box, code, ADD_SUITE)
    assert (report.passed, report.total, report.fraction) == (2, 3, pytest.approx(2 / 3))
    assert not report.all_passed and report.finished
    assert report.first_failure().label == "assert add(2, 2) == 4"


@needs_bwrap
def test_candidate_exceptions_reach_the_tests_as_builtin_types(box):
    suite = FunctionSuite.from_asserts(
        [
            "try:\n    f(-1)\n    assert False\nexcept ValueError:\n    pass",
            "assert f(4) == 2.0",
        ]
    )
    code = (
        "import math\n"
        "def f(x):\n"
        "    if x < 0:\n"
        "        raise ValueError('neg')\n"
        "    return math.sqrt(x)\n"
    )
    assert run_suite(box, code, suite).all_passed


@needs_bwrap
def test_a_program_that_fails_to_load_fails_every_test(box):
    report = run_suite(box, "def add(a, b)\n    return a + b", ADD_SUITE)
    assert report.passed == 0 and "SyntaxError" in report.outcomes[0].error


@needs_bwrap
def test_io_tests_are_judged_by_the_parent(box):
    code = "a, b = map(int, input().split())\nprint(a + b)\nprint('all passed')"
    report = run_io_tests(box, code, [("1 2\n", "3\nall passed\n"), ("2 2\n", "5\n")])
    assert [o.passed for o in report.outcomes] == [True, False]


# --------------------------------------------------------------------------- infra


def test_no_bwrap_refuses_unless_rlimit_is_chosen(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    monkeypatch.delenv("ENVHUB_SANDBOX", raising=False)
    box = Sandbox(mode="auto")
    with pytest.raises(SandboxUnavailable, match="ENVHUB_SANDBOX=rlimit") as info:
        run_suite(box, HONEST_ADD, ADD_SUITE)
    assert isinstance(info.value, InfraError)
    monkeypatch.setenv("ENVHUB_SANDBOX", "rlimit")
    weak = Sandbox(Limits(wall_s=10), mode="auto")
    assert weak.mode == "rlimit"
    report = run_suite(weak, HONEST_ADD, ADD_SUITE)
    assert report.all_passed and report.run.mode == "rlimit"
    assert_nothing_left(report.run)


def test_rlimit_mode_keeps_limits_deadline_and_sweep():
    weak = Sandbox(Limits(wall_s=3, memory_mb=256), mode="rlimit")
    bomb = run_suite(weak, "def add(a, b):\n    return bytearray(1 << 30)", ADD_SUITE)
    assert bomb.passed == 0 and "MemoryError" in bomb.outcomes[0].error
    daemon = (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n"
        "def add(a, b):\n    return a + b\n"
    )
    report = run_suite(weak, daemon, ADD_SUITE)
    assert report.all_passed
    assert_nothing_left(report.run)


def test_missing_python_is_unavailable():
    with pytest.raises(SandboxUnavailable, match="no Python"):
        Sandbox(python="/no/python3").check()


@needs_bwrap
def test_a_sandbox_that_cannot_start_is_an_infra_error(tmp_path):
    with pytest.raises(SandboxUnavailable):
        Sandbox(mode="bwrap", ro_binds={str(tmp_path / "missing"): "/data"}).check()
    box = Sandbox(mode="bwrap")
    box.check()
    box.python = "/usr/bin/no-such-python"  # breaks after the probe: the runner never starts
    with pytest.raises(SandboxError, match="did not start"):
        box.run(["/bin/true"])


@needs_bwrap
def test_ro_binds_are_readable_not_writable(tmp_path):
    shared = tempfile.mkdtemp(prefix="envhub-test-bind-")  # readable by the sandbox's uid
    try:
        os.chmod(shared, 0o755)
        with open(os.path.join(shared, "shared.txt"), "w") as f:
            f.write("hello")
        box = Sandbox(Limits(wall_s=10), mode="bwrap", ro_binds={shared: "/data"})
        code = "print(open('/data/shared.txt').read())\nopen('/data/new', 'w')"
        result = box.run_python(code)
        assert result.stdout == "hello\n" and "Read-only" in result.stderr
        assert not os.path.exists(os.path.join(shared, "new"))
    finally:
        shutil.rmtree(shared)
    if os.geteuid() == 0:  # a private folder: the error says what to do
        with pytest.raises(SandboxUnavailable, match="readable by other users"):
            Sandbox(mode="bwrap", ro_binds={str(tmp_path): "/data"}).check()


def test_runner_source_has_no_heavy_imports():
    src = open(runner.__file__).read()
    for heavy in ("import json", "import socket", "import signal\n", "import ctypes\n"):
        assert heavy not in src
    out = subprocess.run(
        ["/usr/bin/python3", "-I", "-S", "-c", "import sys; print(sys.version_info >= (3, 8))"],
        capture_output=True,
        text=True,
    )
    assert out.stdout.strip() == "True" or not os.path.exists("/usr/bin/python3")


@needs_bwrap
def test_unencodable_code_is_the_programs_failure_not_an_infra_error(box):
    result = box.run_python("print('\ud800')")
    assert result.exit_code != 0
    report = run_suite(box, "def add(a, b):\n    return '\ud800'\n", ADD_SUITE)
    assert report.passed == 0 and report.finished


def _run_result(mode, messages, timed_out=False):
    from envhub.sandbox import RunResult

    return RunResult(
        exit_code=None if timed_out else 1,
        timed_out=timed_out,
        stdout="",
        stderr="boom",
        stdout_truncated=False,
        stderr_truncated=False,
        duration_s=0.1,
        mode=mode,
        messages=messages,
        started=True,
        hardened=True,
    )


def test_verdict_counting_by_the_parent():
    from envhub.sandbox.harness import _report

    first = {"event": "test", "index": 0, "passed": True}
    forged = [first, first, {"event": "test", "index": 99, "passed": True}]
    done = [{"event": "done", "passed": 3}]
    report = _report(ADD_SUITE, _run_result("bwrap", forged + done))
    assert (report.passed, report.total) == (1, 3)  # duplicates and unknown indexes ignored
    # A report that stops early proves nothing about the machinery (the program may have
    # spent the run's memory, or killed the runner in rlimit mode): the rest failed, in
    # every mode. Only the runner's own crash report or a missing heartbeat is infra.
    for mode in ("bwrap", "rlimit"):
        early = _report(ADD_SUITE, _run_result(mode, [first]))
        assert early.passed == 1 and not early.finished and not early.timed_out
        assert "stopped by the program" in early.outcomes[1].error
    crash = {"event": "crash", "error": "Traceback: KeyError 'steps'"}
    with pytest.raises(SandboxError, match="runner failed: Traceback"):
        _report(ADD_SUITE, _run_result("bwrap", [first, crash]))
    silent = _run_result("bwrap", [])
    silent.started = False
    with pytest.raises(SandboxError, match="did not come up"):
        _report(ADD_SUITE, silent)
    timed = _report(ADD_SUITE, _run_result("bwrap", [first], timed_out=True))
    assert timed.timed_out and "timed out" in timed.outcomes[2].error
    soft = _run_result("bwrap", [first, *done])
    soft.hardened = False
    with pytest.raises(SandboxError, match="non-dumpable"):
        _report(ADD_SUITE, soft)
