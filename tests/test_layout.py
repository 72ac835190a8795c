"""The parts and their arrows (DESIGN.md, "Parts and who may import whom"), from the import graph.

Every ``import`` and ``from ... import`` in envhub's source counts, lazy ones inside functions
included: the core imports no part above it, the sandbox at most the core's errors, and each
part only the parts below it. Entry points (``envhub.cli``, ``envhub.runners``) are how the
core reaches a part without an arrow.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

ALLOWED = {
    "core": {"core"},
    "sandbox": {"sandbox"},  # and envhub.errors, see below
    "envs": {"envs", "core", "sandbox"},
    "server": {"server", "core"},
    "engines": {"engines", "core"},
    "evaluate": {"evaluate", "core", "engines"},
    "trainer": {"trainer", "core", "engines", "evaluate"},
}
HEAVY = ("torch", "ray", "vllm", "transformers", "fastapi", "uvicorn", "docker")
"""Third-party stacks the core never imports (it stays light: pydantic, httpx, gymnasium...)."""


def part_of(module: str) -> str | None:
    """The part a module belongs to (None: not envhub's)."""
    top, _, rest = module.partition(".")
    if top != "envhub":
        return None
    sub = rest.split(".")[0]
    return sub if sub in ALLOWED else "core"


def modules() -> dict[str, Path]:
    """Every envhub source module (both layouts), by dotted name."""
    found = {}
    for top in ("envhub",):
        for path in (ROOT / top).rglob("*.py"):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports(name: str, path: Path) -> list[tuple[str, int]]:
    """(imported module, line) for every import in the file, at any depth."""
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
            out.append((base, node.lineno))
            out += [(f"{base}.{a.name}", node.lineno) for a in node.names]
    return out


def violations() -> list[str]:
    """Each arrow the rules forbid, as ``module:line -> target``."""
    found = modules()
    bad = []
    for name, path in sorted(found.items()):
        src = part_of(name)
        for target, line in imports(name, path):
            dst = part_of(target)
            if target not in found and dst is not None and target.rpartition(".")[0] in found:
                target = target.rpartition(".")[0]  # `from pkg import name`: name is no module
            if dst is None:
                if src == "core" and target.split(".")[0] in HEAVY:
                    bad.append(f"{name}:{line} -> {target} (the core stays light)")
                continue
            if src == "sandbox" and dst == "core" and target in ("envhub", "envhub.errors"):
                continue
            if dst not in ALLOWED[src]:
                bad.append(f"{name}:{line} -> {target} ({src} may not import {dst})")
    return bad


def test_every_import_points_toward_the_core():
    assert violations() == []


@pytest.mark.parametrize(
    "src,code,expected",
    [
        ("envhub/make.py", "from .server import docker\n", "core may not import server"),
        (
            "envhub/cli.py",
            "def f():\n    from envhub.trainer.cli import main\n",
            "core may not import",
        ),
        ("envhub/registry.py", "import torch\n", "the core stays light"),
        ("envhub/sandbox/core.py", "from ..registry import spec\n", "sandbox may not import core"),
    ],
)
def test_the_checker_sees_each_kind_of_arrow(tmp_path, monkeypatch, src, code, expected):
    """The rule is not vacuous: a lazy or relative import of a part above is caught."""
    path = tmp_path / "mod.py"
    path.write_text(code)
    name = src.removesuffix(".py").replace("/", ".")
    monkeypatch.setattr(sys.modules[__name__], "modules", lambda: {name: path})
    assert any(expected in v for v in violations())


def test_the_architecture_picture_draws_exactly_the_allowed_arrows():
    """docs/architecture.md's mermaid graph is the ALLOWED table (one cannot drift alone)."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawn = set(re.findall(r"^\s+(\w+)(?:\[[^\]]*\])? --> (\w+)$", text, flags=re.M))
    allowed = {(src, dst) for src, dsts in ALLOWED.items() for dst in dsts if dst != src}
    allowed.add(("sandbox", "core"))  # the core's errors only (see violations)
    assert drawn == allowed
