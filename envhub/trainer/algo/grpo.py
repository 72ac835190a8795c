"""GRPO as pure tensor functions: advantages, the clipped surrogate, k3 KL, aggregation.

Nothing here knows about Ray, FSDP or environments, so every formula is tested on CPU
against hand-computed numbers (``tests/trainer/test_grpo.py``).

Shapes: ``B`` sequences of ``T`` positions. Per-token tensors are aligned with the *targets*
(``ids[:, 1:]``): ``logp[b, t]`` is the log-probability of token ``t + 1`` of sequence ``b``,
and ``mask[b, t]`` is 1 where that token was sampled by the policy (0 for prompt,
environment, tool and padding tokens).

Aggregation is expressed as per-token *weights* that sum the loss over the whole batch
(:data:`AGGREGATIONS`): the loss of a batch is ``sum(weights * per_token_loss)``, so it is the
same whether the batch is processed at once, in micro-batches with gradient accumulation, or
split over data-parallel ranks.

:class:`LossConfig` is both the training config's ``loss`` section and what the loss
functions take: its fields and defaults are defined here only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field, field_validator

from envhub.trainer.algo.correction import RolloutCorrectionConfig
from envhub.trainer.algo.distill import DistillConfig
from envhub.trainer.algo.kl import k3_kl


def group_advantages(
    rewards: torch.Tensor,
    group_ids: Sequence[int] | torch.Tensor,
    *,
    normalize_std: bool = True,
    eps: float = 1e-6,
) -> torch.Tensor:
    """Group-relative advantages: ``(r - mean(group))``, divided by ``std(group) + eps``.

    Groups may have different sizes (episodes dropped for infrastructure errors leave a group
    smaller); a group of one has advantage 0, since it has nothing to be compared with.

    Args:
        rewards: ``[N]`` episode rewards.
        group_ids: ``[N]`` the group (prompt) of each episode.
        normalize_std: Divide by the group's standard deviation (GRPO); off gives Dr. GRPO's
            ``r - mean``, which does not up-weight nearly-solved or nearly-failed prompts.
        eps: Added to the std so that a group of equal rewards gives 0, not NaN.

    Returns:
        ``[N]`` advantages (float32). Computed in float64, so that the squares of rewards up
        to float32's largest (the rollout refuses larger ones) cannot overflow.
    """
    rewards = rewards.double()
    gids = torch.as_tensor(group_ids, dtype=torch.long)
    _, inverse, counts = torch.unique(gids, return_inverse=True, return_counts=True)
    sums = torch.zeros(len(counts), dtype=torch.float64).index_add_(0, inverse, rewards)
    means = sums / counts
    centered = rewards - means[inverse]
    # a group of equal rewards has advantage exactly 0 (not the rounding of ``r - mean``): its
    # samples carry no gradient, and the update may leave them out (``train.skip_zero_advantage``)
    lows = torch.full((len(counts),), torch.inf, dtype=torch.float64)
    highs = torch.full((len(counts),), -torch.inf, dtype=torch.float64)
    lows = lows.scatter_reduce(0, inverse, rewards, "amin")
    highs = highs.scatter_reduce(0, inverse, rewards, "amax")
    centered = torch.where((lows == highs)[inverse], torch.zeros_like(centered), centered)
    if not normalize_std:
        return torch.where(counts[inverse] > 1, centered, torch.zeros_like(centered)).float()
    sq = torch.zeros(len(counts), dtype=torch.float64).index_add_(0, inverse, centered**2)
    # unbiased std, as torch.std and the GRPO paper's implementations use
    std = torch.sqrt(sq / (counts - 1).clamp(min=1))
    denom = std[inverse] + eps
    adv = torch.where(denom > 0, centered / denom.clamp(min=1e-12), torch.zeros_like(centered))
    return torch.where(counts[inverse] > 1, adv, torch.zeros_like(adv)).float()


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Per-position entropy of ``softmax(logits)``: ``[B, T, V] -> [B, T]``."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return -(logp.exp() * logp).sum(-1)


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Log-probability of each target token: ``[B, T, V], [B, T] -> [B, T]``."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


LOGPROB_CHUNK_BYTES = 8 * 2**20
"""Size of the float32 ``[rows, V]`` slice that :func:`logprobs_and_entropy` works on at once."""


def logprobs_and_entropy(
    logits: torch.Tensor,
    rows: torch.Tensor,
    targets: torch.Tensor,
    temperature: float = 1.0,
    chunk_rows: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`token_logprobs` and :func:`entropy_from_logits` of ``logits / temperature``.

    The memory-lean form of the two: no full-vocabulary tensor besides ``logits`` itself is
    ever alive. Rows are processed a slice at a time (``log_softmax`` in float32, the target
    gathered, the entropy summed), and the backward recomputes each slice's softmax and writes
    the gradient into ``logits``' own storage, which it no longer needs. So backward may run
    once (the default), and the caller must not read ``logits`` after it. (A leaf tensor, or
    a view of one, is never overwritten: its gradient gets a buffer of its own.)

    Positions may share a row with different targets (a packed micro-batch: the prompt's last
    position predicts every sample's first token), and rows may be read by no position.

    Args:
        logits: ``[N, V]`` raw model outputs (any float dtype).
        rows: ``[...]`` the row of ``logits`` each position reads.
        targets: ``[...]`` (as ``rows``) the token whose logprob each position wants.
        temperature: Logits are divided by it.
        chunk_rows: Rows per slice; by default a float32 slice of
            :data:`LOGPROB_CHUNK_BYTES`.

    Returns:
        ``(logp, entropy)``, float32, shaped as ``rows``; only ``logp`` has a gradient.
    """
    if chunk_rows is None:
        chunk_rows = max(1, LOGPROB_CHUNK_BYTES // (4 * logits.shape[-1]))
    return _ChunkedLogprobs.apply(logits, rows, targets, float(temperature), chunk_rows)


class _ChunkedLogprobs(torch.autograd.Function):
    """Autograd of :func:`logprobs_and_entropy`."""

    @staticmethod
    def forward(
        ctx: Any,
        logits: torch.Tensor,
        rows: torch.Tensor,
        targets: torch.Tensor,
        temperature: float,
        chunk: int,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Slice by slice: float32 ``log_softmax``, the targets' entries, the entropy."""
        flat_rows, flat_targets = rows.reshape(-1), targets.reshape(-1)
        logp = torch.empty(flat_rows.shape, dtype=torch.float32, device=logits.device)
        row_entropy = torch.empty(logits.shape[0], dtype=torch.float32, device=logits.device)
        for lo, hi, sel in _slices(flat_rows, logits.shape[0], chunk):
            ls = torch.log_softmax(logits[lo:hi].float() / temperature, dim=-1)
            logp[sel] = ls[flat_rows[sel] - lo, flat_targets[sel]]
            row_entropy[lo:hi] = -(ls.exp().mul_(ls)).sum(-1)
        ctx.save_for_backward(logits, flat_rows, flat_targets)
        ctx.temperature, ctx.chunk, ctx.consumed = temperature, chunk, False
        base = logits if logits._base is None else logits._base
        ctx.in_place = not base.is_leaf  # a model's output, not a parameter or user data
        entropy = row_entropy[flat_rows].reshape(rows.shape)
        ctx.mark_non_differentiable(entropy)
        return logp.reshape(rows.shape), entropy

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad_logp: torch.Tensor, grad_entropy: torch.Tensor) -> tuple:
        """The gradient of ``logp``, written into the saved logits slice by slice."""
        if ctx.consumed and ctx.in_place:
            raise RuntimeError(
                "logprobs_and_entropy: backward ran twice; its first run overwrote the saved "
                "logits with their gradient (do not retain this graph)"
            )
        ctx.consumed = True
        logits, rows, targets = ctx.saved_tensors
        out = logits if ctx.in_place else torch.empty_like(logits)
        t = ctx.temperature
        g = grad_logp.reshape(-1).float()
        # d logp[m] / d z[r] = onehot(target[m]) - softmax(z[r]) for the positions m of row r
        g_row = torch.zeros(logits.shape[0], dtype=torch.float32, device=logits.device)
        g_row.index_add_(0, rows, g)
        for lo, hi, sel in _slices(rows, logits.shape[0], ctx.chunk):
            grad = torch.softmax(logits[lo:hi].float() / t, dim=-1)
            grad.mul_(-g_row[lo:hi, None])
            grad.index_put_((rows[sel] - lo, targets[sel]), g[sel], accumulate=True)
            out[lo:hi] = grad.div_(t)
        return out, None, None, None, None


def _slices(rows: torch.Tensor, n: int, chunk: int) -> Iterator[tuple[int, int, torch.Tensor]]:
    """``(lo, hi, positions whose row is in [lo, hi))`` for consecutive slices of ``n`` rows."""
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        yield lo, hi, ((rows >= lo) & (rows < hi)).nonzero(as_tuple=True)[0]


def token_mult_prob_error(
    engine_logp: torch.Tensor, trainer_logp: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """NeMo RL's engine/trainer mismatch: masked mean of ``exp(|engine - trainer|)``.

    1.0 means the generation engine and the trainer give every sampled token the same
    probability; above ~1.05 the importance ratios are no longer trustworthy.
    """
    err = torch.exp((engine_logp - trainer_logp).abs())
    return (err * mask).sum() / mask.sum().clamp(min=1)


# ---------------------------------------------------------------------------- aggregation


def _token_mean(mask: torch.Tensor, n_seqs: int, n_tokens: int, max_len: int) -> torch.Tensor:
    """Every policy token of the batch weighs the same (DAPO, NeMo RL's default)."""
    return mask / max(n_tokens, 1)


def _seq_mean_token_mean(
    mask: torch.Tensor, n_seqs: int, n_tokens: int, max_len: int
) -> torch.Tensor:
    """Mean over tokens within a sequence, then over sequences (the GRPO paper)."""
    per_seq = mask.sum(-1, keepdim=True).clamp(min=1)
    return mask / per_seq / max(n_seqs, 1)


def _seq_mean_token_sum_norm(
    mask: torch.Tensor, n_seqs: int, n_tokens: int, max_len: int
) -> torch.Tensor:
    """Sum over tokens divided by a constant length, then mean over sequences (Dr. GRPO)."""
    return mask / max(max_len, 1) / max(n_seqs, 1)


AGGREGATIONS: dict[str, Callable[[torch.Tensor, int, int, int], torch.Tensor]] = {
    "token_mean": _token_mean,
    "seq_mean_token_mean": _seq_mean_token_mean,
    "seq_mean_token_sum_norm": _seq_mean_token_sum_norm,
}
"""Per-token loss weights by aggregation mode: ``fn(mask, n_seqs, n_tokens, max_len)``.

``n_seqs`` and ``n_tokens`` count the whole batch (all micro-batches and ranks), so the weights
of every micro-batch add up to the loss of the whole batch. Add one with
:func:`register_aggregation`."""

PolicyLossFn = Callable[
    [torch.Tensor, torch.Tensor, float, float], tuple[torch.Tensor, torch.Tensor]
]
"""``fn(ratio, advantages, low, high) -> (per_token_loss, clipped)``: ``ratio`` is ``[B, T]``
(or ``[B, 1]`` at sequence level), ``advantages`` ``[B, 1]``, ``[low, high]`` the clip range;
``clipped`` marks where a clip bound is the active term (for ``clip_fraction``)."""
POLICY_LOSSES: dict[str, PolicyLossFn] = {}
"""The per-token policy losses by name (``loss.policy_loss``); add one with
:func:`register_policy_loss`."""
RatioFn = Callable[..., tuple[torch.Tensor, float, float]]
"""``fn(logp, old_logp, mask, cfg) -> (ratio, low, high)``: an importance ratio and its clip
range."""
RATIO_LEVELS: dict[str, RatioFn] = {}
"""Importance ratios by level (``loss.ratio_level``); add one with :func:`register_ratio_level`."""


def _registrar(table: dict[str, Any], what: str) -> Callable[[str], Callable[[Any], Any]]:
    def register(name: str) -> Callable[[Any], Any]:
        def add(fn: Any) -> Any:
            if name in table:
                raise ValueError(f"{what} {name!r} is registered already")
            table[name] = fn
            return fn

        return add

    return register


_register_loss = _registrar(POLICY_LOSSES, "policy loss")
ZERO_AT_ZERO_ADVANTAGE: set[str] = set()
"""Policy losses whose loss and gradient are exactly 0 on a token whose advantage is 0, so
that the update can leave such samples out (``train.skip_zero_advantage``)."""


def register_policy_loss(
    name: str, *, zero_at_zero_advantage: bool = False
) -> Callable[[PolicyLossFn], PolicyLossFn]:
    """``@register_policy_loss("name")`` above a :data:`PolicyLossFn`: ``loss.policy_loss: name``.

    ``zero_at_zero_advantage``: the loss is ``A`` times something finite (no term without the
    advantage, such as an entropy bonus), so a sample of advantage 0 adds nothing to the
    gradient and ``train.skip_zero_advantage`` skips its forward and backward. Unsure: leave
    it False (every sample is then computed).

    The module that holds it must be imported in the policy workers too: add losses here, or
    in a module of ``envhub/trainer/algo/`` that this one imports.
    """
    if zero_at_zero_advantage:
        ZERO_AT_ZERO_ADVANTAGE.add(name)
    return _register_loss(name)


register_ratio_level = _registrar(RATIO_LEVELS, "ratio level")
"""``@register_ratio_level("name")`` above a :data:`RatioFn`: ``loss.ratio_level: name``."""
register_aggregation = _registrar(AGGREGATIONS, "aggregation")
"""``@register_aggregation("name")`` above a weights function: ``loss.aggregation: name``."""


@register_policy_loss("clipped", zero_at_zero_advantage=True)
def clipped_surrogate(
    ratio: torch.Tensor, adv: torch.Tensor, low: float, high: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO/GRPO's clipped surrogate: ``-min(ratio * A, clip(ratio, 1 - low, 1 + high) * A)``."""
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1 - low, 1 + high) * adv
    return -torch.minimum(unclipped, clipped), (clipped < unclipped).float()


@register_ratio_level("token")
def token_ratio(logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor, cfg: Any):
    """PPO/GRPO's per-token ratio ``exp(logp - old)``, clipped to ``clip_low``/``clip_high``."""
    return torch.exp(logp - old_logp), cfg.clip_low, cfg.clip_high


@register_ratio_level("sequence")
def sequence_ratio(logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor, cfg: Any):
    """GSPO's ``exp(sum_t mask * (logp - old) / sum_t mask)`` (``[B, 1]``), ``seq_clip_*``.

    Its gradient is the ratio times the mean of the tokens' ``grad logp``.
    """
    n = mask.sum(-1, keepdim=True).clamp(min=1)
    log_ratio = ((logp - old_logp) * mask).sum(-1, keepdim=True) / n
    return torch.exp(log_ratio), cfg.seq_clip_low, cfg.seq_clip_high


def loss_weights(
    mask: torch.Tensor, mode: str, *, n_seqs: int, n_tokens: int, max_len: int
) -> torch.Tensor:
    """Per-token loss weights of ``mask`` under aggregation ``mode`` (see :data:`AGGREGATIONS`).

    Raises:
        ValueError: unknown mode; the message lists the known ones.
    """
    if mode not in AGGREGATIONS:
        raise ValueError(f"unknown loss aggregation {mode!r}; choose one of {sorted(AGGREGATIONS)}")
    return AGGREGATIONS[mode](mask.float(), n_seqs, n_tokens, max_len)


# ---------------------------------------------------------------------------- the loss


class LossConfig(BaseModel):
    """The GRPO objective: the training config's ``loss`` section, used by :func:`policy_loss`."""

    model_config = ConfigDict(extra="forbid")

    clip_low: float = Field(default=0.2, ge=0)
    """Ratios below ``1 - clip_low`` stop pushing a negative-advantage token down."""
    clip_high: float = Field(default=0.2, ge=0)
    """Ratios above ``1 + clip_high`` stop pushing a positive-advantage token up (DAPO's
    clip-higher uses a larger value here, e.g. 0.28)."""
    kl_beta: float = Field(default=0.0, ge=0)
    """Weight of the k3 KL penalty to the reference policy; DeepSeek-R1 style runs use
    0.001-0.04. 0 skips the reference policy entirely."""
    aggregation: str = "token_mean"
    """``token_mean`` (DAPO, NeMo RL), ``seq_mean_token_mean`` (GRPO paper) or
    ``seq_mean_token_sum_norm`` (Dr. GRPO); see :data:`AGGREGATIONS`."""
    normalize_std: bool = True
    """Divide advantages by the group's std (GRPO); off is Dr. GRPO's ``r - mean``."""
    policy_loss: str = "clipped"
    """The per-token surrogate, by name in :data:`POLICY_LOSSES` (``clipped``: PPO/GRPO's)."""
    # ---- algos: importance ratio level (GSPO) and rollout correction
    ratio_level: str = "token"
    """``token``: PPO/GRPO's per-token ratio. ``sequence``: GSPO's (Zheng et al. 2025)
    length-normalised sequence ratio ``exp(mean_t (logp_t - old_t))``, clipped to
    ``[1 - seq_clip_low, 1 + seq_clip_high]`` and applied to every token of the sequence
    (``aggregation: seq_mean_token_mean`` gives the paper's per-sequence mean)."""
    seq_clip_low: float = Field(default=3e-4, ge=0)
    """``ratio_level: sequence``: lower clip range (GSPO's 3e-4)."""
    seq_clip_high: float = Field(default=4e-4, ge=0)
    """``ratio_level: sequence``: upper clip range (GSPO's 4e-4)."""
    rollout_correction: RolloutCorrectionConfig = Field(default_factory=RolloutCorrectionConfig)
    """Engine/trainer mismatch correction (TIS, IcePop-style masks): off by default; see
    :mod:`envhub.trainer.algo.correction`."""
    distill: DistillConfig | None = None
    """On-policy distillation (:mod:`envhub.trainer.algo.distill`): per-token reverse KL to a
    teacher on the student's samples, alone or added to GRPO's advantages. Unset: off, and
    the GRPO path is exactly as without it."""

    @field_validator("aggregation", "policy_loss", "ratio_level")
    @classmethod
    def _check_registered(cls, v: str, info: Any) -> str:
        table = {"aggregation": AGGREGATIONS, "policy_loss": POLICY_LOSSES}.get(
            info.field_name, RATIO_LEVELS
        )
        if v not in table:
            raise ValueError(f"must be one of {sorted(table)}")
        return v


@dataclass
class LossTerms:
    """The loss of one micro-batch and the sums its statistics are built from."""

    loss: torch.Tensor
    """Scalar, ``sum(weights * per_token_loss)``; differentiable."""
    n_tokens: float
    """Number of policy tokens (mask sum) in this micro-batch."""
    kl_sum: float
    clipped_sum: float
    ratio_sum: float
    is_weight_sum: float = 0.0


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    weights: torch.Tensor,
    cfg: LossConfig,
    ref_logp: torch.Tensor | None = None,
    is_weights: torch.Tensor | None = None,
) -> LossTerms:
    """The GRPO loss of one micro-batch.

    Per token: ``-w * min(ratio * A, clip(ratio, 1 - clip_low, 1 + clip_high) * A)
    + kl_beta * k3(logp, ref_logp)`` with ``ratio = exp(logp - old_logp)`` and ``w`` the
    importance weight; the surrogate is ``cfg.policy_loss`` (:data:`POLICY_LOSSES`) and the
    ratio ``cfg.ratio_level`` (:data:`RATIO_LEVELS`: with ``sequence``, GSPO's sequence ratio
    and ``seq_clip_low``/``seq_clip_high``).

    Args:
        logp: ``[B, T]`` current policy logprobs (differentiable).
        old_logp: ``[B, T]`` logprobs of the policy that sampled the batch.
        advantages: ``[B]`` sequence advantages, broadcast over tokens; or ``[B, T]`` per-token
            advantages (on-policy distillation adds its per-token term to the sequence's).
        mask: ``[B, T]`` 1 on policy tokens.
        weights: ``[B, T]`` aggregation weights from :func:`loss_weights`.
        cfg: Clip range and KL weight.
        ref_logp: ``[B, T]`` reference logprobs; required when ``cfg.kl_beta > 0``.
        is_weights: ``[B, T]`` importance weights
            (:func:`envhub.trainer.algo.correction.importance_weights`: off-policy and rollout
            correction) multiplying the surrogate (not the KL term); None when there are none.
    """
    mask = mask.float()
    adv = advantages.float()
    adv = adv.unsqueeze(-1) if adv.dim() == 1 else adv  # [B, 1], or [B, T] per token
    ratio, low, high = RATIO_LEVELS[cfg.ratio_level](logp, old_logp, mask, cfg)
    per_token, was_clipped = POLICY_LOSSES[cfg.policy_loss](ratio, adv, low, high)
    if is_weights is not None:
        per_token = per_token * is_weights
    kl = torch.zeros_like(logp)
    if cfg.kl_beta > 0:
        if ref_logp is None:
            raise ValueError("kl_beta > 0 needs ref_logp (reference policy logprobs)")
        kl = k3_kl(logp, ref_logp)
        per_token = per_token + cfg.kl_beta * kl
    was_clipped = was_clipped.expand_as(mask)
    return LossTerms(
        loss=(weights * per_token * mask).sum(),
        n_tokens=float(mask.sum()),
        kl_sum=float((kl.detach() * mask).sum()),
        clipped_sum=float((was_clipped * mask).sum()),
        ratio_sum=float((ratio.detach().expand_as(mask) * mask).sum()),
        is_weight_sum=float((is_weights * mask).sum()) if is_weights is not None else 0.0,
    )
