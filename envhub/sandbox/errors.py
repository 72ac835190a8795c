"""The sandbox's errors: both are infrastructure failures, never the model's fault."""

from __future__ import annotations

from ..errors import InfraError


class SandboxUnavailable(InfraError):
    """No sandbox can run here (bubblewrap or Python missing); never the model's fault."""


class SandboxError(InfraError):
    """The sandbox failed to start or broke its protocol; never the model's fault."""
