"""SFT tokens/s, and a distillation update's time against a GRPO update's, in one run.

One policy worker (no Ray, no engine), the trainer's own update (``Policy.train``), on the
same batch shape for all three: ``--batch`` reference conversations of ``--env`` (the SFT
data ``envhub sft`` trains on). GRPO: the same sequences as samples with advantages.
Distillation: a teacher (a second frozen copy of the model) scores the batch, then the
update with per-token advantages. Prints seconds per update (median of ``--repeats``),
tokens/s, and the ratios; ``--json OUT`` saves them.

    python bench/sft_distill.py                         # tiny random model, ~1 minute
    python bench/sft_distill.py --model smollm2 --batch 16
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch


def main() -> None:
    """Measure and print."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--env", default="rg-chain_sum")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    from transformers import AutoTokenizer

    from envhub.engines.weights import resolve_model
    from envhub.trainer.algo.batch import Sample, assign_weights
    from envhub.trainer.algo.distill import token_advantages
    from envhub.trainer.algo.grpo import LossConfig
    from envhub.trainer.config import OptimConfig
    from envhub.trainer.episodes.sft_data import SFTSource, load_source, tokenize_chat
    from envhub.trainer.workers.policy import Policy

    path = str(resolve_model(args.model))
    tok = AutoTokenizer.from_pretrained(path)
    convs, _ = load_source(SFTSource(kind="reference", env=args.env, limit=args.batch))
    batch = [tokenize_chat(tok, c) for c in convs]

    def policy() -> Policy:
        return Policy(path, optim=OptimConfig(lr=1e-6), loss=LossConfig(), total_optim_steps=100,
                      temperature=1.0, micro_batch_size=8, dtype="float32", seed=0, pack=True,
                      fused=True)  # fmt: skip

    student, teacher = policy(), policy()

    def samples(advantage: float) -> list[Sample]:
        out = [Sample(t.ids, t.mask, [0.0] * len(t.ids), advantage) for t in batch]
        assign_weights(out, "token_mean", 1)
        return out

    def sft() -> None:
        student.train([samples(1.0)])

    def grpo() -> None:
        s = samples(0.0)
        for i, x in enumerate(s):
            x.advantage = 1.0 if i % 2 else -1.0
        student.train([s])

    def distill() -> None:
        s = samples(0.0)
        for x, t_lp in zip(s, teacher.logprobs(s), strict=True):
            student_lp = [-1.0] * (len(x.tokens) - 1)  # stands for the engine's logprobs
            x.token_advantages_targets = token_advantages(student_lp, t_lp, x.loss_mask[1:], 1)[0]
        student.train([s])

    tokens = sum(len(t.ids) for t in batch)
    figures: dict[str, float] = {"tokens_per_batch": tokens, "sequences": len(batch)}
    for name, fn in (("sft", sft), ("grpo", grpo), ("distill", distill)):
        fn()  # warm-up
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        figures[f"{name}_s"] = statistics.median(times)
    figures["sft_tokens_per_s"] = tokens / figures["sft_s"]
    figures["distill_over_grpo"] = figures["distill_s"] / figures["grpo_s"]
    figures["sft_over_grpo"] = figures["sft_s"] / figures["grpo_s"]
    for k, v in figures.items():
        print(f"{k:>20}: {v:.4g}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), **figures}, f, indent=1)


if __name__ == "__main__":
    main()
