"""Episodes and their data.

The mix and its curriculum, rollouts, dynamic sampling, staleness, validation, rollout logs and
their viewer. Imports no other room of the trainer (``tests/test_layout.py``).
"""
