"""A mix of environments in one run: the sources, each step's quotas and its task draws.

``env.mix`` lists sources (``name``, ``weight``, optional ``overrides``, ``split``,
``runner``, ``max_turns``, ``workers``); the single-environment form (``env.name``) is a mix
of one source. Every draw is a pure function of the run seed, the step and the backfill
round, so a resumed run (or a background rollout thread) draws the same tasks as an
uninterrupted one; the curriculum (``envhub.trainer.episodes.curriculum``), when on, is the only
state, and it is saved in checkpoints with the step.

Quotas are exact per step: source ``s`` gets ``floor(w_s * n)`` or ``ceil(w_s * n)``
prompts (largest remainder; ties broken by a generator seeded with the step), summing to
``n``; over many steps each source's share tends to its weight.
"""

from __future__ import annotations

import math
import random
import threading
import zlib
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envhub.gateway.config import AgentConfig


class MixSource(BaseModel):
    """One environment of ``env.mix``."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """A registered environment name (``envhub list``); unique within the mix."""
    weight: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    """Share of each step's prompts (weights are normalised over the mix); finite (``inf``
    and ``nan`` are refused, naming the key)."""
    overrides: dict[str, Any] = Field(default_factory=dict)
    """Passed to ``envhub.make`` (spec fields, reward weights, environment options)."""
    split: str | None = None
    """Split to draw training tasks from (the catalog entry's split when unset)."""
    runner: Literal["local", "http", "docker"] | None = None
    """Runner; the catalog entry's default when unset."""
    max_turns: int | None = Field(default=None, ge=1)
    """Model turns per episode; ``rollout.max_turns``, then the environment's own, when unset."""
    workers: int = Field(default=1, ge=1)
    """Environment worker actors of this source."""
    agent: AgentConfig | None = None
    """An agent program that plays this source's episodes through the recording gateway
    (the config's top-level ``agent`` when unset; ``envhub.trainer.episodes.agents``)."""


@dataclass(frozen=True)
class Job:
    """One task group to roll out: which source, which reset seed, optionally which task."""

    source: str
    seed: int
    task_id: str | None = None


def stream_seed(run_seed: int, *parts: object) -> int:
    """A stable seed for ``parts`` (names, steps, rounds) under ``run_seed``."""
    text = "/".join(str(p) for p in parts)
    return (run_seed * 1_000_003 + zlib.crc32(text.encode())) % (2**63)


def quotas(weights: dict[str, float], n: int, rng: random.Random) -> dict[str, int]:
    """Split ``n`` prompts over sources by weight: largest remainder, ties broken by ``rng``.

    Every source gets ``floor`` or ``ceil`` of its exact share and the quotas sum to ``n``.
    """
    top = max(weights.values())  # scaled to at most 1 first: a sum of 1e308s cannot overflow
    scaled = {s: w / top for s, w in weights.items()}
    total = sum(scaled.values())
    exact = {s: w / total * n for s, w in scaled.items()}
    out = {s: math.floor(x) for s, x in exact.items()}
    order = sorted(exact, key=lambda s: (-(exact[s] - out[s]), rng.random()))
    for s in order[: n - sum(out.values())]:
        out[s] += 1
    return out


class MixSampler:
    """Draws each step's task groups over the sources (see the module docstring)."""

    def __init__(self, sources: list[MixSource], run_seed: int, curriculum: Any = None):
        """``curriculum``: an :class:`envhub.trainer.episodes.curriculum.Curriculum`, or None."""
        self.sources = sources
        self.run_seed = run_seed
        self.weights = {s.name: s.weight for s in sources}
        self.curriculum = curriculum
        self.drawn = {s.name: 0 for s in sources}
        """Groups drawn per source so far, steps drawn ahead included (saved in checkpoints as
        of the checkpoint's step, see :meth:`state_dict`)."""
        self._ahead: dict[int, dict[str, int]] = {}
        """The draws of each step not yet saved as trained (asynchronous runs draw ahead)."""
        self._lock = threading.Lock()  # a background rollout thread draws while the loop saves

    def draw(self, step: int, n: int, round_: int = 0, snapshot: Any = None) -> list[Job]:
        """The ``n`` task groups of ``step`` (backfill round ``round_``), sources in mix order.

        ``snapshot``: a frozen curriculum state to draw with (asynchronous rollouts draw
        with the state at launch time); the live curriculum when None.
        """
        rng = random.Random(stream_seed(self.run_seed, "quota", step, round_))
        counts = quotas(self.weights, n, rng)
        jobs: list[Job] = []
        for src in self.sources:
            k = counts[src.name]
            if k == 0:
                continue
            jobs.extend(self._source_jobs(src.name, step, round_, k, snapshot))
        with self._lock:
            ahead = self._ahead.setdefault(step, {})
            for name, k in counts.items():
                self.drawn[name] += k
                ahead[name] = ahead.get(name, 0) + k
        return jobs

    def _source_jobs(self, name: str, step: int, round_: int, k: int, snapshot: Any) -> list[Job]:
        rng = random.Random(stream_seed(self.run_seed, name, step, round_))
        seeds = [rng.randrange(2**31) for _ in range(k)]
        cur = snapshot if snapshot is not None else self.curriculum
        if cur is None or not cur.covers(name):
            return [Job(name, s) for s in seeds]
        tasks = cur.pick(name, k, rng)
        return [Job(name, s, t) for s, t in zip(seeds, tasks, strict=True)]

    def state_dict(self, step: int | None = None) -> dict[str, Any]:
        """What a checkpoint keeps: draws per source and the curriculum's state.

        ``step``: the last trained step. The draws of later steps (an asynchronous run's,
        launched ahead) are left out of ``drawn``: a run resumed from it draws those steps
        again, so each step's groups are counted once. Steps up to ``step`` are settled.
        """
        cur = self.curriculum.state_dict() if self.curriculum is not None else None
        with self._lock:
            drawn = dict(self.drawn)
            for at, counts in list(self._ahead.items()):
                if step is not None and at > step:
                    for name, k in counts.items():
                        drawn[name] -= k
                else:
                    del self._ahead[at]
        return {"drawn": drawn, "curriculum": cur}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict`'s output."""
        self.drawn.update(state.get("drawn") or {})
        if self.curriculum is not None and state.get("curriculum") is not None:
            self.curriculum.load_state_dict(state["curriculum"])
