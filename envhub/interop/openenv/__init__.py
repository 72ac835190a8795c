"""OpenEnv both ways.

* In: an OpenEnv server (or its image) as an envhub environment, ``entry_point:
  envhub.interop.openenv:OpenEnvEnv`` (:mod:`.env`; the image's container: :mod:`.image`).
* Out: any envhub environment served in OpenEnv's protocol, ``envhub serve NAME --openenv``
  (:mod:`.serve`, mounted by the server's dialects).
"""

from .env import OpenEnvEnv

__all__ = ["OpenEnvEnv"]
