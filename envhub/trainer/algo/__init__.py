"""The algorithm as pure tensor math.

Losses, advantages, rollout correction, KL, overlong handling and batching. Imports no other
room of the trainer (``tests/test_layout.py``).
"""
