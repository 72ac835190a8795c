"""Fixtures of the interop tests: the virtual environments of the real packages.

Each venv is made once in ENVHUB_TEST_VENVS (default ~/.cache/envhub/test-venvs) and reused
(``.envhub-ready`` marks a finished one): verifiers 0.4 with uv and envhub's server, and one
per OpenEnv release (``openenv-core`` 0.3, ``openenv`` 0.10: both install the ``openenv``
module, so they cannot share one). Where a venv cannot be made (no package index), the tests
that need it skip and say so.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from envhub.errors import InfraError
from envhub.interop.venvs import ensure_venv as ensure_openenv_venv
from envhub.interop.verifiers.env import ensure_venv

VENVS = Path(os.environ.get("ENVHUB_TEST_VENVS", Path.home() / ".cache/envhub/test-venvs"))
VENV = VENVS / "verifiers-0.4.0"

OPENENV_RELEASES = {"openenv-core-0.3": "openenv-core==0.3.0", "openenv-0.10": "openenv==0.10.0"}
"""The OpenEnv releases the bridge is tested against, each in a venv of its own."""


@pytest.fixture(scope="session")
def venv_python():
    try:
        return ensure_venv(VENV)
    except (InfraError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"the verifiers venv could not be made (it needs PyPI): {e}")


def openenv_python(release: str) -> Path:
    """The Python of the venv holding OpenEnv ``release`` (a key of OPENENV_RELEASES)."""
    try:
        return ensure_openenv_venv(VENVS / release, [OPENENV_RELEASES[release]])
    except InfraError as e:
        pytest.skip(f"the {release} venv could not be made (it needs PyPI): {e}")


@pytest.fixture(scope="session", params=list(OPENENV_RELEASES))
def openenv_venv(request) -> Path:
    """The Python of each OpenEnv release's venv in turn (the test runs once per release)."""
    return openenv_python(request.param)


@pytest.fixture(scope="session")
def openenv10_python() -> Path:
    """The Python of the ``openenv`` 0.10 venv (its discovery catalog is new in 0.10)."""
    return openenv_python("openenv-0.10")


SLOW_FIXTURES = {"venv_python", "openenv_venv", "openenv10_python"}


def pytest_collection_modifyitems(items):
    """A test that needs a venv may wait for it to be made (verifiers: 114 s in CI, 299 s on a
    loaded machine; openenv 0.10: 108 s here): its time limit covers that set-up as well."""
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.timeout(900))
