"""The Docker part: envhub's HTTP server in a container, started and removed by envhub.

A client of its container, not a part of the server: the server imports it for
``envhub serve NAME --docker``, interop for OpenEnv images, the core reaches it through the
``envhub.runners`` entry point.

One module per job:

* :mod:`.containers`: start, revive, list and remove containers; ``serve_in_docker``
  (``envhub serve NAME --docker``); ``run_image``, another ecosystem's server image (OpenEnv
  entries' ``options.image``).
* :mod:`.image`: building the server image (``Dockerfile`` here) from this checkout's wheel.
* :mod:`.env`: :class:`~.env.DockerEnv`, the HTTP env that outlives its container, and
  ``make_env``, the ``docker`` runner of ``envhub.make``.
* :mod:`.relay`: the loopback relay to containers on the internal network.
* :mod:`.cgroup`: the cgroups delegated to a container so its sandbox bounds each program.
* :mod:`.cli`: ``envhub docker build|clean|ps``.

The public names of :mod:`.containers` and :mod:`.env` are re-exported here, so
``envhub.docker:make_env`` (the ``envhub.runners`` entry point) names the runner. The Docker
SDK loads only when one runs.
"""

from .containers import (
    Death,
    DockerHandle,
    DockerUnavailable,
    ImageMissing,
    build,
    clean,
    default_extras,
    engine,
    run_image,
    serve_in_docker,
    start_container,
)
from .env import DockerEnv, make_env

__all__ = [
    "Death", "DockerEnv", "DockerHandle", "DockerUnavailable", "ImageMissing", "build", "clean",
    "default_extras", "engine", "make_env", "run_image", "serve_in_docker", "start_container",
]  # fmt: skip
