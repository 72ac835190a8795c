"""Other ecosystems' protocols an envhub server can speak: ``envhub serve NAME --DIALECT``.

Each dialect module has ``install(app, server) -> frozenset[str]``: it mounts its routes and
returns the paths it answers, which envhub's own routes then leave to it. A module whose
routes hand out gold answers or grade guesses names them in ``ORACLES``: they are refused
unless the server serves answers (``--answers``), as envhub's own ``/tasks`` and ``/verify``.
"""

from __future__ import annotations

import importlib
from typing import Any

from fastapi import FastAPI

DIALECTS: dict[str, str] = {
    "openenv": "envhub.interop.openenv.serve",
    "nemo-gym": "envhub.interop.nemo_gym.serve",
}
"""Dialect name -> the module that speaks it."""


def install(app: FastAPI, server: Any, dialect: str | None) -> frozenset[str]:
    """Mount ``dialect``'s routes (none for ``None``); the paths it took."""
    if dialect is None:
        return frozenset()
    if dialect not in DIALECTS:
        raise ValueError(f"unknown server dialect {dialect!r}; choose one of {sorted(DIALECTS)}")
    return importlib.import_module(DIALECTS[dialect]).install(app, server)


def oracles(dialect: str | None) -> frozenset[str]:
    """The paths of ``dialect`` that grade guesses or hand out gold (its ``ORACLES``)."""
    if dialect is None:
        return frozenset()
    return getattr(importlib.import_module(DIALECTS[dialect]), "ORACLES", frozenset())
