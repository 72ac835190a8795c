"""``envhub eval --compare RUN...``: finished runs side by side, on the same held-out tasks.

The stages of one pipeline (the base model, after ``envhub sft``, after ``envhub train``) are
each evaluated with the same flags; this reads their run folders and prints one table: a row
per environment, a column per run, each cell the run's pass@1 there (its mean reward beside).
A row compares only what is comparable: every run must have played the same tasks of that
environment (its split, its task ids, and as many samples of each), else the comparison is
refused naming the environment and what differs. Nothing is evaluated again.

A training or SFT run's validation rounds are ``envhub eval`` runs too, one folder per source
(``DIR/validation/step_NNNNN/<env>/``), so a round stands as one column: name the round's
folder, or the run's folder for its last round. That is how the stages of a pipeline trained on
environments with knob settings (which ``envhub eval`` has no flags for) are put side by side.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .store import RunStore


@dataclass
class _Stage:
    """One column: an ``envhub eval`` run, or a validation round's runs (one per source)."""

    model: str | None
    environments: dict[str, dict[str, Any]]
    played: dict[str, Counter]


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
    }


def _stage(run: Path) -> _Stage:
    store = RunStore(run)
    if store.summary_path.exists():
        summary = store.read_summary()
        return _Stage(summary.get("model"), summary["environments"], _played(store))
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
        stage.environments |= store.read_summary()["environments"]
        stage.played |= _played(store)
    return stage


def _played(store: RunStore) -> dict[str, Counter]:
    """Per environment, how many samples of each (split, task) the run played."""
    out: dict[str, Counter] = {}
    for r in store.load_records():
        out.setdefault(r.env, Counter())[(r.split, r.task_id)] += 1
    return out


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
    for i, run in enumerate(result["runs"]):
        console.print(f"  {i + 1}. {run['dir']}", highlight=False)
