"""Re-measure the catalog's reference scores (``envhub/authoring/cards.json``): a maintainer's tool.

Gold and a random policy play ``--episodes`` seeded episodes in-process; the model row runs
``envhub eval`` as a command (minutes per environment on a CPU; set ``OMP_NUM_THREADS=1`` on a
busy machine). Each entry records its date, settings, command and the envhub commit, and is
merged into the file under a lock, so several measuring processes may share it. An entry's
``measured`` and ``envhub_commit`` are those of its gold and random rows; a model row carries
its own, so a re-measure that skips the model (``--model none``) keeps the stored model row,
still dated when and by which commit it was measured. Then
``envhub cards --readme docs/environments/index.md`` rewrites the docs' table from the file::

    python scripts/measure_cards.py                 # the whole catalog
    python scripts/measure_cards.py gsm8k --model none --episodes 20
"""

from __future__ import annotations

import argparse
import fcntl
import functools
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envhub.authoring import cards
from envhub.errors import EnvhubError
from envhub.registry.catalog import BUILTIN_REGISTRY, Registry
from envhub.spec import EnvSpec

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class ModelRun:
    """How the model row of the cards is measured with ``envhub eval``."""

    model: str = "smollm2"
    tasks: int = 20
    """First N tasks of single-turn environments."""
    multi_turn_tasks: int = 5
    """First N tasks of multi-turn environments (each turn is a generation)."""
    k: int = 4
    """Samples per task, at temperature 1.0 (eval's default for k > 1)."""
    max_tokens: int = 256
    engine: str = "transformers"

    def argv(self, spec: EnvSpec, out: Path | None = None) -> list[str]:
        """The ``envhub eval`` command line for ``spec``."""
        tasks = self.tasks if spec.max_turns == 1 else self.multi_turn_tasks
        argv = ["envhub", "eval", "--model", self.model, "--engine", self.engine]
        argv += ["--env", spec.id, "--limit", str(tasks), "-n", str(self.k)]
        argv += ["--max-tokens", str(self.max_tokens), "--concurrency", str(tasks * self.k)]
        return argv + (["--out", str(out), "--no-progress", "--json"] if out else [])


def model_scores(spec: EnvSpec, run: ModelRun) -> dict[str, Any]:
    """pass@1, pass@k and mean reward of ``run.model`` on ``spec``, by ``envhub eval``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        # the evaluation part runs as the command the card records (the core imports no part)
        command = [sys.executable, "-m", "envhub.cli", *run.argv(spec, out)[1:]]
        proc = subprocess.run(command, stdout=sys.stderr, stderr=None, check=False)
        if proc.returncode != 0:
            raise EnvhubError(f"{' '.join(run.argv(spec))} failed (exit {proc.returncode})")
        (got,) = json.loads((out / "summary.json").read_text())["environments"].values()
    k = f"pass@{run.k}"
    return {
        "pass@1": _round(got["pass@1"]),
        k: _round(got.get(k)),
        "mean_reward": _round(got["mean_reward"]),
        "tasks": got["tasks"],
        "k": run.k,
        "scored": got["scored"],
        "excluded": got["excluded"],
        "split": got["split"],
        "wall_s": round(got["wall_s"]),
        "command": " ".join(run.argv(spec)),
    }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


@functools.cache
def envhub_commit() -> str:
    """The commit of the envhub checkout when first asked (``unknown`` outside git).

    Cached: a long measurement records the code it started with, not a later HEAD.
    """
    try:
        got = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT, capture_output=True, text=True, timeout=10, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=ROOT, capture_output=True, text=True, timeout=10,
    ).stdout.strip()  # fmt: skip
    return got.stdout.strip() + ("+changes" if dirty else "")


def measure_card(
    spec: EnvSpec, episodes: int, run: ModelRun | None, seed: int = 0
) -> dict[str, Any]:
    """One environment's stored scores: gold, random and (unless ``run`` is None) the model."""
    if cards.needs_data(spec):
        return {"needs_data": True}
    out = cards.policy_scores(spec, episodes, seed)
    stamp = {
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "envhub_commit": envhub_commit(),
    }
    if run is not None:
        out[run.model] = {**model_scores(spec, run), **stamp}
    return {**out, **stamp, "seed": seed}


STAMP = ("measured", "envhub_commit")
"""An entry's date and commit: its gold and random rows' (a model row carries its own)."""


def _merged(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """``new``, with the model rows of ``old`` that it did not measure, each dated as it was.

    A row kept from an entry written before model rows carried their own date and commit gets
    the old entry's, which were its own then.
    """
    if not old or new.get("needs_data"):
        return new
    kept = {
        name: {**{k: old[k] for k in STAMP if k in old}, **row}
        for name, row in old.items()
        if name not in new and isinstance(row, dict) and "pass@1" in row
    }
    meta = {k: new[k] for k in (*STAMP, "seed") if k in new}
    rows = {k: v for k, v in new.items() if k not in meta}
    return {**rows, **kept, **meta}


def measure_all(
    specs: list[EnvSpec],
    episodes: int = 50,
    run: ModelRun | None = None,
    path: Path | None = None,
    echo: Any = print,
) -> dict[str, Any]:
    """Re-measure ``specs`` and merge their scores into ``path`` (the others are kept)."""
    path = path or cards.REFERENCE
    for spec in specs:
        t0 = time.monotonic()
        entry = measure_card(spec, episodes, run)
        _store(path, spec.id, entry)
        echo(f"{spec.id}: {time.monotonic() - t0:.0f} s {json.dumps(entry)}")
    return cards.reference_scores(path)


def _store(path: Path, env_id: str, entry: dict[str, Any]) -> None:
    """Merge one entry into ``path`` under a lock (several measuring processes may share it).

    The stored entry's model rows that ``entry`` did not measure are kept (:func:`_merged`).
    """
    with open(Path(tempfile.gettempdir()) / "envhub-cards.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stored = cards.reference_scores(path)
        stored[env_id] = _merged(stored.get(env_id), entry)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(_document(stored), indent=2) + "\n")
        tmp.replace(path)


def _document(envs: dict[str, Any]) -> dict[str, Any]:
    return {
        "about": (
            "Reference scores of the catalog, written by `python scripts/measure_cards.py`. "
            "gold and random: `episodes` seeded episodes each, dated by the entry's `measured` "
            "and `envhub_commit`; the model: `envhub eval` (see each model row's command, and "
            "its own `measured` and `envhub_commit` where it has them, else the entry's). "
            "Re-measure one environment with `python scripts/measure_cards.py NAME`."
        ),
        "environments": dict(sorted(envs.items())),
    }


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (the defaults are the ones the stored cards were measured with)."""
    p = argparse.ArgumentParser(prog="scripts/measure_cards.py", description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*", help="environments (default: the whole catalog)")
    p.add_argument("--model", default="smollm2", help="model of the eval row ('none': skip it)")
    p.add_argument("--episodes", type=int, default=50, help="gold/random episodes per env")
    p.add_argument("--tasks", type=int, default=20, help="model: tasks of a single-turn env")
    p.add_argument("--multi-turn-tasks", type=int, default=5, help="model: multi-turn env")
    p.add_argument("-k", type=int, default=4, help="model: samples per task")
    p.add_argument("--max-tokens", type=int, default=256, help="model: tokens per turn")
    p.add_argument("--engine", default="transformers", help="model: transformers or vllm")
    p.add_argument("--out", type=Path, default=None, help="the cards file (default: envhub's)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Measure the named environments of the built-in catalog (not your registrations)."""
    args = parse(argv)
    reg = Registry.load([BUILTIN_REGISTRY])
    specs = [reg.spec(n) for n in args.names] if args.names else [reg.spec(i) for i in reg.ids()]
    run = None if args.model == "none" else ModelRun(
        model=args.model, tasks=args.tasks, multi_turn_tasks=args.multi_turn_tasks, k=args.k,
        max_tokens=args.max_tokens, engine=args.engine,
    )  # fmt: skip
    measure_all(specs, args.episodes, run, args.out, echo=lambda line: print(line, file=sys.stderr))


if __name__ == "__main__":
    main()
