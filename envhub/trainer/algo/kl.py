"""KL estimates from two policies' per-token logprobs.

The loss's KL term to the reference, and rollout correction's mismatch KL between the engine
and the trainer.
"""

from __future__ import annotations

import torch


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(policy || reference): ``exp(d) - d - 1``, ``d = ref - logp``.

    Unbiased and always >= 0 (Schulman, "Approximating KL divergence", 2020).
    """
    d = ref_logp - logp
    return torch.exp(d) - d - 1
