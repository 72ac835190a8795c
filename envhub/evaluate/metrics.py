"""Metrics of an evaluation: pass@k with the unbiased estimator, and per-environment summaries.

Which episodes count:

* ``infra_error`` and ``env_error`` episodes are *excluded*: they say nothing about the model
  (a sandbox that died, a gold answer that does not parse). They are counted apart, under
  ``status``, and left out of rewards and pass rates.
* ``ok``, ``timeout`` and ``invalid_action`` episodes are *scored*: a program that loops or a
  malformed tool call is the model's doing.

An episode *passes* when its primary reward component (``correctness`` for most
environments, see ``TaskEnv.primary_component``) reached 1.0; an episode that lacks that
component passes when its reward reaches the run's ``pass_threshold`` (1.0 by default).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ..types import Status
from .store import EpisodeRecord

EXCLUDED = frozenset({Status.INFRA_ERROR, Status.ENV_ERROR})
"""Statuses left out of rewards and pass rates (reported apart)."""
_EPS = 1e-9
BOOTSTRAP_SAMPLES = 1000
"""Resamples of a bootstrap interval."""


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of pass@k from ``n`` samples of which ``c`` passed.

    The probability that at least one of ``k`` samples drawn without replacement from the
    ``n`` passes: ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021, "Evaluating Large Language
    Models Trained on Code"), computed as a product to stay exact for large ``n``.

    Raises:
        ValueError: ``k`` is not in ``1..n`` or ``c`` not in ``0..n``.
    """
    if not 1 <= k <= n:
        raise ValueError(f"pass@{k} needs 1 <= k <= n samples, got n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"passed count c={c} must lie in 0..n={n}")
    if n - c < k:
        return 1.0
    prob_all_fail = 1.0
    for i in range(n - c + 1, n + 1):
        prob_all_fail *= 1.0 - k / i
    return 1.0 - prob_all_fail


def is_passed(
    status: Status, reward: float, components: dict[str, float], primary: str, threshold: float
) -> bool | None:
    """Whether an episode counts as solved; ``None`` for statuses excluded from pass rates."""
    if status in EXCLUDED:
        return None
    if primary in components:
        return components[primary] >= 1.0 - _EPS
    return reward >= threshold - _EPS


def _mean(values: Sequence[float]) -> float | None:
    # fsum is exactly rounded, so the mean does not depend on the order episodes finished in
    # (a rescored or resumed run lists them in another order and must give equal figures)
    return math.fsum(values) / len(values) if values else None


def _identity(records: Sequence[EpisodeRecord]) -> dict[str, Any]:
    first = records[0] if records else None
    return {
        "env": first.env if first else None,
        "env_version": first.env_version if first else None,
        "split": first.split if first else None,
        "model": first.model if first else None,
    }


def _pass_rates(scored: Sequence[EpisodeRecord], k: int) -> tuple[dict[str, float | None], int]:
    """``{"pass@1": .., "pass@k": ..}`` over the tasks, and how many tasks had fewer than k."""
    by_task: dict[str, list[bool]] = defaultdict(list)
    for r in scored:
        by_task[r.task_id].append(bool(r.passed))
    pass_rates: dict[str, float | None] = {}
    for kk in sorted({1, k}):
        vals = [pass_at_k(len(v), sum(v), kk) for v in by_task.values() if len(v) >= kk]
        pass_rates[f"pass@{kk}"] = _mean(vals)
    short_of_k = sum(1 for v in by_task.values() if len(v) < k)
    return pass_rates, short_of_k


def _usage(records: Sequence[EpisodeRecord], wall_s: float | None) -> dict[str, Any]:
    """Token and time figures over every episode (excluded ones cost tokens too)."""
    prompt = [r.prompt_tokens for r in records if r.prompt_tokens is not None]
    completion = [r.completion_tokens for r in records if r.completion_tokens is not None]
    wall = wall_s if wall_s is not None else sum(r.wall_s for r in records)
    return {
        "mean_prompt_tokens": _mean(prompt),
        "mean_completion_tokens": _mean(completion),
        "total_tokens": sum(prompt) + sum(completion),
        "wall_s": round(wall, 3),
        "episodes_per_s": round(len(records) / wall, 3) if wall > 0 else None,
    }


def summarize_env(
    records: Sequence[EpisodeRecord], *, k: int, wall_s: float | None = None
) -> dict[str, Any]:
    """The summary of one environment's episodes (one entry of ``summary.json``).

    Args:
        records: The environment's episodes (any status).
        k: The k of pass@k (samples asked per task); pass@1 is always reported.
        wall_s: Wall time of the run; defaults to the sum of the episodes' times.

    Returns:
        A JSON-ready dict with ``mean_reward``, ``components``, ``pass@1``, ``pass@k``,
        ``status`` counts and the turn, token and time figures. Figures over no scored
        episodes are ``None``.
    """
    status = {s.value: 0 for s in Status}
    for r in records:
        status[r.status.value] += 1
    scored = [r for r in records if r.status not in EXCLUDED]
    names = sorted({c for r in scored for c in r.components})
    pass_rates, short_of_k = _pass_rates(scored, k)
    return {
        **_identity(records),
        "tasks": len({r.task_id for r in records}),
        "episodes": len(records),
        "scored": len(scored),
        "mean_reward": _mean([r.reward for r in scored]),
        "components": {c: _mean([r.components.get(c, 0.0) for r in scored]) for c in names},
        **pass_rates,
        "k": k,
        "tasks_short_of_k": short_of_k,
        "status": status,
        "excluded": {s.value: status[s.value] for s in sorted(EXCLUDED)},
        "invalid_actions": sum(r.invalid_actions for r in records),
        "capped_episodes": sum(1 for r in records if r.capped_turns),
        "mean_turns": _mean([r.turns for r in records]),
        **_usage(records, wall_s),
    }


def summarize(
    records: Sequence[EpisodeRecord],
    *,
    k: int,
    wall: dict[str, float] | None = None,
    order: Sequence[str] = (),
) -> dict[str, dict[str, Any]]:
    """Summaries of every environment in ``records``, keyed by name, in ``order`` first."""
    groups: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        groups[r.env].append(r)
    names = [n for n in order if n in groups] + sorted(set(groups) - set(order))
    wall = wall or {}
    return {n: summarize_env(groups[n], k=k, wall_s=wall.get(n)) for n in names}


def fmt(value: Any, digits: int = 3) -> str:
    """A figure for the terminal table: floats rounded, ``None`` as ``-``."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def task_passes(records: Sequence[EpisodeRecord]) -> dict[tuple[str, str], float]:
    """Per ``(split, task_id)``, the share of its scored samples that passed (its pass@1)."""
    by_task: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for r in records:
        if r.passed is not None:
            by_task[(r.split, r.task_id)].append(bool(r.passed))
    return {t: sum(v) / len(v) for t, v in by_task.items()}


def task_pass_rates(records: Sequence[EpisodeRecord]) -> list[float]:
    """:func:`task_passes`' rates in task order."""
    return [rate for _, rate in sorted(task_passes(records).items())]


def bootstrap_ci(values: Sequence[float], seed: int, n: int = BOOTSTRAP_SAMPLES) -> list[float]:
    """95% percentile bootstrap interval of the mean of ``values`` (resampled with replacement)."""
    return stratified_bootstrap_ci([values], seed, n)


def stratified_bootstrap_ci(
    groups: Sequence[Sequence[float]], seed: int, n: int = BOOTSTRAP_SAMPLES
) -> list[float]:
    """95% percentile bootstrap interval of the mean of the groups' means.

    Each group is resampled on its own (with replacement, its own size): the interval of a
    mean over environments whose tasks are drawn independently. NaNs when a group is empty.
    """
    if not groups or not all(groups):
        return [float("nan"), float("nan")]
    rng = random.Random(seed)
    stats = sorted(
        sum(sum(rng.choices(g, k=len(g))) / len(g) for g in groups) / len(groups) for _ in range(n)
    )
    return [stats[int(0.025 * (n - 1))], stats[int(0.975 * (n - 1))]]
