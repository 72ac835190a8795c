"""What a step does for a mix of environments, beside the GRPO update itself.

:class:`MixRun` holds the run's :class:`~envhub.trainer.episodes.mix.MixSampler` (and curriculum),
the
sources' primary components, the rollout logs and the validation rounds; the driver
(``train.py``) calls it at fixed points of each step. The episodes a step generated (all
backfill rounds) feed the metrics, the curriculum and the logs; only the kept groups are
trained on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envhub.trainer import checkpoint as ckpt
from envhub.trainer.episodes.curriculum import Curriculum
from envhub.trainer.episodes.dynamic import Filtered, outcome
from envhub.trainer.episodes.mix import MixSampler
from envhub.trainer.episodes.rollout_log import (
    EpisodeNotes,
    capped_groups,
    episode_record,
    write_step,
)
from envhub.trainer.episodes.validation import Validator
from envhub.trainer.metrics import source_metrics

if TYPE_CHECKING:
    from envhub.engines.chat import ChatFormatter
    from envhub.trainer.config import Config
    from envhub.trainer.workers.cluster import Cluster


class ClusterEngine:
    """The run's generation engines as the engine ``envhub eval``'s local backend expects."""

    def __init__(self, cluster: Cluster, max_model_len: int, tokenizer: Any = None):
        """Wrap ``cluster``'s engines.

        ``max_model_len``: the longest conversation the run allows (``rollout.max_seq_len``);
        ``tokenizer``: the policy's (what the agents' gateway renders chats with).
        """
        self.cluster, self.max_model_len, self.tokenizer = cluster, max_model_len, tokenizer

    def generate(
        self, prompts: list[list[int]], params: Any, seeds: list[int] | None = None
    ) -> list[Any]:
        """Generations in prompt order; a lost engine fails the whole batch (``ModelError``).

        ``seeds``: one per prompt (:class:`envhub.engines.types.GenerationEngine`).
        """
        outs = self.cluster.generate(prompts, params, seeds)
        for out in outs:
            if isinstance(out, Exception):
                raise out
        return outs


class MixRun:
    """Sampler, curriculum, rollout logs and validation of one training run."""

    def __init__(self, config: Config, out: Path, chat: ChatFormatter):
        """Build what needs no worker; :meth:`attach` finishes once the cluster is up."""
        self.config, self.out, self.chat = config, out, chat
        self.sources = config.sources()
        self.sampler = MixSampler(self.sources, config.seed)
        self.max_age = config.max_trajectory_age
        self.launch_states: dict[int, dict[str, Any]] = {}
        """Asynchronous runs: the curriculum's counts after each of the last N steps (the
        states future steps are drawn with; saved in checkpoints, see :meth:`snapshot`)."""
        self.primaries: dict[str, str] = {}
        self.validator: Validator | None = None
        self.cluster: Cluster | None = None
        v = config.validation
        if v.every > 0:
            self.validator = Validator(
                v,
                out,
                self.sources,
                self._backend,
                seed=config.seed,
                max_tokens=config.rollout.sampling.max_tokens,
                agents=config.agent_of(),
                engine_factory=self._engine,
            )
            self.validator.check()  # an overlapping split is refused before workers start

    def attach(self, cluster: Cluster) -> None:
        """Ask the environment workers for primary components (and tasks, for a curriculum)."""
        self.cluster = cluster
        cur = self.config.rollout.curriculum
        info = cluster.env_info(with_tasks=cur.enabled)
        self.primaries = {name: i["primary"] for name, i in info.items()}
        if cur.enabled:
            self.sampler.curriculum = Curriculum(cur, {n: i["tasks"] for n, i in info.items()})

    def resume(self, state: ckpt.TrainerState) -> None:
        """Continue from a checkpoint's state: the sampler's, and validation's rows."""
        self.sampler.load_state_dict(state.sampler)
        saved = state.sampler.get("launch_states") or {}
        self.launch_states = {int(step): counts for step, counts in saved.items()}
        if self.validator is not None:
            self.validator.start_at(state.step)

    def primary_of(self, source: str) -> str:
        """The primary component of ``source`` (``correctness`` when unknown)."""
        return self.primaries.get(source, "correctness")

    def snapshot(self, step: int) -> Any:
        """The frozen curriculum to draw step ``step``'s tasks with (None: the live one).

        An asynchronous run (``N = max_trajectory_age``) launches step k right after step
        ``max(1, k - N)`` is counted (the first step launches steps 2 .. N + 1): k's tasks
        are drawn with the counts as of that step, which :meth:`count` keeps for the last N
        steps and checkpoints save, so a resumed run draws what the uninterrupted one drew.
        None in synchronous runs, without a curriculum, for the first step, and after
        resuming a checkpoint written before these states were saved (the live counts).
        """
        cur = self.sampler.curriculum
        state = self.launch_states.get(max(1, step - self.max_age))
        if cur is None or self.max_age == 0 or state is None:
            return None
        return cur.snapshot(state)

    def count(self, step: int, results: Iterable[tuple[str, str, bool]]) -> None:
        """Count step ``step``'s ``(source, task_id, passed)`` results into the curriculum.

        Asynchronous runs keep the counts after each of the last N steps (:meth:`snapshot`).
        """
        cur = self.sampler.curriculum
        if cur is None:
            return
        cur.update(results)
        if self.max_age > 0:
            self.launch_states[step] = cur.state_dict()
            for old in [s for s in self.launch_states if s <= step - self.max_age]:
                del self.launch_states[old]

    def observe(self, step: int, filtered: Filtered) -> dict[str, float]:
        """Count a step's results into the curriculum; the step's per-source metrics."""
        generated = filtered.generated
        self.count(
            step,
            (
                (e.env, e.task_id, outcome(e, self.primary_of(e.env)) >= 1.0)
                for e in generated.episodes
                if not e.dropped and e.task_id is not None
            ),
        )
        cur = self.sampler.curriculum
        share = self.config.logging.min_counted_share
        metrics = source_metrics(generated, self.primaries, share) | filtered.metrics
        return metrics | (cur.metrics() if cur is not None else {})

    def state_dict(self, step: int) -> dict[str, Any]:
        """The checkpoint's ``sampler`` entry after ``step``: the sampler's, and launch states.

        The sampler's draws are counted as of ``step`` (see :meth:`MixSampler.state_dict`).
        """
        launch = {str(k): counts for k, counts in self.launch_states.items()}
        return self.sampler.state_dict(step) | {"launch_states": launch}

    def log_rollouts(
        self, step: int, filtered: Filtered, notes: dict[str, EpisodeNotes], version: int
    ) -> float:
        """Write the step's rollout file when due; returns the seconds it took."""
        every = self.config.logging.rollouts_every
        if every <= 0 or step % every:
            return 0.0
        t0 = time.perf_counter()
        kept = {e.key for e in filtered.batch.episodes}
        episodes = capped_groups(
            filtered.generated.episodes, self.config.logging.rollouts_max_samples
        )
        decode = self.chat.tokenizer.decode
        records = [
            episode_record(
                e,
                step,
                decode,
                notes.get(e.key) or EpisodeNotes(filtered=e.key not in kept),
                version,
            )
            for e in episodes
        ]
        write_step(self.out / "rollouts", step, records)
        return time.perf_counter() - t0

    # ------------------------------------------------------------------ validation

    def _engine(self) -> Any:
        assert self.cluster is not None, "validation runs once the cluster is attached"
        return ClusterEngine(self.cluster, self.config.rollout.max_seq_len, self.chat.tokenizer)

    def _backend(self) -> Any:
        from envhub.evaluate.backends import BatchingBackend
        from envhub.evaluate.local import engine_batch_fn

        engine = self._engine()
        batch = engine_batch_fn(engine, self.chat)
        return BatchingBackend("policy", batch, max_batch=self.config.validation.concurrency)

    def validate(self, step: int, state: ckpt.TrainerState) -> dict[str, float]:
        """A validation round if one is due at ``step``; its metrics (empty when none ran)."""
        v = self.validator
        if v is None or not v.due(step, self.config.train.steps):
            return {}
        t0 = time.perf_counter()
        v.tracker.load_state_dict(state.validation)
        rows = v.run(step)
        if v.tracker.update(step, rows) and self.config.validation.keep_best:
            self._export_best(step, rows)
        state.validation = v.tracker.state_dict()
        metrics: dict[str, Any] = {}
        for r in rows:  # the rate (null when it stands on too few episodes) and its counts
            metrics[f"validation/{r['env']}/pass@1"] = r["pass@1"]
            metrics[f"validation/{r['env']}/scored"] = r["scored"]
            metrics[f"validation/{r['env']}/expected"] = r["expected"]
        metrics["time/validation"] = time.perf_counter() - t0
        return metrics

    def _export_best(self, step: int, rows: list[dict[str, Any]]) -> None:
        assert self.cluster is not None
        with ckpt.atomic_dir(self.out / "best") as tmp:
            self.cluster.export(str(tmp))
            (tmp / "validation.json").write_text(json.dumps({"step": step, "rows": rows}, indent=1))

    @property
    def should_stop(self) -> bool:
        """True when validation's early stopping says so."""
        return self.validator is not None and self.validator.tracker.should_stop
