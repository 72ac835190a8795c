"""What one sandboxed run may use: its resource limits."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run. Every field has a finite default."""

    wall_s: float = 10.0
    """Wall-clock deadline of the whole run; past it every process is killed."""
    cpu_s: int = 10
    """CPU seconds per process (RLIMIT_CPU: SIGXCPU, then SIGKILL one second later)."""
    memory_mb: int = 1024
    """Address space per process (RLIMIT_AS)."""
    file_mb: int = 16
    """Largest file a process may write (RLIMIT_FSIZE)."""
    tmpfs_mb: int = 64
    """Size of the private, writable work dir (``/tmp``, a tmpfs) under bubblewrap."""
    nproc: int = 64
    """Processes of the sandbox's user (RLIMIT_NPROC): contains fork bombs."""
    nofile: int = 256
    """Open descriptors per process (RLIMIT_NOFILE)."""
    output_bytes: int = 1_000_000
    """Bytes kept of stdout and of stderr each; the rest is dropped and marked truncated."""
    total_memory_mb: int = 2048
    """Memory of the whole run (every process and the tmpfs), where a cgroup can be made."""

    def rlimits(self) -> dict[str, int]:
        """The limits the runner applies with ``setrlimit``."""
        keys = ("cpu_s", "memory_mb", "file_mb", "nproc", "nofile")
        return {k: v for k, v in asdict(self).items() if k in keys}
