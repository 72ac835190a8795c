"""The hub: environments pushed to and pulled from an index by ``NAME@VERSION``.

:mod:`.index` reads and writes the index (PEP 503), :mod:`.push` checks, measures, builds and
places a distribution, :mod:`.pull` installs one with its digest checked and searches an index,
:mod:`.cli` holds the verbs.
"""
