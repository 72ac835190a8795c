"""Refit: the policy's weights into the generation engines.

One sync per transport (object store, a torch collective group, vLLM's own API). Imports no
room of the trainer (``tests/test_layout.py``).
"""
