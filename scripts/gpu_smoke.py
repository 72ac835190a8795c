"""Smoke test of the CUDA paths envhub's trainer owns, on one GPU (or ``--device cpu``).

Needs only PyTorch, transformers and pydantic (envhub's one core dependency that transformers
does not bring; ``peft`` for the LoRA check, skipped without it): no Ray, no vLLM, nothing
downloaded (the tiny random Llama is built locally). Run from a checkout:

    python scripts/gpu_smoke.py                 # CUDA, nccl, float32 and bfloat16
    python scripts/gpu_smoke.py --device cpu    # the same checks on CPU with gloo

Checks, one line each: the policy worker's FSDP2 (``fully_shard`` at world size 1 on the nccl
or gloo group) training in float32 and bfloat16; the transformers engine generating on the
device; one GRPO step on its samples (group advantages, aggregation weights, the update); an
in-process refit (policy weights into the engine, compared); the logprob check between the
engine and the policy on the sampled tokens; LoRA (only the adapter trains, the reference is
the base model); activation checkpointing (the same update). A summary line ends it; the exit
status is 1 if any check failed. Every check must finish within ``--budget-s`` (300) in all.
"""

from __future__ import annotations

import argparse
import math
import socket
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TOLERANCE = {"float32": 1e-3, "bfloat16": 0.15}
"""Largest |engine - policy| logprob of a sampled token, by dtype (bf16 rounds at ~1e-2)."""


class Skip(Exception):
    """A check that cannot run here (a missing optional package)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _init_group(device: str) -> str:
    """A world-size-1 process group: nccl on CUDA, gloo on CPU; returns the backend."""
    import torch
    import torch.distributed as dist

    backend = "nccl" if device == "cuda" else "gloo"
    if device == "cuda":
        torch.cuda.set_device(0)
    dist.init_process_group(
        backend, init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1
    )
    return backend


def _policy(model: str, device: str, dtype: str, **extra: Any) -> Any:
    """A :class:`envhub.trainer.workers.policy.Policy` (sharded: the process group exists)."""
    from envhub.trainer.algo.grpo import LossConfig
    from envhub.trainer.config import OptimConfig
    from envhub.trainer.workers.policy import Policy

    return Policy(
        model,
        optim=OptimConfig(lr=1e-3),
        loss=LossConfig(kl_beta=0.0),
        total_optim_steps=4,
        temperature=1.0,
        micro_batch_size=4,
        dtype=dtype,
        seed=0,
        pack=True,
        fused=True,
        device=device,
        **extra,
    )


def _samples(engine: Any, n: int = 4, max_tokens: int = 12) -> list[Any]:
    """One group of ``n`` sampled answers to one prompt, with advantages (one GRPO group)."""
    import torch

    from envhub.engines.types import SamplingParams
    from envhub.trainer.algo.batch import Sample, assign_weights
    from envhub.trainer.algo.grpo import group_advantages

    prompt = engine.tokenizer("Add 2 and 3.").input_ids
    params = SamplingParams(max_tokens=max_tokens, temperature=1.0, seed=0)
    gens = engine.generate([prompt] * n, params)
    # any reward with a spread: odd token ids, ties broken by position
    rewards = torch.tensor([sum(t % 2 for t in g.token_ids) + 0.1 * i for i, g in enumerate(gens)])
    adv = group_advantages(rewards, [0] * n)
    out = []
    for g, a in zip(gens, adv.tolist(), strict=True):
        tokens = prompt + g.token_ids
        mask = [0] * len(prompt) + [1] * len(g.token_ids)
        out.append(Sample(tokens, mask, [0.0] * len(prompt) + g.logprobs, a))
    assign_weights(out, "token_mean", norm_len=max_tokens)
    return out


def _max_logprob_gap(policy: Any, samples: list[Any]) -> float:
    """Largest |engine - policy| logprob over the sampled tokens."""
    worst = 0.0
    for s, lp in zip(samples, policy.logprobs(samples), strict=True):
        for j in range(1, len(s.tokens)):
            if s.loss_mask[j]:
                worst = max(worst, abs(s.engine_logprobs[j] - lp[j - 1]))
    return worst


class Smoke:
    """The checks, sharing one model, engine and policy per dtype."""

    def __init__(self, device: str, dtypes: list[str], budget_s: float) -> None:
        """Build the tiny model on disk (no download)."""
        from envhub.engines.weights import tiny_llama_path

        self.device, self.dtypes = device, dtypes
        self.model = str(tiny_llama_path())
        self.deadline = time.monotonic() + budget_s
        self.results: list[tuple[str, str]] = []

    def run(self, name: str, check: Callable[[], str]) -> None:
        """Run one check and print its line: PASS/FAIL/SKIP, seconds, detail."""
        t0 = time.perf_counter()
        if time.monotonic() > self.deadline:
            status, detail = "FAIL", "not run: the time budget is spent"
        else:
            try:
                status, detail = "PASS", check()
            except Skip as e:
                status, detail = "SKIP", str(e)
            except Exception as e:  # noqa: BLE001 (a smoke test reports every failure, goes on)
                status, detail = "FAIL", f"{type(e).__name__}: {e}"
                traceback.print_exc(limit=3, file=sys.stderr)
        print(f"{status} {name} ({time.perf_counter() - t0:.1f}s) {detail}", flush=True)
        self.results.append((name, status))

    def dtype_checks(self, dtype: str) -> None:
        """FSDP2 training, the engine, a GRPO step, the refit and the logprob check."""
        from envhub.engines.transformers_engine import TransformersEngine
        from envhub.trainer.refit.state import load_into_engine

        state: dict[str, Any] = {}

        def fsdp2() -> str:
            state["policy"] = policy = _policy(self.model, self.device, dtype)
            assert policy.sharded, "the policy was not sharded with fully_shard"
            stats = policy.train([_fixed_samples()])
            _check_finite(stats)
            return f"loss {stats['loss']:.4f} grad_norm {stats['grad_norm']:.4f}"

        def engine() -> str:
            state["engine"] = e = TransformersEngine.from_pretrained(
                self.model, dtype=dtype, device=self.device
            )
            load_into_engine(e, state["policy"].full_state_dict())
            state["samples"] = samples = _samples(e)
            return f"{sum(s.n_policy_tokens for s in samples)} tokens on {self.device}"

        def grpo_step() -> str:
            stats = state["policy"].train([state["samples"]])
            _check_finite(stats)
            return f"loss {stats['loss']:.4f} grad_norm {stats['grad_norm']:.4f}"

        def refit() -> str:
            policy, e = state["policy"], state["engine"]
            seconds = load_into_engine(e, policy.full_state_dict())
            want, got = policy.full_state_dict(), e.model.state_dict()
            worst = max(float((want[k].float() - got[k].float()).abs().max()) for k in want)
            assert worst == 0.0, f"engine weights differ from the policy's by {worst:.3g}"
            return f"{len(want)} tensors in {seconds:.3f}s, identical"

        def logprob_check() -> str:
            samples = _samples(state["engine"])  # sampled with the refit weights
            gap = _max_logprob_gap(state["policy"], samples)
            assert gap <= TOLERANCE[dtype], f"max |engine - policy| logprob {gap:.3g}"
            return f"max |engine - policy| logprob {gap:.2e} (<= {TOLERANCE[dtype]})"

        for name, check in [
            ("fsdp2", fsdp2),
            ("engine_generate", engine),
            ("grpo_step", grpo_step),
            ("refit_in_process", refit),
            ("logprob_check", logprob_check),
        ]:
            self.run(f"{name}[{dtype}]", check)

    def lora(self) -> str:
        """Only the adapter trains; the adapter-disabled model is the untouched base."""
        try:
            import peft  # noqa: F401
        except ImportError:
            raise Skip("peft is not installed (pip install peft)") from None
        from envhub.trainer.config import LoraSettings

        policy = _policy(self.model, self.device, "float32", lora=LoraSettings(rank=4, alpha=8))
        samples = _fixed_samples()
        base = policy.logprobs(samples)
        policy.train([samples])
        policy.train([samples])
        ref = policy.logprobs(samples, reference=True)
        gap = _max_gap(ref, base)
        assert gap < 1e-4, f"the reference moved by {gap:.3g}"
        moved = policy.logprobs(samples)
        delta = _max_gap(moved, base)
        assert delta > 1e-5, "the adapter did not change the policy"
        return f"policy moved {delta:.2e}, reference (adapter off) within {gap:.1e}"

    def activation_checkpointing(self) -> str:
        """The same update with and without recomputation."""
        samples = _fixed_samples()
        a = _policy(self.model, self.device, "float32").train([samples])
        b = _policy(self.model, self.device, "float32", activation_checkpointing=True)
        stats = b.train([samples])
        assert math.isclose(a["loss"], stats["loss"], rel_tol=1e-5), (a["loss"], stats["loss"])
        return f"loss {stats['loss']:.5f} == {a['loss']:.5f}"


def _fixed_samples() -> list[Any]:
    """Six seeded samples of 8-13 tokens with advantages (no engine needed)."""
    import torch

    from envhub.trainer.algo.batch import Sample, assign_weights

    g = torch.Generator().manual_seed(0)
    out = []
    for i in range(6):
        tokens = torch.randint(10, 200, (8 + i,), generator=g).tolist()
        mask = [0] * 4 + [1] * (4 + i)
        out.append(Sample(tokens, mask, [-1.0 * m for m in mask], float(i % 3) - 1.0))
    assign_weights(out, "token_mean", norm_len=16)
    return out


def _max_gap(a: list[list[float]], b: list[list[float]]) -> float:
    """Largest elementwise difference of two lists of logprob lists."""
    return max(abs(x - y) for p, q in zip(a, b, strict=True) for x, y in zip(p, q, strict=True))


def _check_finite(stats: dict[str, float]) -> None:
    for key in ("loss", "grad_norm"):
        assert math.isfinite(stats[key]), f"{key} is {stats[key]}"
    assert stats["grad_norm"] > 0, "no gradient"


def main() -> int:
    """Parse the flags, run every check, print the summary; 1 if any failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--budget-s", type=float, default=300.0)
    args = parser.parse_args()
    t0 = time.perf_counter()
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("FAIL setup: no CUDA device (use --device cpu to run the checks on CPU)")
        return 1
    where = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
    smoke = Smoke(args.device, args.dtypes.split(","), args.budget_s)
    print(f"envhub gpu_smoke: {where}, torch {torch.__version__}, {_init_group(args.device)}")
    for dtype in smoke.dtypes:
        smoke.dtype_checks(dtype)
    smoke.run("lora", smoke.lora)
    smoke.run("activation_checkpointing", smoke.activation_checkpointing)
    counts = {s: sum(1 for _, st in smoke.results if st == s) for s in ("PASS", "FAIL", "SKIP")}
    print(
        f"summary: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped "
        f"in {time.perf_counter() - t0:.0f}s on {where}"
    )
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
