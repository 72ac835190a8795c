"""Attention over a packed row by segment: no query meets a key its mask would hide.

A packed micro-batch (:mod:`envhub.trainer.workers.packing`) is one row: the samples' shared
prefix, then each sample's own tokens as a segment that sees the prefix and itself. Given that
row and an ``L x L`` mask, SDPA scores every query against every key and masks out most of them:
a GRPO group of 8 responses of ~100 tokens after a 48-token prompt is an 850-token row, 361,000
causal scores of which 118,000 are wanted. :func:`segment_attention` computes the wanted
blocks only: the prefix causally on itself, then each segment's queries against the prefix's
keys and its own (causal within the segment). The numbers are the masked SDPA's, to float
rounding (``tests/trainer/test_packing.py``), and the ``L x L`` mask is never built.

It is registered with transformers as the attention implementation :data:`NAME`
(:func:`use_segment_attention`); a forward given ``envhub_segments`` runs it, any other forward
(padded micro-batches, generation) runs transformers' own SDPA path unchanged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

NAME = "envhub_segments"
"""The attention implementation's name in transformers' registry."""


@dataclass(frozen=True)
class Segments:
    """Where a packed row's prefix ends and each segment lies (row positions, end exclusive)."""

    prefix: int
    bounds: tuple[tuple[int, int], ...]
    _built: dict[torch.device, list[torch.Tensor]] = field(
        default_factory=dict, compare=False, repr=False
    )
    """The masks by device, built once for all layers of a forward and their backward."""

    def masks(self, device: torch.device) -> list[torch.Tensor]:
        """Per segment, ``[n, prefix + n]``: every prefix key, then its own keys causally."""
        if device not in self._built:
            self._built[device] = [
                torch.ones(end - start, self.prefix + end - start, dtype=torch.bool, device=device)
                .tril(diagonal=self.prefix)
                for start, end in self.bounds
            ]  # fmt: skip
        return self._built[device]


def _repeat_kv(x: torch.Tensor, groups: int) -> torch.Tensor:
    """``[B, Hkv, L, D]`` -> ``[B, Hkv * groups, L, D]`` (each key/value head shared by a group)."""
    return x if groups == 1 else x.repeat_interleave(groups, dim=1)


def segment_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    envhub_segments: Segments | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """The attention interface of transformers: ``[B, H, L, D]`` in, ``[B, L, H, D]`` out.

    Without ``envhub_segments`` this is transformers' SDPA attention, mask and all.
    """
    if envhub_segments is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    groups = getattr(module, "num_key_value_groups", 1)
    key, value = _repeat_kv(key, groups), _repeat_kv(value, groups)
    p = envhub_segments.prefix
    parts = []
    if p:
        parts.append(
            F.scaled_dot_product_attention(
                query[:, :, :p], key[:, :, :p], value[:, :, :p],
                is_causal=True, dropout_p=dropout, scale=scaling,
            )
        )  # fmt: skip
    masks = envhub_segments.masks(query.device)
    for (start, end), mask in zip(envhub_segments.bounds, masks, strict=True):
        if end == start:
            continue
        keys = torch.cat((key[:, :, :p], key[:, :, start:end]), dim=2)
        values = torch.cat((value[:, :, :p], value[:, :, start:end]), dim=2)
        parts.append(
            F.scaled_dot_product_attention(
                query[:, :, start:end], keys, values,
                attn_mask=mask, dropout_p=dropout, scale=scaling,
            )
        )  # fmt: skip
    return torch.cat(parts, dim=2).transpose(1, 2).contiguous(), None


def use_segment_attention(model: torch.nn.Module) -> bool:
    """Register :data:`NAME` with transformers (once) and make it ``model``'s attention.

    Returns False, with a warning, for a model that cannot take a registered attention
    implementation (its micro-batches then stay padded: the same numbers, more compute).
    """
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(NAME, segment_attention)
    AttentionMaskInterface.register(NAME, sdpa_mask)  # padded forwards: SDPA's masks
    try:
        model.set_attn_implementation(NAME)
    except (ValueError, NotImplementedError) as e:
        logging.getLogger("envhub.trainer").warning(
            "train.pack: %s cannot run packed rows (%s); its micro-batches stay padded",
            type(model).__name__, e,
        )  # fmt: skip
        return False
    return True
