"""envhub: a hub of RL environments and verifiers for language models."""
