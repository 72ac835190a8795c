"""Rollout logs: each step's episodes in ``DIR/rollouts/step_NNNNN.jsonl.gz``.

One JSON object per episode: ``step``, ``env``, ``group``, ``task_id``, ``seed``, ``prompt``
(the opening text), ``messages`` (every turn after it: ``assistant`` for what the model
sampled, ``env`` for what the environment answered, as text decoded from the exact token
ids trained on), ``prompt_tokens``, ``response_tokens``, ``total_tokens``, ``reward``,
``components``, ``status``, ``error``, ``end``, ``turns``, ``advantage`` (None for an
episode not trained on), ``trained``, ``filtered`` (dropped by dynamic sampling),
``truncated``, ``overlong_penalty``, ``weights_versions`` and ``age`` (weight versions between
sampling and the update; 0 on-policy). ``logging.rollouts_every`` and
``logging.rollouts_max_samples`` (whole groups, in order) bound the size.
"""

from __future__ import annotations

import gzip
import json
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envhub.trainer.episodes.dynamic import Filtered

STEP_FILE = re.compile(r"^step_(\d+)\.jsonl\.gz$")


@dataclass
class EpisodeNotes:
    """What the driver knows of an episode beyond the episode itself."""

    advantage: float | None = None
    filtered: bool = False
    overlong_penalty: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def segments(tokens: Sequence[int], mask: Sequence[int]) -> list[tuple[int, list[int]]]:
    """Runs of equal loss-mask value: ``[(mask, ids), ...]`` in order."""
    out: list[tuple[int, list[int]]] = []
    for t, m in zip(tokens, mask, strict=True):
        if out and out[-1][0] == m:
            out[-1][1].append(t)
        else:
            out.append((m, [t]))
    return out


def episode_record(ep: Any, step: int, decode: Any, notes: EpisodeNotes, current: int) -> dict:
    """The log line of one :class:`~envhub.trainer.episodes.rollout.TrainingEpisode`."""
    parts = segments(ep.tokens, ep.loss_mask)
    prompt = decode(parts[0][1]) if parts and parts[0][0] == 0 else ""
    rest = parts[1:] if parts and parts[0][0] == 0 else parts
    messages = [{"role": "assistant" if m else "env", "content": decode(ids)} for m, ids in rest]
    prompt_tokens = len(parts[0][1]) if parts and parts[0][0] == 0 else 0
    return {
        "step": step,
        "env": ep.env,
        "group": ep.group,
        "task_id": ep.task_id,
        "seed": ep.seed,
        "prompt": prompt,
        "messages": messages,
        "prompt_tokens": prompt_tokens,
        "response_tokens": ep.response_tokens,
        "total_tokens": len(ep.tokens),
        "reward": ep.reward,
        "components": ep.components,
        "status": str(ep.status),
        "error": ep.error,
        "end": ep.end,
        "turns": ep.turns,
        "advantage": notes.advantage,
        "trained": notes.advantage is not None,
        "filtered": notes.filtered,
        "truncated": ep.truncated_sample,
        "overlong_penalty": notes.overlong_penalty,
        "weights_versions": ep.versions,
        "age": current - min(ep.versions) if ep.versions else 0,
        **notes.extra,
    }


def capped_groups(episodes: Sequence[Any], cap: int) -> list[Any]:
    """Whole groups, in order, while their episodes fit in ``cap`` (at least one group)."""
    groups: dict[int, list[Any]] = {}
    for e in episodes:
        groups.setdefault(e.group, []).append(e)
    out: list[Any] = []
    for members in groups.values():
        if out and len(out) + len(members) > cap:
            break
        out.extend(members)
    return out


class RolloutLog:
    """A run's rollout logs: every ``every`` steps, whole groups up to ``max_samples``."""

    def __init__(
        self, directory: Path, every: int, max_samples: int, decode: Callable[[Any], str]
    ) -> None:
        """Write under ``directory`` (``DIR/rollouts``); ``decode``: the tokenizer's."""
        self.directory, self.every, self.max_samples = directory, every, max_samples
        self.decode = decode

    def write(
        self, step: int, filtered: Filtered, notes: dict[str, EpisodeNotes], version: int
    ) -> float:
        """Write the step's file when due; returns the seconds it took.

        Every episode the step generated (all backfill rounds), those not kept marked
        ``filtered``.
        """
        if self.every <= 0 or step % self.every:
            return 0.0
        t0 = time.perf_counter()
        kept = {e.key for e in filtered.batch.episodes}
        episodes = capped_groups(filtered.generated.episodes, self.max_samples)
        records = [
            episode_record(
                e,
                step,
                self.decode,
                notes.get(e.key) or EpisodeNotes(filtered=e.key not in kept),
                version,
            )
            for e in episodes
        ]
        write_step(self.directory, step, records)
        return time.perf_counter() - t0


def write_step(directory: Path, step: int, records: Iterable[dict[str, Any]]) -> Path:
    """Write ``step_NNNNN.jsonl.gz`` under ``directory``; returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"step_{step:05d}.jsonl.gz"
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wt", compresslevel=1) as f:
        for rec in records:
            f.write(json.dumps(rec) + "\n")
    tmp.replace(path)
    return path


def step_files(run_dir: Path) -> list[tuple[int, Path]]:
    """``(step, path)`` of every rollout file of a run, in step order."""
    root = run_dir / "rollouts"
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if (m := STEP_FILE.match(p.name))]
    return sorted(found)


def read_step(path: Path) -> list[dict[str, Any]]:
    """The records of one rollout file."""
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]
