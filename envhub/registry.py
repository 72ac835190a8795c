"""The catalog: ``registry.yaml`` plus the user's registered YAML files, and ``make``.

The catalog is data. Entry points are ``module:Class`` strings imported only when an
environment is made, so listing or describing environments imports no environment code.

A user adds an environment with ``envhub register FILE``: the file is validated completely
(schema, ``base`` exists, and :mod:`envhub.preflight`: entry point, options, reward weights,
data, gold answers) before anything is written, and then copied to
``$ENVHUB_HOME/registry.d/`` with its folder recorded as ``base_dir`` (relative data paths and
entry points resolve there, from any working directory). Any error names the file, the line
and the field. ``register(force=True)`` replaces a registration; :func:`unregister` removes
one.
"""

from __future__ import annotations

import difflib
import logging
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .entrypoints import is_file_target, load_entry_point  # noqa: F401 (re-exported)
from .errors import EnvNotFound, RegistryError
from .spec import VERSIONED_RE, EnvSpec

log = logging.getLogger("envhub")

BUILTIN_REGISTRY = Path(__file__).with_name("registry.yaml")
"""The catalog shipped with envhub (the repository's ``registry.yaml``)."""


def envhub_home() -> Path:
    """Where user registrations and caches live: ``$ENVHUB_HOME`` or ``~/.envhub``."""
    return Path(os.environ.get("ENVHUB_HOME") or Path.home() / ".envhub")


def user_registry_dir() -> Path:
    """Folder of environments added with ``envhub register``."""
    return envhub_home() / "registry.d"


# ---------------------------------------------------------------------------- YAML reading


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """Line (1-based) of the YAML node at ``loc``, or of the deepest existing parent."""
    line = node.start_mark.line + 1 if node is not None else None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            match = [v for k, v in node.value if getattr(k, "value", None) == key]
            if not match:
                break
            node = match[0]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
            if key >= len(node.value):
                break
            node = node.value[key]
        else:
            break
        line = node.start_mark.line + 1
    return line


def _entries(path: Path) -> tuple[list[dict[str, Any]], yaml.Node | None, tuple[Any, ...]]:
    """Raw entries of a catalog file, its YAML node tree and the location of the list."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise RegistryError(f"{path}: cannot read ({e.strerror})") from e
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise RegistryError(f"{where}: not valid YAML ({getattr(e, 'problem', e)})") from e
    if isinstance(data, dict) and "environments" in data:
        entries, prefix = data["environments"], ("environments",)
        if not isinstance(entries, list):
            line = _line_of(node, prefix)
            raise RegistryError(f"{path}:{line}: field 'environments': expected a list")
    elif isinstance(data, dict):
        entries, prefix = [data], ()
    else:
        raise RegistryError(
            f"{path}: expected a mapping describing one environment, or 'environments:' "
            "with a list of them"
        )
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            loc = (*prefix, i) if prefix else ()
            raise RegistryError(f"{path}:{_line_of(node, loc)}: entry {i}: expected a mapping")
    return entries, node, prefix


def _validate(path: Path, raw: dict[str, Any], node: yaml.Node | None, loc: tuple) -> EnvSpec:
    """Validate one raw entry; the error names file, line, field and what was expected."""
    try:
        return EnvSpec.model_validate({**raw, "source": str(path)})
    except ValidationError as e:
        err = e.errors()[0]
        field_loc = tuple(err["loc"])
        field = ".".join(str(p) for p in field_loc) or "(entry)"
        line = _line_of(node, (*loc, *field_loc))
        name = raw.get("name", "?")
        more = f" (and {len(e.errors()) - 1} more problem(s))" if len(e.errors()) > 1 else ""
        raise RegistryError(
            f"{path}:{line}: environment {name!r}, field '{field}': {err['msg']}{more}"
        ) from None


def _anchored(spec_: EnvSpec) -> EnvSpec:
    """The spec with its folder as ``base_dir`` and a ``file.py:Class`` entry point made absolute.

    Both travel with the spec, so it resolves the same in a served child process.
    """
    ep, folder = spec_.entry_point, spec_.source_dir
    if folder is None:
        return spec_
    update: dict[str, Any] = {"base_dir": str(folder.resolve())}
    target, _, attr = (ep or "").rpartition(":")
    if ep and is_file_target(target) and not Path(target).expanduser().is_absolute():
        update["entry_point"] = f"{(folder / target).resolve()}:{attr}"
    return spec_.model_copy(update=update)


def load_file(path: Path) -> list[tuple[EnvSpec, dict[str, Any]]]:
    """Validated specs of one file, each with the raw mapping it came from."""
    entries, node, prefix = _entries(path)
    return [
        (_anchored(_validate(path, raw, node, (*prefix, i) if prefix else ())), raw)
        for i, raw in enumerate(entries)
    ]


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "dataset":
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


# ---------------------------------------------------------------------------- the registry


class Registry:
    """Environment specs by name and version, with ``base`` composition resolved."""

    def __init__(self) -> None:
        """Start empty; see :meth:`load`."""
        self._raw: dict[tuple[str, int], tuple[EnvSpec, dict[str, Any]]] = {}
        self._origin: dict[tuple[str, int], Path] = {}
        """The registry.d file of each of the user's registrations."""

    @classmethod
    def load(cls, paths: list[Path] | None = None) -> Registry:
        """The built-in catalog, the user's registrations and installed packages' catalogs.

        With ``paths``: exactly those files.
        """
        reg = cls()
        for path in [BUILTIN_REGISTRY] if paths is None else paths:
            for spec, raw in load_file(path):
                reg._add(spec, raw)
        if paths is None:
            for path in sorted(user_registry_dir().glob("*.yaml")):
                for spec, raw in _user_entries(path):
                    reg._add(spec, raw)
                    reg._origin[(spec.name, spec.version)] = path
            reg._add_packages()
        for spec, _ in list(reg._raw.values()):
            reg.spec(spec.id)  # resolve every composition now: errors surface at load
        return reg

    def _add_packages(self) -> None:
        from .plugins import package_catalogs

        for pkg in package_catalogs():
            for spec, raw in load_file(pkg.path):
                key = (spec.name, spec.version)
                if key in self._raw:
                    other = self._origin.get(key) or self._raw[key][0].source
                    raise RegistryError(
                        f"{spec.id} is provided twice: by {pkg.describe()} and by the catalog "
                        f"({other}). Fix: `envhub unregister {spec.id}` if the catalog one is "
                        "your registration, or uninstall the package, or rename one"
                    )
                self._raw[key] = (spec, raw)

    def _add(self, spec: EnvSpec, raw: dict[str, Any]) -> None:
        key = (spec.name, spec.version)
        if key in self._raw:
            first = self._raw[key][0].source
            raise RegistryError(f"{spec.source}: {spec.id} is already registered (by {first})")
        self._raw[key] = (spec, raw)

    def ids(self) -> list[str]:
        """Every versioned id, sorted."""
        return sorted(spec.id for spec, _ in self._raw.values())

    def names(self) -> list[str]:
        """Every name (latest version), sorted."""
        return sorted({name for name, _ in self._raw})

    def _key(self, name: str) -> tuple[str, int]:
        m = VERSIONED_RE.match(name)
        if m and (m["name"], int(m["version"])) in self._raw:
            return m["name"], int(m["version"])
        versions = [v for (n, v) in self._raw if n == name]
        if versions:
            return name, max(versions)
        known = self.names() + self.ids()
        close = difflib.get_close_matches(name, known, n=3)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise EnvNotFound(f"no environment named {name!r}.{hint} See `envhub list`.")

    def spec(self, name: str, _seen: tuple[str, ...] = ()) -> EnvSpec:
        """The resolved spec of ``name`` or ``name-vN`` (``base`` compositions merged in)."""
        key = self._key(name)
        spec, raw = self._raw[key]
        if spec.base is None:
            if spec.entry_point is None:
                raise RegistryError(f"{spec.source}: {spec.id} needs 'entry_point' or 'base'")
            return spec
        if spec.base in _seen or spec.base == name:
            raise RegistryError(f"{spec.source}: {spec.id}: 'base' forms a cycle")
        try:
            parent = self.spec(spec.base, (*_seen, name))
        except EnvNotFound as e:
            raise RegistryError(f"{spec.source}: {spec.id}, field 'base': {e}") from None
        exclude = {"source", "name", "version", "base", "description", "base_dir"}
        data = parent.model_dump(exclude=exclude)
        merged = _merge(data, {k: v for k, v in raw.items() if k != "base"})
        return EnvSpec.model_validate({**merged, "source": spec.source, "base_dir": spec.base_dir})


_registry: Registry | None = None


def catalog() -> Registry:
    """The process-wide catalog, loaded on first use."""
    global _registry
    if _registry is None:
        _registry = Registry.load()
    return _registry


def reset_registry() -> None:
    """Forget the loaded catalog (after a registration, or between tests)."""
    global _registry
    _registry = None


def spec(name: str) -> EnvSpec:
    """The resolved spec of a registered environment."""
    return catalog().spec(name)


def _user_entries(path: Path) -> list[tuple[EnvSpec, dict[str, Any]]]:
    """Entries of one registry.d file: a copied entry, or ``{link: FILE, id: ID}``.

    A link (written by ``envhub init`` and ``register --link``) reads the user's own YAML file
    each time, so edits to it take effect without registering again.
    """
    entries, _, _ = _entries(path)
    if len(entries) != 1 or set(entries[0]) != {"link", "id"}:
        return load_file(path)
    target, env_id = Path(entries[0]["link"]), entries[0]["id"]
    if not target.is_file():
        log.warning("%s links to %s, which is gone; `envhub unregister %s`", path, target, env_id)
        return []
    found = [(s, raw) for s, raw in load_file(target) if s.id == env_id]
    if not found:
        raise RegistryError(
            f"{path} links to {target}, which no longer defines {env_id}; "
            f"`envhub unregister {env_id}` or register the file again"
        )
    return found


def _trial(loaded: list[tuple[EnvSpec, dict[str, Any]]], force: bool) -> Registry:
    """The catalog as it would be after registering ``loaded`` (replacing with ``force``)."""
    trial = Registry.load()
    for spec_, raw in loaded:
        key = (spec_.name, spec_.version)
        if force and key in trial._origin:
            del trial._raw[key]
        try:
            trial._add(spec_, raw)
        except RegistryError as e:
            fix = "" if force else ", or pass --force to replace your registration"
            raise RegistryError(f"{e}. Choose another name or bump 'version'{fix}.") from None
    return trial


def _preflight(path: Path, node: yaml.Node | None, loc: tuple, full: EnvSpec) -> None:
    from .preflight import PreflightError, check_spec

    try:
        check_spec(full)
    except PreflightError as e:
        line = _line_of(node, (*loc, *e.field.split(".")))
        raise RegistryError(
            f"{path}:{line}: environment {full.name!r}, field '{e.field}': {e}. "
            "Nothing was registered."
        ) from None


def register(path: str | Path, *, force: bool = False, link: bool = False) -> list[EnvSpec]:
    """Validate a user's YAML file and add its environments to the user catalog.

    Nothing is written unless every entry is valid, its ``base`` exists and it passes
    :mod:`envhub.preflight` (entry point, options, reward weights, data, gold answers).
    ``force`` replaces an earlier registration of the same ``NAME-vN``; ``link`` records the
    file's location instead of a copy, so later edits to it take effect at once.
    """
    path = Path(path).resolve()
    entries, node, prefix = _entries(path)
    loaded = [
        (_validate(path, raw, node, (*prefix, i) if prefix else ()), raw)
        for i, raw in enumerate(entries)
    ]
    trial = _trial(loaded, force)
    resolved = []
    for i, (spec_, _) in enumerate(loaded):
        full = trial.spec(spec_.id)
        _preflight(path, node, (*prefix, i) if prefix else (), full)
        resolved.append(full)
    target_dir = user_registry_dir()
    target_dir.mkdir(parents=True, exist_ok=True)
    for spec_, raw in loaded:
        out = {**raw, "base_dir": raw.get("base_dir") or str(path.parent)}
        if link:
            out = {"link": str(path), "id": spec_.id}
        target = target_dir / f"{spec_.id}.yaml"
        tmp = target.with_suffix(".tmp")
        tmp.write_text(yaml.safe_dump(out, sort_keys=False), encoding="utf-8")
        tmp.replace(target)
    reset_registry()
    return resolved


def specs_from_file(path: str | Path) -> list[EnvSpec]:
    """The resolved specs of a YAML file, as if registered, without writing anything."""
    path = Path(path).resolve()
    loaded = load_file(path)
    trial = _trial(loaded, force=True)
    return [
        trial.spec(s.id).model_copy(update={"base_dir": s.base_dir or str(path.parent)})
        for s, _ in loaded
    ]


def unregister(name: str) -> list[str]:
    """Remove the user's registration ``NAME-vN`` (or ``NAME``, when it has one version).

    Returns the removed ids. Entries of the built-in catalog cannot be removed.
    """
    reg = catalog()
    m = VERSIONED_RE.match(name)
    if m and (m["name"], int(m["version"])) in reg._raw:
        keys = [(m["name"], int(m["version"]))]
    else:
        keys = sorted(k for k in reg._raw if k[0] == name)
    if not keys:
        reg._key(name)  # raises EnvNotFound with suggestions
    mine = [k for k in keys if k in reg._origin]
    if not mine:
        raise RegistryError(
            f"{name} is part of the built-in catalog ({reg._raw[keys[0]][0].source}), not one "
            "of your registrations; nothing to unregister"
        )
    if len(mine) > 1:
        ids = ", ".join(f"{n}-v{v}" for n, v in mine)
        raise RegistryError(f"{name} has several registered versions ({ids}); name one")
    target = reg._origin[mine[0]]
    target.unlink()
    reset_registry()
    return [f"{mine[0][0]}-v{mine[0][1]}"]
