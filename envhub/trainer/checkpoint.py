"""Atomic, resumable checkpoints: ``OUT/checkpoints/step_N/``.

A checkpoint holds the sharded model and optimizer (``torch.distributed.checkpoint``, written
by every rank into ``dcp/``), each rank's scheduler and RNG (``rankR.pt``) and the driver's
state (``trainer_state.json``: step, data position, the config fingerprint). It is written
into a hidden temporary folder, ``trainer_state.json`` last, then renamed into place: a
process killed while writing leaves only a ``.tmp-*`` folder, which is ignored (and removed
by the next save), so the previous checkpoint stays the newest loadable one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from envhub.errors import EnvhubError

STATE_FILE = "trainer_state.json"
STEP_RE = re.compile(r"^step_(\d+)$")


class ResumeError(EnvhubError):
    """A checkpoint cannot be resumed under the current config."""


@dataclass
class TrainerState:
    """What the driver needs to continue exactly where it stopped."""

    step: int = 0
    """Steps completed."""
    data_position: int = 0
    """Tasks consumed so far (the next group's task comes from this position)."""
    fingerprint: dict[str, Any] = field(default_factory=dict)
    """``Config.fingerprint()`` of the run that wrote the checkpoint."""
    config_digest: str = ""
    history: list[dict[str, float]] = field(default_factory=list)
    """Per-step reward means, so the curve of a resumed run is whole."""
    sampler: dict[str, Any] = field(default_factory=dict)
    """The mix sampler's state (draws per source as of ``step``, the curriculum's pass counts)."""
    validation: dict[str, Any] = field(default_factory=dict)
    """The best validation round so far and the early-stopping count."""
    pins: list[dict[str, str]] = field(default_factory=list)
    """The environments the run plays, pinned (:class:`envhub.registry.pins.EnvPin` fields):
    a resume refuses an environment that changed (:func:`check_pins`)."""


@contextmanager
def atomic_dir(final: Path) -> Iterator[Path]:
    """Yield a temporary folder beside ``final``; rename it to ``final`` if the block succeeds."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-", dir=final.parent))
    try:
        yield tmp
        _fsync_dir(tmp)
        if final.exists():
            shutil.rmtree(final)
        os.rename(tmp, final)
        _fsync_dir(final.parent)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_state(directory: Path, state: TrainerState) -> None:
    """Write ``trainer_state.json`` (flushed to disk) into ``directory``."""
    path = directory / STATE_FILE
    with open(path, "w") as f:
        json.dump(asdict(state), f, indent=1)
        f.flush()
        os.fsync(f.fileno())


def read_state(directory: Path) -> TrainerState:
    """Read a checkpoint's driver state."""
    return TrainerState(**json.loads((directory / STATE_FILE).read_text()))


def list_checkpoints(root: Path) -> list[tuple[int, Path]]:
    """Complete checkpoints under ``root`` as ``(step, path)``, oldest first."""
    if not root.is_dir():
        return []
    found = []
    for p in root.iterdir():
        m = STEP_RE.match(p.name)
        if m and (p / STATE_FILE).exists():
            found.append((int(m.group(1)), p))
    return sorted(found)


def latest(root: Path) -> Path | None:
    """The newest complete checkpoint, or None."""
    found = list_checkpoints(root)
    return found[-1][1] if found else None


def save(
    root: Path,
    state: TrainerState,
    write_shards: Callable[[Path], None],
    *,
    keep: int,
) -> Path:
    """Write checkpoint ``step_{state.step}`` atomically and keep the newest ``keep``.

    Args:
        root: ``OUT/checkpoints``.
        state: The driver's state.
        write_shards: Writes the workers' part into the given folder (all ranks).
        keep: How many checkpoints to keep.
    """
    for stale in root.glob(".tmp-*") if root.is_dir() else []:
        shutil.rmtree(stale, ignore_errors=True)  # left by a killed save
    final = root / f"step_{state.step}"
    with atomic_dir(final) as tmp:
        write_shards(tmp)
        write_state(tmp, state)  # last: its presence marks the checkpoint complete
    for _, old in list_checkpoints(root)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def check_pins(saved: TrainerState, now: list[dict[str, str]], where: Path) -> None:
    """Refuse to resume when an environment the run played changed (its version or digest).

    A checkpoint written before runs recorded pins has none, and is not checked.

    Raises:
        ResumeError: names each changed environment, both versions, and the ways out.
    """
    from envhub.registry.pins import EnvPin, mismatches

    changed = mismatches([EnvPin(**p) for p in saved.pins], [EnvPin(**p) for p in now])
    if changed:
        raise ResumeError(
            f"cannot resume from {where}: an environment changed since the run began:\n  "
            + "\n  ".join(changed)
            + "\nInstall the recorded version (`envhub pull NAME@VERSION`), or start a new run "
            "in another --out folder (or with checkpoint.resume=false)."
        )


def check_compatible(saved: TrainerState, fingerprint: dict[str, Any], where: Path) -> None:
    """Refuse to resume under settings that change the model, the data order or the shapes.

    Raises:
        ResumeError: names every differing key, both values, and the two ways out.
    """
    keys = dict.fromkeys([*fingerprint, *saved.fingerprint])  # a key either side lacks differs
    diffs = [
        f"  {k}: checkpoint has {saved.fingerprint.get(k)!r}, config has {fingerprint.get(k)!r}"
        for k in keys
        if saved.fingerprint.get(k) != fingerprint.get(k)
    ]
    if diffs:
        raise ResumeError(
            f"cannot resume from {where}: the config differs in settings a run cannot change "
            "midway:\n" + "\n".join(diffs) + "\nRestore those values, or start a new run in "
            "another --out folder (or with checkpoint.resume=false)."
        )
