"""``envhub pull NAME --venv DIR``: an environment installed into a virtual environment of its own.

The venv is made once (:func:`envhub.client.venv.ensure_venv`: under a file lock, a ready
marker written last) with envhub's server (this checkout, editable, when envhub runs from one;
else the same ``envhub-rl`` version), then the digest-checked wheel is installed there with its
dependencies, from the package index pip is configured with (that is the point of a venv of its
own: they need not fit this Python). The environment's spec, as that venv's envhub resolves it
from the installed package, is registered here with ``venv`` set (:func:`envhub.authoring.
register.register_pulled`), so ``make``, ``list``, ``check``, ``serve``, ``eval`` and ``train``
serve it from that venv over HTTP.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from ...client.venv import ensure_venv, envhub_requirement, locked, pip, run
from ...errors import ConfigError
from ...spec import EnvSpec

_SPEC = (
    "import sys; from envhub.registry.catalog import spec; "
    "print(spec(sys.argv[1]).model_dump_json())"
)
"""Run by the venv's Python: the environment's spec as its installed package declares it."""


def spec_in(python: Path, name: str) -> EnvSpec:
    """``name``'s spec as the venv of ``python`` resolves it (its built-in and packages' catalogs).

    Read with an empty ``ENVHUB_HOME``: the user's registrations are this Python's to read.
    """
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "ENVHUB_HOME": home}
        done = subprocess.run([str(python), "-c", _SPEC, name], capture_output=True, text=True,
                              timeout=300, env=env)  # fmt: skip
    if done.returncode != 0:
        raise ConfigError(
            f"the venv {python.parent.parent} does not resolve {name!r} after installing it: "
            f"{done.stderr.strip()[-1500:]}"
        )
    return EnvSpec.model_validate_json(done.stdout.strip().splitlines()[-1])


def install_into_venv(name: str, wheel: Path, folder: Path, inherit: bool) -> EnvSpec:
    """Make the venv ``folder`` (if need be), install ``wheel`` with its dependencies there.

    Returns ``name``'s spec with ``venv`` set: what to register here.
    """
    folder = folder.expanduser().resolve()
    python = ensure_venv(folder, envhub_requirement(), inherit=inherit, what=f" for {name}")
    with locked(folder):
        run([*pip(python), str(wheel)], f"install {wheel.name} into the venv {folder}")
    return spec_in(python, name).model_copy(update={"venv": str(folder)})
