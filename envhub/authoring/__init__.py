"""Writing environments: register and unregister, preflight, checks, cards, ``envhub init``.

What an author runs before an environment is in the catalog, and the verbs that put it there.
It stands on the contract, the catalog and the client; nothing below imports it.
"""
