"""verifiers environments in envhub, ``entry_point: envhub.interop.verifiers:VerifiersEnv``.

* :mod:`.env`: :func:`VerifiersEnv`, in-process where verifiers imports, else served from a
  virtual environment of its own (made on first use).
* :mod:`.tasks`: a single-turn taskset as a :class:`~envhub.core.TaskEnv`.
* :mod:`.episodes`: a multi-turn ``vf.Env`` played as envhub episodes, through
* :mod:`.bridge`: the model endpoint verifiers' chat program calls, answered by envhub's
  policy turn by turn.

Only :mod:`.env` is imported here: the others import verifiers itself.
"""

from .env import VerifiersEnv

__all__ = ["VerifiersEnv"]
