"""The container of an OpenEnv entry's ``options.image`` (see :mod:`envhub.interop.openenv`).

The container is started by the Docker part's :func:`envhub.docker.run_image` (imported when
one starts: the Docker SDK is the ``docker`` extra's). It starts on first use (the first
``reset`` or ``warmup``), not when the entry is built.
"""

from __future__ import annotations

import threading
from typing import Any

from envhub.errors import ConfigError, DependencyMissing, EnvhubError, InfraError, TransportError
from envhub.spec import EnvSpec


def _checked(
    spec: EnvSpec, image: Any, port: Any, environment: Any
) -> tuple[str, int, dict[str, str]]:
    """The options, or a :class:`ConfigError` naming the one that is wrong."""
    where = f"{spec.name}: options"
    if not isinstance(image, str) or not image.strip():
        raise ConfigError(f"{where}.image must be an image name such as guess-env:latest")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ConfigError(f"{where}.port must be the server's port in the image (1-65535)")
    if not isinstance(environment, dict) or not all(isinstance(k, str) for k in environment):
        raise ConfigError(f"{where}.environment must map variable names to values")
    return image, port, {k: str(v) for k, v in environment.items()}


class ImageServer:
    """An image's OpenEnv server in a container: started on first use, shared by forks."""

    def __init__(
        self, spec: EnvSpec, image: Any, port: Any, environment: Any, start_timeout_s: float
    ) -> None:
        """Check the options (a :class:`ConfigError` names a wrong one); start nothing yet."""
        self.spec = spec
        self.image, self.port, self.environment = _checked(spec, image, port, environment)
        self.start_timeout_s = start_timeout_s
        self._handle: Any = None
        self._closed = False
        self._lock = threading.Lock()

    def url(self) -> str:
        """The server's URL; the first call starts the container and waits for ``/health``.

        Raises:
            DependencyMissing: the Docker SDK is not installed.
            InfraError: no Docker engine answers, the image is not in it (the message says how
                to build or pull it), or the server did not come up in time. Like a
                ``base_url`` with no server behind it: what is missing is machinery, so
                registering the entry (whose check plays it) does not fail on it.
        """
        with self._lock:
            if self._closed:
                raise InfraError(f"{self.spec.name}: its OpenEnv container was closed")
            if self._handle is None:
                self._handle = self._start()
            return self._handle.url

    def _start(self) -> Any:
        from envhub.docker import run_image as start

        name, image = self.spec.name, self.image
        try:
            return start(
                self.spec, image, port=self.port, environment=self.environment,
                timeout=self.start_timeout_s,
            )  # fmt: skip
        except DependencyMissing:
            raise
        except TransportError as e:  # Docker refused the container, or it never got healthy
            raise InfraError(
                f"{name}: the container of options.image {image!r} did not come up "
                f"(options.start_timeout_s: {self.start_timeout_s:g}): {e}"
            ) from e
        except EnvhubError as e:  # no engine, or the image is not in it
            raise InfraError(f"{name}: options.image {image!r}: {e}") from e

    @property
    def generation(self) -> int:
        """How many of its containers died and were replaced."""
        return self._handle.generation if self._handle is not None else 0

    def revived(self, generation: int) -> bool:
        """After a call on container ``generation`` failed: whether it had died and was replaced.

        Raises:
            InfraError: the replacement did not come up, or this server was closed.
        """
        if self._handle is None:
            return False
        try:
            return self._handle.revive(generation) is not None
        except EnvhubError as e:
            raise InfraError(f"{self.spec.name}: its OpenEnv container is gone: {e}") from e

    def close(self) -> None:
        """Remove the container (idempotent)."""
        with self._lock:
            self._closed = True
            if self._handle is not None:
                self._handle.close()
