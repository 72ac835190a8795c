"""Process plumbing of the sandbox: per-run uids, switching to them, sweeping, memfds."""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import signal
import subprocess
import threading
import time
from typing import Any

_UIDS_LOCK = threading.Lock()
_UIDS_IN_USE: set[int] = set()


def pick_uid() -> int | None:
    """A fresh host uid per run when root (so RLIMIT_NPROC applies and leaks are findable)."""
    if os.geteuid() != 0:
        return None
    with _UIDS_LOCK:
        while True:
            uid = (1 << 20) + secrets.randbelow(1 << 29)
            if uid not in _UIDS_IN_USE:
                _UIDS_IN_USE.add(uid)
                return uid


def release_uid(uid: int | None) -> None:
    """Return a uid to the pool once its run is over."""
    with _UIDS_LOCK:
        _UIDS_IN_USE.discard(uid)  # type: ignore[arg-type]


_SETPRIV = shutil.which("setpriv")


def as_user(uid: int | None, argv: list[str]) -> tuple[list[str], dict[str, Any]]:
    """``argv`` and Popen arguments that run it as host ``uid`` (``None``: as ourselves).

    ``setpriv`` (util-linux) switches the uid after a cheap ``vfork``; Popen's own ``user=``
    forces a full ``fork`` of the caller, which costs ~0.2 s for a server of 600 MB.
    """
    if uid is None:
        return argv, {}
    if _SETPRIV:
        switch = [_SETPRIV, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
        return [*switch, *argv], {}
    return argv, {"user": uid, "group": uid, "extra_groups": []}


def sweep_uid(uid: int | None, timeout_s: float = 2.0) -> int:
    """SIGKILL every process of host ``uid`` until none is left; returns how many were seen."""
    if uid is None:
        return 0
    seen: set[int] = set()
    deadline = time.monotonic() + timeout_s
    while True:
        pids = processes_of(uid)
        if not pids or time.monotonic() > deadline:
            return len(seen)
        for pid in pids:
            seen.add(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.005)


def processes_of(uid: int) -> list[int]:
    """Live (non-zombie) processes whose real uid is ``uid``."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as f:
                status = f.read()
        except OSError:
            continue
        fields = dict(line.split(b":", 1) for line in status.splitlines() if b":" in line)
        state = fields.get(b"State", b"").strip()[:1]
        real_uid = fields.get(b"Uid", b"-1").split()[0]
        if state not in (b"Z", b"X") and int(real_uid) == uid:
            out.append(int(name))
    return out


_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


def memfd(name: str, data: bytes, seal: bool = False) -> int:
    """An anonymous in-memory file holding ``data``; sealed ones can never change."""
    flags = os.MFD_CLOEXEC | (os.MFD_ALLOW_SEALING if seal else 0)
    fd = os.memfd_create(name, flags)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    if seal:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
    return fd


def kill_group(pid: int) -> None:
    """SIGKILL the process group ``pid`` leads, if it still exists."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def wait(proc: subprocess.Popen, killed: bool) -> int | None:
    """Reap ``proc`` (killing its group if it lingers); its exit status."""
    try:
        return proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        proc.kill()
        return proc.wait()
