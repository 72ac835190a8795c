"""``envhub eval --compare RUN...``: finished runs side by side, on the same held-out tasks.

The stages of one pipeline (the base model, after ``envhub sft``, after ``envhub train``) are
each evaluated with the same flags; this reads their run folders and prints one table: a row
per environment, a column per run, each cell the run's pass@1 there (its mean reward beside).
A row compares only what is comparable: every run must have played the same tasks of that
environment (its split, its task ids, and as many samples of each), else the comparison is
refused naming the environment and what differs. Nothing is evaluated again.

Beside the table, each run's change from the run before it: the difference in pass@1 per
environment and its mean over the environments, each with a 95% bootstrap interval **paired
over tasks** (a resample draws tasks, and both runs' results on each drawn task go with it),
which is what the same tasks buy: a stage's gain is told apart from the tasks' own spread.

A training or SFT run's validation rounds are ``envhub eval`` runs too, one folder per source
(``DIR/validation/step_NNNNN/<env>/``), so a round stands as one column: name the round's
folder, or the run's folder for its last round. That is how the stages of a pipeline trained on
environments with knob settings (which ``envhub eval`` has no flags for) are put side by side.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .metrics import bootstrap_ci, stratified_bootstrap_ci, task_passes
from .store import EpisodeRecord, RunStore


@dataclass
class _Stage:
    """One column: an ``envhub eval`` run, or a validation round's runs (one per source)."""

    model: str | None
    environments: dict[str, dict[str, Any]]
    played: dict[str, Counter]
    passes: dict[str, dict[tuple[str, str], float]] = field(default_factory=dict)
    """Per environment, each task's pass@1 (:func:`~.metrics.task_passes`)."""


def compare(runs: list[Path]) -> dict[str, Any]:
    """The comparison of ``runs`` (``{"runs": [...], "environments": {env: [cell, ...]}}``).

    Each run is an ``envhub eval --out`` folder, a validation round's folder
    (``DIR/validation/step_NNNNN``) or a training or SFT run's folder (its last round).

    Raises:
        ConfigError: a folder is no finished run, or the runs played different tasks.
    """
    if len(runs) < 2:
        raise ConfigError("--compare takes two runs or more (repeat it: --compare A --compare B)")
    stages = [_stage(run) for run in runs]
    shared = [e for e in stages[0].environments if all(e in s.environments for s in stages)]
    if not shared:
        raise ConfigError("the runs share no environment: evaluate each stage on the same --env")
    for env in shared:
        _same_tasks(env, runs, [s.played.get(env, Counter()) for s in stages])
    return {
        "runs": [{"dir": str(r), "model": s.model} for r, s in zip(runs, stages, strict=True)],
        "environments": {env: [_cell(s.environments[env]) for s in stages] for env in shared},
        "changes": [_change(a, b, shared) for a, b in itertools.pairwise(stages)],
    }


def _change(before: _Stage, after: _Stage, envs: list[str]) -> dict[str, Any]:
    """``after``'s pass@1 minus ``before``'s, per environment and in the mean over them.

    Each with its 95% bootstrap interval paired over the tasks both scored (a task whose every
    sample was excluded in either run is left out of the pair).
    """
    diffs = {}
    for env in envs:
        a, b = before.passes.get(env, {}), after.passes.get(env, {})
        diffs[env] = [b[t] - a[t] for t in sorted(a.keys() & b.keys())]
    cell = {
        env: {"delta": sum(d) / len(d) if d else None, "ci95": bootstrap_ci(d, seed=0)}
        for env, d in diffs.items()
    }
    groups = list(diffs.values())
    mean = sum(sum(d) / len(d) for d in groups) / len(groups) if all(groups) else None
    return {
        "environments": cell,
        "mean": {"delta": mean, "ci95": stratified_bootstrap_ci(groups, seed=0)},
    }


def _stage(run: Path) -> _Stage:
    store = RunStore(run)
    if store.summary_path.exists():
        summary = store.read_summary()
        records = store.load_records()
        return _Stage(
            summary.get("model"), summary["environments"], _played(records), _passes(records)
        )
    rounds = sorted((run / "validation").glob("step_*"))
    round_dir = rounds[-1] if rounds else run
    stores = [s for s in map(RunStore, sorted(round_dir.glob("*"))) if s.summary_path.exists()]
    if not stores:
        raise ConfigError(
            f"{run}: no summary.json; is it a finished `envhub eval --out` folder, a validation "
            "round (DIR/validation/step_NNNNN) or a run with validation rounds?"
        )
    stage = _Stage(f"{round_dir.parent.parent.name} {round_dir.name}", {}, {})
    for store in stores:
        records = store.load_records()
        stage.environments |= store.read_summary()["environments"]
        stage.played |= _played(records)
        stage.passes |= _passes(records)
    return stage


def _played(records: list[EpisodeRecord]) -> dict[str, Counter]:
    """Per environment, how many samples of each (split, task) the run played."""
    out: dict[str, Counter] = {}
    for r in records:
        out.setdefault(r.env, Counter())[(r.split, r.task_id)] += 1
    return out


def _passes(records: list[EpisodeRecord]) -> dict[str, dict[tuple[str, str], float]]:
    """Per environment, each task's pass@1."""
    by_env: dict[str, list[EpisodeRecord]] = {}
    for r in records:
        by_env.setdefault(r.env, []).append(r)
    return {env: task_passes(rs) for env, rs in by_env.items()}


def _same_tasks(env: str, runs: list[Path], played: list[Counter]) -> None:
    for run, tasks in zip(runs[1:], played[1:], strict=True):
        if tasks != played[0]:
            only = len(set(played[0]) ^ set(tasks))
            raise ConfigError(
                f"{env}: {runs[0]} and {run} did not play the same tasks ({len(played[0])} and "
                f"{len(tasks)} tasks, {only} in one only, or other sample counts); evaluate "
                "every stage with the same --env, --split, --limit, -n and --seed"
            )


def _cell(summary: dict[str, Any]) -> dict[str, Any]:
    keys = ("pass@1", "mean_reward", "scored", "episodes")
    return {k: summary.get(k) for k in keys}


def print_comparison(result: dict[str, Any]) -> None:
    """The comparison as one table: pass@1 (mean reward) per environment and run."""
    from rich.console import Console
    from rich.table import Table

    from .metrics import fmt

    table = Table(title="envhub eval: pass@1 (mean reward) on the same tasks")
    table.add_column("env")
    for i, run in enumerate(result["runs"]):
        table.add_column(f"{i + 1}. {run['model'] or run['dir']}", justify="right")
    for env, cells in result["environments"].items():
        table.add_row(env, *(f"{fmt(c['pass@1'])} ({fmt(c['mean_reward'])})" for c in cells))
    console = Console(width=max(Console().width, 100))
    console.print(table)
    if result["changes"]:
        console.print(_changes_table(result))
    for i, run in enumerate(result["runs"]):
        console.print(f"  {i + 1}. {run['dir']}", highlight=False)


def _changes_table(result: dict[str, Any]) -> Any:
    """Each run's pass@1 change from the run before, with its paired 95% interval."""
    from rich.table import Table

    table = Table(title="pass@1 change from the run before (95% interval, paired over tasks)")
    table.add_column("env")
    for i in range(1, len(result["runs"])):
        table.add_column(f"{i + 1} - {i}", justify="right")

    def show(c: dict[str, Any]) -> str:
        if c["delta"] is None:
            return "-"
        lo, hi = c["ci95"]
        return f"{c['delta']:+.3f} [{lo:+.2f}, {hi:+.2f}]"

    for env in result["environments"]:
        table.add_row(env, *(show(ch["environments"][env]) for ch in result["changes"]))
    table.add_row("mean", *(show(ch["mean"]) for ch in result["changes"]))
    return table
