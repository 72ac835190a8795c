"""Writing environments: register and unregister, preflight, checks, cards, ``envhub init``.

What an author runs before an environment is in the catalog, and the verbs that put it there
(:mod:`~envhub.authoring.register` is the catalog's only writer). It stands on the contract,
the catalog and the client; nothing but the front doors (``envhub``, ``envhub.cli``) imports it.
"""
