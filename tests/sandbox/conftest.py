"""Fixtures of the sandbox tests (defined in sandbox_support)."""

from sandbox_support import box  # noqa: F401
