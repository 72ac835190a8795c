"""``envhub push``: an environment's distribution, checked, measured and stamped, into an index.

What is pushed is the environment's installable folder (``envhub init`` writes one): its code,
its YAML and its data, built into a wheel by pip. Before anything is written the environment
passes ``envhub check`` (determinism, bad inputs, gold answers); its card, with the gold and
random scores measured here, goes beside the wheel with the wheel's sha256 digest. A version is
written once: pushing it again with other contents is refused (bump the version).

Only a folder index is written (``--to PATH``); a folder served over HTTP is then a PEP 503
index that ``pull`` and ``pip`` read.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...install import normal
from ...spec import EnvSpec
from .index import CARD_SUFFIX, sha256, write_pages

CHECKS = ["determinism", "bad_inputs", "gold"]
"""The checks a pushed environment passes (``envhub check``'s, but the HTTP and gymnasium
ones, which a pull runs where it installs)."""


def package_folder(target: str) -> Path:
    """The installable folder ``target`` names: a path, or a registered environment's folder."""
    path = Path(target).expanduser()
    if not path.is_dir():
        from ...registry.catalog import spec

        source = spec(target).source_dir
        path = Path(source) if source else path
    if not (path / "pyproject.toml").is_file():
        raise ConfigError(
            f"{target}: no pyproject.toml in {path.resolve()}; `envhub push` takes an "
            "installable folder (`envhub init NAME` writes one) or the name of an environment "
            "registered from one"
        )
    return path.resolve()


def folder_spec(folder: Path) -> EnvSpec:
    """The one environment the folder's catalog YAML defines."""
    from ...registry.catalog import specs_from_file

    found = [s for y in sorted(folder.glob("*.yaml")) for s in specs_from_file(y)]
    if len(found) != 1:
        names = [s.id for s in found]
        raise ConfigError(f"{folder}: push takes a folder with one environment, found {names}")
    return found[0]


def _checked_card(spec: EnvSpec) -> dict[str, Any]:
    """The card of ``spec`` with gold and random measured now; refuses a failing environment."""
    from ..cards import card, policy_scores
    from ..selfcheck import FAILED, run_checks, table

    results = run_checks(spec, CHECKS)
    if any(r.outcome == FAILED for r in results):
        raise ConfigError(
            f"{spec.name} fails its checks; nothing was pushed:\n{table(spec, results)}"
        )
    out = card(spec)
    out["scores"] = {
        **policy_scores(spec, episodes=20),
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    return out


def _isolation() -> list[str]:
    """The flags that choose pip's build backend.

    This environment's setuptools where it makes wheels itself (70.1 on): offline. Else pip
    fetches a build backend from the package index it is configured with.
    """
    try:
        have = tuple(int(p) for p in metadata.version("setuptools").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return []
    return ["--no-build-isolation"] if have >= (70, 1) else []


def build_wheel(folder: Path, out: Path) -> Path:
    """Build the folder's wheel with pip (no dependencies fetched: envhub is already here).

    From a copy in ``out``: a build writes ``*.egg-info`` and ``build/`` beside the sources, and
    an egg-info left in the author's folder would declare the environment's entry point to
    every process that has the folder on ``sys.path``.
    """
    source = out / "source"
    shutil.copytree(folder, source, ignore=shutil.ignore_patterns("*.egg-info", "build", "dist"))
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", *_isolation(), "-q",
           "-w", str(out), str(source)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    wheels = list(out.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        raise ConfigError(f"{folder}: building its wheel failed:\n{done.stderr[-2000:]}")
    return wheels[0]


def _place(wheel: Path, project: Path) -> str:
    """Copy the wheel into the project's folder; the same version with other bytes is refused."""
    digest = sha256(wheel.read_bytes())
    there = project / wheel.name
    if there.exists() and sha256(there.read_bytes()) != digest:
        raise ConfigError(
            f"{there} is already in the index with another digest: a version is pushed once. "
            "Bump `version` in pyproject.toml and push again."
        )
    project.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(wheel, there)
    return digest


def push(target: str, index: Path) -> dict[str, Any]:
    """Check, measure, build and place ``target`` into the folder index ``index``; its record."""
    folder = package_folder(target)
    spec = folder_spec(folder)
    card = _checked_card(spec)
    with tempfile.TemporaryDirectory() as tmp:
        wheel = build_wheel(folder, Path(tmp))
        dist, version = wheel.name.split("-")[:2]
        project = index.expanduser().resolve() / normal(dist)
        digest = _place(wheel, project)
    record = {
        "environment": spec.name,
        "version": version,
        "distribution": normal(dist),
        "file": wheel.name,
        "digest": f"sha256:{digest}",
        "pushed": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "card": card,
    }
    (project / f"{spec.name}-{version}{CARD_SUFFIX}").write_text(json.dumps(record, indent=2))
    write_pages(project.parent)
    return record


def yank(name: str, version: str, index: Path, reason: str) -> str:
    """Mark ``name``'s ``version`` yanked in a folder index; the file it marked."""
    from .pull import find_project

    root = index.expanduser().resolve()
    project = root / find_project(name, _folder_index(root))
    wheels = [p.name for p in project.glob(f"*-{version}-*.whl")]
    if not wheels:
        raise ConfigError(f"{name}@{version} is not in {root}")
    marks_path = project / "yanked.json"
    marks = json.loads(marks_path.read_text()) if marks_path.exists() else {}
    marks.update({w: reason for w in wheels})
    marks_path.write_text(json.dumps(marks, indent=2))
    write_pages(root)
    return wheels[0]


def _folder_index(root: Path):
    from .index import Index

    return Index(root)
