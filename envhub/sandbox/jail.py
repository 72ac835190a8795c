"""The bubblewrap command line and the runner compiled for the sandbox's Python."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import SandboxUnavailable
from .procs import memfd

if TYPE_CHECKING:
    from .core import Limits

RUNNER_SOURCE = (Path(__file__).parent / "_runner.py").read_text(encoding="utf-8")
SANDBOX_UID = 65534
"""The uid (``nobody``) the code sees inside the sandbox."""


_COMPILED: dict[str, tuple[int, int]] = {}
_COMPILED_LOCK = threading.Lock()


def compile_runner(python: str) -> tuple[int, int]:
    """The runner compiled by the sandbox's Python, in a sealed memfd: ``(fd, size)``.

    Compiling the runner's source costs more than starting Python; a marshalled code object
    loads in well under a millisecond. One memfd per interpreter, for the life of the
    process: it is sealed (immutable) and read with ``pread``, so every sandbox and every
    concurrent run share it, and no ``close`` can pull it from under a running launch.
    """
    with _COMPILED_LOCK:
        if python not in _COMPILED:
            _COMPILED[python] = _compile(python)
        return _COMPILED[python]


def _compile(python: str) -> tuple[int, int]:
    script = (
        "import marshal,sys;sys.stdout.buffer.write(marshal.dumps(compile("
        "sys.stdin.read(),'envhub-sandbox-runner','exec')))"
    )
    try:
        proc = subprocess.run(
            [python, "-I", "-S", "-c", script],
            input=RUNNER_SOURCE.encode(),
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SandboxUnavailable(f"cannot run the sandbox's Python {python!r}: {e}") from e
    if proc.returncode != 0 or not proc.stdout:
        raise SandboxUnavailable(
            f"the sandbox's Python {python!r} cannot compile the runner (it needs Python "
            f">= 3.8): {proc.stderr.decode(errors='replace')[-300:]}"
        )
    return memfd("envhub-runner", proc.stdout, seal=True), len(proc.stdout)


def find_python() -> str:
    """The system ``python3`` (under ``/usr``, so the sandbox sees it), else ours."""
    for cand in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if Path(cand).exists():
            return cand
    return sys.executable


def bwrap_prefix(
    exe: str, limits: Limits, python: str, ro_binds: Mapping[str, str], disable_userns: bool
) -> list[str]:
    """The bubblewrap command line (without the program) for ``limits``."""
    args = [exe, "--unshare-all", "--unshare-user"]
    if disable_userns:
        args.append("--disable-userns")
    # --as-pid-1: no bwrap reaper inside. That reaper would hold every inherited descriptor
    # (the verdict pipe, the nonce) while staying dumpable, so the program could open them
    # through /proc/1/fd. The runner is pid 1 instead: non-dumpable, and unkillable from
    # inside its own namespace.
    args += ["--as-pid-1", "--die-with-parent", "--new-session", "--uid", str(SANDBOX_UID)]
    args += ["--gid", str(SANDBOX_UID), "--hostname", "sandbox", "--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = Path("/") / name
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            args += ["--ro-bind", str(p), str(p)]
    real = Path(python).resolve()
    if not str(real).startswith("/usr/"):
        prefix = str(real.parent.parent)
        args += ["--ro-bind", prefix, prefix]
    for src, dest in ro_binds.items():
        args += ["--ro-bind", src, dest]
    args += ["--proc", "/proc", "--dev", "/dev", "--size", str(4 << 20), "--tmpfs", "/dev/shm"]
    args += ["--size", str(limits.tmpfs_mb << 20), "--tmpfs", "/tmp"]
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp", "--clearenv"]
    for key, value in sandbox_env("/tmp").items():
        args += ["--setenv", key, value]
    return args


def sandbox_env(home: str) -> dict[str, str]:
    """The only environment variables a sandboxed program sees."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
    }
