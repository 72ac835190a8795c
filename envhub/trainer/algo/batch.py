"""Training samples and how a step's batch is cut into minibatches, rank shards and tensors.

A :class:`Sample` is one episode's sequence with its advantage. The driver splits the batch
into ``minibatches`` (one optimizer step each), gives every sample its aggregation weights
for its minibatch (``envhub.trainer.algo.grpo.loss_weights`` with the minibatch's global counts),
then
shards each minibatch over the data-parallel ranks. Ranks must run the same number of
forward/backward passes (FSDP's collectives pair up), so shards are padded with zero-weight
dummy samples to equal length.

Per-token lists in a :class:`Sample` that end in ``_targets`` are aligned with the targets
``tokens[1:]``: entry ``t`` belongs to token ``t + 1``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from envhub.trainer.algo.grpo import ZERO_AT_ZERO_ADVANTAGE, LossConfig, loss_weights


@dataclass
class Sample:
    """One training sequence."""

    tokens: list[int]
    loss_mask: list[int]
    """1 on tokens the policy sampled (aligned with ``tokens``)."""
    engine_logprobs: list[float]
    """Generation engine logprobs (aligned with ``tokens``; 0 where masked)."""
    advantage: float
    weights_targets: list[float] = field(default_factory=list)
    """Aggregation weights of each target token (set by :func:`assign_weights`)."""
    ref_logprobs_targets: list[float] | None = None
    """Reference policy logprobs, when the KL term is on."""
    old_logprobs_targets: list[float] | None = None
    """Trainer logprobs before the update, when there is more than one minibatch."""
    token_advantages_targets: list[float] | None = None
    """Per-token advantages added to :attr:`advantage` (on-policy distillation)."""
    source: str = ""
    """The environment (mix source) the sample came from, for per-source metrics."""
    task_id: str | None = None
    """The task the episode ran (a self-distilling teacher looks up its reference)."""

    @classmethod
    def dummy(cls, pad_id: int) -> Sample:
        """A two-token sample with no policy tokens: contributes nothing to loss or stats."""
        return cls([pad_id, pad_id], [0, 0], [0.0, 0.0], 0.0, [0.0])

    @property
    def n_policy_tokens(self) -> int:
        """Tokens that carry loss."""
        return sum(self.loss_mask[1:])


def split_minibatches(samples: Sequence[Sample], n: int) -> list[list[Sample]]:
    """Cut ``samples`` into ``n`` contiguous, nearly equal minibatches (empty ones dropped)."""
    size, rest = divmod(len(samples), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < rest else 0)
        if end > start:
            out.append(list(samples[start:end]))
        start = end
    return out


def assign_weights(minibatch: Sequence[Sample], mode: str, norm_len: int) -> None:
    """Set every sample's ``weights_targets`` for aggregation ``mode`` over the minibatch."""
    n_seqs = len(minibatch)
    n_tokens = sum(s.n_policy_tokens for s in minibatch)
    for s in minibatch:
        mask = torch.tensor(s.loss_mask[1:], dtype=torch.float32)[None]
        w = loss_weights(mask, mode, n_seqs=n_seqs, n_tokens=n_tokens, max_len=norm_len)
        s.weights_targets = w[0].tolist()


def carries_gradient(sample: Sample, loss: LossConfig) -> bool:
    """Whether the sample's loss can be nonzero.

    It is exactly 0 whatever the weights when its advantage is 0, it has no per-token
    advantages (distillation), the KL term is off and the policy loss is one of
    :data:`~envhub.trainer.algo.grpo.ZERO_AT_ZERO_ADVANTAGE`.

    Such a sample changes no gradient, so the update may leave it out once the minibatch's
    aggregation weights are set (they count it, so the others' weights stay the same).
    """
    return (
        sample.advantage != 0.0
        or sample.token_advantages_targets is not None
        or loss.kl_beta > 0
        or loss.policy_loss not in ZERO_AT_ZERO_ADVANTAGE
    )


def shard(samples: Sequence[Sample], world_size: int, pad_id: int) -> list[list[Sample]]:
    """Deal samples to ranks, longest first to the least-loaded rank; pad to equal counts."""
    order = sorted(range(len(samples)), key=lambda i: -len(samples[i].tokens))
    shards: list[list[Sample]] = [[] for _ in range(world_size)]
    load = [0] * world_size
    counts = [0] * world_size
    per_rank = -(-len(samples) // world_size)
    for i in order:
        rank = min(
            (r for r in range(world_size) if counts[r] < per_rank), key=lambda r: (load[r], r)
        )
        shards[rank].append(samples[i])
        load[rank] += len(samples[i].tokens)
        counts[rank] += 1
    for s in shards:
        s.extend(Sample.dummy(pad_id) for _ in range(per_rank - len(s)))
    return shards


def micro_batches(
    samples: Sequence[Sample], size: int, *, by_prompt: bool = False
) -> list[list[Sample]]:
    """Consecutive micro-batches of at most ``size`` samples.

    Similar lengths together (least padding), or, ``by_prompt``, samples of one prompt
    together, then by length (packed micro-batches compute a shared prompt once).
    """
    if by_prompt:
        ordered = sorted(samples, key=lambda s: (prompt_of(s), len(s.tokens)))
    else:
        ordered = sorted(samples, key=lambda s: len(s.tokens))
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


def prompt_of(sample: Sample) -> tuple[int, ...]:
    """The tokens before the sample's first policy token."""
    mask = sample.loss_mask
    return tuple(sample.tokens[: mask.index(1) if 1 in mask else len(mask)])


def collate(samples: Sequence[Sample], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-padded tensors of a micro-batch.

    Returns:
        ``input_ids``/``attention_mask`` ``[B, L]``; ``targets``, ``mask``, ``weights``,
        ``engine_logprobs`` (and ``ref_logprobs``/``old_logprobs``/``token_advantages`` when
        every sample has them) ``[B, L-1]``; ``advantages`` ``[B]``.
    """
    width = max(len(s.tokens) for s in samples)
    b = len(samples)
    ids = torch.full((b, width), pad_id, dtype=torch.long)
    attn = torch.zeros((b, width), dtype=torch.long)
    mask = torch.zeros((b, width), dtype=torch.float32)
    eng = torch.zeros((b, width), dtype=torch.float32)
    weights = torch.zeros((b, width - 1), dtype=torch.float32)
    ref = torch.zeros((b, width - 1), dtype=torch.float32)
    old = torch.zeros((b, width - 1), dtype=torch.float32)
    for i, s in enumerate(samples):
        n = len(s.tokens)
        ids[i, :n] = torch.tensor(s.tokens)
        attn[i, :n] = 1
        mask[i, :n] = torch.tensor(s.loss_mask, dtype=torch.float32)
        eng[i, :n] = torch.tensor(s.engine_logprobs, dtype=torch.float32)
        if s.weights_targets:  # empty for logprob-only passes
            weights[i, : n - 1] = torch.tensor(s.weights_targets, dtype=torch.float32)
        if s.ref_logprobs_targets is not None:
            ref[i, : n - 1] = torch.tensor(s.ref_logprobs_targets)
        if s.old_logprobs_targets is not None:
            old[i, : n - 1] = torch.tensor(s.old_logprobs_targets)
    out = {
        "input_ids": ids,
        "attention_mask": attn,
        "targets": ids[:, 1:],
        "mask": mask[:, 1:],
        "engine_logprobs": eng[:, 1:],
        "weights": weights,
        "advantages": torch.tensor([s.advantage for s in samples], dtype=torch.float32),
    }
    real = [s for s in samples if s.n_policy_tokens > 0]
    # a micro-batch of padding alone (a rank's share of a small batch) still carries the
    # reference it would need: its zeros weigh nothing, and the loss asks for it when KL is on
    if all(s.ref_logprobs_targets is not None for s in real):
        out["ref_logprobs"] = ref
    if real and all(s.old_logprobs_targets is not None for s in real):
        out["old_logprobs"] = old
    if real and all(s.token_advantages_targets is not None for s in real):
        tok_adv = torch.zeros((b, width - 1), dtype=torch.float32)
        for i, s in enumerate(samples):
            if s.token_advantages_targets is not None:
                n = len(s.token_advantages_targets)
                tok_adv[i, :n] = torch.tensor(s.token_advantages_targets, dtype=torch.float32)
        out["token_advantages"] = tok_adv
    return out
