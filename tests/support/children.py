"""Child processes in tests: start one as a script's background job would, stop it for sure.

A test that starts a process stops it with :func:`stop`: the polite signal first, then SIGKILL
and a wait if it has not exited in time (the test still fails then), so a server that ignores
its stop signal never outlives the test run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

SIGINT_IGNORED = ["sh", "-c", 'trap "" INT; exec "$@"', "sh"]
"""Prefix for a command that must start with SIGINT ignored, as the background job (``&``)
of a non-interactive shell does: an ignored disposition survives ``exec``."""


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
    """Send ``sig`` and wait for the exit code; SIGKILL and fail if it takes over ``timeout``."""
    if proc.poll() is None:
        proc.send_signal(sig)
    return wait_or_kill(proc, timeout, f"ignored {signal.Signals(sig).name}")


def wait_or_kill(proc: subprocess.Popen, timeout: float, what: str = "did not exit") -> int:
    """The exit code of ``proc``; if it runs past ``timeout``, SIGKILL, reap, and fail."""
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"pid {proc.pid} {what} for {timeout:g}s; killed") from None


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def children_of(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (from /proc)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                found.append(int(name))
    return found


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """Wait up to ``timeout`` seconds for ``pids`` to end; those still running."""
    deadline = time.monotonic() + timeout
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def wait_health(url: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    """Wait until ``envhub serve`` at ``url`` answers ``/health``; kill it and fail if it never does."""
    import httpx
    import pytest

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    stop(proc, signal.SIGKILL)
    pytest.fail(f"envhub serve did not answer /health: {proc.stderr.read()[-2000:]}")
