"""The catalog, read: ``registry.yaml``, the user's registrations and installed packages' catalogs.

The catalog is data. Entry points are ``module:Class`` strings imported only when an
environment is made, so listing or describing environments imports no environment code.

A user's registrations are files in ``$ENVHUB_HOME/registry.d/``: a copy of an entry with its
folder recorded as ``base_dir``, or a link to the user's own YAML file (read at each load), or
the spec of an environment pulled into a venv of its own (``envhub pull --venv``, its ``venv``
set): skipped in that venv's own processes, where its installed package provides it.
Writing them is :mod:`envhub.authoring.register`'s; this module only reads. Every error about
a catalog file has one form (:func:`catalog_error`): file, line, environment, field, what is
wrong, ``Fix:`` what to do.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from ..client.venv import is_current
from ..datasets import envhub_home
from ..errors import EntryError, EnvNotFound, RegistryError
from ..spec import VERSIONED_RE, EnvSpec
from .entrypoints import is_file_target

log = logging.getLogger("envhub")

BUILTIN_REGISTRY = Path(__file__).parent.parent / "registry.yaml"
"""The catalog shipped with envhub (the repository's ``registry.yaml``)."""


def user_registry_dir() -> Path:
    """Folder of environments added with ``envhub register``."""
    return envhub_home() / "registry.d"


# ---------------------------------------------------------------------------- errors


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` to ``word``, or nothing."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "?", "!")) else f"{text}."


def catalog_error(
    path: Path | str | None,
    line: int | None,
    problem: str,
    fix: str,
    *,
    name: str | None = None,
    field: str | None = None,
) -> RegistryError:
    """An error about a catalog file in its one form.

    ``FILE:LINE: environment 'NAME', field 'FIELD': PROBLEM. Fix: FIX.`` (the parts that are
    not known are left out).
    """
    about = [f"environment {name!r}"] if name else []
    about += [f"field '{field}'"] if field else []
    head = f"{path}:{line}" if line else f"{path}"
    head += f": {', '.join(about)}" if about else ""
    return RegistryError(f"{head}: {_sentence(problem)} Fix: {_sentence(fix)}")


def _where(path: Path | str | None, name: str, field: str) -> int | None:
    """Line of ``field`` (dotted) of the entry ``name`` in the catalog file ``path``."""
    try:
        entries, node, prefix = read_entries(Path(path or ""))
    except RegistryError:
        return None
    for i, raw in enumerate(entries):
        if raw.get("name") == name:
            loc = (*prefix, i) if prefix else ()
            return _line_of(node, (*loc, *field.split(".")))
    return None


@contextmanager
def located(path: Path | str | None, name: str) -> Iterator[None]:
    """Turn an :class:`EntryError` about entry ``name`` of ``path`` into its located form."""
    try:
        yield
    except EntryError as e:
        line = _where(path, name, e.field)
        raise catalog_error(path, line, e.problem, e.fix, name=name, field=e.field) from None


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


def read_entries(path: Path) -> tuple[list[dict[str, Any]], yaml.Node | None, tuple[Any, ...]]:
    """Raw entries of a catalog file, its YAML node tree and the location of the list."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise catalog_error(path, None, f"cannot read it ({e.strerror})", "check the path") from e
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = f"not valid YAML ({getattr(e, 'problem', e)})"
        raise catalog_error(path, line, problem, "correct the YAML at that line") from e
    if isinstance(data, dict) and "environments" in data:
        entries, prefix = data["environments"], ("environments",)
        if not isinstance(entries, list):
            line = _line_of(node, prefix)
            fix = "list the environments under it, each starting '- name: ...'"
            raise catalog_error(path, line, "expected a list", fix, field="environments")
    elif isinstance(data, dict):
        entries, prefix = [data], ()
    else:
        raise catalog_error(
            path, None, "expected a mapping describing one environment, or 'environments:' "
            "with a list of them", "start the file with 'name: ...' or 'environments:'",
        )  # fmt: skip
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            line = _line_of(node, (*prefix, i) if prefix else ())
            fix = "write each entry as fields ('name: ...', 'entry_point: ...')"
            raise catalog_error(path, line, f"entry {i} is not a mapping", fix)
    return entries, node, prefix


def _fields_at(loc: tuple[Any, ...]) -> list[str]:
    """The fields a spec accepts at ``loc`` (``()``: the top level), when that is a model."""
    model: Any = EnvSpec
    for key in loc:
        info = model.model_fields.get(key)
        model = info.annotation if info else None
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return []
    return sorted(k for k, f in model.model_fields.items() if not f.exclude)


def _schema_problem(err: Any) -> tuple[str, str]:
    """What is wrong and the fix, for one pydantic error of an entry."""
    loc = tuple(err["loc"])
    field = ".".join(str(p) for p in loc)
    if err["type"] == "extra_forbidden":
        known = _fields_at(loc[:-1])
        fields = f" (the fields here: {', '.join(known)})" if known else ""
        return (
            f"no such field{fields}",
            f"rename it{did_you_mean(str(loc[-1]), known)} or remove it",
        )
    if err["type"] == "missing":
        return "this field is required", f"add '{field}'"
    return err["msg"].removeprefix("Value error, "), f"give '{field}' a value as described"


def validate_entry(path: Path, raw: dict[str, Any], node: yaml.Node | None, loc: tuple) -> EnvSpec:
    """Validate one raw entry; the error names file, line, field, the problem and the fix."""
    try:
        return EnvSpec.model_validate({**raw, "source": str(path)})
    except ValidationError as e:
        err = e.errors()[0]
        field_loc = tuple(err["loc"])
        problem, fix = _schema_problem(err)
        more = f" (and {len(e.errors()) - 1} more problem(s))" if len(e.errors()) > 1 else ""
        raise catalog_error(
            path, _line_of(node, (*loc, *field_loc)), problem + more, fix,
            name=str(raw.get("name", "?")), field=".".join(str(p) for p in field_loc) or None,
        ) from None  # fmt: skip


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
    entries, node, prefix = read_entries(path)
    return [
        (_anchored(validate_entry(path, raw, node, (*prefix, i) if prefix else ())), raw)
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

        With ``paths``: exactly those files (``BUILTIN_REGISTRY`` brings the generated entries
        of :mod:`envhub.registry.generated` with it).
        """
        reg = cls()
        for path in [BUILTIN_REGISTRY] if paths is None else paths:
            for spec, raw in load_file(path):
                reg._add(spec, raw)
            if path == BUILTIN_REGISTRY:
                reg._add_generated()  # generated entries are part of the built-in catalog
        if paths is None:
            for path in sorted(user_registry_dir().glob("*.yaml")):
                for spec, raw in _user_entries(path):
                    if spec.venv is not None and is_current(spec.venv):
                        continue  # in its own venv, its installed package provides it
                    reg._add(spec, raw)
                    reg._origin[(spec.name, spec.version)] = path
            reg._add_packages()
        for spec, _ in list(reg._raw.values()):
            with located(spec.source, spec.name):
                reg.spec(spec.id)  # resolve every composition now: errors surface at load
        return reg

    def _add_generated(self) -> None:
        """Entries generated from installed libraries (:mod:`envhub.registry.generated`)."""
        from .generated import generated_entries

        for source, raw in generated_entries():
            self._add(EnvSpec.model_validate({**raw, "source": source}), raw)

    def _add_packages(self) -> None:
        from .plugins import package_catalogs

        for pkg in package_catalogs():
            for spec, raw in load_file(pkg.path):
                key = (spec.name, spec.version)
                if key in self._raw:
                    other = self._origin.get(key) or self._raw[key][0].source
                    raise catalog_error(
                        pkg.path, _where(pkg.path, spec.name, "name"),
                        f"{spec.id} is provided twice: by {pkg.describe()} and by the catalog "
                        f"({other})", f"`envhub unregister {spec.id}` if the catalog one is "
                        "your registration, or uninstall the package, or rename one",
                        name=spec.name,
                    )  # fmt: skip
                self._raw[key] = (spec, raw)

    def _add(self, spec: EnvSpec, raw: dict[str, Any]) -> None:
        key = (spec.name, spec.version)
        if key in self._raw:
            first = self._raw[key][0].source
            raise catalog_error(
                spec.source, _where(spec.source, spec.name, "name"),
                f"{spec.id} is defined twice (first by {first})",
                "rename one or bump its 'version'", name=spec.name,
            )  # fmt: skip
        self._raw[key] = (spec, raw)

    def overrides_builtin(self, name: str) -> str | None:
        """The built-in id that ``name``'s latest version hides (a user's higher version)."""
        key = self._key(name)
        builtin = str(BUILTIN_REGISTRY)
        versions = [
            v for (n, v), (s, _) in self._raw.items() if n == key[0] and s.source == builtin
        ]
        if not versions or self._raw[key][0].source == builtin:
            return None
        return f"{key[0]}-v{max(versions)}"

    def stage(self, spec: EnvSpec, raw: dict[str, Any]) -> None:
        """Add or replace one entry in this in-memory catalog (a trial: nothing is written)."""
        self._raw[(spec.name, spec.version)] = (spec, raw)

    def origin(self, key: tuple[str, int]) -> Path | None:
        """The registry.d file of the user's registration ``key``; None for any other entry."""
        return self._origin.get(key)

    def source(self, key: tuple[str, int]) -> str | None:
        """The file that defines ``key`` (None: not in the catalog)."""
        entry = self._raw.get(key)
        return entry[0].source if entry else None

    def versions(self, name: str) -> list[tuple[str, int]]:
        """``(name, version)`` of ``NAME-vN``, or of every version of ``NAME``.

        Raises:
            EnvNotFound: no such environment (with suggestions).
        """
        m = VERSIONED_RE.match(name)
        if m and (m["name"], int(m["version"])) in self._raw:
            return [(m["name"], int(m["version"]))]
        keys = sorted(k for k in self._raw if k[0] == name)
        if not keys:
            self._key(name)  # raises EnvNotFound with suggestions
        return keys

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
                raise EntryError(
                    "name", f"{spec.id} has neither 'entry_point' nor 'base'",
                    "give 'entry_point: module:Class' (your code) or 'base: NAME' (an "
                    "environment of `envhub list` to compose from)",
                )  # fmt: skip
            return spec
        if spec.base in _seen or spec.base == name:
            chain = " -> ".join([*_seen, name, spec.base])
            fix = "end the chain of 'base' at an environment with an 'entry_point'"
            raise EntryError("base", f"'base' forms a cycle ({chain})", fix)
        try:
            parent = self.spec(spec.base, (*_seen, name))
        except EnvNotFound as e:
            fix = "name an environment of `envhub list`, or register the one it names first"
            raise EntryError("base", str(e), fix) from None
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


def is_link(content: Any) -> bool:
    """Whether a registry.d file's content is a link (``{link: FILE, id: ID}``)."""
    return isinstance(content, dict) and set(content) == {"link", "id"}


def _user_entries(path: Path) -> list[tuple[EnvSpec, dict[str, Any]]]:
    """Entries of one registry.d file: a copied entry, or ``{link: FILE, id: ID}``.

    A link (written by ``envhub init`` and ``register --link``) reads the user's own YAML file
    each time, so edits to it take effect without registering again.
    """
    entries, _, _ = read_entries(path)
    if len(entries) != 1 or not is_link(entries[0]):
        return load_file(path)
    target, env_id = Path(entries[0]["link"]), entries[0]["id"]
    if not target.is_file():
        log.warning("%s links to %s, which is gone; `envhub unregister %s`", path, target, env_id)
        return []
    found = [(s, raw) for s, raw in load_file(target) if s.id == env_id]
    if not found:
        raise catalog_error(
            path, None, f"it links to {target}, which no longer defines {env_id}",
            f"`envhub unregister {env_id}`, or register the file again",
        )  # fmt: skip
    return found


def specs_from_file(path: str | Path) -> list[EnvSpec]:
    """The resolved specs of a YAML file, as if registered, without writing anything."""
    path = Path(path).resolve()
    loaded = load_file(path)
    trial = Registry.load()
    for spec_, raw in loaded:
        trial.stage(spec_, raw)
    out = []
    for s, _ in loaded:
        with located(path, s.name):
            full = trial.spec(s.id)
        out.append(full.model_copy(update={"base_dir": s.base_dir or str(path.parent)}))
    return out
