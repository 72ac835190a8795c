"""Shared helpers of the sandbox tests: a bubblewrap sandbox; isolation tests skip without one."""

import pytest
from bwrap import BWRAP_PROBLEM, needs_bwrap  # noqa: F401 (needs_bwrap: re-exported to the sandbox tests)

from envhub.sandbox import FunctionSuite, Limits, Sandbox, processes_of

FAST = Limits(wall_s=15.0, cpu_s=4, memory_mb=512, nproc=32, output_bytes=100_000)
"""Short limits so adversarial runs end quickly."""

ADD_SUITE = FunctionSuite.from_asserts(
    ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(-1, 1) == 0"]
)
HONEST_ADD = "def add(a, b):\n    return a + b\n"


@pytest.fixture(scope="session")
def box():
    """A bubblewrap sandbox with short limits (module tests skip when bwrap is missing)."""
    if BWRAP_PROBLEM is not None:
        pytest.skip(f"no isolation: {BWRAP_PROBLEM}")
    sandbox = Sandbox(FAST, mode="bwrap")
    yield sandbox
    sandbox.close()


def assert_nothing_left(result):
    """No process of the run's host uid survives it (daemons included)."""
    if result.uid is None:
        pytest.skip("not running as root: runs share the caller's uid, leaks are not findable")
    assert processes_of(result.uid) == []
