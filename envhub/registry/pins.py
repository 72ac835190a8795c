"""Which environment a run used, pinned: its name, version and digest.

A run records a pin per environment in its config; a resumed run compares them with what the
catalog resolves today and refuses a mismatch (an episode played on another version would be
averaged with the recorded ones as if it were the same environment).

- An environment installed by ``envhub pull`` is pinned by the version and the sha256 digest of
  the distribution it pulled (``$ENVHUB_HOME/hub/pulled.json``, written by the pull).
- Any other is pinned by its catalog version and a digest of its resolved definition (the
  entry's fields, its folder aside): a changed YAML, reward or dataset shows; a change of its
  code without a new version does not.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ..datasets import envhub_home
from ..spec import EnvSpec


class EnvPin(BaseModel):
    """One environment of a run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    version: str
    """The pulled distribution's version, else ``vN`` (the catalog version)."""
    digest: str
    """``sha256:...`` of the pulled distribution, else ``spec-sha256:...`` of the definition."""


def pulled_path() -> Path:
    """Where ``envhub pull`` records what it installed: ``{name: {version, digest, index}}``."""
    return envhub_home() / "hub" / "pulled.json"


def pulled() -> dict[str, dict[str, str]]:
    """What ``envhub pull`` installed here, by environment name."""
    path = pulled_path()
    return json.loads(path.read_text()) if path.exists() else {}


def pin(spec: EnvSpec) -> EnvPin:
    """The pin of ``spec`` as it resolves here now."""
    record = pulled().get(spec.name)
    if record is not None:
        return EnvPin(name=spec.name, version=record["version"], digest=record["digest"])
    body = json.dumps(spec.model_dump(mode="json", exclude={"base_dir"}), sort_keys=True)
    digest = hashlib.sha256(body.encode()).hexdigest()
    return EnvPin(name=spec.name, version=f"v{spec.version}", digest=f"spec-sha256:{digest}")


def mismatches(recorded: list[EnvPin], now: list[EnvPin]) -> list[str]:
    """One line per recorded pin that differs from ``now`` (by name)."""
    here = {p.name: p for p in now}
    out = []
    for old in recorded:
        new = here.get(old.name)
        if new is not None and new != old:
            out.append(
                f"{old.name}: the run used {old.version} ({old.digest}), "
                f"here it is {new.version} ({new.digest})"
            )
    return out
