"""Whether bubblewrap isolation works here, probed once for every test that needs it."""

from __future__ import annotations

import shutil

import pytest

from envhub.sandbox import Sandbox, SandboxUnavailable


def _bwrap_problem() -> str | None:
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install -y bubblewrap)"
    try:
        Sandbox(mode="bwrap").check()
    except SandboxUnavailable as e:
        return str(e)
    return None


BWRAP_PROBLEM = _bwrap_problem()
needs_bwrap = pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no isolation: {BWRAP_PROBLEM}")
