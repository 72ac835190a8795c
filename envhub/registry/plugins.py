"""Environments as installed packages: the ``envhub.environments`` entry-point group.

A distribution adds environments to envhub, with no registration step, by declaring in its
``pyproject.toml``::

    [project.entry-points."envhub.environments"]
    wordrev = "wordrev:CATALOG"

The entry point names a catalog YAML file: a ``Path`` or ``str`` (``CATALOG =
Path(__file__).with_name("wordrev.yaml")``), a list of them, or a function returning either.
The YAML is read like ``registry.yaml`` (relative paths resolve against its folder). This is how
pytest and gymnasium find their plugins; ``envhub init`` writes such a package.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

from ..errors import RegistryError

GROUP = "envhub.environments"


@dataclass(frozen=True)
class PackageCatalog:
    """One catalog file contributed by an installed distribution."""

    distribution: str
    entry_point: str
    path: Path

    def describe(self) -> str:
        """``package NAME (entry point EP in group envhub.environments, FILE)``."""
        where = f"entry point {self.entry_point!r} in {GROUP}, {self.path}"
        return f"package {self.distribution!r} ({where})"


def _paths(ep: EntryPoint) -> list[Path]:
    where = f"entry point {ep.name!r} = {ep.value!r} in group {GROUP}"
    try:
        obj = ep.load()
    except Exception as e:  # a third-party plugin: name it, never crash list/make silently
        raise RegistryError(f"{where}: cannot load it ({type(e).__name__}: {e})") from e
    if callable(obj):
        obj = obj()
    items = obj if isinstance(obj, (list, tuple)) else [obj]
    paths = []
    for item in items:
        if not isinstance(item, (str, Path)) or not Path(item).is_file():
            raise RegistryError(
                f"{where}: expected the path of a catalog YAML file (or a list of them), got "
                f"{item!r}. Fix: point it at e.g. CATALOG = Path(__file__).with_name('x.yaml')"
            )
        paths.append(Path(item).resolve())
    return paths


def package_catalogs() -> list[PackageCatalog]:
    """Every catalog file declared by installed distributions, in a stable order."""
    found = []
    for ep in sorted(entry_points(group=GROUP), key=lambda e: (e.name, e.value)):
        dist = ep.dist.name if ep.dist is not None else "?"
        found += [PackageCatalog(dist, ep.name, p) for p in _paths(ep)]
    return found
