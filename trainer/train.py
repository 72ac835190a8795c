"""GRPO on envhub environments: the driver loop, top to bottom.

One step (Shao et al. 2024, "DeepSeekMath", Algorithm 1, with the changes listed below):

1. **Rollout**: ``prompts_per_step`` tasks, ``group_size`` episodes each, against the
   environment (multi-turn: model turn, environment answer, ... until the episode ends or a
   turn or token budget runs out). Sequences are the engine's own token ids.
2. **Rewards and advantages**: the environment's reward (its named components, weighted as
   the config's ``env.overrides.reward`` says); group-relative advantages.
3. **Logprobs**: reference-policy logprobs for the KL term (when ``kl_beta > 0``); the
   pre-update policy's logprobs only when the batch is cut into several minibatches.
4. **Train**: the clipped surrogate (+ k3 KL) on FSDP2 ranks, micro-batched, one optimizer
   step per minibatch, gradient clipping.
5. **Refit**: the new weights into the generation engines.

Deviations from the paper, on purpose:

- An episode whose *environment* failed (``infra_error``/``env_error``) is dropped and
  counted, not scored 0; its group's advantages are computed over the remaining episodes.
- Aggregation is a setting (``loss.aggregation``); the default ``token_mean`` (DAPO, NeMo RL)
  weighs every token equally instead of averaging per sequence first.
- With one minibatch per step (the default) the "old" policy is the current one, so the
  importance ratio is exactly 1 and is not recomputed in a separate pass; the mismatch with
  the generation engine is reported as ``token_mult_prob_error`` instead of corrected.
- The KL penalty is in the loss (k3, as the paper), but off by default (``kl_beta: 0``), as
  in DAPO and Dr. GRPO: no reference model is loaded then.
- ``generation.one_step_off_policy`` (split placement): step t+1's batch is sampled, with
  the weights of step t-1, while step t trains; each token's surrogate is weighted by
  ``min(pi_old / pi_behaviour, is_cap)`` (``grpo.off_policy_weights``, decoupled PPO) and
  the time saved is logged as ``time/overlap_saved``.
- Multi-turn episodes get one advantage per episode (the sum of its step rewards), applied to
  every model token of every turn.
"""

from __future__ import annotations

import logging
import random
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from . import checkpoint as ckpt
from .batch import Sample, assign_weights, shard, split_minibatches
from .config import Config
from .engine import ChatFormatter, SamplingParams
from .grpo import group_advantages
from .metrics import MetricsLogger, rollout_metrics, train_metrics
from .models import resolve_model
from .rollout import RolloutBatch, RolloutSettings, collect

if TYPE_CHECKING:
    from .workers import Cluster

log = logging.getLogger("envhub.trainer")


def task_seed(run_seed: int, position: int) -> int:
    """The ``reset`` seed of the task at data position ``position`` (one per group)."""
    return random.Random(run_seed * 1_000_003 + position).randrange(2**31)


def to_samples(batch: RolloutBatch, normalize_std: bool) -> list[Sample]:
    """Training samples of the kept episodes, with group-relative advantages."""
    kept = batch.kept
    if not kept:
        return []
    rewards = torch.tensor([e.reward for e in kept])
    adv = group_advantages(rewards, [e.group for e in kept], normalize_std=normalize_std)
    return [
        Sample(e.tokens, e.loss_mask, e.engine_logprobs, float(a))
        for e, a in zip(kept, adv.tolist(), strict=True)
        if e.response_tokens > 0
    ]


def rollout_settings(config: Config, env_max_turns: int | None) -> RolloutSettings:
    """Budgets of one rollout from the config."""
    s = config.rollout.sampling
    return RolloutSettings(
        group_size=config.rollout.group_size,
        max_turns=config.rollout.max_turns or env_max_turns or 1,
        max_seq_len=config.rollout.max_seq_len,
        timeout_s=config.env.timeout_s,
        params=SamplingParams(
            max_tokens=s.max_tokens,
            temperature=s.temperature,
            top_p=s.top_p,
            top_k=s.top_k,
            stop=tuple(s.stop),
        ),
    )


def train(config: Config, out: Path) -> ckpt.TrainerState:
    """Run GRPO as configured, writing everything under ``out``; returns the final state."""
    from transformers import AutoTokenizer

    from .workers import Cluster

    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(_dump_yaml(config))
    model_dir = str(resolve_model(config.model.path))
    chat = ChatFormatter(AutoTokenizer.from_pretrained(model_dir))
    pad_id = chat.tokenizer.pad_token_id
    pad_id = chat.eos_id if pad_id is None else pad_id
    settings = rollout_settings(config, _env_max_turns(config))
    state = ckpt.TrainerState(fingerprint=config.fingerprint(), config_digest=config.digest())
    ckpt_root = out / "checkpoints"
    resume_from = ckpt.latest(ckpt_root) if config.checkpoint.resume else None
    if resume_from is not None:  # refuse an incompatible config before starting anything
        ckpt.check_compatible(ckpt.read_state(resume_from), config.fingerprint(), resume_from)
    logger = MetricsLogger(out, config.logging, config.train.steps, config.model_dump(mode="json"))
    with Cluster(config, model_dir) as cluster:
        if resume_from is not None:
            state = _resume(cluster, resume_from, config)
        else:
            cluster.refit()  # engines start from the policy's exact weights
        logger.start_at(state.step)
        rollouts = _Rollouts(cluster, chat, config, settings)
        try:
            _loop(cluster, config, state, rollouts, logger, pad_id, settings, ckpt_root)
        finally:
            rollouts.close()
        if config.checkpoint.export_final:
            cluster.export(str(out / "final"))
    logger.close(state.history)
    return state


class _Rollouts:
    """Collects a step's batch now, or (one-step off-policy) the next one in the background."""

    def __init__(self, cluster: Cluster, chat: ChatFormatter, config: Config, settings: Any):
        """``config.generation.one_step_off_policy`` turns the background collection on."""
        self.cluster, self.chat, self.config, self.settings = cluster, chat, config, settings
        self.off_policy = config.generation.one_step_off_policy
        self._pool = ThreadPoolExecutor(1, "envhub-rollout") if self.off_policy else None
        self.pending: Future[tuple[RolloutBatch, float]] | None = None

    def run(self, step: int, position: int) -> tuple[RolloutBatch, float]:
        """Collect step ``step``'s batch (tasks from data ``position``); returns it, seconds."""
        t0 = time.perf_counter()
        n = self.config.rollout.prompts_per_step
        batch = collect(
            self.cluster.generate,
            self.cluster.env_pool,
            self.chat,
            [task_seed(self.config.seed, position + i) for i in range(n)],
            self.settings,
            sample_seed=(self.config.seed * 1_000_003 + step) * 1000,
        )
        return batch, time.perf_counter() - t0

    def take(self, step: int, position: int) -> tuple[RolloutBatch, float]:
        """The batch launched during the previous step if any, else one collected now."""
        if self.pending is not None:
            found, self.pending = self.pending.result(), None
            return found
        return self.run(step, position)

    def launch(self, step: int, position: int) -> None:
        """Off-policy: start step ``step``'s rollout with the engines' current weights."""
        if self._pool is not None and step <= self.config.train.steps:
            self.pending = self._pool.submit(self.run, step, position)

    def wait(self) -> tuple[float, float]:
        """Wait for the launched rollout: ``(seconds waited, seconds the rollout took)``."""
        if self.pending is None:
            return 0.0, 0.0
        t0 = time.perf_counter()
        _, rollout_s = self.pending.result()
        return time.perf_counter() - t0, rollout_s

    def close(self) -> None:
        """Stop the background thread (a pending rollout is abandoned)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


def _loop(
    cluster: Cluster,
    config: Config,
    state: ckpt.TrainerState,
    rollouts: _Rollouts,
    logger: MetricsLogger,
    pad_id: int,
    settings: RolloutSettings,
    ckpt_root: Path,
) -> None:
    """The steps, from ``state.step + 1`` to ``train.steps``."""
    n_prompts = config.rollout.prompts_per_step
    while state.step < config.train.steps:
        step = state.step + 1
        t_step = time.perf_counter()

        # 1. rollout: G episodes for each of this step's tasks (off-policy: launched during
        #    the previous step, sampled with the weights before that step's update)
        batch, rollout_s = rollouts.take(step, state.data_position)
        times = {
            "time/rollout": rollout_s,
            "time/generation": batch.generation_time,
            "time/env": batch.env_time,
        }
        rollouts.launch(step + 1, state.data_position + n_prompts)

        # 2. rewards -> group-relative advantages
        samples = to_samples(batch, config.loss.normalize_std)
        metrics = rollout_metrics(batch)

        # 3-4. logprobs (reference, pre-update policy) and the update
        if samples:
            metrics |= _update(cluster, config, samples, pad_id, settings, times)

        # off-policy: the next rollout must end before the engines change weights; what it
        # took minus what is still waited for here is the time the overlap saved
        if rollouts.off_policy:
            waited, next_rollout_s = rollouts.wait()
            times["time/overlap_wait"] = waited
            times["time/overlap_saved"] = max(0.0, next_rollout_s - waited)

        # 5. refit: the engines get the new weights (and, if asked, are checked against them)
        t0 = time.perf_counter()
        cluster.refit()
        times["time/refit"] = time.perf_counter() - t0
        if config.generation.verify_refit and samples:
            metrics["refit/logprob_max_diff"] = verify_refit(cluster, config, samples)

        state.step, state.data_position = step, state.data_position + n_prompts
        state.history.append(_history_row(step, metrics))
        if _checkpoint_due(config, step):
            t0 = time.perf_counter()
            ckpt.save(ckpt_root, state, cluster.save, keep=config.checkpoint.keep)
            times["time/checkpoint"] = time.perf_counter() - t0
        times["time/step"] = time.perf_counter() - t_step
        logger.log(step, metrics | times)


def verify_refit(cluster: Cluster, config: Config, samples: list[Sample], probes: int = 2) -> float:
    """Largest |engine - trainer| logprob over the policy tokens of the first ``probes`` samples.

    Both sides score the same token ids after the refit; every rank gets the same probes
    (the forward is collective under FSDP2) and rank 0's answer is used.

    Raises:
        RuntimeError: the difference is above ``generation.verify_tolerance``.
    """
    probe = [s for s in samples if s.n_policy_tokens > 0][:probes]
    if not probe:
        return 0.0
    starts = [next(j for j in range(1, len(s.tokens)) if s.loss_mask[j]) for s in probe]
    trainer = cluster.policy_logprobs([probe] * len(cluster.policy))[0]
    engine = cluster.engine_logprobs(
        [s.tokens for s in probe], starts, config.rollout.sampling.temperature
    )
    worst = 0.0
    for s, start, t_lp, e_lp in zip(probe, starts, trainer, engine, strict=True):
        for j in range(start, len(s.tokens)):
            if s.loss_mask[j]:
                worst = max(worst, abs(t_lp[j - 1] - e_lp[j - start]))
    if worst > config.generation.verify_tolerance:
        raise RuntimeError(
            f"refit check failed: engine and trainer logprobs differ by up to {worst:.2e} "
            f"(> generation.verify_tolerance={config.generation.verify_tolerance}) on the same "
            "tokens; the engine did not receive the new weights"
        )
    return worst


def _update(
    cluster: Cluster,
    config: Config,
    samples: list[Sample],
    pad_id: int,
    settings: RolloutSettings,
    times: dict[str, float],
) -> dict[str, float]:
    """Logprob passes and the policy update; returns the training metrics."""
    t0 = time.perf_counter()
    if config.loss.kl_beta > 0:
        for s, ref in zip(samples, cluster.reference_logprobs(samples), strict=True):
            s.ref_logprobs_targets = ref
    minibatches = split_minibatches(samples, config.train.minibatches)
    norm_len = settings.params.max_tokens * settings.max_turns
    for mb in minibatches:
        assign_weights(mb, config.loss.aggregation, norm_len)
    per_rank: list[list[list[Sample]]] = [[] for _ in cluster.policy]
    for mb in minibatches:
        for r, part in enumerate(shard(mb, len(cluster.policy), pad_id)):
            per_rank[r].append(part)
    if len(minibatches) > 1:  # the pre-update policy differs from the one at minibatch k > 0
        flat = [[s for mb in parts for s in mb] for parts in per_rank]
        for parts, lps in zip(flat, cluster.policy_logprobs(flat), strict=True):
            for s, lp in zip(parts, lps, strict=True):
                s.old_logprobs_targets = lp
    times["time/logprobs"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    stats = cluster.train(per_rank)
    times["time/train"] = time.perf_counter() - t0
    return train_metrics(stats)


def _resume(cluster: Cluster, found: Path, config: Config) -> ckpt.TrainerState:
    saved = ckpt.read_state(found)
    cluster.load(str(found))
    log.info("resumed from %s (step %d, data position %d)", found, saved.step, saved.data_position)
    return saved


def _checkpoint_due(config: Config, step: int) -> bool:
    every = config.checkpoint.every
    return step == config.train.steps or (every > 0 and step % every == 0)


def _history_row(step: int, metrics: dict[str, float]) -> dict[str, float]:
    keep = ("reward_mean", "accuracy")
    return {"step": step, **{k: metrics[k] for k in keep if k in metrics}}


def _env_max_turns(config: Config) -> int | None:
    """The environment's own turn budget, from its catalog entry and overrides."""
    import envhub

    if "max_turns" in config.env.overrides:
        return int(config.env.overrides["max_turns"])
    return envhub.spec(config.env.name).max_turns


def _dump_yaml(config: Config) -> str:
    import yaml

    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
