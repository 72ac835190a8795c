"""Multi-hop search over a generated corpus: the ``search`` and ``search-wiki`` environments.

See ``envhub/envs/search/README.md`` for the world, the tools and the scoring.
"""
