"""Peak memory and seconds per update of one policy worker, on a race-shaped micro-batch.

Builds a :class:`envhub.trainer.workers.policy.Policy` in this process (no Ray, no engine) and runs
``--steps`` updates on one group of samples shaped like ``bench/grpo_step.py --race-trl``: a
``--group-size`` group sharing a ``--prompt-len``-token prompt, completions of
``--min-tokens``..``--max-tokens`` tokens (seeded), one micro-batch of the whole group. Prints
the peak resident set size (``ru_maxrss``: run it in a fresh process for each variant), the
seconds of each update and the loss, entropy and grad norm (to check that a change kept the
numbers).

    OMP_NUM_THREADS=1 python bench/policy_memory.py                  # SmolLM2, packed
    OMP_NUM_THREADS=1 python bench/policy_memory.py --no-pack        # the padded path
    OMP_NUM_THREADS=1 python bench/policy_memory.py --activation-checkpointing
    OMP_NUM_THREADS=1 python bench/policy_memory.py --lora-rank 16   # LoRA (peft), all-linear
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def group(args: argparse.Namespace) -> list:
    """One prompt's group of samples with seeded random tokens and advantages."""
    import torch

    from envhub.trainer.algo.batch import Sample, assign_weights

    g = torch.Generator().manual_seed(args.seed)
    prompt = torch.randint(100, 40000, (args.prompt_len,), generator=g).tolist()
    samples = []
    for i in range(args.group_size):
        n = int(torch.randint(args.min_tokens, args.max_tokens + 1, (1,), generator=g))
        response = torch.randint(100, 40000, (n,), generator=g).tolist()
        mask = [0] * len(prompt) + [1] * n
        engine_lp = [-2.0 if m else 0.0 for m in mask]
        samples.append(Sample(prompt + response, mask, engine_lp, float(i % 3 - 1)))
    assign_weights(samples, "token_mean", norm_len=args.max_tokens)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--prompt-len", type=int, default=100)
    parser.add_argument("--min-tokens", type=int, default=128)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-pack", action="store_true", help="padded micro-batches")
    parser.add_argument("--activation-checkpointing", action="store_true")
    parser.add_argument("--lora-rank", type=int, default=0, help="0: full fine-tuning")
    args = parser.parse_args()

    from envhub.engines.weights import resolve_model
    from envhub.trainer.algo.grpo import LossConfig
    from envhub.trainer.config import LoraSettings, OptimConfig
    from envhub.trainer.workers.policy import Policy

    optim = OptimConfig(lr=1e-6)  # the config's defaults otherwise
    policy = Policy(
        str(resolve_model(args.model)),
        optim=optim,
        loss=LossConfig(),
        total_optim_steps=args.steps,
        temperature=args.temperature,
        micro_batch_size=args.group_size,
        dtype=args.dtype,
        seed=args.seed,
        pack=not args.no_pack,
        fused=True,
        lora=LoraSettings(rank=args.lora_rank, alpha=2 * max(args.lora_rank, 1)),
        activation_checkpointing=args.activation_checkpointing,
    )
    samples = group(args)
    loaded_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    seconds, stats = [], {}
    for _ in range(args.steps):
        t0 = time.perf_counter()
        stats = policy.train([samples])
        seconds.append(round(time.perf_counter() - t0, 2))
    result = {
        "pack": not args.no_pack,
        "activation_checkpointing": args.activation_checkpointing,
        "lora_rank": args.lora_rank,
        "tokens": sum(len(s.tokens) for s in samples),
        "rss_after_load_mb": round(loaded_mb),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "seconds_per_update": seconds,
        "loss": stats["loss"],
        "entropy_sum": stats["entropy_sum"],
        "grad_norm": stats["grad_norm"],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
