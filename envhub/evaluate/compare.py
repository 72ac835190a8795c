"""``envhub eval --compare RUN...``: finished runs side by side, on the same held-out tasks.

The stages of one pipeline (the base model, after ``envhub sft``, after ``envhub train``) are
each evaluated with the same flags; this reads their run folders and prints one table: a row
per environment, a column per run, each cell the run's pass@1 there (its mean reward beside).
A row compares only what is comparable: every run must have played the same tasks of that
environment (its split, its task ids, and as many samples of each), else the comparison is
refused naming the environment and what differs. Nothing is evaluated again.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .store import RunStore


def compare(runs: list[Path]) -> dict[str, Any]:
    """The comparison of ``runs`` (``{"runs": [...], "environments": {env: [cell, ...]}}``).

    Raises:
        ConfigError: a folder is no finished run, or the runs played different tasks.
    """
    if len(runs) < 2:
        raise ConfigError("--compare takes two runs or more (repeat it: --compare A --compare B)")
    stores = [_finished(run) for run in runs]
    summaries = [s.read_summary() for s in stores]
    shared = [
        e for e in summaries[0]["environments"] if all(e in s["environments"] for s in summaries)
    ]
    if not shared:
        raise ConfigError("the runs share no environment: evaluate each stage on the same --env")
    played = [_played(s) for s in stores]
    for env in shared:
        _same_tasks(env, runs, [p.get(env, Counter()) for p in played])
    return {
        "runs": [
            {"dir": str(r), "model": s.get("model")} for r, s in zip(runs, summaries, strict=True)
        ],
        "environments": {env: [_cell(s["environments"][env]) for s in summaries] for env in shared},
    }


def _finished(run: Path) -> RunStore:
    store = RunStore(run)
    if not store.summary_path.exists():
        raise ConfigError(f"{run}: no summary.json; is it a finished `envhub eval --out` folder?")
    return store


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
