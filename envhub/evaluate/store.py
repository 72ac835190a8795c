"""The files of one evaluation run, and the records they hold.

A run directory holds:

* ``config.json``: the :class:`EvalConfig` (never the API key), read back by ``--resume``;
* ``episodes.jsonl``: one :class:`EpisodeRecord` per finished episode, appended and flushed
  as each episode ends, so an interrupted run loses only the episodes in flight;
* ``summary.json``: the per-environment metrics (see :mod:`envhub.evaluate.metrics`).

Files that are rewritten whole (``config.json``, ``summary.json``, a compacted
``episodes.jsonl``) are written to a temporary file and renamed, so a crash never leaves
half a file.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..gateway.config import AgentConfig
from ..registry.pins import EnvPin
from ..types import EpisodeResult

log = logging.getLogger("envhub.evaluate")

EPISODES = "episodes.jsonl"
SUMMARY = "summary.json"
CONFIG = "config.json"


class EvalConfig(BaseModel):
    """Everything that defines an evaluation run (what ``--resume`` restores)."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    """Local model directory or name, or the served model name of an endpoint."""
    base_url: str | None = None
    """OpenAI-compatible endpoint; ``None`` runs ``model`` locally."""
    envs: list[str] = Field(default_factory=list)
    split: str | None = None
    """Split to evaluate; ``None`` takes each environment's default split."""
    limit: int | None = None
    """First N tasks of each environment."""
    n: int = 1
    """Samples per task (the k of pass@k)."""
    temperature: float = 0.0
    max_tokens: int = 512
    concurrency: int = 32
    runner: str = "local"
    env_url: str | None = None
    """URL of a running ``envhub serve``; replaces ``runner`` when given."""
    seed: int = 0
    pass_threshold: float = 1.0
    """Reward that counts as solved when an episode lacks the primary component."""
    pins: list[EnvPin] = Field(default_factory=list)
    """Name, version and digest of each environment, as resolved when the run began."""
    agent: AgentConfig | None = None
    """An agent program that plays each episode through the gateway (``--agent``); ``None``:
    envhub's own episode loop."""


class EpisodeRecord(EpisodeResult):
    """One finished episode, as written to ``episodes.jsonl``.

    The episode itself (task, seed, transcript, reward, components, status, turns) is the
    core's :class:`envhub.types.EpisodeResult`; the run adds what identifies and judges it.
    """

    env: str
    env_version: int = 1
    split: str | None = None
    task_id: str
    sample: int = 0
    """Index of this sample among the ``n`` of its task."""
    model: str
    passed: bool | None = None
    """Whether the task counts as solved; ``None`` when the status excludes it."""
    terminated: bool = False
    truncated: bool = False
    invalid_actions: int = 0
    """Steps flagged ``invalid_action`` while the episode went on."""
    capped_turns: int = 0
    """Model turns cut by ``max_tokens`` (finish reason ``length``)."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    wall_s: float = 0.0
    rescored: bool | None = None
    """Set by ``--rescore``: re-verified (True) or copied unchanged (False)."""

    @property
    def key(self) -> tuple[str, str, int]:
        """Identity of the episode within a run: environment, task, sample."""
        return (self.env, self.task_id, self.sample)


class RunStore:
    """Reads and writes the files of one run directory."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        """Use ``directory`` (created on first write)."""
        self.dir = Path(directory)
        self._fh: Any = None

    @property
    def episodes_path(self) -> Path:
        """Path of ``episodes.jsonl``."""
        return self.dir / EPISODES

    @property
    def summary_path(self) -> Path:
        """Path of ``summary.json``."""
        return self.dir / SUMMARY

    def exists(self) -> bool:
        """True when the directory holds a run (its config or episodes)."""
        return (self.dir / CONFIG).exists() or self.episodes_path.exists()

    def write_config(self, config: EvalConfig) -> None:
        """Write ``config.json``."""
        self._atomic(CONFIG, config.model_dump_json(indent=2))

    def read_config(self) -> EvalConfig:
        """Read ``config.json``; the error names the directory when there is none."""
        path = self.dir / CONFIG
        if not path.exists():
            raise FileNotFoundError(
                f"{self.dir} holds no {CONFIG}; it is not an `envhub eval --out` directory"
            )
        return EvalConfig.model_validate_json(path.read_text())

    def load_records(self) -> list[EpisodeRecord]:
        """Every record of ``episodes.jsonl``; a torn last line (hard kill) is skipped."""
        if self._fh is not None:
            self._fh.flush()
        if not self.episodes_path.exists():
            return []
        records = []
        # "\n" only: str.splitlines() also breaks at U+2028, U+0085..., which JSON leaves raw in
        # a string, so a model that wrote one tore its own record
        lines = self.episodes_path.read_text(encoding="utf-8").split("\n")
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                records.append(EpisodeRecord.model_validate_json(line))
            except ValueError as e:
                if lineno == len(lines):
                    log.warning("%s: skipping torn last line %d", self.episodes_path, lineno)
                    continue
                raise ValueError(f"{self.episodes_path}:{lineno}: bad episode record: {e}") from e
        return records

    def append(self, record: EpisodeRecord) -> None:
        """Append one record and flush it (to the OS: a killed process loses nothing)."""
        if self._fh is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.episodes_path, "a", encoding="utf-8")
        self._fh.write(record.model_dump_json() + "\n")
        self._fh.flush()

    def close(self) -> None:
        """Close the episodes file (appending reopens it)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def rewrite(self, records: Iterable[EpisodeRecord]) -> None:
        """Replace ``episodes.jsonl`` with ``records``."""
        self.close()
        self._atomic(EPISODES, "".join(r.model_dump_json() + "\n" for r in records))

    def write_summary(self, summary: dict[str, Any]) -> None:
        """Write ``summary.json``."""
        self._atomic(SUMMARY, json.dumps(summary, indent=2, sort_keys=False) + "\n")

    def read_summary(self) -> dict[str, Any]:
        """Read ``summary.json``."""
        return json.loads(self.summary_path.read_text())

    def _atomic(self, name: str, text: str) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.dir / name)
