"""LoRA on the policy through ``peft`` (``model.lora``): only the adapter trains.

- :func:`apply_lora` wraps the Hugging Face model in a ``peft`` ``PeftModel`` whose base
  weights are frozen; FSDP2 then shards it as before (frozen and trainable parameters side by
  side) and AdamW holds moments for the adapter alone.
- The reference policy of the KL term is the same model with the adapter disabled
  (``PeftModel.disable_adapter``): no second copy of the weights, no reference worker.
- Refit: vLLM engines (``cluster.engine: vllm`` over ``generation.transport: object_store``)
  are started with LoRA support and get the adapter alone (:func:`adapter_files`: ``peft``'s
  two files, a few MB; written on the engine's side by
  :func:`envhub.trainer.refit.state.write_adapter`), served on every request; every other
  engine gets *merged* weights
  (:func:`merge_state`: ``W + scaling * B @ A`` under the base model's own names), as
  ``envhub eval`` loads the exported model.
- Checkpoints hold the trainable parameters (the adapter) and their optimizer state;
  ``export_final`` writes the merged model to ``OUT/final`` and the adapter alone (``peft``'s
  ``adapter_config.json`` + ``adapter_model.safetensors``) to ``OUT/final/adapter``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from envhub.trainer.config import LoraSettings

PEFT_PREFIX = "base_model.model."
"""What ``PeftModel`` puts before the base model's parameter names."""
_LORA_KEY = re.compile(r"^(?P<module>.+)\.lora_(?P<part>A|B)\.(?P<adapter>[^.]+)\.weight$")


def apply_lora(model: torch.nn.Module, settings: LoraSettings) -> torch.nn.Module:
    """``model`` with a fresh LoRA adapter (``peft``), base weights frozen.

    Raises:
        ImportError: ``peft`` is not installed; the message names the extra.
    """
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as e:
        from envhub.install import install_command

        raise ImportError(
            f"model.lora needs peft: {install_command(['trainer'])} (or pip install peft)"
        ) from e
    targets = settings.target_modules
    config = LoraConfig(
        r=settings.rank,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=targets if targets == "all-linear" else list(targets),
        bias="none",
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


def check_rank(settings: LoraSettings, model_dir: str | Path) -> None:
    """Refuse a ``model.lora.rank`` above the model's smallest hidden width, before any start.

    A rank past a layer's width adds parameters without adding expressiveness (the update
    ``B @ A`` cannot have a higher rank than the layer), and a huge one exhausts memory on
    the first step. Read from the model's ``config.json`` alone.

    Raises:
        TrainConfigError: naming ``model.lora.rank``, the limit and where it comes from.
    """
    if not settings.enabled:
        return
    from transformers import AutoConfig

    from envhub.trainer.config import TrainConfigError

    cfg = AutoConfig.from_pretrained(str(model_dir))
    widths = {
        key: getattr(cfg, key)
        for key in ("hidden_size", "intermediate_size")
        if isinstance(getattr(cfg, key, None), int)
    }
    if not widths:
        return
    key, limit = min(widths.items(), key=lambda kv: kv[1])
    if settings.rank > limit:
        raise TrainConfigError(
            f"model.lora.rank={settings.rank} is above the model's {key} ({limit}): the "
            f"adapter's update cannot have a higher rank than its layer; set model.lora.rank "
            f"to at most {limit} (8-64 is usual)"
        )


def is_lora(model: torch.nn.Module) -> bool:
    """True for a ``PeftModel`` (see :func:`apply_lora`)."""
    return hasattr(model, "disable_adapter") and hasattr(model, "peft_config")


def scaling(model: torch.nn.Module) -> float:
    """``alpha / rank`` of the model's (only) adapter, as ``peft`` applies it."""
    config = next(iter(model.peft_config.values()))
    return float(config.lora_alpha) / float(config.r)


def merge_state(state: Mapping[str, torch.Tensor], scale: float) -> dict[str, torch.Tensor]:
    """A ``PeftModel``'s full state dict as the base model's, adapters merged in.

    ``X.base_layer.weight`` becomes ``X.weight + scale * B @ A`` (in float32, then the
    weight's dtype); ``lora_A``/``lora_B`` entries go; the ``base_model.model.`` prefix goes.
    """
    parts: dict[str, dict[str, torch.Tensor]] = {}
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        name = key.removeprefix(PEFT_PREFIX)
        found = _LORA_KEY.match(name)
        if found:
            parts.setdefault(found["module"], {})[found["part"]] = value
        else:
            out[name.replace(".base_layer.", ".")] = value
    for module, ab in parts.items():
        weight = out[f"{module}.weight"]
        delta = (ab["B"].float() @ ab["A"].float()) * scale
        out[f"{module}.weight"] = (weight.float() + delta.to(weight.device)).to(weight.dtype)
    return out


def adapter_bytes(state: Mapping[str, torch.Tensor]) -> int:
    """Bytes of the adapter's tensors in a ``PeftModel`` state dict."""
    return sum(v.numel() * v.element_size() for k, v in state.items() if ".lora_" in k)


ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
"""What ``peft`` needs of a saved adapter (its README model card is left out)."""
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The ``max_lora_rank`` values vLLM accepts."""


def vllm_max_lora_rank(rank: int) -> int:
    """The smallest ``max_lora_rank`` vLLM accepts that holds ``rank``.

    Raises:
        ValueError: ``rank`` is above vLLM's largest.
    """
    for allowed in VLLM_LORA_RANKS:
        if rank <= allowed:
            return allowed
    raise ValueError(f"model.lora.rank={rank} is above vLLM's largest LoRA rank (512)")


def adapter_files(model: Any, state: Mapping[str, torch.Tensor]) -> dict[str, bytes]:
    """The adapter of ``state`` as ``peft`` writes it: file name -> contents."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="envhub-adapter-") as tmp:
        save_adapter(model, tmp, state)
        return {name: (Path(tmp) / name).read_bytes() for name in ADAPTER_FILES}


def save_adapter(model: Any, directory: str | Path, state: Mapping[str, torch.Tensor]) -> None:
    """Write the adapter of ``state`` (a gathered ``PeftModel`` state dict) with ``peft``."""
    cpu = {k: v.detach().cpu() for k, v in state.items()}
    model.save_pretrained(str(directory), state_dict=cpu)
