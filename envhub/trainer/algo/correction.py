"""Importance weights between the engine that sampled a batch and the trainer: one place.

Every per-token weight that multiplies the surrogate is computed by :func:`importance_weights`
from one ratio per token, ``rho = pi_train / pi_engine = exp(old_logp - engine_logp)``, where
``old_logp`` is the trainer's logprob before the update and ``engine_logp`` the engine's logprob
of the token it sampled. The ratio holds two things at once: the engine/trainer numerical
mismatch (another kernel, another precision: vLLM against FSDP2) and, in asynchronous runs, the
staleness of the weights that sampled the batch.

Two users of that ratio:

- the **off-policy correction** of asynchronous GRPO (``generation.max_trajectory_age_steps``):
  ``min(rho, generation.is_cap)`` per token (decoupled PPO, truncated as in IMPALA);
- the **rollout correction** (``loss.rollout_correction``, off by default), for any run:

  ===========  =============================================================================
  mode         weight of token ``t`` of sequence ``s``
  ===========  =============================================================================
  token_tis    ``min(rho_t, threshold)`` (truncated importance sampling, Yao et al. 2025)
  seq_tis      ``min(prod_t rho_t, threshold)``, the same for every token of ``s``
  token_mask   ``1`` if ``low <= rho_t <= high`` else ``0`` (IcePop)
  seq_mask     ``1`` if ``low <= prod_t rho_t <= high`` else ``0`` for all of ``s`` (MIS)
  geo_mask     ``1`` if ``low <= exp(mean_t log rho_t) <= high`` else ``0`` for all of ``s``
  ===========  =============================================================================

How they combine: the TIS modes *are* a truncation of the same ratio, so in an off-policy run
they replace ``min(rho, is_cap)`` (one truncation, at ``threshold``) instead of truncating
twice; the mask modes multiply it (the off-policy weight of the tokens they keep, 0 for the
others). A masked token keeps its aggregation weight's share of the denominator (its term is
simply 0), as IcePop does.

Diagnostics (:class:`CorrectionStats`, logged every step under ``rollout_correction/``): the
mismatch KL ``KL(engine || trainer)`` (k3 estimate on the sampled tokens), the fractions of
tokens and sequences masked, and the weights' mean and max.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator

from envhub.trainer.algo.kl import k3_kl

MODES = ("none", "token_tis", "seq_tis", "token_mask", "seq_mask", "geo_mask")
"""``loss.rollout_correction.mode`` values (``none``: off)."""


class RolloutCorrectionConfig(BaseModel):
    """``loss.rollout_correction``: reweight or mask tokens by ``pi_train / pi_engine``."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["none", "token_tis", "seq_tis", "token_mask", "seq_mask", "geo_mask"] = "none"
    """``none`` (default), ``token_tis``, ``seq_tis``, ``token_mask``, ``seq_mask`` or
    ``geo_mask``: see :mod:`envhub.trainer.algo.correction`."""
    threshold: float = Field(default=2.0, gt=0)
    """TIS modes: weights are truncated at this value (2 as in Yao et al.'s TIS)."""
    low: float = Field(default=0.5, ge=0)
    """Mask modes: a ratio below this is masked (IcePop's 0.5)."""
    high: float = Field(default=2.0, gt=0)
    """Mask modes: a ratio above this is masked (IcePop's 2). ``geo_mask`` compares the
    per-token geometric mean, which stays near 1: use a narrow range, e.g. 0.99-1.01."""

    @model_validator(mode="after")
    def _check_range(self) -> RolloutCorrectionConfig:
        if self.low >= self.high:
            raise ValueError(f"low ({self.low}) must be below high ({self.high})")
        return self


@dataclass
class CorrectionStats:
    """Sums over one micro-batch (the driver adds micro-batches and ranks up)."""

    mismatch_kl_sum: float = 0.0
    """Sum over policy tokens of the k3 estimate of ``KL(engine || trainer)``."""
    masked_tokens: float = 0.0
    """Policy tokens whose weight a mask mode set to 0."""
    masked_seqs: float = 0.0
    """Sequences (with policy tokens) that a sequence mask mode dropped."""
    n_seqs: float = 0.0
    """Sequences with at least one policy token."""
    weight_sum: float = 0.0
    """Sum over policy tokens of the weight applied (1 where there is no correction)."""
    weight_max: float = 0.0


def importance_weights(
    old_logp: torch.Tensor,
    engine_logp: torch.Tensor,
    mask: torch.Tensor,
    cfg: RolloutCorrectionConfig,
    off_policy_cap: float | None = None,
) -> tuple[torch.Tensor | None, CorrectionStats]:
    """The per-token weights of the surrogate and their diagnostics (no gradient).

    Args:
        old_logp: ``[B, T]`` trainer logprobs before the update.
        engine_logp: ``[B, T]`` the engine's logprobs of the tokens it sampled.
        mask: ``[B, T]`` 1 on policy tokens.
        cfg: ``loss.rollout_correction``.
        off_policy_cap: ``generation.is_cap`` in asynchronous runs, None in synchronous ones.

    Returns:
        ``(weights [B, T] or None, stats)``; None when there is nothing to correct (mode
        ``none`` in a synchronous run). Masked positions carry weight 1.
    """
    m = mask.float()
    log_rho = (old_logp.detach().float() - engine_logp.float()) * m
    stats = CorrectionStats(mismatch_kl_sum=float((_k3(log_rho) * m).sum()))
    has_tokens = m.sum(-1) > 0
    stats.n_seqs = float(has_tokens.sum())
    w = _mode_weights(log_rho, m, cfg, off_policy_cap)
    if w is None:
        stats.weight_sum, stats.weight_max = float(m.sum()), 1.0 if stats.n_seqs else 0.0
        return None, stats
    w = torch.where(m.bool(), w, torch.ones_like(w))
    dropped = (w == 0) & m.bool()
    stats.masked_tokens = float(dropped.sum())
    if cfg.mode in ("seq_mask", "geo_mask"):
        stats.masked_seqs = float((dropped.any(-1) & has_tokens).sum())
    stats.weight_sum = float((w * m).sum())
    stats.weight_max = float((w * m).max()) if stats.n_seqs else 0.0
    return w, stats


def _mode_weights(
    log_rho: torch.Tensor, m: torch.Tensor, cfg: RolloutCorrectionConfig, cap: float | None
) -> torch.Tensor | None:
    """The weights before masked positions are set to 1 (None: no correction at all)."""
    rho = torch.exp(log_rho)
    if cfg.mode == "token_tis":
        return rho.clamp(max=cfg.threshold)
    seq_log = log_rho.sum(-1, keepdim=True)  # log prod_t rho_t
    if cfg.mode == "seq_tis":
        return torch.exp(seq_log).clamp(max=cfg.threshold).expand_as(rho)
    base = rho.clamp(max=cap) if cap is not None else torch.ones_like(rho)
    if cfg.mode == "none":
        return base if cap is not None else None
    if cfg.mode == "token_mask":
        keep = (rho >= cfg.low) & (rho <= cfg.high)
    else:
        stat = seq_log
        if cfg.mode == "geo_mask":
            stat = seq_log / m.sum(-1, keepdim=True).clamp(min=1)
        seq_rho = torch.exp(stat)
        keep = ((seq_rho >= cfg.low) & (seq_rho <= cfg.high)).expand_as(rho)
    return base * keep.float()


def correction_metrics(per_rank: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """``rollout_correction/*`` metrics from the ranks' ``rc/*`` sums (:class:`CorrectionStats`).

    ``mismatch_kl`` and ``weight_mean`` are per policy token, ``masked_token_fraction`` of the
    policy tokens, ``masked_seq_fraction`` of the sequences, ``weight_max`` over the batch.
    """
    if not per_rank or "rc/n_seqs" not in per_rank[0]:
        return {}
    total = {k: sum(r[k] for r in per_rank) for k in per_rank[0] if k.startswith("rc/")}
    tokens = max(sum(r["n_tokens"] for r in per_rank), 1.0)
    return {
        "rollout_correction/mismatch_kl": total["rc/mismatch_kl_sum"] / tokens,
        "rollout_correction/masked_token_fraction": total["rc/masked_tokens"] / tokens,
        "rollout_correction/masked_seq_fraction": total["rc/masked_seqs"]
        / max(total["rc/n_seqs"], 1.0),
        "rollout_correction/weight_mean": total["rc/weight_sum"] / tokens,
        "rollout_correction/weight_max": max(r["rc/weight_max"] for r in per_rank),
    }


def _k3(log_rho: torch.Tensor) -> torch.Tensor:
    """k3 of ``KL(engine || trainer)`` on tokens the engine sampled: ``rho - 1 - log rho``."""
    return k3_kl(torch.zeros_like(log_rho), log_rho)
