"""``envhub init``: a new environment folder that passes its own check on the first run.

The folder holds ``env.py`` (a small subclass, with CHANGE comments), ``NAME.yaml``,
``data/`` (tasks with gold answers), ``README.md``, ``test_PKG.py`` (``envhub check`` as a test)
and ``pyproject.toml`` (installable; it depends on ``envhub-rl``, envhub's distribution, with
the family's extra, and declares the ``envhub.environments`` entry point).
The math, code, sql and search families extend the built-in family classes, so the scaffold
is the house style and not a second one. ``init`` then registers the YAML by link (see
:func:`envhub.authoring.register.register`), which runs the registration checks: a folder that is
written passed them.

Templates live in ``templates/<family>/`` (``env.py.tmpl``, ``NAME.yaml.tmpl``, data files)
and ``templates/common/``; ``$name``-style fields are filled with :class:`string.Template`.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

from ...errors import ConfigError
from ...install import DISTRIBUTION, normal
from ...spec import NAME_RE, VERSIONED_RE

TEMPLATES = Path(__file__).with_name("templates")


def _build_sqlite(folder: Path) -> None:
    """The sql family's database, built from its schema script."""
    db = folder / "data" / "shop.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript((folder / "data" / "shop.sql").read_text(encoding="utf-8"))
    conn.close()


@dataclass(frozen=True)
class Family:
    """What ``init --family X`` writes besides the common files."""

    data: tuple[str, ...]
    """Files copied from ``templates/<family>/`` into ``data/``."""
    primary: str = "correctness"
    multi_turn_always: bool = False
    """Games and search are multi-turn whatever ``--multi-turn`` says."""
    core: tuple[str, ...] = ("Episode", "TaskEnv")
    """Names ``env.py`` imports from ``envhub.core`` (``Feedback`` is added with the retry hook)."""
    retry_block: bool = True
    """Single-turn by default: ``--multi-turn`` adds the retry hook to ``env.py``."""
    turns: tuple[int, int] = (1, 3)
    """``max_turns`` without and with ``--multi-turn``."""
    fill: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Extra template fields: name -> (single-turn value, multi-turn value)."""
    after: Callable[[Path], None] | None = None
    extra: str | None = None
    """The extra of envhub the family's code needs; ``pyproject.toml`` depends on envhub with it."""


FAMILIES: dict[str, Family] = {
    "custom": Family(data=("sample.jsonl",)),
    "math": Family(data=("sample.jsonl",), core=("Episode",), extra="math"),
    "code": Family(data=("sample.jsonl",), retry_block=False, extra="code"),
    "sql": Family(
        data=("sample.jsonl", "shop.sql"),
        retry_block=False,
        fill={"base_mod": ("env", "multiturn"), "base_cls": ("SqlEnv", "SqlMultiTurnEnv")},
        after=_build_sqlite,
    ),
    "search": Family(
        data=("sample.jsonl", "docs.jsonl"),
        multi_turn_always=True,
        retry_block=False,
        turns=(6, 6),
        extra="search",
    ),  # fmt: skip
    "games": Family(
        data=("sample.jsonl",),
        primary="solved",
        multi_turn_always=True,
        retry_block=False,
        turns=(8, 8),
        extra="games",
    ),  # fmt: skip
}


def _names(name: str) -> dict[str, str]:
    if not NAME_RE.match(name) or VERSIONED_RE.match(name):
        raise ConfigError(
            f"{name!r} is not a usable environment name: use lower case letters, digits, '_', "
            "'.', '-', starting with a letter or digit, not ending in -vN (e.g. wordrev)"
        )
    dist = f"envhub-{name}"
    if normal(dist) == DISTRIBUTION:
        raise ConfigError(
            f"{name!r} would make a package named {dist!r}, which is envhub's own distribution; "
            "choose another name"
        )
    pkg = re.sub(r"\W", "_", name)
    pkg = pkg if pkg[0].isalpha() else f"env_{pkg}"
    cls = "".join(part.capitalize() for part in pkg.split("_") if part) + "Env"
    return {"name": name, "dist": dist, "pkg": pkg, "cls": cls}


def _fields(name: str, family: str, multi_turn: bool) -> dict[str, str]:
    fam = FAMILIES[family]
    multi = multi_turn or fam.multi_turn_always
    block = (TEMPLATES / "common" / "multi_turn_block.tmpl").read_text(encoding="utf-8")
    values = {
        **_names(name),
        "family": family,
        "primary": fam.primary,
        "max_turns": str(fam.turns[1] if multi else fam.turns[0]),
        "turns": "multi-turn" if multi else "single-turn",
        "requirement": f"{DISTRIBUTION}[{fam.extra}]" if fam.extra else DISTRIBUTION,
        **{k: v[1] if multi else v[0] for k, v in fam.fill.items()},
    }
    retry = multi and fam.retry_block
    values["multi_turn_block"] = Template(block).substitute(values) if retry else ""
    values["core_imports"] = ", ".join(sorted({*fam.core, *(("Feedback",) if retry else ())}))
    return values


def render(name: str, family: str = "custom", multi_turn: bool = False) -> dict[str, str]:
    """The text files of a new environment, by relative path (data files excluded)."""
    if family not in FAMILIES:
        raise ConfigError(f"unknown family {family!r}; choose one of {sorted(FAMILIES)}")
    values = _fields(name, family, multi_turn)
    sources = {
        "env.py": TEMPLATES / family / "env.py.tmpl",
        f"{name}.yaml": TEMPLATES / family / "NAME.yaml.tmpl",
        "README.md": TEMPLATES / "common" / "README.md.tmpl",
        "pyproject.toml": TEMPLATES / "common" / "pyproject.toml.tmpl",
        "__init__.py": TEMPLATES / "common" / "__init__.py.tmpl",
        f"test_{values['pkg']}.py": TEMPLATES / "common" / "test_env.py.tmpl",
    }
    out = {}
    for rel, src in sources.items():
        text = Template(src.read_text(encoding="utf-8")).substitute(values)
        out[rel] = text.rstrip("\n") + "\n"
    return out


def init(
    name: str,
    family: str = "custom",
    multi_turn: bool = False,
    parent: Path | None = None,
    register: bool = True,
) -> Path:
    """Write the folder ``parent/name`` and (by default) register it by link.

    Nothing is left behind when the registration checks fail: the folder is removed and the
    error raised.
    """
    files = render(name, family, multi_turn)
    folder = (parent or Path.cwd()).resolve() / name
    if folder.exists() and any(folder.iterdir()):
        raise ConfigError(f"{folder} exists and is not empty; choose another name or folder")
    if register:
        _refuse_taken(name)
    (folder / "data").mkdir(parents=True, exist_ok=True)
    try:
        for rel, text in files.items():
            (folder / rel).write_text(text, encoding="utf-8")
        for data in FAMILIES[family].data:
            shutil.copyfile(TEMPLATES / family / data, folder / "data" / data)
        if FAMILIES[family].after:
            FAMILIES[family].after(folder)
        if register:
            from ..register import register as do_register

            do_register(folder / f"{name}.yaml", link=True)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


def _refuse_taken(name: str) -> None:
    from ...registry.catalog import catalog

    if name in catalog().names():
        raise ConfigError(
            f"an environment named {name!r} is already in the catalog ({catalog().spec(name).id});"
            " choose another name, or `envhub unregister` yours first"
        )
