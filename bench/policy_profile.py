"""Where a policy update's time goes: the GRPO race's training batch, phase by phase and op by op.

Builds a :class:`envhub.trainer.workers.policy.Policy` in this process (no Ray, no engine), as
``bench/policy_memory.py`` does, on a batch shaped like ``bench/grpo_step.py --race-trl``'s step:
``--groups`` groups of ``--group-size`` samples, each group sharing a ``--prompt-len``-token
prompt, completions of ``--min-tokens``..``--max-tokens`` tokens (seeded), micro-batches of
``--micro-batch-size``. After ``--warmup`` updates it times ``--steps`` more, phase by phase:

- ``model forward``: the transformer and the kept rows' vocabulary projection;
- ``logprobs``: log-softmax, the targets' logprobs and the entropy over the kept logits;
- ``loss + backward``: the GRPO surrogate and autograd through all of the above;
- ``clip``: the gradient norm and its clipping;
- ``optimizer``: AdamW and the schedule.

With ``--profile`` one more update runs under ``torch.profiler`` and the ops that took the most
CPU time (self) are printed: which matmuls, attention, softmax or copies the phases are made of.

    python bench/policy_profile.py                        # SmolLM2, the race's batch, 2 threads
    python bench/policy_profile.py --profile              # and the top ops of one update
    python bench/policy_profile.py --no-pack              # padded micro-batches instead
    python bench/policy_profile.py --compile              # torch.compile of the model

Prints one JSON object last (phase seconds per update, the loss and grad norm of the last
update, so that a variant can be checked to compute the same numbers).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def batch(args: argparse.Namespace, vocab: int) -> list:
    """``--groups`` seeded groups of the race's shape, weighted as the trainer weights them."""
    import torch

    from envhub.trainer.algo.batch import Sample, assign_weights

    g = torch.Generator().manual_seed(args.seed)
    samples = []
    for _ in range(args.groups):
        prompt = torch.randint(100, min(40000, vocab), (args.prompt_len,), generator=g).tolist()
        for i in range(args.group_size):
            n = int(torch.randint(args.min_tokens, args.max_tokens + 1, (1,), generator=g))
            response = torch.randint(100, min(40000, vocab), (n,), generator=g).tolist()
            mask = [0] * len(prompt) + [1] * n
            engine_lp = [-2.0 if m else 0.0 for m in mask]
            samples.append(Sample(prompt + response, mask, engine_lp, float(i % 3 - 1)))
    assign_weights(samples, "token_mean", norm_len=args.max_tokens)
    return samples


class Clock:
    """Seconds spent in wrapped callables, by phase name."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def wrap(self, name: str, fn):
        def timed(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.seconds[name] += time.perf_counter() - t0

        return timed


def instrument(policy, clock: Clock, compiled: bool) -> None:
    """Time the policy's phases without changing what it computes."""
    import envhub.trainer.workers.policy as policy_module

    if not compiled:  # a compiled model's forward is traced: a timer in it would break the graph
        policy.model.forward = clock.wrap("model forward", policy.model.forward)
    policy_module.logprobs_and_entropy = clock.wrap("logprobs", policy_module.logprobs_and_entropy)
    policy._micro_step = clock.wrap("micro-step", policy._micro_step)
    policy._clip_grad = clock.wrap("clip", policy._clip_grad)
    policy.optimizer.step = clock.wrap("optimizer", policy.optimizer.step)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--groups", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--prompt-len", type=int, default=48)
    parser.add_argument("--min-tokens", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--micro-batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-pack", action="store_true", help="padded micro-batches")
    parser.add_argument("--no-fused", action="store_true", help="the model's own MLP and norms")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument("--profile", action="store_true", help="top ops of one more update")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()

    import torch

    from envhub.engines.weights import resolve_model
    from envhub.trainer.algo.grpo import LossConfig
    from envhub.trainer.config import OptimConfig
    from envhub.trainer.workers.policy import Policy

    torch.set_num_threads(args.threads)
    total = args.warmup + args.steps + int(args.profile)
    policy = Policy(
        str(resolve_model(args.model)),
        optim=OptimConfig(lr=1e-6),
        loss=LossConfig(),
        total_optim_steps=total,
        temperature=1.0,
        micro_batch_size=args.micro_batch_size,
        dtype="float32",
        seed=args.seed,
        pack=not args.no_pack,
        fused=not args.no_fused,
    )
    if args.compile:
        policy.model.compile(dynamic=True)
    samples = batch(args, policy.model.config.vocab_size)
    tokens = sum(len(s.tokens) for s in samples)
    policy_tokens = sum(s.n_policy_tokens for s in samples)
    for _ in range(args.warmup):
        policy.train([samples])
    clock = Clock()
    instrument(policy, clock, args.compile)
    walls, stats = [], {}
    for _ in range(args.steps):
        t0 = time.perf_counter()
        stats = policy.train([samples])
        walls.append(time.perf_counter() - t0)
    per = {k: v / args.steps for k, v in clock.seconds.items()}
    phases = {
        "model forward": per.get("model forward", 0.0),
        "logprobs": per.get("logprobs", 0.0),
        "loss + backward": per["micro-step"] - per.get("model forward", 0) - per.get("logprobs", 0),
        "clip": per.get("clip", 0.0),
        "optimizer": per.get("optimizer", 0.0),
    }
    update = sum(walls) / len(walls)
    phases["other (collate, packing, stats)"] = update - sum(phases.values())
    print(
        f"{len(samples)} samples, {tokens} tokens ({policy_tokens} policy tokens), micro-batches "
        f"of {args.micro_batch_size}, {args.threads} threads, pack={not args.no_pack}, "
        f"fused={not args.no_fused}, compile={args.compile}"
    )
    print(f"update: {update:.2f} s ({policy_tokens / update:.0f} policy tokens/s)")
    for name, s in phases.items():
        print(f"  {name:34s} {s:7.2f} s  {100 * s / update:5.1f}%")
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            policy.train([samples])
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.top))
    result = {
        "update_s": round(update, 3),
        "phases_s": {k: round(v, 3) for k, v in phases.items()},
        "tokens": tokens,
        "policy_tokens": policy_tokens,
        "loss": stats["loss"],
        "grad_norm": stats["grad_norm"],
        "pack": not args.no_pack,
        "fused": not args.no_fused,
        "compile": args.compile,
        "threads": args.threads,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
