"""What an environment needs before it runs here: pip extras that are missing, data to fetch.

``envhub list`` marks each environment with the first thing a user must do, so a new user
does not find out from a traceback. Read from data only (the spec, and envhub's extras from
:mod:`envhub.install`): nothing here imports an environment.

An environment needs the extra named like its family (``math``, ``code``, ``search``,
``games``), the extras its Docker image lists, and ``data`` when its tasks come from the hub or
a parquet file.
"""

from __future__ import annotations

import functools
from importlib import metadata

from ..datasets import resolve_path
from ..install import extras, install_command
from ..spec import EnvSpec


@functools.cache  # `envhub list` asks for each of ~100 entries (the rg- entries)
def _installed(dist: str) -> bool:
    try:
        metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


def missing_extras(spec: EnvSpec) -> list[str]:
    """The extras ``spec`` needs whose packages are not all installed, in order."""
    known = extras()
    wanted = [spec.family, *spec.docker.extras]
    if spec.dataset.kind in ("hf", "parquet"):
        wanted.append("data")
    out = []
    for extra in dict.fromkeys(wanted):
        if extra in known and not all(_installed(d) for d in known[extra]):
            out.append(extra)
    return out


def data_note(spec: EnvSpec) -> str | None:
    """What data ``spec`` needs that is not on this machine, or ``None``."""
    ds = spec.dataset
    if ds.kind == "hf":
        return f"needs data: hub dataset {ds.path} (downloaded on first use; needs network)"
    if ds.kind in ("jsonl", "parquet") and ds.path:
        try:
            path = resolve_path(ds.path, spec.split, spec.source_dir)
        except (KeyError, IndexError, ValueError):  # a path with other braces: make() will say
            return None
        if not path.exists():
            return f"needs data: {path} is missing"
    return None


def needs(spec: EnvSpec) -> str | None:
    """One line: what to do before ``spec`` runs here, or ``None`` when it is ready."""
    parts = []
    lacking = missing_extras(spec)
    if lacking:
        parts.append(f"install: {install_command(lacking)}")
    note = data_note(spec)
    if note:
        parts.append(note)
    return "; ".join(parts) or None
