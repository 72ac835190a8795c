"""The gathered state dict as vLLM's ``WeightSource`` (``generation.weight_transfer: vllm``).

Imports vLLM at the top: only :mod:`envhub.trainer.refit.vllm_transfer` imports it, once the flag
is on and the API was found.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import torch
from vllm.distributed.weight_transfer import ParamMeta, WeightSource

from envhub.trainer.refit.collective import tensor_specs, to_dtype


class StateSource(WeightSource):
    """The round's full state dict (Hugging Face names), loaded before every send.

    ``metadata()`` and iteration walk the same entries in state-dict order, as vLLM requires;
    a tensor that aliases an earlier one (tied ``lm_head.weight``) is left out: vLLM's models
    load the tied head from the embedding. Shapes never change between rounds.
    """

    def __init__(self) -> None:
        """Empty until :meth:`load`."""
        self.state: Mapping[str, torch.Tensor] = {}
        self.meta: list[ParamMeta] = []

    def load(self, state: Mapping[str, torch.Tensor]) -> None:
        """The tensors to send this round."""
        self.state = state
        self.meta = [
            ParamMeta(s.name, to_dtype(s.dtype), s.shape)
            for s in tensor_specs(state)
            if s.alias_of is None
        ]

    def metadata(self) -> list[ParamMeta]:
        """Name, dtype and full shape of every tensor sent, in sending order."""
        return list(self.meta)

    def __iter__(self) -> Iterator[tuple[str, torch.Tensor]]:
        """``(name, tensor)`` in :meth:`metadata`'s order."""
        for m in self.meta:
            yield m.name, self.state[m.name].detach()
