"""What ``envhub eval`` draws on the terminal: a progress bar per environment and the table."""

from __future__ import annotations

import os
import sys
from typing import Any

from .metrics import fmt
from .store import EpisodeRecord


def silence_progress_bars() -> None:
    """Turn off every tqdm bar this process and its children would draw (``--no-progress``).

    The model loaders draw their own (transformers' "Loading weights", the GGUF conversion,
    vLLM's shard loading in its engine process). tqdm reads ``TQDM_DISABLE`` when it is first
    imported and the hub libraries read theirs when they start, so this runs before any model
    code is imported; a transformers already imported is told directly.
    """
    os.environ["TQDM_DISABLE"] = "1"
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    hf_logging = sys.modules.get("transformers.utils.logging")  # loaded with transformers
    if hf_logging is not None:
        hf_logging.disable_progress_bar()


class BarProgress:
    """One rich progress bar per environment (on stderr), with the running pass rate."""

    def __init__(self, enabled: bool = True) -> None:
        """Draw nothing when ``enabled`` is false."""
        self.enabled = enabled
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}
        self._passed: dict[str, list[int]] = {}

    def __enter__(self) -> BarProgress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
            )
            self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
            self._progress = None

    def start(self, env: str, total: int, done: int) -> None:
        """Add the bar of ``env``; ``done`` episodes were recorded by an earlier run."""
        self._passed[env] = [0, 0]
        if self._progress is not None:
            self._tasks[env] = self._progress.add_task(env, total=total, completed=done, rate="")

    def advance(self, env: str, record: EpisodeRecord) -> None:
        """Count one finished episode."""
        tally = self._passed.setdefault(env, [0, 0])
        if record.passed is not None:
            tally[0] += int(record.passed)
            tally[1] += 1
        if self._progress is not None and env in self._tasks:
            rate = f"pass {tally[0] / tally[1]:.2f}" if tally[1] else ""
            self._progress.update(self._tasks[env], advance=1, rate=rate)


def _components(s: dict[str, Any]) -> str:
    return " ".join(f"{k}={fmt(v, 2)}" for k, v in s.get("components", {}).items())


_SHORT = {"invalid_action": "invalid", "infra_error": "infra", "env_error": "env_err"}


def _statuses(counts: dict[str, int]) -> str:
    return " ".join(f"{_SHORT.get(k, k)}={v}" for k, v in counts.items() if v) or "-"


def print_summary(summary: dict[str, Any]) -> None:
    """Print one row per environment: rewards, pass rates, statuses, turns, tokens, time."""
    from rich.console import Console
    from rich.table import Table

    envs = summary.get("environments", {})
    k = (summary.get("config") or {}).get("n", 1)
    title = f"envhub eval: {summary.get('model')}"
    if summary.get("interrupted"):
        title += " (interrupted: partial)"
    if summary.get("rescored_from"):
        title += f" (rescored from {summary['rescored_from']})"
    table = Table(title=title)
    cols = ["env", "episodes", "reward", "pass@1"] + ([f"pass@{k}"] if k > 1 else [])
    cols += ["status", "turns", "tok in/out", "wall s"]
    for col in cols:
        table.add_column(col, justify="left" if col in ("env", "status") else "right")
    for name, s in envs.items():
        row = [name, str(s["episodes"]), fmt(s["mean_reward"]), fmt(s["pass@1"])]
        if k > 1:
            row.append(fmt(s.get(f"pass@{k}")))
        row += [
            _statuses(s["status"]),
            fmt(s["mean_turns"], 1),
            f"{fmt(s['mean_prompt_tokens'], 0)}/{fmt(s['mean_completion_tokens'], 0)}",
            fmt(s["wall_s"], 1),
        ]
        table.add_row(*row)
    console = Console(width=max(Console().width, 100))
    console.print(table)
    for name, s in envs.items():
        line = f"  {name}: {_components(s)}"
        if "before" in s:
            b = s["before"]
            line += (
                f"  | before: mean reward {fmt(b['mean_reward'])}, pass@1 {fmt(b['pass@1'])};"
                f" {s['changed_episodes']} episode(s) changed"
            )
        if s.get("capped_episodes"):
            line += f"  | {s['capped_episodes']} episode(s) hit --max-tokens"
        if s["excluded"]["infra_error"] or s["excluded"]["env_error"]:
            line += "  | infra/env errors excluded from rewards and pass rates"
        console.print(line, highlight=False)
