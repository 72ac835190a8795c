"""``envhub pull NAME[@VERSION]`` and ``envhub search``: environments from an index, by name.

A pull picks the version (the one asked for, else the newest not yanked), downloads its wheel,
refuses it unless its sha256 is the digest the index lists, installs it into this Python
environment with pip (``--no-deps``: envhub itself is already here; the environment's own
third-party needs are its pyproject's, named by ``envhub check`` if missing), records what it
installed in ``$ENVHUB_HOME/hub/pulled.json`` (name, version, digest, index: what a run pins),
and runs ``envhub check`` on it. An installed environment package is found through its
``envhub.environments`` entry point, with no registration.

A yanked version (PEP 592) is never picked unless asked for by its exact version; then it is
installed with a warning that gives the index's reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...install import normal
from ...registry.pins import pulled, pulled_path
from .index import CARD_SUFFIX, Index, Link, sha256


def find_project(name: str, index: Index) -> str:
    """The index's project for environment ``name``.

    ``envhub-NAME`` (as ``envhub init`` names its distribution), else ``NAME``.
    """
    projects = {normal(p) for p in index.projects()}
    for candidate in (normal(f"envhub-{name}"), normal(name)):
        if candidate in projects:
            return candidate
    raise ConfigError(
        f"no environment {name!r} in the index {index.where} (projects: {sorted(projects)})"
    )


def _version_key(version: str) -> tuple:
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in version.split("."))


def choose(name: str, version: str | None, links: list[Link]) -> Link:
    """The wheel to install: ``version`` if given, else the newest not yanked."""
    wheels = [link for link in links if link.version]
    if version is not None:
        for link in wheels:
            if link.version == version:
                return link
        have = sorted({w.version for w in wheels if w.version}, key=_version_key)
        raise ConfigError(f"{name}@{version} is not in the index (versions: {have})")
    live = [w for w in wheels if w.yanked is None]
    if not live:
        raise ConfigError(f"{name}: every version in the index is yanked; pull one by NAME@VERSION")
    return max(live, key=lambda w: _version_key(w.version or ""))


def _download(index: Index, project: str, link: Link, into: Path) -> Path:
    """The wheel's bytes, saved only when they hash to the index's digest."""
    if not link.digest:
        raise ConfigError(f"{index.where}: {link.filename} has no sha256 digest; refused")
    data = index.read(f"{project}/{link.filename}")
    got = sha256(data)
    if got != link.digest:
        raise ConfigError(
            f"{link.filename} from {index.where} does not match its digest (index: sha256:"
            f"{link.digest}, file: sha256:{got}): refused, nothing installed"
        )
    path = into / link.filename
    path.write_bytes(data)
    return path


def _pip_install(wheel: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--force-reinstall",
        "-q",
        str(wheel),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise ConfigError(f"pip could not install {wheel.name}:\n{done.stderr[-2000:]}")


def _record(name: str, link: Link, index: Index) -> dict[str, str]:
    entry = {"version": link.version or "", "digest": f"sha256:{link.digest}", "index": index.where}
    everything = {**pulled(), name: entry}
    pulled_path().parent.mkdir(parents=True, exist_ok=True)
    pulled_path().write_text(json.dumps(everything, indent=2))
    return entry


def _refuse_taken(name: str) -> None:
    """A name the catalog already has (not from an earlier pull) would be there twice."""
    from ...registry.catalog import catalog

    if name in pulled() or name not in catalog().names():
        return
    raise ConfigError(
        f"{name!r} is already in the catalog here (built in, registered or installed); a pulled "
        f"{name} would be a second. `envhub unregister {name}` first if it is your registration, "
        "or pull it into another virtual environment"
    )


def pull(ref: str, where: str) -> tuple[dict[str, str], str | None]:
    """Install ``NAME[@VERSION]`` from the index; its record, and the yank reason if yanked."""
    name, _, version = ref.partition("@")
    _refuse_taken(name)
    index = Index(where)
    project = find_project(name, index)
    link = choose(name, version or None, index.links(project))
    with tempfile.TemporaryDirectory() as tmp:
        _pip_install(_download(index, project, link, Path(tmp)))
    from ...registry.catalog import reset_registry

    reset_registry()
    return _record(name, link, index), link.yanked


def search(text: str, where: str) -> list[dict[str, Any]]:
    """The cards in the index whose name or description holds ``text`` (case aside)."""
    index = Index(where)
    found = []
    for project in index.projects():
        links = index.links(project)
        yanked = {link.version for link in links if link.version and link.yanked is not None}
        for link in links:
            if not link.filename.endswith(CARD_SUFFIX):
                continue
            record = index.card(project, link)
            about = f"{record['environment']} {record['card'].get('description', '')}".lower()
            if text.lower() in about:
                found.append({**record, "yanked": record["version"] in yanked})
    return sorted(found, key=lambda r: (r["environment"], _version_key(r["version"])))
