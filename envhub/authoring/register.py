"""Writing the catalog: ``envhub register FILE`` and ``envhub unregister NAME``.

A registration is validated completely before anything is written: the schema and the
located errors of :mod:`envhub.registry.catalog` (file, line, environment, field, what is
wrong, ``Fix:``), ``base`` exists, and :mod:`envhub.authoring.preflight` (entry point,
options, reward weights, data, gold answers); a registration that fails adds "Nothing was
registered." Then the file is copied to ``$ENVHUB_HOME/registry.d/`` with its folder recorded
as ``base_dir`` (relative data paths and entry points resolve there, from any working
directory), or recorded by link.

Registering the same file again is no error: nothing to do. ``register(force=True)`` replaces
a registration and keeps its kind (a link stays a link) unless ``link`` says otherwise. A user
environment that takes a built-in's name with a higher version (so ``make(NAME)`` returns it)
is refused without ``force``, and ``envhub list`` marks it; :func:`unregister` removes one.

An environment pulled into a venv of its own is registered by :func:`register_pulled`: its
spec as that venv resolves it, with ``venv`` set, checked there rather than here (its code
does not import in this Python).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from ..errors import EntryError, RegistryError
from ..registry.catalog import (
    BUILTIN_REGISTRY,
    Registry,
    catalog,
    is_link,
    located,
    read_entries,
    reset_registry,
    user_registry_dir,
    validate_entry,
)
from ..spec import EnvSpec
from .preflight import check_spec

log = logging.getLogger("envhub")

Outcome = Literal["registered", "replaced", "unchanged"]


@dataclass(frozen=True)
class Registration:
    """What :func:`register_file` did with one environment of the file."""

    spec: EnvSpec
    """The resolved spec."""
    outcome: Outcome
    """``unchanged``: the same file was registered the same way already; nothing written."""
    link: bool
    """Recorded by link (the file is read at each load) rather than as a copy."""
    note: str | None = None
    """What the user must hear: it overrides a built-in environment."""


def _content(path: Path, spec_: EnvSpec, raw: dict[str, Any], link: bool) -> dict[str, Any]:
    """What registry.d holds for ``spec_``: a link to ``path``, or a copy of its entry."""
    if link:
        return {"link": str(path), "id": spec_.id}
    return {**raw, "base_dir": raw.get("base_dir") or str(path.parent)}


def _described(old: dict[str, Any], origin: Path) -> str:
    if is_link(old):
        return f"by link to {old['link']}"
    return f"as a copy ({origin}) that differs from this file"


def _plan(
    reg: Registry, path: Path, spec_: EnvSpec, raw: dict[str, Any], force: bool, link: bool | None
) -> tuple[dict[str, Any], Outcome]:
    """What to write for one entry and the outcome; :class:`EntryError` when it is refused.

    The kind of an earlier registration is kept (a link stays a link) unless ``link`` is given.
    """
    key = (spec_.name, spec_.version)
    field = "version" if "version" in raw else "name"
    origin = reg.origin(key)
    old = yaml.safe_load(origin.read_text(encoding="utf-8")) if origin else None
    want = _content(path, spec_, raw, is_link(old) if link is None else link)
    if old == want:
        return want, "unchanged"
    where = reg.source(key)
    if where is not None and origin is None:
        fix = "choose another name, or bump 'version'"
        if where == str(BUILTIN_REGISTRY):
            fix = "choose another name (a higher 'version' overrides the built-in, with --force)"
        raise EntryError(field, f"{spec_.id} is already in the catalog ({where})", fix)
    if old is not None and not force:
        raise EntryError(
            field, f"{spec_.id} is already registered {_described(old, origin)}",
            "pass --force to replace it (a link stays a link, a copy a copy; --link or --copy "
            "to change that), or bump 'version'",
        )  # fmt: skip
    return want, "replaced" if old is not None else "registered"


def _override(trial: Registry, spec_: EnvSpec, force: bool) -> str | None:
    """The note when ``spec_`` hides a built-in environment; refused without ``force``."""
    hidden = trial.overrides_builtin(spec_.name)
    if hidden is None or trial.spec(spec_.name).id != spec_.id:
        return None
    if not force:
        raise EntryError(
            "version", f"{spec_.id} would replace the built-in {hidden} as what "
            f"make({spec_.name!r}) and `envhub serve {spec_.name}` return",
            "choose another name, or pass --force to override the built-in on purpose "
            "(`envhub list` marks it)",
        )  # fmt: skip
    return (
        f"{spec_.id} overrides the built-in {hidden}: make({spec_.name!r}) returns yours now; "
        f"the built-in stays reachable as {hidden}"
    )


def _check_file(
    path: Path, force: bool, link: bool | None
) -> list[tuple[Registration, dict[str, Any]]]:
    """Every check of :func:`register_file`; each entry's registration and what to write."""
    entries, node, prefix = read_entries(path)
    loaded = [
        (validate_entry(path, raw, node, (*prefix, i) if prefix else ()), raw)
        for i, raw in enumerate(entries)
    ]
    trial = Registry.load()
    plans = []
    for spec_, raw in loaded:
        with located(path, spec_.name):
            plans.append(_plan(trial, path, spec_, raw, force, link))
    for spec_, raw in loaded:
        trial.stage(spec_, raw)
    out = []
    for (spec_, _), (content, outcome) in zip(loaded, plans, strict=True):
        with located(path, spec_.name):
            note = None if outcome == "unchanged" else _override(trial, spec_, force)
            full = trial.spec(spec_.id)
            check_spec(full)
        out.append((Registration(full, outcome, is_link(content), note), content))
    return out


def register_file(
    path: str | Path, *, force: bool = False, link: bool | None = None
) -> list[Registration]:
    """Validate a user's YAML file and add its environments to the user catalog.

    Nothing is written unless every entry is valid, its ``base`` exists and it passes
    :mod:`envhub.authoring.preflight` (entry point, options, reward weights, data, gold
    answers). An entry registered from the same file the same way already is ``unchanged``
    (no error).

    Args:
        path: The YAML file.
        force: Replace an earlier registration of the same ``NAME-vN``, or let a higher
            version hide a built-in environment of that name.
        link: Record the file's location (later edits take effect at once) or, with
            ``False``, a copy; ``None`` keeps an earlier registration's kind (new: a copy).
    """
    path = Path(path).resolve()
    try:
        done = _check_file(path, force, link)
    except RegistryError as e:
        raise RegistryError(f"{e} Nothing was registered.") from None
    target_dir = user_registry_dir()
    target_dir.mkdir(parents=True, exist_ok=True)
    for reg, content in done:
        if reg.outcome == "unchanged":
            continue
        target = target_dir / f"{reg.spec.id}.yaml"
        tmp = target.with_suffix(".tmp")
        tmp.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")
        tmp.replace(target)
    reset_registry()
    return [reg for reg, _ in done]


def register(path: str | Path, *, force: bool = False, link: bool | None = None) -> list[EnvSpec]:
    """:func:`register_file`, returning the resolved specs; its notes go to the log (warning)."""
    done = register_file(path, force=force, link=link)
    for r in done:
        if r.note:
            log.warning("%s", r.note)
    return [r.spec for r in done]


def unregister(name: str) -> list[str]:
    """Remove the user's registration ``NAME-vN`` (or ``NAME``, when it has one version).

    Returns the removed ids. Entries of the built-in catalog cannot be removed.
    """
    reg = catalog()
    keys = reg.versions(name)
    mine = [k for k in keys if reg.origin(k) is not None]
    if not mine:
        raise RegistryError(
            f"{name} is part of the built-in catalog ({reg.source(keys[0])}), not one "
            "of your registrations; nothing to unregister"
        )
    if len(mine) > 1:
        ids = ", ".join(f"{n}-v{v}" for n, v in mine)
        raise RegistryError(f"{name} has several registered versions ({ids}); name one")
    target = reg.origin(mine[0])
    target.unlink()
    reset_registry()
    return [f"{mine[0][0]}-v{mine[0][1]}"]


def _pulled_files(name: str) -> list[Path]:
    """The registry.d files of ``name`` written by :func:`register_pulled`."""
    found = []
    for path in sorted(user_registry_dir().glob("*.yaml")):
        entries, _, _ = read_entries(path)
        if any(e.get("name") == name and e.get("venv") for e in entries if isinstance(e, dict)):
            found.append(path)
    return found


def register_pulled(spec: EnvSpec) -> Path:
    """Record ``spec``, pulled into the venv ``spec.venv``, in registry.d; the file written.

    Replaces an earlier pull's registration of the same name (another version, another venv).
    Whether the name is free is the pull's to say before it installs anything.
    """
    if spec.venv is None:
        raise ValueError("register_pulled takes the spec of an environment with its own venv")
    unregister_pulled(spec.name)
    target_dir = user_registry_dir()
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / f"{spec.id}.yaml"
    tmp = target.with_suffix(".tmp")
    content = spec.model_dump(mode="json", exclude_defaults=True)
    tmp.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")
    tmp.replace(target)
    reset_registry()
    return target


def unregister_pulled(name: str) -> list[Path]:
    """Remove the registrations of ``name`` that a pull into a venv wrote; the files removed."""
    removed = _pulled_files(name)
    for path in removed:
        path.unlink()
    reset_registry()
    return removed
