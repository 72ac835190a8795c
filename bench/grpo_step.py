"""Seconds per GRPO step, phase timings and peak memory of envhub's trainer.

Runs the trainer in this process on a config (the tiny example by default) for a few steps
and reports the mean over the steps after the first (the first pays for lazy set-up), per
phase (``time/*``), generated tokens per second, and the largest policy worker's peak memory.

``--race-trl`` runs the race of trainer part 2: envhub's trainer on
``examples/smollm2_math.yaml`` (SmolLM2-135M-Instruct, vLLM engine in split placement; run
on-policy here, generation and training in turn, see ``race_trl``) against TRL's
``GRPOTrainer`` (``bench/trl_grpo.py``, its own venv) on the same work: the same prompt
pool (one-digit sums, ``bench.trl_grpo.default_prompts``, under the same system prompt), the
same reward (``gsm8k``'s correctness, computed by envhub's environment on both sides), group
size, sampling settings, completion length (``--max-tokens``, default 128), micro-batch size,
learning rate and number of steps; then it prints both summaries, the ratios TRL / envhub
and both reward curves. envhub leaves the samples of groups whose rewards are all equal out of
its update (``train.skip_zero_advantage``, the same gradient); ``skipped_zero_advantage`` says
how many a step, and ``train.skip_zero_advantage=false`` as an override computes them all.

    python bench/grpo_step.py                                   # tiny example, 4 steps
    python bench/grpo_step.py --config examples/tiny.yaml --steps 6 rollout.group_size=8
    python bench/grpo_step.py --json bench/grpo_step.json
    python bench/grpo_step.py --race-trl --steps 4              # envhub vs TRL on SmolLM2
    python bench/grpo_step.py --staleness --steps 8             # sync / 1 / 2 / 4 on SmolLM2
    python bench/grpo_step.py --staleness --config examples/tiny.yaml --steps 4

``--staleness`` runs the same config (split placement) synchronously, one-step off-policy and
with ``generation.max_trajectory_age_steps`` 2 and 4, the same number of steps and samples
each, and prints seconds per step, generated tokens per second of step time and the mean
reward over all steps: what asynchrony buys in speed, and what staleness costs in learning.

Start-up (Ray, worker processes, model loading) is reported separately as ``startup_s``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def summarise(rows: list[dict], startup_s: float) -> dict:
    """Mean of every timing over steps 2.., plus throughput and memory."""
    steady = rows[1:] or rows
    keys = sorted({k for r in steady for k in r if k.startswith("time/")})
    out = {k: statistics.fmean(r.get(k, 0.0) for r in steady) for k in keys}
    out["tokens_per_s"] = statistics.fmean(r.get("tokens_per_s", 0.0) for r in steady)
    out["response_length"] = statistics.fmean(r.get("response_length", 0.0) for r in steady)
    out["episodes_per_step"] = steady[0].get("episodes", 0.0)
    out["step_tokens_per_s"] = statistics.fmean(
        r.get("response_length", 0.0) * r.get("episodes", 0.0) / r["time/step"] for r in steady
    )
    out["skipped_zero_advantage"] = statistics.fmean(
        r.get("skipped_zero_advantage", 0.0) for r in steady
    )  # samples per step whose forward and backward were left out (train.skip_zero_advantage)
    out["reward_mean_all_steps"] = statistics.fmean(r.get("reward_mean", 0.0) for r in rows)
    out["rewards"] = [r.get("reward_mean", 0.0) for r in rows]
    out["trajectory_age_mean"] = statistics.fmean(r.get("trajectory_age_mean", 0.0) for r in rows)
    out["memory/worker_peak_mb"] = max(r.get("memory/worker_peak_mb", 0.0) for r in rows)
    out["startup_s"] = startup_s
    out["steps_measured"] = len(steady)
    return out


def run_envhub(config_path: str, steps: int, extra: list[str]) -> dict:
    """Train ``steps`` steps in this process; the :func:`summarise` of its metrics."""
    from envhub.trainer.config import load_config
    from envhub.trainer.train import train

    overrides = [
        f"train.steps={steps}",
        "checkpoint.every=0",
        "checkpoint.export_final=false",
        "logging.progress_bar=false",
        "logging.tensorboard=false",
        "logging.plot=false",
        *extra,
    ]
    config = load_config(config_path, overrides)
    with tempfile.TemporaryDirectory(prefix="grpo-bench-") as tmp:
        out = Path(tmp)
        t0 = time.perf_counter()
        train(config, out)
        total = time.perf_counter() - t0
        rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    startup = total - sum(r["time/step"] for r in rows)
    return summarise(rows, startup)


def race_trl(args: argparse.Namespace, tmp: Path) -> dict:
    """envhub and TRL on the same work (see the module docstring); both summaries + ratios."""
    from bench.trl_grpo import REWARD_WEIGHTS, SYSTEM, TRLSettings, default_prompts, run_trl

    rows = default_prompts(args.prompts_per_step * args.steps, seed=0)
    data = tmp / "race_sums.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    envhub = run_envhub(
        args.config or str(ROOT / "examples" / "smollm2_math.yaml"),
        args.steps,
        [
            f"env.overrides.dataset={{kind: jsonl, path: {data}}}",
            f"env.overrides.system_prompt={json.dumps(SYSTEM)}",
            "env.overrides.prompt_template='{prompt}'",
            # correctness alone, as TRL's reward (the same environment: bench/trl_grpo.py)
            f"env.overrides.reward.weights={json.dumps(REWARD_WEIGHTS)}",
            f"rollout.prompts_per_step={args.prompts_per_step}",
            f"rollout.group_size={args.group_size}",
            f"rollout.sampling.max_tokens={args.max_tokens}",
            "rollout.sampling.temperature=1.0",
            f"train.micro_batch_size={args.micro_batch_size}",
            f"optim.lr={args.lr}",
            "loss.kl_beta=0",
            # Two cores: generation and training compete for the same ones, so overlapping
            # them (one-step off-policy) cannot add compute; in turn, the engine gets both.
            "generation.one_step_off_policy=false",
            "generation.threads_per_engine=2",
            *args.overrides,
        ],
    )
    if args.envhub_only:
        return {"envhub": envhub}
    trl = run_trl(
        TRLSettings(
            prompts=rows,
            prompts_per_step=args.prompts_per_step,
            group_size=args.group_size,
            max_tokens=args.max_tokens,
            steps=args.steps,
            micro_batch_size=args.micro_batch_size,
            lr=args.lr,
            threads=args.trl_threads,
        )
    )
    # envhub's own tokens_per_s is per second of generation; TRL's is per second of step
    envhub["step_tokens_per_s"] = (
        envhub["response_length"] * envhub["episodes_per_step"] / envhub["time/step"]
    )
    ratios = {
        "step_time_trl_over_envhub": trl["seconds_per_step"] / envhub["time/step"],
        "step_tokens_per_s_envhub_over_trl": envhub["step_tokens_per_s"]
        / max(trl["tokens_per_s"], 1e-9),
        "peak_mb_trl_over_envhub_policy_worker": trl["peak_rss_mb"]
        / max(envhub["memory/worker_peak_mb"], 1e-9),
    }
    return {"envhub": envhub, "trl": trl, "ratios": ratios}


def print_curves(envhub: list[float], trl: list[float]) -> None:
    """The two reward curves (mean reward of each step's samples), step by step."""
    print("reward per step (gsm8k's correctness on one-digit sums, both sides)")
    print(f"  {'step':>4s} {'envhub':>8s} {'trl':>8s}")
    for i in range(max(len(envhub), len(trl))):
        cells = [f"{c[i]:8.3f}" if i < len(c) else f"{'-':>8s}" for c in (envhub, trl)]
        print(f"  {i + 1:4d} {' '.join(cells)}")


STALENESS = {"sync": 0, "one-step": 1, "async-2": 2, "async-4": 4}
"""Runs of ``--staleness``: name -> ``generation.max_trajectory_age_steps``."""


def staleness(args: argparse.Namespace) -> dict:
    """The same run at every :data:`STALENESS` setting; a summary per setting."""
    config = args.config or str(ROOT / "examples" / "smollm2_math.yaml")
    out = {}
    for name, age in STALENESS.items():
        extra = [
            "cluster.placement=split",
            "generation.one_step_off_policy=false",
            f"generation.max_trajectory_age_steps={age}",
            *args.overrides,
        ]
        out[name] = run_envhub(config, args.steps, extra)
    print(f"config {config}, {args.steps} steps each (means over steps 2..; reward: all steps)")
    print(f"  {'run':10s} {'s/step':>8s} {'gen tok/s':>10s} {'reward':>8s} {'age':>5s}")
    for name, r in out.items():
        print(
            f"  {name:10s} {r['time/step']:8.2f} {r['step_tokens_per_s']:10.1f} "
            f"{r['reward_mean_all_steps']:8.3f} {r['trajectory_age_mean']:5.2f}"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None, help="default: tiny.yaml (race: smollm2)")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--json", default=None, help="also write the summary here")
    parser.add_argument("--race-trl", action="store_true", help="race TRL's GRPOTrainer")
    parser.add_argument(
        "--staleness", action="store_true", help="sync vs one-step vs N-step (2, 4) runs"
    )
    parser.add_argument("--prompts-per-step", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--micro-batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-6)
    parser.add_argument("--trl-threads", type=int, default=2)
    parser.add_argument(
        "--envhub-only", action="store_true", help="race settings, envhub's side only"
    )
    parser.add_argument("overrides", nargs="*", help="key=value config overrides (envhub)")
    args = parser.parse_args()
    if args.staleness:
        summary = staleness(args)
    elif args.race_trl:
        with tempfile.TemporaryDirectory(prefix="grpo-race-") as tmp:
            result = race_trl(args, Path(tmp))
        for side in ("envhub", "trl")[: 1 if args.envhub_only else 2]:
            print(side)
            for k, v in result[side].items():
                if isinstance(v, (int, float)):
                    print(f"  {k:36s} {v:10.3f}")
        if not args.envhub_only:
            print("ratios (goal: TRL step time / envhub step time >= 3)")
            for k, v in result["ratios"].items():
                print(f"  {k:36s} {v:10.3f}")
            print_curves(result["envhub"]["rewards"], result["trl"]["rewards"])
        summary = result
    else:
        config = args.config or str(ROOT / "examples" / "tiny.yaml")
        summary = run_envhub(config, args.steps, args.overrides)
        print(f"config {config} ({' '.join(args.overrides) or 'as is'}), {args.steps} steps")
        for k, v in summary.items():
            print(f"  {k:28s} {v:10.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
