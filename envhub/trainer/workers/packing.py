"""One row per micro-batch: the shared prompt computed once, no padding.

GRPO samples come in groups that share their prompt, and a padded micro-batch computes that
prompt once per sample and pads every sample to the longest. A packed micro-batch is a
single row: the samples' common prefix once, then each sample's own tokens as a segment,
with position ids that restart after the prefix; a segment sees the prefix and itself only
(causally), block by block (:mod:`envhub.trainer.workers.segments`). The logits are the
padded path's, to float rounding, and so are the gradients (the prefix's activations
receive every segment's gradient, as the shared tensor they are).

:func:`pack` builds the row; the policy computes logprobs on the kept rows' logits and
reads them into the padded ``[B, T']`` layout (``Packed.index``), so the loss code is the
same for both paths and no padded ``[B, T', V]`` tensor is ever built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from envhub.trainer.algo.batch import Sample
from envhub.trainer.workers.segments import Segments


@dataclass
class Packed:
    """A micro-batch as one row (see the module docstring)."""

    input_ids: torch.Tensor
    """``[1, L]``: the common prefix, then every sample's remaining tokens."""
    position_ids: torch.Tensor
    """``[1, L]``: 0.. through the prefix, then from the prefix length again in each segment."""
    segments: Segments
    """Where the prefix (computed once for the whole micro-batch) ends and each sample's
    segment lies in the row."""
    keep: torch.Tensor
    """``[K]``: the row positions whose logits are needed (``logits_to_keep``)."""
    index: torch.Tensor
    """``[B, T']``: for padded column ``start + j`` of sample ``b``, its place in ``keep``."""


def common_prefix(samples: Sequence[Sample]) -> int:
    """Tokens shared by every sample before the first policy token of any of them."""
    firsts = [s.loss_mask.index(1) if 1 in s.loss_mask else len(s.tokens) for s in samples]
    limit = min(min(firsts), min(len(s.tokens) for s in samples))
    first = samples[0].tokens
    n = 0
    while n < limit and all(s.tokens[n] == first[n] for s in samples):
        n += 1
    return n


def pack(samples: Sequence[Sample], start: int, width: int) -> Packed:
    """Pack a micro-batch whose padded form is ``width`` tokens wide.

    Args:
        samples: The micro-batch, in the order of its padded tensors.
        start: First padded target column whose logits are needed (as in the padded path).
        width: The padded width ``L`` (targets are ``L - 1`` wide).
    """
    prefix = common_prefix(samples)
    tokens = list(samples[0].tokens[:prefix])
    positions = list(range(prefix))
    starts = []
    for s in samples:
        starts.append(len(tokens))
        own = s.tokens[prefix:]
        tokens += own
        positions += range(prefix, prefix + len(own))

    def place(b: int, p: int) -> int:
        return p if p < prefix else starts[b] + p - prefix

    wanted = [
        [place(b, p) if p <= len(s.tokens) - 2 else -1 for p in range(start, width - 1)]
        for b, s in enumerate(samples)
    ]
    keep = sorted({q for row in wanted for q in row if q >= 0}) or [0]
    slot = {q: i for i, q in enumerate(keep)}
    index = torch.tensor([[slot.get(q, 0) for q in row] for row in wanted], dtype=torch.long)
    return Packed(
        input_ids=torch.tensor([tokens], dtype=torch.long),
        position_ids=torch.tensor([positions], dtype=torch.long),
        segments=Segments(
            prefix,
            tuple((a, a + len(s.tokens) - prefix) for a, s in zip(starts, samples, strict=True)),
        ),
        keep=torch.tensor(keep, dtype=torch.long),
        index=index.reshape(len(samples), max(0, width - 1 - start)),
    )
