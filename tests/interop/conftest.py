"""Fixtures of the interop tests: the virtual environment envhub makes for verifiers.

The venv is made once (verifiers 0.4, uv and envhub's server, from PyPI) in
ENVHUB_TEST_VENVS (default ~/.cache/envhub/test-venvs) and reused; where it cannot be made
(no package index), the tests that need it skip and say so.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from envhub.errors import InfraError
from envhub.interop.verifiers.env import ensure_venv

VENV = Path(os.environ.get("ENVHUB_TEST_VENVS", Path.home() / ".cache/envhub/test-venvs"))
VENV = VENV / "verifiers-0.4.0"


@pytest.fixture(scope="session")
def venv_python():
    try:
        return ensure_venv(VENV)
    except (InfraError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"the verifiers venv could not be made (it needs PyPI): {e}")


def pytest_collection_modifyitems(items):
    """A test that needs the verifiers venv may wait for it to be made (114 s in CI, 299 s on a
    loaded machine): its time limit covers that set-up as well as the test."""
    for item in items:
        if "venv_python" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(900))
