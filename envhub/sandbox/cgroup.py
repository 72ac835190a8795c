"""A memory and process cap for a whole run: one cgroup per run, where the host allows it.

RLIMIT_AS caps each process; a program that forks ``nproc`` children of ``memory_mb`` each
(and fills the tmpfs) escapes it. A cgroup caps the run as a whole, tmpfs pages included.
Needs root and a writable cgroup hierarchy (v1 ``memory`` + ``pids``, or v2 with those
controllers delegated), or a hierarchy delegated to this user and named by
``ENVHUB_SANDBOX_CGROUP`` (how the Docker runner bounds programs in its containers, whose
server is unprivileged); elsewhere :func:`create` returns ``None`` and runs go on with rlimits
only (``RunResult.cgroup`` says which).

The run joins its cgroup before anything of it starts: the spawner (:mod:`.spawner_client`) steps
into the cgroup itself while it creates the run's process; on the ``setpriv`` path the
command line is prefixed with a tiny shell that writes its own pid into ``cgroup.procs`` and
then ``exec``s the sandbox.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
DELEGATED = "ENVHUB_SANDBOX_CGROUP"
"""Environment variable naming a cgroup hierarchy this (possibly unprivileged) user may manage,
laid out like ``/sys/fs/cgroup`` (v1: ``<dir>/memory``, ``<dir>/pids``). Its own limits bound
all runs together; each run still gets its own group inside it, capped at half of them."""
GROUP = "envhub-sandbox"
JOIN = (
    'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 125; shift; done; '
    'shift; exec "$@"'
)
"""sh script: write our pid into each file before ``--``, then exec what follows it."""


@dataclass
class Cgroup:
    """The cgroup directories of one run (one per v1 controller, or one v2 directory)."""

    dirs: list[Path]
    delegated: bool = False
    """Made in a hierarchy named by ``ENVHUB_SANDBOX_CGROUP``, not at ``/sys/fs/cgroup``:
    :meth:`joins` cannot name its mount points, so runs join it by :meth:`wrap`."""

    def joins(self) -> list[tuple[str, str]]:
        """Per hierarchy: the ``cgroup.procs`` file to join, and the hierarchy's mount point.

        The layout is ``<mount>/envhub-sandbox/<run id>`` (v1: one mount per controller).
        """
        return [(str(d / "cgroup.procs"), str(d.parent.parent)) for d in self.dirs]

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` prefixed so the process joins this cgroup before it runs."""
        procs = [str(d / "cgroup.procs") for d in self.dirs]
        return ["/bin/sh", "-c", JOIN, "sh", *procs, "--", *argv]

    def pids(self) -> set[int]:
        """Processes still in the cgroup."""
        out: set[int] = set()
        for d in self.dirs:
            try:
                out |= {int(p) for p in (d / "cgroup.procs").read_text().split()}
            except OSError:
                pass
        return out

    def destroy(self, timeout_s: float = 2.0) -> None:
        """Kill what is left and remove the directories."""
        deadline = time.monotonic() + timeout_s
        while (pids := self.pids()) and time.monotonic() < deadline:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.005)
        for d in self.dirs:
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # still busy for a moment after the last process exits
                    time.sleep(0.005)


def create(run_id: str, memory_mb: int, pids: int) -> Cgroup | None:
    """A fresh cgroup capping memory (no swap beyond it) and processes; ``None`` if impossible."""
    delegated = os.environ.get(DELEGATED)
    root = Path(delegated) if delegated else ROOT
    if (not delegated and os.geteuid() != 0) or not root.is_dir():
        return None
    try:
        if (root / "memory" / "memory.limit_in_bytes").exists():
            if delegated:
                memory_mb, pids = _fair_share(root, memory_mb, pids)
            group = _create_v1(root, run_id, memory_mb, pids)
        elif (root / "cgroup.controllers").exists():
            group = _create_v2(root, run_id, memory_mb, pids)
        else:
            return None
    except OSError:
        return None
    if group is not None:
        group.delegated = bool(delegated)
    return group


def _fair_share(root: Path, memory_mb: int, pids: int) -> tuple[int, int]:
    """At most half of a delegated v1 hierarchy's own caps.

    So that one run cannot take the memory or the processes every other run needs.
    """
    memory_cap = int((root / "memory" / "memory.limit_in_bytes").read_text())
    memory_mb = min(memory_mb, max(1, memory_cap >> 21))
    pids_file = root / "pids" / "pids.max"
    if pids_file.exists() and pids_file.read_text().strip().isdigit():
        pids = min(pids, max(1, int(pids_file.read_text()) // 2))
    return memory_mb, pids


def _create_v1(root: Path, run_id: str, memory_mb: int, pids: int) -> Cgroup | None:
    made: list[Path] = []
    try:
        mem = _mkdir(root / "memory" / GROUP / run_id, made)
        (mem / "memory.limit_in_bytes").write_text(str(memory_mb << 20))
        swap = mem / "memory.memsw.limit_in_bytes"
        if swap.exists():
            swap.write_text(str(memory_mb << 20))
        if (root / "pids").is_dir():
            pid_dir = _mkdir(root / "pids" / GROUP / run_id, made)
            (pid_dir / "pids.max").write_text(str(pids))
    except OSError:
        Cgroup(made).destroy()
        return None
    return Cgroup(made)


def _create_v2(root: Path, run_id: str, memory_mb: int, pids: int) -> Cgroup | None:
    parent = root / GROUP
    made: list[Path] = []
    try:
        parent.mkdir(exist_ok=True)
        (parent / "cgroup.subtree_control").write_text("+memory +pids")
        d = _mkdir(parent / run_id, made)
        (d / "memory.max").write_text(str(memory_mb << 20))
        (d / "memory.swap.max").write_text("0")
        (d / "pids.max").write_text(str(pids))
    except OSError:
        Cgroup(made).destroy()
        return None
    return Cgroup(made)


def _mkdir(path: Path, made: list[Path]) -> Path:
    path.parent.mkdir(exist_ok=True)
    path.mkdir()
    made.append(path)
    return path
