"""Process plumbing of the sandbox: starting a run as its uid, uids, sweeping, memfds."""

from __future__ import annotations

import fcntl
import logging
import os
import secrets
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from . import spawner_client
from .spawner_client import SpawnedProcess

if TYPE_CHECKING:
    from .cgroup import Cgroup

Process: TypeAlias = subprocess.Popen | SpawnedProcess
"""A run's top process: started by the spawner, or by Popen (``setpriv`` path, or not root)."""
log = logging.getLogger("envhub.sandbox")

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


def start(
    argv: list[str],
    *,
    uid: int | None,
    cgroup: Cgroup | None,
    python: str,
    piped_stdin: bool,
    pass_fds: Sequence[int],
    cwd: str | None,
    env: Mapping[str, str],
) -> Process:
    """Start a run's top process as ``uid``, in ``cgroup``, in a new session, stdio piped.

    As root (``uid`` given) through the spawner of ``python`` (:mod:`.spawner_client`); when it is
    off (``ENVHUB_SANDBOX_SPAWNER=0``) or cannot start, or the cgroup is delegated (the
    spawner steps into a run's cgroup and back, and needs the hierarchy's mount point for
    that), through ``sh`` (cgroup join) and ``setpriv`` (uid switch) from here.

    Raises:
        OSError: the process could not be started.
    """
    delegated = cgroup is not None and cgroup.delegated
    if uid is not None and spawner_client.enabled() and not delegated:
        exe = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=env.get("PATH"))
        try:
            return spawner_client.spawn(
                python,
                [exe or argv[0], *argv[1:]],
                uid=uid,
                cgroup_joins=cgroup.joins() if cgroup is not None else [],
                piped_stdin=piped_stdin,
                pass_fds=pass_fds,
                cwd=cwd,
                env=env,
            )
        except spawner_client.SpawnerUnavailable as e:
            _warn_once(f"sandbox spawner of {python} unavailable ({e}); runs use setpriv")
    argv, kwargs = as_user(uid, argv)
    if cgroup is not None:
        argv = cgroup.wrap(argv)
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE if piped_stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=pass_fds,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
        **kwargs,
    )


_WARNED: dict[str, float] = {}


def _warn_once(message: str, every_s: float = 60.0) -> None:
    """Log ``message`` unless it was logged less than ``every_s`` ago (no flood per run)."""
    now = time.monotonic()
    if now - _WARNED.get(message, -every_s) >= every_s:
        _WARNED[message] = now
        log.warning(message)


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


def kill_group(proc: Process) -> None:
    """SIGKILL the process group ``proc`` leads, unless it was reaped (its pid may be reused)."""
    if isinstance(proc, SpawnedProcess):
        proc.kill()  # the spawner reaps, so it checks
        return
    if proc.returncode is None:  # not reaped: the pid (and group) are still ours
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass


def wait(proc: Process, killed: bool) -> int | None:
    """Reap ``proc`` (killing its group if it lingers); its exit status."""
    try:
        return proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        proc.kill()
        return proc.wait()
