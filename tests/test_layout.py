"""The parts and their arrows (DESIGN.md, "Parts and who may import whom"), from the import graph.

Every ``import`` and ``from ... import`` in envhub's source counts, lazy ones inside functions
included. The core has rooms: the contract (the modules directly in ``envhub/``, and the
judge's folder), the catalog read (``envhub/registry/``), the client (``envhub/client/``),
authoring (``envhub/authoring/``) and the front doors (``envhub/__init__.py``, ``envhub/cli.py``)
that put them together. Each room and part imports only the ones drawn below it. Entry points
(``envhub.cli``, ``envhub.runners``) are how the core reaches a part without an arrow.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

ALLOWED = {
    "contract": {"contract"},
    "client": {"client", "contract"},
    "registry": {"registry", "client", "contract"},
    "authoring": {"authoring", "registry", "client", "contract"},
    "front": {"front", "authoring", "registry", "client", "contract"},
    "sandbox": {"sandbox"},  # and envhub.errors, see below
    "envs": {"envs", "sandbox", "contract"},
    "docker": {"docker", "registry", "client", "contract"},
    "interop": {"interop", "server", "docker", "registry", "client", "contract"},
    "server": {"server", "docker", "registry", "client", "contract"},
    "engines": {"engines", "contract"},
    "gateway": {"gateway", "engines", "sandbox", "contract"},
    "evaluate": {"evaluate", "gateway", "engines", "registry", "client", "contract", "front"},
    "trainer": {"trainer", "evaluate", "gateway", "engines", "registry", "contract", "front"},
}
CORE = {"contract", "client", "registry", "authoring", "front"}
"""The core's rooms: none imports a heavy stack."""
FRONT = {"envhub", "envhub.cli"}
"""The front doors: the Python API (``import envhub``) and the ``envhub`` command."""
CONTRACT_FOLDERS = {"judge"}
"""Folders that belong to the contract (the judge and its verdicts)."""
MAX_FLAT = 15
"""At most this many modules directly in ``envhub/`` (``__init__.py`` not counted)."""
HEAVY = ("torch", "ray", "vllm", "transformers", "fastapi", "uvicorn", "docker")
"""Third-party stacks the core never imports (it stays light: pydantic, httpx, gymnasium...)."""


def part_of(module: str) -> str | None:
    """The part or room a module belongs to (None: not envhub's)."""
    top, _, rest = module.partition(".")
    if top != "envhub":
        return None
    if module in FRONT:
        return "front"
    sub = rest.split(".")[0]
    return sub if sub in ALLOWED and sub not in ("contract", "front") else "contract"


def modules() -> dict[str, Path]:
    """Every envhub source module, by dotted name."""
    found = {}
    for path in (ROOT / "envhub").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def reexports() -> dict[str, str]:
    """The names ``envhub/__init__.py`` re-exports, each with the module it comes from."""
    tree = ast.parse((ROOT / "envhub" / "__init__.py").read_text(encoding="utf-8"))
    return {
        f"envhub.{alias.asname or alias.name}": f"envhub.{node.module}"
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
        for alias in node.names
    }


def imports(name: str, path: Path) -> list[tuple[str, int]]:
    """(imported module or ``module.name``, line) for every import in the file, at any depth."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            out += [(f"{base}.{a.name}", node.lineno) for a in node.names]
    return out


def resolve(target: str, found: dict[str, Path], names: dict[str, str]) -> str:
    """The module an imported ``module.name`` stands for: ``from envhub import make`` is the
    catalog's ``make``, ``from envhub.core import Env`` is ``envhub.core``."""
    if target in names:
        return names[target]
    if target not in found and target.rpartition(".")[0] in found:
        return target.rpartition(".")[0]
    return target


def violations() -> list[str]:
    """Each arrow the rules forbid, as ``module:line -> target``."""
    found, names = modules(), reexports()
    bad = []
    for name, path in sorted(found.items()):
        src = part_of(name)
        for target, line in imports(name, path):
            target = resolve(target, found, names)
            dst = part_of(target)
            if dst is None:
                if src in CORE and target.split(".")[0] in HEAVY:
                    bad.append(f"{name}:{line} -> {target} (the core stays light)")
                continue
            if src == "sandbox" and target in ("envhub", "envhub.errors"):
                continue
            if dst not in ALLOWED[src]:
                bad.append(f"{name}:{line} -> {target} ({src} may not import {dst})")
    return bad


def test_every_import_points_toward_the_core():
    assert violations() == []


@pytest.mark.parametrize(
    "src,code,expected",
    [
        (
            "envhub/registry/make.py",
            "from ..docker import make_env\n",
            "registry may not import docker",
        ),
        ("envhub/cli.py", "def f():\n    from envhub.trainer.cli import main\n", "front may not"),
        ("envhub/registry/catalog.py", "import torch\n", "the core stays light"),
        ("envhub/sandbox/parent.py", "from ..registry import catalog\n", "sandbox may not import"),
        (
            "envhub/core.py",
            "from .registry.catalog import spec\n",
            "contract may not import registry",
        ),
        (
            "envhub/wire.py",
            "def f():\n    from .client import remote_env\n",
            "contract may not import client",
        ),
        (
            "envhub/spec.py",
            "from envhub.authoring import preflight\n",
            "contract may not import authoring",
        ),
        (
            "envhub/judge/verdicts.py",
            "from ..registry.make import make\n",
            "contract may not import registry",
        ),
        (
            "envhub/registry/catalog.py",
            "from ..authoring.preflight import check_spec\n",
            "registry may not import authoring",
        ),
        (
            "envhub/client/remote_env.py",
            "from ..registry import catalog\n",
            "client may not import registry",
        ),
        (
            "envhub/envs/search/index.py",
            "from envhub.registry.catalog import envhub_home\n",
            "envs may not import registry",
        ),
        ("envhub/envs/math/env.py", "from envhub import make\n", "envs may not import registry"),
    ],
)
def test_the_checker_sees_each_kind_of_arrow(tmp_path, monkeypatch, src, code, expected):
    """The rule is not vacuous: a lazy, relative or re-exported import of a room above is caught."""
    path = tmp_path / "mod.py"
    path.write_text(code)
    name = src.removesuffix(".py").replace("/", ".")
    monkeypatch.setattr(sys.modules[__name__], "modules", lambda: {name: path})
    assert any(expected in v for v in violations())


def test_the_servers_dialects_are_interop_modules():
    """The server names its dialects (``serve --openenv``) in one table, by module: interop's."""
    from envhub.server.dialects import DIALECTS

    found = modules()
    for name, module in DIALECTS.items():
        assert module in found and part_of(module) == "interop", (name, module)


def test_every_folder_is_a_known_room_or_part():
    """A new folder is placed on purpose (else it would count as the contract unnoticed)."""
    folders = {p.parent.name for p in (ROOT / "envhub").glob("*/__init__.py")}
    assert folders <= (set(ALLOWED) | CONTRACT_FOLDERS) - {"contract", "front"}


def test_few_modules_stay_directly_in_envhub():
    """A newcomer reads the house from ``ls envhub/``: the contract and the front doors flat,
    every other concern in a folder of its own."""
    flat = sorted(p.name for p in (ROOT / "envhub").glob("*.py") if p.name != "__init__.py")
    assert len(flat) <= MAX_FLAT, flat


def test_the_architecture_picture_draws_exactly_the_allowed_arrows():
    """docs/architecture.md's mermaid graph is the ALLOWED table (one cannot drift alone)."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawn = set(re.findall(r"^\s+(\w+)(?:\[[^\]]*\])? --> (\w+)$", text, flags=re.M))
    allowed = {(src, dst) for src, dsts in ALLOWED.items() for dst in dsts if dst != src}
    allowed.add(("sandbox", "contract"))  # the contract's errors only (see violations)
    assert drawn == allowed


# ---- the trainer's rooms (issue 31): a thin driver over algo/, episodes/, workers/, refit/

TRAINER_ROOMS = {
    "algo": {"algo"},
    "episodes": {"episodes"},
    "refit": {"refit", "driver"},
    "workers": {"workers", "algo", "episodes", "refit", "driver"},
    "driver": {"driver", "algo", "episodes", "workers", "refit"},
}
"""What each room of ``envhub/trainer/`` may import of the trainer. ``algo/`` and ``episodes/``
import no other room; ``refit/`` no room (the driver's config errors and watchdog only); the
driver's modules (loop, config, metrics, checkpoint, CLI, watchdog) sit directly in the folder."""


def trainer_room(module: str) -> str | None:
    """The room of a trainer module (``driver`` for the modules directly in the folder)."""
    parts = module.split(".")
    if parts[:2] != ["envhub", "trainer"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in TRAINER_ROOMS and len(parts) > 3 else "driver"


def trainer_violations() -> list[str]:
    """Each arrow between the trainer's rooms that the rules forbid, lazy imports included."""
    found, names = modules(), reexports()
    bad = []
    for name, path in sorted(found.items()):
        src = trainer_room(name)
        if src is None or name == "envhub.trainer":
            continue
        for target, line in imports(name, path):
            dst = trainer_room(resolve(target, found, names))
            if dst is not None and dst not in TRAINER_ROOMS[src]:
                bad.append(f"{name}:{line} -> {target} ({src} may not import {dst})")
    return bad


def test_the_trainers_rooms_import_only_what_they_may():
    assert trainer_violations() == []


def test_the_trainer_rule_is_not_vacuous(tmp_path, monkeypatch):
    path = tmp_path / "mod.py"
    path.write_text("def f():\n    from ..workers.cluster import Cluster\n")
    name = "envhub.trainer.episodes.rollout"
    monkeypatch.setattr(sys.modules[__name__], "modules", lambda: {name: path})
    assert any("episodes may not import workers" in v for v in trainer_violations())


def test_ls_trainer_shows_its_rooms():
    rooms = {p.parent.name for p in (ROOT / "envhub" / "trainer").glob("*/__init__.py")}
    assert rooms == set(TRAINER_ROOMS) - {"driver"}


def import_circles(prefix: str) -> list[list[str]]:
    """The import circles among the modules under ``prefix`` (lazy and TYPE_CHECKING included)."""
    found, names = modules(), reexports()
    graph = {
        name: {resolve(t, found, names) for t, _ in imports(name, path)} & set(found) - {name}
        for name, path in found.items()
        if name.startswith(prefix)
    }
    circles, seen = [], set()
    for start in sorted(graph):
        if start in seen or start not in _reach(graph, start):
            continue  # on no circle, or on one found already
        circle = sorted(m for m in _reach(graph, start) if start in _reach(graph, m))
        seen.update(circle)
        circles.append(circle)
    return circles


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    stack, reached = list(graph.get(start, ())), set()
    while stack:
        node = stack.pop()
        if node not in reached and node in graph:
            reached.add(node)
            stack.extend(graph[node])
    return reached


def folders() -> list[str]:
    """``envhub`` and every package folder under it, dotted."""
    return sorted({name.rpartition(".")[0] for name in modules()} | {"envhub"})


@pytest.mark.parametrize("folder", folders())
def test_no_folder_holds_an_import_circle(folder):
    """No circle among a folder's modules (its sub-folders included), lazy imports counted."""
    assert import_circles(folder) == []


def test_the_circle_finder_finds_a_lazy_circle(tmp_path, monkeypatch):
    (tmp_path / "envhub" / "knot").mkdir(parents=True)
    (tmp_path / "envhub" / "__init__.py").write_text("")
    (tmp_path / "envhub" / "knot" / "__init__.py").write_text("")
    (tmp_path / "envhub" / "knot" / "a.py").write_text("from .b import B\nA = 1\n")
    (tmp_path / "envhub" / "knot" / "b.py").write_text("def f():\n    from .a import A\nB = 2\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert import_circles("envhub.knot") == [["envhub.knot.a", "envhub.knot.b"]]
