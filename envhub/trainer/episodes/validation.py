"""Validation during training: ``envhub eval``'s own episodes on held-out tasks.

At step 0, every ``validation.every`` steps and at the end, each validated source runs an
:class:`envhub.evaluate.runner.Evaluation` (the code of ``envhub eval``: same episode records,
same pass@k) with the policy's current weights, through the run's generation engines. Its
episodes go to ``DIR/validation/step_NNNNN/<env>/`` (``episodes.jsonl``, ``summary.json``)
and are never trained on. Each round appends one line per source to
``DIR/validation.jsonl`` (``step``, ``env``, ``tasks``, ``pass@1``, ``pass@k``,
``mean_reward``, ``pass@1_ci95``: a 95% bootstrap interval over tasks) and redraws
``DIR/validation.png``. The best round by ``best_metric`` (averaged over the sources) is kept
in ``DIR/best/``; ``patience`` rounds without improvement stop the run early.

The validation split must share no task with the training split (by task id or prompt):
a run whose splits overlap is refused before it starts.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envhub.datasets import read_jsonl
from envhub.errors import ConfigError
from envhub.evaluate.metrics import bootstrap_ci, task_pass_rates


class ValidationConfig(BaseModel):
    """The ``validation`` section (off while ``every`` is 0)."""

    model_config = ConfigDict(extra="forbid")

    every: int = Field(default=0, ge=0)
    """Validate every N steps (and at step 0 and at the end); 0: no validation."""
    at_start: bool = True
    """False: no round at step 0. For a run that starts from an export whose own run ended
    with a round on the same tasks (an SFT stage's, for the GRPO stage after it): the same
    greedy episodes again would only cost time."""
    sources: list[str] | None = None
    """Sources (environment names of the mix) to validate; all of the mix when unset."""
    split: str | None = None
    """Held-out split; ``test`` by default (``validation`` when training draws from ``test``).
    Refused if it shares a task with the training split."""
    tasks: int | None = Field(default=32, ge=1)
    """First N tasks of the split per source (all when unset)."""
    k: int = Field(default=1, ge=1)
    """Samples per task: the k of pass@k."""
    temperature: float = Field(default=0.0, ge=0)
    max_tokens: int | None = Field(default=None, ge=1)
    """New tokens per turn; ``rollout.sampling.max_tokens`` when unset."""
    concurrency: int = Field(default=32, ge=1)
    """Episodes run at once per source (their turns are batched into one engine call)."""
    best_metric: Literal["pass@1", "pass@k", "mean_reward"] = "pass@1"
    """What ``DIR/best/`` is chosen by: its mean over the validated sources."""
    keep_best: bool = True
    """Export the policy to ``DIR/best/`` when a round beats every earlier one."""
    patience: int = Field(default=0, ge=0)
    """Stop after this many rounds without improvement (0: never stop early)."""
    min_scored_share: float = Field(default=0.9, gt=0, le=1)
    """A source's rates stand only on at least this share of its episodes scored: below it
    (episodes lost to ``infra_error``/``env_error``) its row's rates are null, with the
    reason, its curve shows a gap, and the round never chooses ``DIR/best/``."""


def held_out_split(train_split: str) -> str:
    """The default validation split for training on ``train_split``."""
    return "validation" if train_split == "test" else "test"


def prompt_key(prompt: Any) -> str:
    """A prompt as the overlap check compares it: whitespace runs collapsed, case folded."""
    return " ".join(str(prompt).split()).casefold()


def check_held_out(
    name: str, train: Sequence[tuple[str, Any]], held: Sequence[Any], split: str
) -> None:
    """Refuse a validation split that shares a task with what the run trains on.

    ``train``: ``(environment, task)`` pairs of every source of the mix. A held-out task is
    shared when the same environment trains on its id, or when any source trains on its
    prompt up to whitespace and case (:func:`prompt_key`).

    Raises:
        ConfigError: naming the source, the split and up to three shared tasks.
    """
    ids = {(env, t.task_id) for env, t in train}
    prompts = {prompt_key(t.prompt) for _, t in train}
    shared = [
        t.task_id for t in held if (name, t.task_id) in ids or prompt_key(t.prompt) in prompts
    ]
    if shared:
        raise ConfigError(
            f"validation split {split!r} of {name} shares {len(shared)} task(s) with the "
            f"training data of the mix (e.g. {', '.join(shared[:3])}; prompts compared up to "
            "whitespace and case): set validation.split to a held-out split, or train on "
            "another split"
        )


RATES = ("pass@1", "pass@k", "mean_reward", "pass@1_ci95")
"""The keys of a validation row that are rates over its scored episodes."""


def round_row(
    step: int,
    name: str,
    summary: dict[str, Any],
    records: Sequence[Any],
    seed: int,
    *,
    expected: int,
    min_share: float = 0.9,
) -> dict[str, Any]:
    """One line of ``validation.jsonl`` from an evaluation's summary and records.

    ``expected``: the episodes the round asked for (tasks x k). The row carries the counts
    its rates stand on (``episodes``, ``scored``, ``expected``, ``status``); when fewer than
    ``min_share`` of ``expected`` were scored, its rates are null and ``null_reason`` says why.
    """
    k = summary.get("k", 1)
    status = summary.get("status") or {}
    scored = int(summary.get("scored", 0) or 0)
    row = {
        "step": step,
        "env": name,
        "tasks": summary.get("tasks"),
        "episodes": summary.get("episodes"),
        "expected": expected,
        "scored": scored,
        "k": k,
        "pass@1": summary.get("pass@1"),
        "pass@k": summary.get(f"pass@{k}"),
        "mean_reward": summary.get("mean_reward"),
        "pass@1_ci95": bootstrap_ci(task_pass_rates(records), seed),
        "status": status,
    }
    if scored < min_share * expected:
        lost = {s: n for s, n in status.items() if s in ("infra_error", "env_error")}
        row.update(dict.fromkeys(RATES))
        row["null_reason"] = (
            f"only {scored} of {expected} episodes scored ({lost or 'the rest missing'}), under "
            f"validation.min_scored_share={min_share:g}"
        )
    return row


class BestTracker:
    """The best round so far by a metric, and early stopping."""

    def __init__(self, metric: str, patience: int):
        """``metric``: a key of the rows, averaged over sources."""
        self.metric, self.patience = metric, patience
        self.best: float | None = None
        self.best_step: int | None = None
        self.stale = 0

    def score(self, rows: Sequence[dict[str, Any]]) -> float | None:
        """The round's mean of the metric over sources.

        None when any source lacks it (a rate nulled for resting on too few episodes): a
        round that could not measure every source never becomes the best.
        """
        vals = [r.get(self.metric) for r in rows]
        if not vals or any(v is None for v in vals):
            return None
        return sum(vals) / len(vals)

    def update(self, step: int, rows: Sequence[dict[str, Any]]) -> bool:
        """Record a round; True when it is the best so far."""
        score = self.score(rows)
        if score is not None and (self.best is None or score > self.best):
            self.best, self.best_step, self.stale = score, step, 0
            return True
        self.stale += 1
        return False

    @property
    def should_stop(self) -> bool:
        """True when ``patience`` rounds in a row brought no improvement."""
        return self.patience > 0 and self.stale >= self.patience

    def state_dict(self) -> dict[str, Any]:
        """Best score, its step and the rounds since (kept in checkpoints)."""
        return {"best": self.best, "best_step": self.best_step, "stale": self.stale}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict`'s output."""
        self.best, self.best_step = state.get("best"), state.get("best_step")
        self.stale = state.get("stale", 0)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a ``validation.jsonl``.

    Read by :func:`envhub.datasets.read_jsonl`: a line ends at a newline only, never at a
    U+2028 that a JSON string may hold raw.
    """
    return read_jsonl(path) if path.exists() else []


def plot_validation(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """``validation.png``: pass@1 per source against the step, with its 95% interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    nan = float("nan")
    for name in dict.fromkeys(r["env"] for r in rows):
        mine = [r for r in rows if r["env"] == name]
        steps = [r["step"] for r in mine]
        # a nulled rate is NaN: the line breaks there (a gap, never a value it did not measure)
        ax.plot(steps, [_num(r.get("pass@1")) for r in mine], marker="o", label=name)
        ci = [r.get("pass@1_ci95") or [nan, nan] for r in mine]
        ax.fill_between(steps, [_num(c[0]) for c in ci], [_num(c[1]) for c in ci], alpha=0.15)
    ax.set_xlabel("step")
    ax.set_ylabel("held-out pass@1")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _num(value: Any) -> float:
    return float("nan") if value is None else float(value)


class Validator:
    """Runs the validation rounds of a training run (see the module docstring)."""

    def __init__(
        self,
        cfg: ValidationConfig,
        out: Path,
        sources: Sequence[Any],
        backend_factory: Callable[[], Any],
        *,
        seed: int,
        max_tokens: int,
        agents: dict[str, Any] | None = None,
        engine_factory: Callable[[], Any] | None = None,
    ):
        """Validate ``sources`` (the mix's :class:`~envhub.trainer.episodes.mix.MixSource` list).

        ``backend_factory()`` gives a :class:`envhub.evaluate.backends.ModelBackend` over the
        run's engines (their current weights). ``agents``: each source's agent (sources with
        one are validated as ``envhub eval --agent`` would, the agent behind a gateway over
        ``engine_factory()``, a generation engine over the run's engines).
        """
        self.agents = {k: v for k, v in (agents or {}).items() if v is not None}
        self.engine_factory = engine_factory
        if self.agents and engine_factory is None:
            raise ConfigError("validating agent sources needs the run's engine (engine_factory)")
        self.cfg, self.out, self.seed = cfg, out, seed
        wanted = cfg.sources or [s.name for s in sources]
        unknown = sorted(set(wanted) - {s.name for s in sources})
        if unknown:
            raise ConfigError(f"validation.sources {unknown} are not in the mix")
        self.sources = [s for s in sources if s.name in wanted]
        self.all_sources = list(sources)  # the overlap check covers what every source trains on
        self.backend_factory = backend_factory
        self.max_tokens = cfg.max_tokens or max_tokens
        self.path = out / "validation.jsonl"
        self.tracker = BestTracker(cfg.best_metric, cfg.patience)

    def split_of(self, source: Any) -> str:
        """The held-out split of ``source``."""
        if self.cfg.split:
            return self.cfg.split
        return held_out_split(source.split or self._env(source).spec.split)

    def _env(self, source: Any) -> Any:
        import envhub

        overrides = dict(source.overrides)
        if source.max_turns:
            overrides["max_turns"] = source.max_turns
        return envhub.make(source.name, source.runner, **overrides)

    def check(self) -> None:
        """Refuse overlapping or unloadable splits (before any worker starts)."""
        train = [(s.name, t) for s in self.all_sources for t in self._train_tasks(s)]
        for source in self.sources:
            env = self._env(source)
            try:
                split = self.split_of(source)
                try:
                    held = env.tasks(split)
                except Exception as e:
                    raise ConfigError(
                        f"validation split {split!r} of {source.name} cannot be loaded ({e}); "
                        "set validation.split to a split the environment has"
                    ) from e
                check_held_out(source.name, train, held, split)
            finally:
                env.close()

    def _train_tasks(self, source: Any) -> list[Any]:
        env = self._env(source)
        try:
            return list(env.tasks(source.split))
        finally:
            env.close()

    def start_at(self, step: int) -> None:
        """Continue after ``step``: drop rows of later rounds (left by a run that died)."""
        rows = [r for r in read_rows(self.path) if r["step"] <= step]
        if self.path.exists():
            self.path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def due(self, step: int, total: int, every: int | None = None) -> bool:
        """True at step 0 (unless ``at_start`` is off), every ``every`` steps and at the end."""
        every = every or self.cfg.every
        if every <= 0 or (step == 0 and not self.cfg.at_start):
            return False
        return step == 0 or step == total or step % every == 0

    def run(self, step: int) -> list[dict[str, Any]]:
        """One round: every source evaluated; rows appended to ``validation.jsonl``."""
        rows = [self._source(step, s) for s in self.sources]
        with open(self.path, "a") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
        plot_validation(read_rows(self.path), self.out / "validation.png")
        return rows

    def _source(self, step: int, source: Any) -> dict[str, Any]:
        from envhub.evaluate.runner import Evaluation
        from envhub.evaluate.store import EvalConfig, RunStore

        split = self.split_of(source)
        cfg = EvalConfig(
            model=f"policy@step{step}",
            envs=[source.name],
            split=split,
            limit=self.cfg.tasks,
            n=self.cfg.k,
            temperature=self.cfg.temperature,
            max_tokens=self.max_tokens,
            concurrency=self.cfg.concurrency,
            runner=source.runner or "local",
            seed=self.seed,
        )
        store = RunStore(self.out / "validation" / f"step_{step:05d}" / source.name)
        make_env = lambda _name: self._env(source)  # noqa: E731
        agent = self.agents.get(source.name)
        if agent is not None:  # the agent program plays the held-out tasks through a gateway
            from envhub.evaluate.agents import AgentEvaluation, GatewayModel
            from envhub.gateway.backends import EngineBackend

            assert self.engine_factory is not None
            engine = EngineBackend(
                self.engine_factory(), "policy", weights_version=None, call_timeout_s=None
            )  # the driver's watchdog bounds each generate (see episodes/agents.py)
            backend = GatewayModel(engine, self.max_tokens)
            cfg = cfg.model_copy(update={"agent": agent})
            evaluation = AgentEvaluation(cfg, backend, store, make_env)
        else:
            backend = self.backend_factory()
            evaluation = Evaluation(cfg, backend, store, make_env)
        summary = asyncio.run(_run_then_close(evaluation, backend))
        env_summary = summary["environments"].get(source.name, {})
        expected = (env_summary.get("tasks") or self.cfg.tasks or 0) * self.cfg.k
        return round_row(
            step,
            source.name,
            env_summary,
            store.load_records(),
            self.seed,
            expected=max(expected, int(env_summary.get("episodes") or 0)),
            min_share=self.cfg.min_scored_share,
        )


async def _run_then_close(evaluation: Any, backend: Any) -> dict[str, Any]:
    try:
        return await evaluation.run()
    finally:
        await backend.aclose()
