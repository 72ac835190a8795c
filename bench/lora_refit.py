"""Refit bytes and seconds with LoRA (merged weights) against a full fine-tuning refit.

The refit that runs with ``model.lora`` sends *merged* weights (``envhub.trainer.workers.lora``:
``W + alpha/r * B @ A``, the base model's names), so its bytes are the full model's; what it
adds is the merge. This times, on SmolLM2-135M-Instruct (float32) in one process:

* ``full``: ``load_state_dict`` of the policy's full state into an engine's model (the
  colocated in-process refit of full fine-tuning);
* ``lora_merged``: the ``PeftModel``'s state merged
(:func:`envhub.trainer.workers.lora.merge_state`)
  then loaded the same way (the refit that runs with ``model.lora``);

and reports the bytes of each and the bytes of the adapter alone (what an adapter-only refit
into an engine that loads adapters would send).

    OMP_NUM_THREADS=1 python bench/lora_refit.py --rank 16 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def nbytes(state: dict) -> int:
    """Bytes of a state dict's tensors (a tied weight counted once)."""
    seen = {v.data_ptr(): v.numel() * v.element_size() for v in state.values()}
    return sum(seen.values())


def main() -> None:
    """Time both refits ``--rounds`` times and print a JSON line of medians and bytes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import torch
    from transformers import AutoModelForCausalLM

    from envhub.engines.weights import resolve_model
    from envhub.trainer.config import LoraSettings
    from envhub.trainer.workers.lora import adapter_bytes, apply_lora, merge_state, scaling

    path = resolve_model(args.model)
    engine = AutoModelForCausalLM.from_pretrained(path)
    policy = apply_lora(AutoModelForCausalLM.from_pretrained(path), LoraSettings(rank=args.rank))
    for name, p in policy.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=1e-3)  # a trained adapter is not zero
    full_state = {k: v.detach().clone() for k, v in engine.state_dict().items()}  # new tensors
    times: dict[str, list[float]] = {"full": [], "lora_merged": []}
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        engine.load_state_dict(full_state)
        times["full"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        merged = merge_state(policy.state_dict(), scaling(policy))
        engine.load_state_dict(merged)
        times["lora_merged"].append(time.perf_counter() - t0)
    result = {
        "rank": args.rank,
        "full_bytes": nbytes(engine.state_dict()),  # the tied LM head once, as refits send it
        "merged_bytes": nbytes(merged),
        "adapter_bytes": adapter_bytes(policy.state_dict()),
        **{f"{k}_s": round(statistics.median(v), 3) for k, v in times.items()},
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
