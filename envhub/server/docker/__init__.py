"""The Docker runner: envhub's HTTP server in a container, started and removed by envhub.

One module per job:

* :mod:`.containers`: start, revive, list and remove containers; ``make_env``, the ``docker``
  runner of ``envhub.make``; ``serve_in_docker`` (``envhub serve NAME --docker``);
  ``run_image``, another ecosystem's server image (``envhub.containers`` entry point).
* :mod:`.image`: building the server image (``Dockerfile`` here) from this checkout's wheel.
* :mod:`.env`: :class:`~.env.DockerEnv`, the HTTP env that outlives its container.
* :mod:`.relay`: the loopback relay to containers on the internal network.
* :mod:`.cgroup`: the cgroups delegated to a container so its sandbox bounds each program.
* :mod:`.cli`: ``envhub docker build|clean|ps``.

The public names of :mod:`.containers` are re-exported here, so ``envhub.server.docker:make_env``
(the ``envhub.runners`` entry point) names the runner. The Docker SDK loads only when one runs.
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
    make_env,
    run_image,
    serve_in_docker,
    start_container,
)

__all__ = [
    "Death", "DockerHandle", "DockerUnavailable", "ImageMissing", "build", "clean",
    "default_extras", "engine", "make_env", "run_image", "serve_in_docker", "start_container",
]  # fmt: skip
