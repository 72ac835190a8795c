"""``envhub push``: an environment's distribution, checked, measured and stamped, into an index.

What is pushed is the environment's installable folder (``envhub init`` writes one): its code,
its YAML and its data, built into a wheel by pip. Before anything is written the environment
passes ``envhub check`` (determinism, bad inputs, gold answers); its card, with the gold and
random scores measured here, goes into the wheel (:mod:`.wheelcard`) and, in a folder index,
beside it with the wheel's sha256 digest. A version is written once: pushing it again with other
contents is refused (bump the version).

The index is a folder (``--to PATH``: a folder served over HTTP is then a PEP 503 index that
``pull`` and ``pip`` read), or the upload URL of a remote index (``--to URL``: uploaded with
twine, :mod:`.upload`; the index refuses a version it holds already).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ...client.venv import build_flags
from ...errors import ConfigError
from ...install import normal
from ...spec import EnvSpec
from . import wheelcard
from .index import CARD_SUFFIX, is_url, sha256, write_pages

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


def build_wheel(folder: Path, out: Path) -> Path:
    """Build the folder's wheel with pip (no dependencies fetched: envhub is already here).

    From a copy in ``out``: a build writes ``*.egg-info`` and ``build/`` beside the sources, and
    an egg-info left in the author's folder would declare the environment's entry point to
    every process that has the folder on ``sys.path``.
    """
    source = out / "source"
    shutil.copytree(folder, source, ignore=shutil.ignore_patterns("*.egg-info", "build", "dist"))
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", *build_flags(), "-q",
           "-w", str(out), str(source)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    wheels = list(out.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        raise ConfigError(f"{folder}: building its wheel failed:\n{done.stderr[-2000:]}")
    return wheels[0]


def _place(wheel: Path, project: Path) -> None:
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


def push(
    target: str, to: str | Path, user: str | None = None, password: str | None = None
) -> dict[str, Any]:
    """Check, measure, build and place ``target`` into the index ``to``; its record.

    ``to`` is a folder, or a remote index's upload URL (``user``/``password`` for it, else
    twine's ``TWINE_USERNAME``/``TWINE_PASSWORD``).
    """
    folder = package_folder(target)
    spec = folder_spec(folder)
    card = _checked_card(spec)
    with tempfile.TemporaryDirectory() as tmp:
        wheel = build_wheel(folder, Path(tmp))
        dist, version = wheel.name.split("-")[:2]
        record = {
            "environment": spec.name,
            "version": version,
            "distribution": normal(dist),
            "file": wheel.name,
            "digest": "",
            "pushed": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "card": card,
        }
        wheelcard.embed(wheel, record)
        record["digest"] = f"sha256:{sha256(wheel.read_bytes())}"
        if is_url(str(to)):
            from .upload import upload

            upload(wheel, str(to), user, password)
            return record
        project = Path(to).expanduser().resolve() / normal(dist)
        _place(wheel, project)
    (project / f"{spec.name}-{version}{CARD_SUFFIX}").write_text(json.dumps(record, indent=2))
    write_pages(project.parent)
    return record


def yank(name: str, version: str, index: str | Path, reason: str) -> str:
    """Mark ``name``'s ``version`` yanked in a folder index; the file it marked.

    Raises:
        ConfigError: ``index`` is a URL (a remote index yanks through its own interface).
    """
    from .pull import find_project

    if is_url(str(index)):
        raise ConfigError(
            f"yank writes a folder index; {index} is a remote one: yank {name}@{version} "
            "through the index's own interface (PyPI: the release's settings page; devpi: "
            "`devpi remove`; pypiserver: delete the file), and pull skips it once its page "
            "marks it (PEP 592 data-yanked)"
        )
    root = Path(index).expanduser().resolve()
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
