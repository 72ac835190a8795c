"""OpenEnv 0.10's discovery catalog: envhub's catalog as its cards, and its cards read back.

A catalog is one JSON snapshot (profile ``0.1-draft``, OpenEnv's ``CatalogSnapshot``): a
publisher (a DNS name), the GitHub source and commit it describes, an inventory of
environment paths, one entry (an ARD ``DiscoveryEntry`` holding an ``EnvironmentCard``) per
path, and a ``digest``: ``sha256:`` over the snapshot without it, as canonical JSON (sorted
keys, no spaces, UTF-8). OpenEnv's ``load_catalog`` refuses a snapshot whose digest does not
match, and so does :func:`load`.

:func:`export` writes envhub's entries in that profile. An envhub environment is an entry of
``registry.yaml``, not a folder with an ``openenv.yaml``, so each card's ``source.path`` is
``ROOT/NAME`` (``environments/gsm8k``), naming the entry, not a folder; the card declares
OpenEnv's orchestration protocol (``envhub serve NAME --openenv`` speaks it) and its
``metadata.envhub`` says how to serve it. Cards are metadata only, as OpenEnv's are: a
consumer decides to run one separately.

The profile is written here from OpenEnv's models, not imported: envhub does not depend on
``openenv`` (its import loads gradio). ``tests/interop/test_openenv_catalog.py`` checks both
ways against the real package.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx

from envhub.errors import ConfigError, InfraError
from envhub.spec import EnvSpec

PROFILE = "0.1-draft"
MEDIA_TYPE = "application/vnd.openenv.environment-card+json"
ARD_CONTEXT = "https://agenticresourcediscovery.org/context/v1"
GENERATOR = {"name": "openenv-git-catalog", "version": "1"}
"""The only generator the profile admits (a ``Literal`` in OpenEnv's model)."""
MAX_BYTES = 16 * 1024 * 1024
"""OpenEnv's bound on a catalog's size (``MAX_CATALOG_BYTES``)."""
LICENSE = "Apache-2.0"
"""envhub's license, declared by the cards of its environments."""
_GITHUB = re.compile(r"^https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)\.git$")
_PUBLISHER = re.compile(r"^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]{2,63}$")
_REVISION = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


class CatalogError(ConfigError):
    """A catalog that cannot be read, does not follow the profile, or fails its digest."""


def digest(snapshot: dict[str, Any]) -> str:
    """The snapshot's digest, as OpenEnv's ``catalog_digest`` computes it."""
    payload = {k: v for k, v in snapshot.items() if k != "digest"}
    text = json.dumps(
        payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _source(uri: str, revision: str) -> dict[str, str]:
    match = _GITHUB.match(uri)
    if match is None:
        raise CatalogError(
            f"--source {uri!r}: OpenEnv cards name a GitHub clone URI, such as "
            "https://github.com/OWNER/envhub.git"
        )
    if not _REVISION.match(revision):
        raise CatalogError(f"--revision {revision!r}: give the full commit id (40 hex digits)")
    return {"provider": "github", "id": f"{match[1]}/{match[2]}", "uri": uri, "revision": revision}


def _entry(spec: EnvSpec, source: dict[str, str], path: str, publisher: str, ns: str) -> dict:
    description = " ".join(spec.description.split()) or f"envhub environment {spec.name}"
    card = {
        "schema_version": PROFILE,
        "name": spec.name,
        "description": description,
        "owner": {"authority": "github.com", "id": source["id"].split("/")[0]},
        "source": {**source, "path": path},
        "artifact_availability": "external",  # the entry is envhub's, not a folder at path
        "artifacts": [],
        "license": LICENSE,
        "interfaces": [{"role": "orchestration", "protocol": "openenv"}],
    }
    locator = hashlib.sha256(f"{source['uri']}\n{path}".encode()).hexdigest()
    envhub = {
        "id": spec.id,
        "version": spec.version,
        "family": spec.family,
        "max_turns": spec.max_turns,
        "serve": f"envhub serve {spec.name} --openenv",
    }
    return {
        "@context": ARD_CONTEXT,
        "identifier": f"urn:air:{publisher}:{ns}:{locator}:{source['revision']}",
        "displayName": spec.name,
        "type": MEDIA_TYPE,
        "data": card,
        "description": description,
        "tags": sorted({t for t in spec.tags if t.strip()}),
        "capabilities": [],
        "representativeQueries": [],
        "metadata": {"envhub": envhub},
    }


def export(
    specs: Iterable[EnvSpec],
    *,
    publisher: str,
    source_uri: str,
    revision: str,
    namespace: str = "envhub",
    root: str = "environments",
) -> dict[str, Any]:
    """The OpenEnv catalog snapshot of ``specs``, digest-stamped.

    ``publisher`` is a DNS name (OpenEnv's publication authority, declared, not verified);
    ``source_uri`` and ``revision`` the GitHub repository and commit of the catalog.
    """
    if not _PUBLISHER.match(publisher):
        raise CatalogError(f"--publisher {publisher!r}: OpenEnv wants a DNS name, e.g. example.org")
    if not re.fullmatch(r"[A-Za-z0-9._-]+", namespace) or not re.fullmatch(r"[A-Za-z0-9_-]+", root):
        raise CatalogError("the namespace and root must be plain names (letters, digits, -, _)")
    source = _source(source_uri, revision)
    by_path = {f"{root}/{s.name}": s for s in specs}
    snapshot = {
        "schema_version": PROFILE,
        "publisher": publisher,
        "source": source,
        "generator": GENERATOR,
        "inventory": {"root": root, "paths": sorted(by_path)},
        "entries": [_entry(by_path[p], source, p, publisher, namespace) for p in sorted(by_path)],
        "issues": [],
        "complete": True,
    }
    return {**snapshot, "digest": digest(snapshot)}


def write(snapshot: dict[str, Any], path: Path) -> None:
    """Write ``snapshot`` as OpenEnv's ``write_catalog`` does (indented, sorted keys)."""
    text = json.dumps(snapshot, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")


def _read(where: str) -> bytes:
    """The catalog's bytes: an http(s) URL, a file, or a folder holding ``catalog.json``."""
    if where.startswith(("http://", "https://")):
        try:
            with httpx.stream("GET", where, timeout=30, follow_redirects=True) as r:
                r.raise_for_status()
                buffer = bytearray()
                for chunk in r.iter_bytes():
                    buffer += chunk
                    if len(buffer) > MAX_BYTES:
                        break
                data = bytes(buffer)
        except httpx.HTTPError as e:
            raise InfraError(f"cannot fetch the OpenEnv catalog {where}: {e}") from e
    else:
        path = Path(where).expanduser()
        path = path / "catalog.json" if path.is_dir() else path
        try:
            with path.open("rb") as f:
                data = f.read(MAX_BYTES + 1)
        except OSError as e:
            raise CatalogError(f"cannot read the OpenEnv catalog {path}: {e.strerror}") from e
    if len(data) > MAX_BYTES:
        raise CatalogError(f"the OpenEnv catalog {where} is over {MAX_BYTES} bytes")
    return data


def load(where: str) -> dict[str, Any]:
    """A complete OpenEnv catalog snapshot from ``where``, its digest checked."""
    try:
        snapshot = json.loads(_read(where).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CatalogError(f"the OpenEnv catalog {where} is not JSON: {e}") from e
    if not isinstance(snapshot, dict) or snapshot.get("schema_version") != PROFILE:
        raise CatalogError(f"{where} is no OpenEnv catalog snapshot of profile {PROFILE}")
    if snapshot.get("digest") != digest(snapshot):
        raise CatalogError(
            f"{where}: its content does not match its digest (changed since it "
            "was written, or written without OpenEnv's defaults)"
        )
    if snapshot.get("complete") is not True:
        raise CatalogError(f"{where}: the catalog says it is incomplete (see its issues)")
    if not isinstance(snapshot.get("entries"), list):
        raise CatalogError(f"{where}: the catalog has no list of entries")
    return snapshot


def cards(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    """One summary per entry: name, description, identifier, source, tags and envhub's say."""
    out = []
    for entry in snapshot["entries"]:
        card, meta = entry.get("data") or {}, entry.get("metadata") or {}
        out.append(
            {
                "name": entry.get("displayName") or card.get("name"),
                "description": entry.get("description") or card.get("description"),
                "identifier": entry.get("identifier"),
                "source": card.get("source"),
                "tags": entry.get("tags", []),
                "envhub": meta.get("envhub"),
            }
        )
    return out


def source_of(card: dict[str, Any]) -> dict[str, str]:
    """A card's source (``uri``, ``revision``, ``path``), checked before envhub acts on it.

    The commit names a folder and the path one inside the checkout: a commit that is not 40
    or 64 hex digits, or a path that is absolute or climbs (``..``), is refused, as is a URI
    that is not a GitHub HTTPS clone URI (the profile's rule; git is given nothing else).
    """
    source = card.get("source")
    if not isinstance(source, dict) or not all(
        isinstance(source.get(k), str) for k in ("uri", "revision", "path")
    ):
        raise CatalogError(f"the card {card.get('name')!r} names no source (uri, revision, path)")
    if not _GITHUB.match(source["uri"]):
        raise CatalogError(
            f"the card {card.get('name')!r} names a source that is not a GitHub "
            f"clone URI (https://github.com/OWNER/REPO.git): {source['uri']!r}"
        )
    path = source["path"]
    parts = path.split("/")
    if (
        not _REVISION.match(source["revision"])
        or path.startswith("/")
        or "\\" in path
        or any(p in ("", ".", "..") for p in parts)
    ):
        raise CatalogError(
            f"the card {card.get('name')!r} names a source that is not one commit "
            f"and a relative path: {source['revision']!r}, {path!r}"
        )
    return {k: source[k] for k in ("uri", "revision", "path")}


def find(snapshot: dict[str, Any], card: str) -> dict[str, Any]:
    """The entry named ``card`` (its name or its exact identifier)."""
    every = cards(snapshot)
    found = [c for c in every if card in (c["name"], c["identifier"])]
    if len(found) == 1:
        return found[0]
    if found:
        raise CatalogError(
            f"{len(found)} cards are named {card!r}: give the identifier of one "
            f"({', '.join(str(c['identifier']) for c in found)})"
        )
    names = sorted(str(c["name"]) for c in every)
    close = difflib.get_close_matches(card, names, n=3)
    hint = f" Did you mean {' or '.join(close)}?" if close else ""
    raise CatalogError(
        f"no card named {card!r} in the catalog ({len(names)} cards: "
        f"`envhub catalog list` shows them).{hint}"
    )
