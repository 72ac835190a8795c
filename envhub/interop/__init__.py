"""Other ecosystems' environments as envhub environments (OpenEnv, NeMo Gym, verifiers).

Each adapter is its own module behind its own extra; the core never imports them. The servers'
side (envhub's environments served to those ecosystems' clients) is in :mod:`envhub.server`.
"""
