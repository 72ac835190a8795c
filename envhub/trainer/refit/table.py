"""Which refit runs for a setting, and why a setting has none: one table.

A refit is decided by five settings of the config (engine, placement, transport, weight
transfer, LoRA) and two facts about it (GPUs on both sides; a refit check asked for). The
table below maps them to a *pair*, the name of one transport's sender and receiver
(:mod:`envhub.trainer.refit.build`), or to the config error that names the fix. Rows are read
top to bottom; the first that matches decides. ``Config`` consults :func:`pair_for` when it
validates, and the builder when it starts the actors, so a combination is allowed, refused and
built from the same row.

Imports nothing of envhub: the config imports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields


class UnsupportedRefit(ValueError):
    """The settings name no refit; the message says which setting to change."""


@dataclass(frozen=True)
class Setting:
    """What decides the refit, read from the config (``Config.refit_setting``)."""

    engine: str
    """``cluster.engine``: ``transformers`` or ``vllm``."""
    placement: str
    """``cluster.placement``: ``colocated`` or ``split``."""
    transport: str
    """``generation.transport``: ``object_store``, ``gloo`` or ``nccl``."""
    weight_transfer: str
    """``generation.weight_transfer``: ``envhub`` or ``vllm``."""
    lora: bool
    """``model.lora`` is on."""
    gpus: bool
    """``cluster.gpus_per_worker > 0`` and ``generation.gpus_per_engine > 0``."""
    verify: bool
    """``generation.verify_refit``."""


@dataclass(frozen=True)
class Row:
    """Settings it matches (a field absent: any value), and its pair or its error."""

    when: Mapping[str, frozenset]
    pair: str | None = None
    """The transport's pair (a key of ``envhub.trainer.refit.build.PAIRS``); None: refused."""
    error: str = ""
    """Refused: the message (``{transport}`` is filled in)."""

    def matches(self, setting: Setting) -> bool:
        """True when every field this row names holds one of its values in ``setting``."""
        return all(getattr(setting, k) in v for k, v in self.when.items())


def _when(**values: object) -> dict[str, frozenset]:
    return {k: frozenset(v if isinstance(v, (set, tuple)) else {v}) for k, v in values.items()}


_ENVHUB = "or keep generation.weight_transfer=envhub (the default)"
TABLE: tuple[Row, ...] = (
    Row(
        _when(weight_transfer="vllm", engine="transformers"),
        error="generation.weight_transfer=vllm moves weights into vLLM engines of their own: "
        f"set cluster.engine=vllm and cluster.placement=split, {_ENVHUB}",
    ),
    Row(
        _when(weight_transfer="vllm", placement="colocated"),
        error="generation.weight_transfer=vllm moves weights into vLLM engines of their own: "
        f"set cluster.engine=vllm and cluster.placement=split, {_ENVHUB}",
    ),
    Row(
        _when(weight_transfer="vllm", transport={"gloo", "nccl"}),
        error="generation.weight_transfer=vllm replaces generation.transport={transport} "
        f"(vLLM's nccl backend moves the weights): drop generation.transport, {_ENVHUB}",
    ),
    Row(
        _when(weight_transfer="vllm", gpus=False),
        error="generation.weight_transfer=vllm: vLLM's weight-transfer backends are GPU-only "
        "(nccl, ipc), so it needs cluster.gpus_per_worker>0 and "
        "generation.gpus_per_engine>0; on CPUs keep generation.weight_transfer=envhub "
        "with generation.transport=gloo or object_store",
    ),
    Row(_when(weight_transfer="vllm"), pair="vllm"),
    Row(
        _when(engine="transformers", placement="colocated", transport={"gloo", "nccl"}),
        error="generation.transport={transport} moves weights to engine actors, but the "
        "transformers engines of placement=colocated live in the policy workers and "
        "are refit in process: set cluster.placement=split (or cluster.engine=vllm), "
        "or drop generation.transport",
    ),
    Row(_when(engine="transformers", placement="colocated"), pair="in_process"),
    Row(
        _when(engine="vllm", transport="object_store", lora=True, verify=True),
        error="generation.verify_refit scores tokens with prompt logprobs, which vLLM 0.32's "
        "LoRA path fails on (einsum error in punica_cpu): with model.lora on vLLM "
        "engines, drop verify_refit (token_mult_prob_error still compares the engine "
        "and the trainer) or set generation.transport=gloo (merged weights)",
    ),
    Row(_when(engine="vllm", transport="object_store", lora=True), pair="adapter"),
    Row(_when(transport="object_store"), pair="object_store"),
    Row(_when(transport={"gloo", "nccl"}), pair="collective"),
)
"""Every supported combination and every refusal, first match wins (see the module)."""


def pair_for(setting: Setting) -> str:
    """The name of the pair that refits under ``setting``.

    Raises:
        UnsupportedRefit: the first matching row refuses ``setting``, or none matches.
    """
    for row in TABLE:
        if row.matches(setting):
            if row.pair is None:
                raise UnsupportedRefit(row.error.format(transport=setting.transport))
            return row.pair
    names = ", ".join(f"{f.name}={getattr(setting, f.name)}" for f in fields(setting))
    raise UnsupportedRefit(f"no refit for {names}")
