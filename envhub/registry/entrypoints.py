"""Resolving an environment's ``entry_point`` without ``PYTHONPATH``.

An entry point is ``TARGET:Attr`` where ``TARGET`` is one of, tried in this order:

1. ``path/to/file.py`` (contains ``/`` or ends in ``.py``): the file, relative to the YAML's
   folder (``base_dir``, recorded as an absolute path by ``envhub register``). It is imported
   under a module name derived from its absolute path, so two user environments that both
   call their module ``env.py`` never collide.
2. ``package.module``, importable as it stands (installed with ``pip``, or part of envhub).
3. ``package.module`` found in the YAML's own folder: the folder is added to ``sys.path``.

When none works the error lists what was tried and how to fix it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigError


def is_file_target(target: str) -> bool:
    """True for ``path/to/file.py`` targets, False for dotted module names."""
    return "/" in target or "\\" in target or target.endswith(".py")


def _module_name(path: Path) -> str:
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    return f"envhub_user_{digest}_{path.stem}"


def _import_file(path: Path) -> Any:
    """Import a ``.py`` file under a name unique to its absolute path (cached)."""
    name = _module_name(path)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folder = str(path.parent)
    if folder not in sys.path:  # sibling helper modules of env.py import as usual
        sys.path.append(folder)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _missing_top(exc: ImportError, module_name: str) -> bool:
    """True when ``exc`` says ``module_name`` itself (or a parent) is absent, not a dependency."""
    missing = getattr(exc, "name", None) or ""
    return bool(missing) and (module_name == missing or module_name.startswith(missing + "."))


def _import_module(module_name: str, base_dir: Path | None, tried: list[str]) -> Any:
    try:
        return importlib.import_module(module_name)
    except ImportError as e:
        if not _missing_top(e, module_name):
            raise
        tried.append(f"installed module {module_name!r}: {e}")
    if base_dir is None:
        return None
    folder = str(base_dir)
    if (
        not (base_dir / module_name.split(".")[0]).exists()
        and not (base_dir / f"{module_name.split('.')[0]}.py").exists()
    ):
        tried.append(f"module {module_name!r} in the YAML's folder {folder}: not there")
        return None
    if folder not in sys.path:
        sys.path.insert(0, folder)
    importlib.invalidate_caches()
    return importlib.import_module(module_name)


MOVED = {"envs": "envhub.envs", "servers": "envhub.server", "trainer": "envhub.trainer"}
"""Top-level packages of envhub before 0.2 and where they live now (issue 13)."""


def _moved_hint(entry_point: str) -> str:
    """The fix when ``entry_point`` names a package that moved into envhub ("" otherwise)."""
    top, dot, rest = entry_point.partition(".")
    if top not in MOVED or not dot:
        return ""
    return (
        f"envhub's {top!r} package moved to {MOVED[top]!r}: did you mean "
        f"{MOVED[top]}.{rest}? (write that in the YAML's entry_point)"
    )


def _resolve_target(target: str, base_dir: Path | None, tried: list[str]) -> Any:
    if is_file_target(target):
        path = Path(target).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.is_file():
            tried.append(f"file {path}: does not exist")
            return None
        return _import_file(path.resolve())
    return _import_module(target, base_dir, tried)


def load_entry_point(entry_point: str, base_dir: Path | str | None = None) -> Callable[..., Any]:
    """Import ``TARGET:attr`` (see the module docstring) and return the attribute.

    Args:
        entry_point: ``package.module:Class`` or ``path/to/file.py:Class``.
        base_dir: The folder of the YAML file that named it (where relative targets live).
    """
    target, _, attr = entry_point.rpartition(":")
    base = Path(base_dir) if base_dir else None
    tried: list[str] = []
    try:
        module = _resolve_target(target, base, tried)
    except ImportError as e:
        raise ConfigError(
            f"entry point {entry_point!r}: cannot import {target!r}: importing it raised "
            f"{type(e).__name__}: {e}. Fix: install what it needs, or fix the import in the module"
        ) from e
    if module is None and _moved_hint(entry_point):
        raise ConfigError(
            f"entry point {entry_point!r}: cannot import {target!r}. "
            f"Fix: {_moved_hint(entry_point)}"
        )
    if module is None:
        where = f"the YAML's folder {base}" if base else "the folder of the YAML file"
        raise ConfigError(
            f"entry point {entry_point!r}: cannot import {target!r}; tried: "
            + "; ".join(tried)
            + f". Fix: put the module in {where} (e.g. 'env.py:MyEnv' or 'mypkg.env:MyEnv' "
            "with mypkg/ beside the YAML), give a path 'path/to/file.py:Class', or "
            "`pip install` the package that provides it"
        )
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            public = sorted(n for n in dir(module) if not n.startswith("_"))[:12]
            where = getattr(module, "__file__", None) or target
            raise ConfigError(
                f"entry point {entry_point!r}: {target} ({where}) has no {attr!r} (it defines "
                f"{public}). Fix: name a class it defines; if that is another folder's module of "
                "the same name, use the file form 'path/to/file.py:Class'"
            )
        obj = getattr(obj, part)
    return obj
