"""The catalog, read-only: ``registry.yaml``, users' registrations, entry points, plugins, ``make``.

It stands on the contract alone: listing or describing an environment imports no environment
code, and nothing here writes the catalog (that is :mod:`envhub.authoring.register`).
"""
