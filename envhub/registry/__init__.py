"""The catalog, read-only: ``registry.yaml``, users' registrations, entry points, plugins, ``make``.

It stands on the contract and the client (``make(runner="http")`` builds an
:class:`~envhub.client.remote_env.RemoteEnv`): listing or describing an environment imports no
environment code, and nothing here writes the catalog (:mod:`envhub.authoring.register` does).
:mod:`envhub.registry.gym` is every entry as a Gymnasium id.
"""
