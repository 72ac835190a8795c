"""Other ecosystems and envhub, one folder each, both directions where both exist.

* :mod:`.openenv`: OpenEnv servers and images as envhub environments; envhub's served in
  OpenEnv's protocol (``envhub serve NAME --openenv``).
* :mod:`.nemo_gym`: NeMo Gym resources servers as envhub verifiers; envhub's answering NeMo
  Gym's ``/verify`` (``envhub serve NAME --nemo-gym``).
* :mod:`.verifiers`: verifiers environments (tasksets and multi-turn ``vf.Env``) in envhub.
* :mod:`.replies`: reading another ecosystem's replies within bounds (shared by the above).

Each ecosystem is behind its own extra; the core never imports them.
"""
