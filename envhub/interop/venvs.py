"""Virtual environments of their own for other ecosystems' packages, made once and reused.

OpenEnv ships as two distributions that both install the ``openenv`` module (``openenv-core``
0.3 and ``openenv`` 0.10), and an OpenEnv environment brings its own dependencies; so what
runs an OpenEnv server, or plays one with OpenEnv's own client, runs in a venv of its own.

A venv is made under a file lock (concurrent makers wait, then reuse it). ``.envhub-ready`` is
written last and holds what the venv was made with, so a venv whose making was interrupted,
or that was made with other requirements, is made again.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from envhub.errors import InfraError

READY = ".envhub-ready"
"""Written last into a finished venv, holding the requirements it was made with."""


def ensure_venv(folder: Path, requirements: Sequence[str], timeout_s: float = 1800) -> Path:
    """The Python of the venv in ``folder`` holding ``requirements`` (pip arguments).

    Made first if it is not there yet, or was made with other requirements; an install that
    fails (no package index, a conflict) is an :class:`InfraError` quoting pip.
    """
    wanted = " ".join(requirements)
    python = folder / "bin" / "python"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ready = folder / READY
        if ready.exists() and ready.read_text() == wanted:
            return python
        _run([sys.executable, "-m", "venv", "--clear", str(folder)], timeout_s)
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        _run([*pip, *requirements], timeout_s)
        ready.write_text(wanted)
    return python


def _run(cmd: list[str], timeout_s: float) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        raise InfraError(f"{' '.join(cmd)} took over {timeout_s:g} s") from e
    if done.returncode != 0:
        raise InfraError(
            f"could not make the venv ({' '.join(cmd)}); it needs a package index:\n"
            f"{done.stderr[-3000:]}"
        )
