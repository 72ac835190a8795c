"""Refit on vLLM-CPU: new weights into the linear layers that vLLM packed for oneDNN.

After loading, vLLM-CPU packs every unquantized linear weight into a oneDNN handle (a blocked
copy of the weight) and empties the parameter, so the model's ``load_weights`` alone would
load only embeddings, norms and biases. A refit here runs in three steps:

1. :func:`capture`: the emptied weight parameter of each packed layer gets a loader that
   *records* the tensor it is given (with its shard id: ``q``/``k``/``v`` of a merged QKV
   layer, ``0``/``1`` of gate/up) instead of copying it.
2. The model's own ``load_weights`` runs: vLLM's name mapping and shard routing decide what
   goes where; embeddings, norms and biases are copied as usual.
3. :func:`repack`: each layer's recorded tensors become its ``[N, K]`` weight and vLLM's own
   post-load step packs it. The pack *is* the copy: a layer whose weight arrives whole, or
   whose shards lie back to back in memory (as they do in the flat buckets of the collective
   transports), is packed straight from the sender's tensors; other merged layers are first
   concatenated into a buffer (kept for the next refit with ``keep_plain``). The engine
   keeps no reference to the sender's tensors. The LM head's packed copy (tied to the
   embedding) is rebuilt last.

A layer the fast path cannot take (tensor-parallel shards, an unknown shard id, a wrong
shape) is loaded through its own weight loader into a plain weight first, as at start-up, so
vLLM's checks and messages apply.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch

_QKV = {"q": 0, "k": 1, "v": 2}


class _Recorder:
    """Stands in for a packed layer's weight loader during a refit: records, copies nothing."""

    def __init__(self) -> None:
        self.parts: list[tuple[Any, torch.Tensor]] = []

    def __call__(
        self, param: Any, loaded_weight: torch.Tensor, shard_id: Any = None, **kwargs: Any
    ) -> None:
        self.parts.append((kwargs.get("loaded_shard_id", shard_id), loaded_weight))


def unquantized_linear_layers(model: Any) -> Iterable[Any]:
    """The model's linear layers with vLLM's unquantized method (the ones vLLM-CPU packs)."""
    from vllm.model_executor.layers.linear import LinearBase, UnquantizedLinearMethod

    for module in model.modules():
        if isinstance(module, LinearBase) and isinstance(
            getattr(module, "quant_method", None), UnquantizedLinearMethod
        ):
            yield module


def capture(model: Any) -> dict[Any, _Recorder]:
    """Install a recording loader on every packed (emptied) linear weight of ``model``."""
    recorders = {}
    for layer in unquantized_linear_layers(model):
        if layer.weight.numel() == 0:
            recorder = recorders[layer] = _Recorder()
            layer.weight.weight_loader = recorder
    return recorders


def repack(model: Any, recorders: dict[Any, _Recorder], keep_plain: bool) -> None:
    """Pack the recorded weights of every layer, then the tied LM head (see the module doc).

    Every layer's weight is assembled (and checked) before any layer is packed, so a refused
    state dict leaves every packed layer as it was (embeddings and norms were loaded by then:
    load the full state dict again). A layer that recorded nothing keeps its old packed
    weight; the caller reports it, since ``load_weights`` did not list it.
    """
    plan = [
        (layer, recorder.parts, *_assemble(layer, recorder.parts, keep_plain))
        for layer, recorder in recorders.items()
        if recorder.parts
    ]
    for layer, parts, weight, owned in plan:
        if weight is None:
            weight, owned = _load_plain(layer, parts, keep_plain), True
        layer.weight = torch.nn.Parameter(weight, requires_grad=False)
        layer.quant_method.process_weights_after_loading(layer)
        if layer.weight.numel() and not owned:  # not packed (a plain-GEMM fallback): own it
            layer.weight = torch.nn.Parameter(weight.clone(), requires_grad=False)
    _repack_lm_head(model)


def _assemble(
    layer: Any, parts: Sequence[tuple[Any, torch.Tensor]], keep_plain: bool
) -> tuple[torch.Tensor | None, bool]:
    """The layer's ``[N, K]`` weight from its recorded parts, and whether the engine owns it.

    ``None`` when the parts are not whole shards of a single-rank layer in the layer's dtype.
    """
    if getattr(layer, "tp_size", 1) != 1:
        return None, False
    sizes = list(layer.output_partition_sizes)
    k = layer.input_size
    order = [_shard_index(shard) for shard, _ in parts]
    if len(parts) == 1 and order == [None]:
        tensors = [parts[0][1]]
        sizes = [sum(sizes)]
    elif all(isinstance(i, int) and 0 <= i < len(sizes) for i in order):
        if sorted(order) != list(range(len(sizes))):
            name = getattr(layer, "prefix", "") or type(layer).__name__
            missing = sorted(set(range(len(sizes))) - set(order))
            raise ValueError(
                f"refit gave the merged layer {name} shards {sorted(order)} of "
                f"{len(sizes)} (missing {missing}); pass the full state dict"
            )
        by_index = dict(zip(order, (t for _, t in parts), strict=True))
        tensors = [by_index[i] for i in range(len(sizes))]
    else:
        return None, False
    for tensor, rows in zip(tensors, sizes, strict=True):
        if tensor.shape != (rows, k) or tensor.dtype != layer.params_dtype:
            return None, False
    if len(tensors) == 1:
        return tensors[0], False
    run = _back_to_back(tensors)
    if run is not None:
        return run, False
    buffer = layer.__dict__.get("_envhub_concat_buffer")
    if buffer is None or buffer.shape != (sum(sizes), k):
        buffer = torch.empty(sum(sizes), k, dtype=layer.params_dtype)
    torch.cat(tensors, out=buffer)
    if keep_plain:
        layer.__dict__["_envhub_concat_buffer"] = buffer  # not a registered parameter
    return buffer, True


def _shard_index(shard: Any) -> int | None:
    if shard is None or isinstance(shard, int):
        return shard
    return _QKV.get(shard, -1) if isinstance(shard, str) else -1


def _back_to_back(tensors: Sequence[torch.Tensor]) -> torch.Tensor | None:
    """One ``[sum(n), K]`` view (no copy) of back-to-back ``[n, K]`` tensors, else ``None``.

    Back to back: row-major, in one storage, each starting where the previous one ends.
    """
    first = tensors[0]
    storage = first.untyped_storage().data_ptr()
    end = first.data_ptr()
    for t in tensors:
        if not t.is_contiguous() or t.untyped_storage().data_ptr() != storage:
            return None
        if t.data_ptr() != end:
            return None
        end += t.numel() * t.element_size()
    rows = sum(t.shape[0] for t in tensors)
    return first.as_strided((rows, first.shape[1]), (first.shape[1], 1))


def _load_plain(
    layer: Any, parts: Sequence[tuple[Any, torch.Tensor]], keep_plain: bool
) -> torch.Tensor:
    """Load ``parts`` through the layer's own weight loader into a plain weight (slow path).

    The plain weight is created as vLLM's ``create_weights`` does (shape, dtype, loader and
    the attributes loaders read), or is the one kept from the previous slow refit.
    """
    kept = layer.__dict__.get("_envhub_plain_param")
    if kept is not None:
        layer.weight = kept
    else:
        loader = (
            layer.weight_loader_v2
            if type(layer.quant_method).__name__ in _weight_loader_v2_methods()
            else layer.weight_loader
        )
        layer.quant_method.create_weights(
            layer,
            getattr(layer, "input_size_per_partition", layer.input_size),
            list(layer.output_partition_sizes),
            layer.input_size,
            layer.output_size,
            layer.params_dtype,
            weight_loader=loader,
        )
        if keep_plain:
            layer.__dict__["_envhub_plain_param"] = layer.weight  # not a registered parameter
    param = layer.weight
    for shard, tensor in parts:
        if shard is None:
            param.weight_loader(param, tensor)
        else:
            param.weight_loader(param, tensor, shard)
    return param.data


def _weight_loader_v2_methods() -> set[str]:
    from vllm.model_executor.layers import linear

    return set(getattr(linear, "WEIGHT_LOADER_V2_SUPPORTED", ()))


def _repack_lm_head(model: Any) -> None:
    """Rebuild the packed copy an embedding used as the LM head holds (stale after a refit).

    Only the LM head's copy is used (for the logits); the input embedding's is not, so
    repacking it would be wasted work. Without an ``lm_head`` attribute, repack them all.
    """
    from vllm.model_executor.layers.vocab_parallel_embedding import (
        UnquantizedEmbeddingMethod,
        VocabParallelEmbedding,
    )

    head = getattr(model, "lm_head", None)
    embeddings = [head] if isinstance(head, VocabParallelEmbedding) else list(model.modules())
    for module in embeddings:
        if isinstance(module, VocabParallelEmbedding) and isinstance(
            getattr(module, "quant_method", None), UnquantizedEmbeddingMethod
        ):
            module.quant_method.process_weights_after_loading(module)
