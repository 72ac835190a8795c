"""`envhub train` stopped with SIGTERM (a scheduler's stop, `kill`): it unwinds and cleans up."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def processes_mentioning(text: str) -> list[int]:
    """Pids whose command line or environment mentions ``text`` (this user's processes)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            blob = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except OSError:  # gone, or not ours
            continue
        if text.encode() in blob:
            found.append(int(entry.name))
    return found


@pytest.mark.timeout(600)
def test_sigterm_stops_training_and_its_private_ray(tmp_path):
    temp = Path(tempfile.mkdtemp(prefix="eh-", dir="/tmp"))  # Ray's socket paths must be short
    try:
        stop_and_check(temp, tmp_path / "run")
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def stop_and_check(temp: Path, out: Path) -> None:
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "envhub.cli", "train", str(REPO / "examples" / "tiny.yaml")]
    cmd += ["train.steps=200", "checkpoint.every=0", "checkpoint.export_final=false"]
    proc = subprocess.Popen(
        [*cmd, "--out", str(out)],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        metrics = out / "metrics.jsonl"
        deadline = time.monotonic() + 420
        while not (metrics.exists() and metrics.read_text().strip()):  # one step done
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "no training step within 420 s"
            time.sleep(1)
        assert list(temp.glob("envhub-ray-*")), "the private Ray's folder is missing"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 30
    while (left := processes_mentioning(str(temp))) and time.monotonic() < deadline:
        time.sleep(1)
    assert not left, f"processes of the stopped run are still alive: {left}"
    assert not list(temp.glob("envhub-ray-*")), "the private Ray's folder was left behind"
