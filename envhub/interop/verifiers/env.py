"""verifiers environments in envhub: ``entry_point: envhub.interop.verifiers:VerifiersEnv``.

::

    - name: vf-arith
      entry_point: envhub.interop.verifiers:VerifiersEnv
      max_turns: 10                   # needed when the module exports a vf.Env (multi-turn)
      options:
        environment: my_taskset       # an installed module exporting a vf.Taskset in __all__
        args: {split: test}           # the taskset config's fields
        env_args: {}                  # the vf.Env config's fields (its roles), if it has one

A plain taskset is single-turn (:mod:`envhub.interop.verifiers.tasks`); a module that also
exports a ``vf.Env`` is played episode by episode (:mod:`envhub.interop.verifiers.episodes`).

verifiers 0.4 (its v1 API) pins ``mcp==2.0.0``, which envhub's own MCP extra (``mcp>=2.3``)
cannot share. So, as NeMo Gym and OpenEnv isolate each environment's dependencies, envhub
runs a verifiers environment in a virtual environment of its own: made once (``options.venv``,
default ``ENVHUB_HOME/venvs/verifiers-0.4.0``) with verifiers and envhub's server, started as
``envhub serve`` there when the environment is made, stopped when it is closed; this process
plays it over envhub's HTTP runner. Where verifiers imports in this Python, it runs in-process
(what the venv's server runs too).
"""

from __future__ import annotations

import fcntl
import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

from envhub.client.child_server import ServerProcess
from envhub.client.remote_env import RemoteEnv
from envhub.core import Env
from envhub.datasets import envhub_home
from envhub.errors import InfraError
from envhub.install import checkout, installed
from envhub.spec import EnvSpec

VERIFIERS = "verifiers==0.4.0"
"""The verifiers the venv holds (its v1 API: tasksets, tasks, ``@vf.reward``)."""
UV = "uv==0.13.9"
"""verifiers launches its chat program (a multi-turn environment's model turns) with ``uv``."""
READY = ".envhub-ready"
"""Written last into a finished venv, holding what it was made with."""


def VerifiersEnv(
    spec: EnvSpec,
    *,
    environment: str,
    args: dict[str, Any] | None = None,
    env_args: dict[str, Any] | None = None,
    venv: str | None = None,
) -> Env:
    """The verifiers environment ``environment``, in-process or from its own venv.

    In-process where verifiers imports in this Python; else served from its own virtual
    environment (made on first use), stopped when the returned environment is closed.
    ``args`` configure the taskset, ``env_args`` the taskset's ``vf.Env`` (its roles).
    """
    if importlib.util.find_spec("verifiers") is not None:
        from .episodes import verifiers_env

        return verifiers_env(spec, environment, args, env_args)
    python = ensure_venv(Path(venv) if venv else envhub_home() / "venvs" / "verifiers-0.4.0")
    server = ServerProcess(spec, python=str(python))
    try:
        return RemoteEnv(server.url, owner=server)
    except BaseException:
        server.close()
        raise


def _envhub_requirement() -> list[str]:
    """Pip arguments for envhub and its server as installed here: the checkout, or the wheel."""
    root = checkout()
    if root is not None:
        return ["-e", f"{root}[server]"]
    dist = installed()
    version = f"=={dist.version}" if dist else ""
    return [f"envhub-rl[server]{version}"]


def ensure_venv(folder: Path) -> Path:
    """The Python of the verifiers venv in ``folder``, made first if it is not there yet.

    Made under a file lock (concurrent makers wait, then reuse it); ``READY`` is written last,
    so a venv whose making was interrupted is made again.
    """
    wanted = " ".join([VERIFIERS, UV, *_envhub_requirement()])
    python = folder / "bin" / "python"
    ready = folder / READY
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if ready.exists() and ready.read_text() == wanted:
            return python
        _run([sys.executable, "-m", "venv", "--clear", str(folder)], "create the venv")
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        _run([*pip, VERIFIERS, UV, *_envhub_requirement()], "install verifiers and envhub")
        _run([str(python), "-m", "envhub.interop.verifiers.bridge"], "prepare the chat program")
        ready.write_text(wanted)
    return python


def _run(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise InfraError(
            f"could not {what} for verifiers ({' '.join(cmd)}):\n{done.stderr[-3000:]}"
        )
