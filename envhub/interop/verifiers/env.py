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

import importlib.util
from pathlib import Path
from typing import Any

from envhub.client.child_server import ServerProcess
from envhub.client.remote_env import RemoteEnv
from envhub.client.venv import ensure_venv as own_venv
from envhub.client.venv import envhub_requirement
from envhub.core import Env
from envhub.datasets import envhub_home
from envhub.spec import EnvSpec

VERIFIERS = "verifiers==0.4.0"
"""The verifiers the venv holds (its v1 API: tasksets, tasks, ``@vf.reward``)."""
UV = "uv==0.13.9"
"""verifiers launches its chat program (a multi-turn environment's model turns) with ``uv``."""


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


def ensure_venv(folder: Path) -> Path:
    """The Python of the verifiers venv in ``folder``, made first if it is not there yet.

    :func:`envhub.client.venv.ensure_venv`: made under a file lock, its ready-marker written
    last, so a venv whose making was interrupted is made again.
    """
    requirements = [VERIFIERS, UV, *envhub_requirement()]
    bridge = ["-m", "envhub.interop.verifiers.bridge"]  # prepares the chat program
    return own_venv(folder, requirements, setup=[bridge], what=" for verifiers")
