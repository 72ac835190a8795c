"""A training run's validation rounds, over the run's own generation engines.

:class:`Rounds` holds the run's :class:`~envhub.trainer.episodes.validation.Validator` and
gives it a backend over the engines once they are up (:meth:`Rounds.attach`); each round
answers its rows, whether it is the best so far, the tracker's new state and its metrics
(:class:`Round`). What the driver does with a best round (``DIR/best/``) and with early
stopping is the driver's (``envhub.trainer.best``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from envhub.trainer.episodes.validation import ValidationConfig, Validator


class Generates(Protocol):
    """The run's engines (``envhub.trainer.workers.cluster.Cluster``, duck-typed)."""

    def generate(
        self, prompts: list[list[int]], params: Any, seeds: list[int] | None = None
    ) -> list[Any]:
        """One generation (or exception) per prompt, in order."""


class ClusterEngine:
    """The run's generation engines as the engine ``envhub eval``'s local backend expects."""

    def __init__(self, cluster: Generates, max_model_len: int, tokenizer: Any = None):
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


@dataclass(frozen=True)
class Round:
    """One validation round's outcome."""

    rows: list[dict[str, Any]]
    best: bool
    """The best round so far (by ``validation.best_metric``)."""
    tracker: dict[str, Any]
    """The tracker's state after it (the checkpoint's ``validation`` entry)."""
    metrics: dict[str, Any]
    """``validation/<env>/pass@1`` (null when it stands on too few episodes), ``scored``,
    ``expected``."""


class Rounds:
    """The validation rounds of one training run (``validation.every > 0``)."""

    def __init__(
        self,
        cfg: ValidationConfig,
        out: Path,
        sources: Sequence[Any],
        chat: Any,
        *,
        seed: int,
        max_tokens: int,
        max_seq_len: int,
        agents: dict[str, Any] | None = None,
    ):
        """Refuses a validation split that overlaps training, before any worker starts.

        Raises:
            ConfigError: the splits share a task, or ``validation.sources`` names an unknown.
        """
        self.cfg, self.chat, self.max_seq_len = cfg, chat, max_seq_len
        self.cluster: Generates | None = None
        self.validator = Validator(
            cfg,
            out,
            sources,
            self._backend,
            seed=seed,
            max_tokens=max_tokens,
            agents=agents,
            engine_factory=self._engine,
        )
        self.validator.check()

    def attach(self, cluster: Generates) -> None:
        """The run's engines, once they are up."""
        self.cluster = cluster

    def _engine(self) -> ClusterEngine:
        if self.cluster is None:
            raise RuntimeError("validation runs once the cluster is attached")
        return ClusterEngine(self.cluster, self.max_seq_len, self.chat.tokenizer)

    def _backend(self) -> Any:
        from envhub.evaluate.backends import BatchingBackend
        from envhub.evaluate.local import engine_batch_fn

        batch = engine_batch_fn(self._engine(), self.chat)
        return BatchingBackend("policy", batch, max_batch=self.cfg.concurrency)

    def start_at(self, step: int) -> None:
        """A resumed run: rows after ``step`` are dropped (see ``Validator.start_at``)."""
        self.validator.start_at(step)

    def due(self, step: int, total: int) -> bool:
        """True when a round is due at ``step`` of ``total``."""
        return self.validator.due(step, total)

    def run(self, step: int, tracker: dict[str, Any]) -> Round:
        """A round at ``step``, the tracker continuing from ``tracker`` (the checkpoint's)."""
        v = self.validator
        v.tracker.load_state_dict(tracker)
        rows = v.run(step)
        best = v.tracker.update(step, rows)
        metrics: dict[str, Any] = {}
        for r in rows:  # the rate (null when it stands on too few episodes) and its counts
            metrics[f"validation/{r['env']}/pass@1"] = r["pass@1"]
            metrics[f"validation/{r['env']}/scored"] = r["scored"]
            metrics[f"validation/{r['env']}/expected"] = r["expected"]
        return Round(rows, best, v.tracker.state_dict(), metrics)

    @property
    def should_stop(self) -> bool:
        """True when ``validation.patience`` rounds in a row brought no improvement."""
        return self.validator.tracker.should_stop
