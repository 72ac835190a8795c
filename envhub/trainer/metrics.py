"""Per-step metrics: computed from the rollout and the workers' sums, then logged everywhere.

Sinks: ``OUT/metrics.jsonl`` (always; one JSON object per step), the console, TensorBoard
(``OUT/tensorboard``), Weights & Biases when enabled and installed, a progress bar, and at the
end ``OUT/reward.png``.

Keys: ``reward_mean``/``reward_std``, ``reward/<component>``, ``accuracy`` (mean of the
``correctness`` component, where the env has one), ``kl``, ``entropy``, ``clip_fraction``,
``ratio_mean``, ``grad_norm``, ``loss``, ``lr``, ``response_length`` (model tokens per
episode), ``seq_length``, ``turns``, ``episodes``, ``dropped`` and ``dropped/<status>``,
``token_mult_prob_error``, ``tokens_per_s`` (generated tokens per second of generation),
and ``time/<phase>`` for ``rollout``, ``generation``, ``env``, ``logprobs``, ``train``,
``refit``, ``checkpoint`` and ``step``; ``memory/worker_peak_mb`` (the largest policy
worker's peak: GPU memory on CUDA, resident set size on CPU); ``rollout_correction/*``
(``mismatch_kl``, ``masked_token_fraction``, ``masked_seq_fraction``, ``weight_mean``,
``weight_max``: :func:`envhub.trainer.algo.correction.correction_metrics`). Per mix source
(:func:`source_metrics`): ``reward/<env>/mean``, ``accuracy/<env>``, ``turns/<env>``,
``response_length/<env>``, ``status/<env>/<status>``, ``dropped/<env>``, ``episodes/<env>``;
dynamic sampling's ``filter/...``, the curriculum's ``curriculum/<env>/...``, overlong
handling's ``overlong/...``.
"""

from __future__ import annotations

import json
import logging
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envhub.datasets import read_jsonl
from envhub.trainer.algo.correction import correction_metrics
from envhub.trainer.config import LoggingConfig
from envhub.trainer.episodes.rollout import RolloutBatch

log = logging.getLogger("envhub.trainer")


STEP_RATES = ("reward_mean", "reward_std", "accuracy")
"""Rates of a step over its kept episodes (with every ``reward/<component>``)."""


def null_thin_rates(
    out: dict[str, Any], kept: int, episodes: int, min_share: float, keys: Sequence[str]
) -> None:
    """Null the rates in ``keys`` (in place) when too few episodes stand behind them.

    Under ``min_share`` of the episodes kept, each key becomes None and ``null_reason`` (under
    the keys' prefix) names the counts; a curve shows a gap there.
    """
    if episodes == 0 or kept >= min_share * episodes:
        return
    for key in keys:
        if key in out:
            out[key] = None
    prefix = keys[0].rsplit("/", 1)[0] + "/" if "/" in keys[0] else ""
    out[f"{prefix}null_reason"] = (
        f"{kept} of {episodes} episodes kept, under logging.min_counted_share={min_share:g}"
    )


def rollout_metrics(batch: RolloutBatch, min_share: float = 0.9) -> dict[str, Any]:
    """Reward, length and drop statistics of one step's episodes, with the counts behind them.

    ``episodes``, ``kept``, ``dropped`` and ``dropped/<status>`` are counts;
    ``infra_error_share`` is the share of episodes lost to ``infra_error``. Rates over kept
    episodes are null when under ``min_share`` of the episodes were kept (:func:`null_thin_rates`).
    """
    kept = batch.kept
    n = len(batch.episodes)
    out: dict[str, Any] = {"episodes": float(n), "kept": float(len(kept)), "dropped": 0.0}
    for status, count in batch.dropped_by_status().items():
        out[f"dropped/{status}"] = float(count)
        out["dropped"] += count
    out["infra_error_share"] = out.get("dropped/infra_error", 0.0) / n if n else 0.0
    for counts in (e.gateway for e in batch.episodes if e.gateway):  # agent episodes only
        for name, value in counts.items():
            out[f"gateway/{name}"] = out.get(f"gateway/{name}", 0.0) + value
    if not kept:
        return out
    rewards = [e.reward for e in kept]
    out["reward_mean"] = statistics.fmean(rewards)
    out["reward_std"] = statistics.pstdev(rewards)
    names = sorted({k for e in kept for k in e.components})
    for name in names:
        out[f"reward/{name}"] = statistics.fmean(e.components.get(name, 0.0) for e in kept)
    if "correctness" in names:
        out["accuracy"] = statistics.fmean(
            float(e.components.get("correctness", 0.0) >= 1.0) for e in kept
        )
    out["response_length"] = statistics.fmean(e.response_tokens for e in kept)
    out["seq_length"] = statistics.fmean(len(e.tokens) for e in kept)
    out["turns"] = statistics.fmean(e.turns for e in kept)
    generated = sum(e.response_tokens for e in batch.episodes)
    if batch.generation_time > 0:
        out["tokens_per_s"] = generated / batch.generation_time
    rates = [*STEP_RATES, *(f"reward/{name}" for name in names)]
    null_thin_rates(out, len(kept), n, min_share, rates)
    return out


def source_metrics(
    batch: RolloutBatch, primaries: dict[str, str], min_share: float = 0.9
) -> dict[str, Any]:
    """The step's figures per mix source.

    ``reward/<env>/mean``, ``accuracy/<env>`` (the share of kept episodes whose primary
    component reached 1), ``turns/<env>``, ``response_length/<env>``,
    ``status/<env>/<status>``, ``dropped/<env>``, ``episodes/<env>``.
    """
    by_env: dict[str, list] = {}
    for e in batch.episodes:
        by_env.setdefault(e.env, []).append(e)
    out: dict[str, Any] = {}
    for env, eps in by_env.items():
        if not env:
            continue
        kept = [e for e in eps if not e.dropped]
        out[f"episodes/{env}"] = float(len(eps))
        out[f"dropped/{env}"] = float(len(eps) - len(kept))
        for e in eps:
            key = f"status/{env}/{e.status}"
            out[key] = out.get(key, 0.0) + 1
        if not kept:
            continue
        primary = primaries.get(env, "correctness")
        out[f"reward/{env}/mean"] = statistics.fmean(e.reward for e in kept)
        out[f"accuracy/{env}"] = statistics.fmean(
            float(e.components.get(primary, 0.0) >= 1.0) for e in kept
        )
        out[f"turns/{env}"] = statistics.fmean(e.turns for e in kept)
        out[f"response_length/{env}"] = statistics.fmean(e.response_tokens for e in kept)
        rates = [f"accuracy/{env}", f"reward/{env}/mean"]
        null_thin_rates(out, len(kept), len(eps), min_share, rates)
    return out


def train_metrics(per_rank: Sequence[dict[str, float]]) -> dict[str, float]:
    """Combine the workers' sums into batch-level means."""
    total = {k: sum(r.get(k, 0.0) for r in per_rank) for k in per_rank[0]}
    n = total["n_tokens"]
    per_token = (
        {  # means over the trained tokens: none when the update trained none
            "kl": total["kl_sum"] / n,
            "entropy": total["entropy_sum"] / n,
            "clip_fraction": total["clipped_sum"] / n,
            "ratio_mean": total["ratio_sum"] / n,
            "token_mult_prob_error": total["mult_err_sum"] / n,
            **(
                {"is_weight_mean": total["is_weight_sum"] / n} if total.get("is_weight_sum") else {}
            ),
        }
        if n > 0
        else {}
    )
    return {
        "loss": total["loss"],
        **per_token,
        "grad_norm": per_rank[0]["grad_norm"],
        "lr": per_rank[0]["lr"],
        "train_tokens": n,
        "memory/worker_peak_mb": max(r.get("peak_memory_mb", 0.0) for r in per_rank),
        **correction_metrics(per_rank),
    }


class MetricsLogger:
    """Writes each step's metrics to every enabled sink."""

    CONSOLE_KEYS = (
        "nll",
        "reward_mean",
        "accuracy",
        "kl",
        "entropy",
        "grad_norm",
        "dropped",
        "infra_error_share",
    )

    def __init__(self, out: Path, cfg: LoggingConfig, total_steps: int, run_config: dict):
        """Open the sinks under ``out``."""
        self.out, self.cfg = out, cfg
        self.path = out / "metrics.jsonl"
        self._tb: Any = None
        self._wandb: Any = None
        self._bar: Any = None
        if cfg.tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(str(out / "tensorboard"))
            except ImportError:
                log.warning("tensorboard is not installed; pip install tensorboard to use it")
        if cfg.wandb:
            try:
                import wandb

                self._wandb = wandb.init(project=cfg.wandb_project, config=run_config)
            except ImportError:
                log.warning("logging.wandb is on but wandb is not installed; skipping it")
        if cfg.progress_bar:
            from tqdm import tqdm

            self._bar = tqdm(total=total_steps, desc="grpo", unit="step")

    def start_at(self, step: int) -> None:
        """Continue after ``step`` (0 for a fresh run).

        Drops rows of later steps (left by a run that died after logging them but before its
        checkpoint, or by an earlier run in the same folder) and moves the progress bar.
        """
        if self.path.exists():
            kept = [r for r in read_jsonl(self.path) if r.get("step", 0) <= step]
            self.path.write_text("".join(json.dumps(r) + "\n" for r in kept))
        if self._bar is not None and step:
            self._bar.update(step)

    def log(self, step: int, metrics: dict[str, float]) -> None:
        """Record one step everywhere."""
        row = {"step": step, **{k: _plain(v) for k, v in metrics.items()}}
        with open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")
        if self._tb is not None:
            for k, v in row.items():
                if k != "step" and isinstance(v, (int, float)):
                    self._tb.add_scalar(k, v, step)
            self._tb.flush()
        if self._wandb is not None:
            self._wandb.log(row, step=step)
        shown = {k: row[k] for k in self.CONSOLE_KEYS if k in row}
        text = " ".join(f"{k}={_shown(v)}" for k, v in shown.items())
        text += f" time/step={row.get('time/step', 0):.1f}s"
        if self._bar is not None:
            self._bar.update(1)
            self._bar.set_postfix_str(text)
        if self.cfg.console:
            (self._bar.write if self._bar is not None else print)(f"step {step}: {text}")

    def close(self, history: list[dict[str, float]]) -> None:
        """Close the sinks and draw the reward curve."""
        if self._bar is not None:
            self._bar.close()
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()
        if self.cfg.plot and history:
            plot_rewards(history, self.out / "reward.png")


def _shown(v: Any) -> str:
    return "null" if v is None else f"{v:.4g}"


def _plain(v: Any) -> Any:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


def plot_rewards(history: list[dict[str, float]], path: Path) -> None:
    """PNG of mean reward (and accuracy, where present) per step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def value(h: dict[str, Any], key: str) -> float:  # a nulled rate: a gap in the line
        v = h.get(key)
        return float("nan") if v is None else float(v)

    steps = [h["step"] for h in history]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, [value(h, "reward_mean") for h in history], label="reward")
    if any("accuracy" in h for h in history):
        ax.plot(steps, [value(h, "accuracy") for h in history], label="accuracy", linestyle="--")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("step")
    ax.set_ylabel("mean over episodes")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
