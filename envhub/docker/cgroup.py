"""Cgroups the Docker runner delegates to a container, so its sandbox bounds each program's tree.

Inside a container the server is unprivileged and the cgroup file system is read-only, so the
sandbox could cap each process (RLIMIT_AS) but not a program's process tree: a program that
forked children past the container's memory got the server OOM-killed, and the container with
it. So, where it can, the runner makes a cgroup per container on this host, outside the
container's own: ``/sys/fs/cgroup/{memory,pids}/envhub-docker/NAME``, capped at the container's
``memory_mb`` (no swap) and ``pids_limit`` (limits the server cannot change: only the folder
is the image user's, so it can make a group per run inside), bind-mounted read-write at
``/run/envhub-cgroup/{memory,pids}``. ``ENVHUB_SANDBOX_CGROUP`` tells the sandbox
(:mod:`envhub.sandbox.cgroup`) to make each run's group there. A program that outgrows its group
is killed by the kernel inside it, never the server: the run fails as the program's, and the
container lives on. Programs get a budget of their own beside the server's: the container uses
up to twice ``memory_mb`` in all.

Possible with cgroup v1 (``memory`` and ``pids`` mounted), envhub running as root and an engine
on this host (``DOCKER_HOST`` unset or ``unix://``). Elsewhere (cgroup v2, rootless or remote
engines) containers start without it, programs keep their per-process limits only, and a
container a program kills is replaced (:mod:`.env`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

HOST_ROOT = Path("/sys/fs/cgroup")
GROUP = "envhub-docker"
INSIDE = "/run/envhub-cgroup"
"""Where a container sees its delegated hierarchy (the value of ``ENVHUB_SANDBOX_CGROUP``)."""
CONTROLLERS = ("memory", "pids")
IMAGE_UID = 10001
"""The image's unprivileged user (``USER`` in the Dockerfile), who owns the delegated groups."""


def possible() -> bool:
    """Containers of this process can be given cgroups (root, cgroup v1, a local engine)."""
    host = os.environ.get("DOCKER_HOST", "")
    return (
        os.geteuid() == 0
        and (not host or host.startswith("unix://"))
        and (HOST_ROOT / "memory" / "memory.limit_in_bytes").is_file()
        and (HOST_ROOT / "pids").is_dir()
    )


def delegate(name: str, memory_mb: int, pids: int) -> dict[str, dict[str, str]] | None:
    """Make container ``name``'s groups; the bind mounts that show them inside (or ``None``)."""
    if not possible():
        return None
    made: list[Path] = []
    try:
        for controller in CONTROLLERS:
            folder = HOST_ROOT / controller / GROUP / name
            folder.mkdir(parents=True)
            made.append(folder)
        memory, processes = made
        (memory / "memory.limit_in_bytes").write_text(str(memory_mb << 20))
        if (memory / "memory.memsw.limit_in_bytes").exists():
            (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_mb << 20))
        (processes / "pids.max").write_text(str(pids))
        for folder in made:  # the folder only: its limits stay root's, out of the server's reach
            os.chown(folder, IMAGE_UID, IMAGE_UID)
    except OSError:
        release(name)
        return None
    pairs = zip(CONTROLLERS, made, strict=True)
    return {str(folder): {"bind": f"{INSIDE}/{c}", "mode": "rw"} for c, folder in pairs}


def release(name: str, timeout_s: float = 5.0) -> None:
    """Remove container ``name``'s groups, innermost first (once the container is gone)."""
    deadline = time.monotonic() + timeout_s
    for controller in CONTROLLERS:
        top = HOST_ROOT / controller / GROUP / name
        if not top.is_dir():
            continue
        inner = [p for p in top.rglob("*") if p.is_dir()]
        for folder in [*sorted(inner, key=lambda p: len(p.parts), reverse=True), top]:
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # its last processes are still exiting
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)


def release_orphans() -> list[str]:
    """Remove the groups of containers whose owner process died (leftovers of crashes).

    Container names carry their owner's pid (``envhub-ENV-PID-XXXXXX``); groups of a live
    owner stay, whichever engine its containers run on.
    """
    released = []
    for controller in CONTROLLERS:
        parent = HOST_ROOT / controller / GROUP
        for folder in parent.iterdir() if parent.is_dir() else ():
            if folder.is_dir() and not _owner_alive(folder.name):
                release(folder.name, timeout_s=0.5)
                released.append(folder.name)
    return sorted(set(released))


def _owner_alive(name: str) -> bool:
    try:
        os.kill(int(name.rsplit("-", 2)[1]), 0)
    except (IndexError, ValueError, ProcessLookupError):
        return False
    except PermissionError:
        pass
    return True
