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

With ``--venv DIR`` the wheel goes into a virtual environment of its own, with its
dependencies, and the environment is served from there (:mod:`.ownvenv`); the venv is
recorded in ``pulled.json`` beside the digest.
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
from . import wheelcard
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


def verified(index: Index, project: str, link: Link) -> bytes:
    """The file's bytes, only when they hash to the digest the index lists."""
    if not link.digest:
        raise ConfigError(f"{index.where}: {link.filename} has no sha256 digest; refused")
    data = index.file(project, link)
    got = sha256(data)
    if got != link.digest:
        raise ConfigError(
            f"{link.filename} from {index.where} does not match its digest (index: sha256:"
            f"{link.digest}, file: sha256:{got}): refused, nothing installed"
        )
    return data


def _card_version(link: Link) -> str:
    return link.filename.removesuffix(CARD_SUFFIX).rpartition("-")[2]


def card_record(
    index: Index, project: str, wheel: Link, links: list[Link], data: bytes | None = None
) -> dict[str, Any] | None:
    """The push's record of ``wheel``: its card beside it, else the one inside it.

    Inside: read from the wheel's digest-checked bytes (``data`` if already read), with the
    digest added from the page. ``None``: a distribution with no card (not pushed by envhub).
    """
    for link in links:
        if link.filename.endswith(CARD_SUFFIX) and _card_version(link) == wheel.version:
            return index.card(project, link)
    inside = wheelcard.read(data if data is not None else verified(index, project, wheel))
    return None if inside is None else {**inside, "digest": f"sha256:{wheel.digest}"}


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


def _record(name: str, link: Link, index: Index, venv: str | None) -> dict[str, str]:
    entry = {"version": link.version or "", "digest": f"sha256:{link.digest}", "index": index.where}
    if venv is not None:
        entry["venv"] = venv
    everything = {**pulled(), name: entry}
    pulled_path().parent.mkdir(parents=True, exist_ok=True)
    pulled_path().write_text(json.dumps(everything, indent=2))
    return entry


def _refuse_taken(name: str, venv: Path | None) -> None:
    """A name the catalog already has (not from an earlier pull) would be there twice.

    So would one pulled into this Python and then into a venv: its package here and its
    registration would both declare it.
    """
    from ...registry.catalog import catalog

    before = pulled().get(name)
    if before is not None and venv is not None and "venv" not in before:
        raise ConfigError(
            f"{name} was pulled into this Python ({before['version']}); a venv of its own would "
            f"declare it a second time here. `pip uninstall` its distribution first, or pull it "
            "without --venv"
        )
    if before is not None or name not in catalog().names():
        return
    raise ConfigError(
        f"{name!r} is already in the catalog here (built in, registered or installed); a pulled "
        f"{name} would be a second. `envhub unregister {name}` first if it is your registration, "
        "or pull it into another virtual environment"
    )


def pull(
    ref: str, where: str, venv: Path | None = None, inherit: bool = False
) -> tuple[dict[str, str], str | None]:
    """Install ``NAME[@VERSION]`` from the index; its record, and the yank reason if yanked.

    Into this Python (``pip install --no-deps``), or with ``venv`` into that venv of its own
    with its dependencies (:mod:`.ownvenv`; ``inherit``: the venv sees this Python's packages).
    """
    name, _, version = ref.partition("@")
    _refuse_taken(name, venv)
    index = Index(where)
    project = find_project(name, index)
    links = index.links(project)
    link = choose(name, version or None, links)
    data = verified(index, project, link)
    record = card_record(index, project, link, links, data)
    if record is not None and record["environment"] != name:
        raise ConfigError(
            f"{link.filename} in {index.where} holds the environment {record['environment']!r}"
            f", not {name!r}: pull {record['environment']}, or the project of {name}"
        )
    from ..register import register_pulled, unregister_pulled

    with tempfile.TemporaryDirectory() as tmp:
        wheel = Path(tmp) / link.filename
        wheel.write_bytes(data)
        if venv is None:
            _pip_install(wheel)
            unregister_pulled(name)  # an earlier pull's venv no longer serves it
        else:
            from .ownvenv import install_into_venv

            register_pulled(install_into_venv(name, wheel, venv, inherit))
    from ...registry.catalog import reset_registry

    reset_registry()
    folder = None if venv is None else str(venv.expanduser().resolve())
    return _record(name, link, index, folder), link.yanked


def search(text: str, where: str) -> list[dict[str, Any]]:
    """The cards in the index whose name or description holds ``text`` (case aside).

    A card beside its wheel is read as it is; else the wheel of a project named ``envhub-*``
    (how ``envhub init`` names a distribution) is downloaded, digest-checked, and its card read
    from inside it (a remote index holds distributions only). Wheels without a card are left out.
    """
    index = Index(where)
    found = []
    for project in index.projects():
        links = index.links(project)
        beside = any(link.filename.endswith(CARD_SUFFIX) for link in links)
        if not beside and not normal(project).startswith("envhub-"):
            continue
        for link in links:
            record = card_record(index, project, link, links) if link.version else None
            if record is None:
                continue
            about = f"{record['environment']} {record['card'].get('description', '')}".lower()
            if text.lower() in about:
                found.append({**record, "yanked": link.yanked is not None})
    return sorted(found, key=lambda r: (r["environment"], _version_key(r["version"])))
