"""The ``envhub/NAME-vN`` ids in gymnasium's registry, registered when gymnasium is imported.

``import envhub`` neither imports gymnasium (about 0.3 s with numpy) nor reads the catalog
for it. :func:`install` (called by ``envhub/__init__.py``) does one of two things:

- gymnasium is already imported: register every catalog entry now, since the user is
  using gymnasium and will ask for an id;
- otherwise: put a small finder on ``sys.meta_path`` that waits for ``import gymnasium``,
  lets gymnasium load as usual, then registers the ids and removes itself (a post-import
  hook, as PEP 369 proposed and ``wrapt.register_post_import_hook`` provides; wrapt is not
  a core dependency, and this is 50 lines).

Either way ``import envhub; import gymnasium; gymnasium.make("envhub/gsm8k-v1")`` works in
any order. Without ``import envhub``, gymnasium's own ``module:env`` form imports the adapter
and registers the ids: ``gymnasium.make("envhub.gym:envhub/gsm8k-v1")``.

This module imports nothing heavy; the adapter itself is :mod:`envhub.gym`.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import logging
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .errors import EnvhubError

log = logging.getLogger("envhub")

TARGET = "gymnasium"


def register_ids() -> None:
    """Register every catalog entry with gymnasium; a broken user YAML only logs a warning."""
    try:
        from .gym import register_all

        register_all()
    except EnvhubError as e:  # a broken user YAML must not break `import gymnasium`
        log.warning("envhub: gymnasium ids not registered: %s", e)


class _ThenRun(importlib.abc.Loader):
    """Wraps gymnasium's own loader: load the module as usual, then run ``after``."""

    def __init__(self, loader: importlib.abc.Loader, after: Callable[[], None]) -> None:
        self._loader = loader
        self._after = after

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._after()

    def __getattr__(self, name: str) -> Any:  # resource readers, get_source, is_package...
        return getattr(self._loader, name)


class _AfterImport(importlib.abc.MetaPathFinder):
    """When ``module`` is imported, run ``after`` once it has loaded; then step aside.

    A bare ``importlib.util.find_spec(module)`` (a library probing what is installed) loads
    nothing, so the finder stays until the module really executes.
    """

    def __init__(self, module: str, after: Callable[[], None]) -> None:
        self.module = module
        self.after = after
        self._finding = False

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.module or self._finding:
            return None
        self._finding = True
        try:
            spec = importlib.util.find_spec(fullname)  # the real finders, not this one
        finally:
            self._finding = False
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenRun(spec.loader, self._loaded)
        return spec

    def _loaded(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)
            self.after()


def _pending() -> _AfterImport | None:
    return next((f for f in sys.meta_path if isinstance(f, _AfterImport)), None)


def install() -> None:
    """Register the ids now if gymnasium is loaded, or as soon as it is imported."""
    if TARGET in sys.modules:
        if sys.modules[TARGET] is not None:  # None: the import is blocked on purpose
            register_ids()
    elif _pending() is None:
        sys.meta_path.insert(0, _AfterImport(TARGET, register_ids))
