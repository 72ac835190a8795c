"""The driver's part of validation: a round when due, ``DIR/best/``, early stopping.

The rounds themselves are the episodes room's (:mod:`envhub.trainer.episodes.validation_rounds`);
here the driver exports the policy when a round is the best so far (``validation.keep_best``)
and reads whether ``validation.patience`` says to stop.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envhub.trainer import checkpoint as ckpt
from envhub.trainer.episodes.validation_rounds import Rounds

if TYPE_CHECKING:
    from envhub.engines.chat import ChatFormatter
    from envhub.trainer.config import Config
    from envhub.trainer.workers.cluster import Cluster


def rounds_of(config: Config, out: Path, chat: ChatFormatter) -> Rounds | None:
    """The run's validation rounds (None with ``validation.every: 0``).

    Raises:
        ConfigError: the validation split overlaps training (before any worker starts).
    """
    v = config.validation
    if v.every <= 0:
        return None
    return Rounds(
        v,
        out,
        config.sources(),
        chat,
        seed=config.seed,
        max_tokens=config.rollout.sampling.max_tokens,
        max_seq_len=config.rollout.max_seq_len,
        agents=config.agent_of(),
    )


def validate(
    rounds: Rounds | None,
    cluster: Cluster,
    config: Config,
    out: Path,
    step: int,
    state: ckpt.TrainerState,
) -> dict[str, Any]:
    """A validation round if one is due at ``step``; its metrics (empty when none ran).

    The best round so far is exported to ``out/best/`` (``validation.keep_best``), and the
    tracker's state goes into ``state`` (checkpoints carry it).
    """
    if rounds is None or not rounds.due(step, config.train.steps):
        return {}
    t0 = time.perf_counter()
    result = rounds.run(step, state.validation)
    if result.best and config.validation.keep_best:
        export_best(cluster, out, step, result.rows)
    state.validation = result.tracker
    return result.metrics | {"time/validation": time.perf_counter() - t0}


def export_best(cluster: Cluster, out: Path, step: int, rows: list[dict[str, Any]]) -> None:
    """The policy as a plain HF directory in ``out/best/`` (atomic), with the round's rows."""
    with ckpt.atomic_dir(out / "best") as tmp:
        cluster.export(str(tmp))
        (tmp / "validation.json").write_text(json.dumps({"step": step, "rows": rows}, indent=1))


def should_stop(rounds: Rounds | None) -> bool:
    """True when validation's early stopping says so."""
    return rounds is not None and rounds.should_stop
