"""Virtual environments of their own, each served from by ``envhub serve`` run there.

An environment whose packages this Python cannot hold (verifiers 0.4 pins an ``mcp`` envhub's
own extra cannot share) or should not (an environment pulled with ``envhub pull --venv`` and its
dependencies) runs in a venv of its own: made once, with envhub's server installed
(:func:`envhub_requirement`), then started as an ``envhub serve`` child there
(:class:`envhub.client.child_server.ServerProcess` takes its ``python``).

A venv is made under a file lock beside it (concurrent makers wait, then reuse it) and
:data:`READY` is written last, holding what it was made with: a venv whose making was
interrupted, or that was made with other requirements, is made again.

``inherit=True`` (``--system-site-packages``) lets the venv see the packages of the Python
that runs envhub, not only its base interpreter's: ``venv --system-site-packages``, and, where
this Python is itself a venv, a ``.pth`` line per site folder of it, after the venv's own. pip
then installs into the venv only what is missing there (nothing is downloaded that is here); its
pip and setuptools are this Python's as well.
"""

from __future__ import annotations

import contextlib
import fcntl
import site
import subprocess
import sys
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path

from ..errors import InfraError
from ..install import checkout, installed

READY = ".envhub-ready"
"""Written last into a finished venv, holding what it was made with."""
INHERIT_PTH = "envhub-inherit.pth"
"""The ``.pth`` file that shows a venv this Python's packages (``inherit=True``)."""


def python_of(folder: str | Path) -> Path:
    """The interpreter of the venv in ``folder``."""
    return Path(folder).expanduser().resolve() / "bin" / "python"


def is_current(folder: str | Path) -> bool:
    """Whether this process runs in the venv ``folder`` (it then builds its environments)."""
    return Path(sys.prefix).resolve() == Path(folder).expanduser().resolve()


def envhub_requirement() -> list[str]:
    """Pip arguments for envhub and its server as installed here: the checkout, or the wheel."""
    root = checkout()
    if root is not None:
        return ["-e", f"{root}[server]"]
    dist = installed()
    version = f"=={dist.version}" if dist else ""
    return [f"envhub-rl[server]{version}"]


def build_flags() -> list[str]:
    """The pip flags that choose a build backend for a source install here.

    This Python's setuptools where it makes wheels itself (70.1 on): offline. Else pip fetches
    a build backend from the package index it is configured with.
    """
    try:
        have = tuple(int(p) for p in metadata.version("setuptools").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return []
    return ["--no-build-isolation"] if have >= (70, 1) else []


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold the lock of the venv ``folder`` (a file beside it) until the block ends."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def run(cmd: Sequence[str], what: str) -> None:
    """Run ``cmd``; an :class:`InfraError` saying ``what`` failed, with its stderr, if it does."""
    done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise InfraError(f"could not {what} ({' '.join(cmd)}):\n{done.stderr[-3000:]}")


def pip(python: Path) -> list[str]:
    """The quiet pip command of ``python``."""
    return [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]


def _inherit(python: Path) -> None:
    """Show the venv of ``python`` this Python's site folders, after its own (a ``.pth``)."""
    if sys.prefix == sys.base_prefix:
        return  # venv --system-site-packages already shows this Python's packages
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    Path(purelib, INHERIT_PTH).write_text("".join(f"{p}\n" for p in site.getsitepackages()))


def ensure_venv(
    folder: Path,
    requirements: Sequence[str],
    *,
    setup: Sequence[Sequence[str]] = (),
    inherit: bool = False,
    what: str = "",
) -> Path:
    """The Python of the venv in ``folder`` holding ``requirements``, made first if need be.

    ``setup``: commands run with the venv's Python once it holds them (argument lists after
    the interpreter). ``inherit``: see the module. ``what`` names the venv in errors.
    """
    folder = folder.expanduser().resolve()
    python = python_of(folder)
    ready = folder / READY
    wanted = " ".join([*requirements, *(["--system-site-packages"] if inherit else [])])
    with locked(folder):
        if ready.exists() and ready.read_text() == wanted:
            return python
        # inherit: pip and setuptools are this Python's too (the venv's own older ones would
        # come first and could not build envhub offline)
        site_flag = ["--system-site-packages", "--without-pip"] if inherit else []
        run([sys.executable, "-m", "venv", "--clear", *site_flag, str(folder)],
            f"create the venv {folder}{what}")  # fmt: skip
        if inherit:
            _inherit(python)
        flags = build_flags() if inherit else []  # else the venv has no build backend yet
        run([*pip(python), *flags, *requirements], f"install {' '.join(requirements)}{what}")
        for step in setup:
            run([str(python), *step], f"run {' '.join(step)}{what}")
        ready.write_text(wanted)
    return python
