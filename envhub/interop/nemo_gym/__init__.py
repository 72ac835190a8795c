"""NeMo Gym both ways.

* In: a NeMo Gym resources server as an envhub verifier, ``entry_point:
  envhub.interop.nemo_gym:NemoGymEnv`` (:mod:`.env`).
* Out: any envhub environment answering NeMo Gym's ``/verify``, ``envhub serve NAME
  --nemo-gym`` (:mod:`.serve`, mounted by the server's dialects).
"""

from .env import NemoGymEnv

__all__ = ["NemoGymEnv"]
