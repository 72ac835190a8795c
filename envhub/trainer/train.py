"""GRPO on envhub environments: the driver loop, top to bottom.

One step (Shao et al. 2024, "DeepSeekMath", Algorithm 1, with the changes listed below):

1. **Rollout**: ``prompts_per_step`` tasks, ``group_size`` episodes each, drawn from the
   mix of environments by weight (``envhub.trainer.episodes.mix``; multi-turn: model turn,
   environment
   answer, ... until the episode ends or its source's turn or token budget runs out).
   Sequences are the engine's own token ids. With ``rollout.filter_groups`` groups of equal
   raw outcome are replaced by fresh ones (``envhub.trainer.episodes.dynamic``).
2. **Rewards and advantages**: the environment's reward (its named components, weighted as
   the config's ``env.overrides.reward`` says); group-relative advantages.
3. **Logprobs**: reference-policy logprobs for the KL term (when ``kl_beta > 0``); the
   pre-update policy's logprobs only when the batch is cut into several minibatches.
4. **Train**: the clipped surrogate (+ k3 KL) on FSDP2 ranks, micro-batched, one optimizer
   step per minibatch, gradient clipping. With ``loss.distill`` a teacher scores the
   samples first and each policy token's advantage gains its reverse-KL term
   (``envhub.trainer.teacher``); unset, nothing of it runs.
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
- ``generation.max_trajectory_age_steps: N`` (split placement; ``one_step_off_policy`` is
  N = 1): the batches of the next N steps are sampled while step t trains; groups older than
  N weight versions are discarded; each token's surrogate is weighted by
  ``min(pi_old / pi_behaviour, is_cap)`` (``correction.importance_weights``, decoupled PPO) and
  the time saved is logged as ``time/overlap_saved``.
- ``rollout.overlong`` (off by default): DAPO's soft overlong penalty on the reward, and
  truncated samples kept in their group's baseline but out of the loss.
- Multi-turn episodes get one advantage per episode (the sum of its step rewards), applied to
  every model token of every turn.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from envhub.engines.chat import ChatFormatter
from envhub.engines.weights import resolve_model
from envhub.errors import EnvhubError
from envhub.trainer import checkpoint as ckpt
from envhub.trainer.algo.batch import (
    Sample,
    assign_weights,
    carries_gradient,
    shard,
    split_minibatches,
)
from envhub.trainer.algo.grpo import group_advantages
from envhub.trainer.algo.overlong import OverlongConfig, episode_penalty
from envhub.trainer.best import rounds_of, should_stop, validate
from envhub.trainer.config import Config
from envhub.trainer.episodes.draws import Draws
from envhub.trainer.episodes.dynamic import Filtered, collect_filtered
from envhub.trainer.episodes.mix import MixSource
from envhub.trainer.episodes.rollout import EnvCalls, RolloutBatch, RolloutSettings, collect
from envhub.trainer.episodes.rollout_log import EpisodeNotes, RolloutLog
from envhub.trainer.episodes.staleness import filter_by_age
from envhub.trainer.episodes.validation_rounds import Rounds
from envhub.trainer.metrics import MetricsLogger, rollout_metrics, source_metrics, train_metrics
from envhub.trainer.teacher import Teacher
from envhub.trainer.watchdog import FailedSteps
from envhub.trainer.workers.lora import check_rank

if TYPE_CHECKING:
    from envhub.trainer.workers.cluster import Cluster

log = logging.getLogger("envhub.trainer")


def to_samples(
    batch: RolloutBatch,
    normalize_std: bool,
    *,
    overlong: OverlongConfig | None = None,
    max_tokens: int = 0,
    notes: dict[str, EpisodeNotes] | None = None,
) -> list[Sample]:
    """Training samples of the kept episodes, with group-relative advantages.

    ``overlong`` adds DAPO's soft overlong penalty to each reward before the advantages and,
    with ``mask_truncated``, leaves truncated episodes out of the loss (they stay in their
    group's baseline). ``notes`` receives each kept episode's advantage and penalty.
    """
    kept = batch.kept
    if not kept:
        return []
    cfg = overlong or OverlongConfig()
    penalties = [episode_penalty(e, cfg, max_tokens) for e in kept]
    # float64: a group's variance of large finite rewards must not overflow float32
    rewards = torch.tensor(
        [e.reward + p for e, p in zip(kept, penalties, strict=True)], dtype=torch.float64
    )
    adv = group_advantages(rewards, [e.group for e in kept], normalize_std=normalize_std)
    samples = []
    for e, a, p in zip(kept, adv.tolist(), penalties, strict=True):
        masked = cfg.mask_truncated and e.truncated_sample
        if notes is not None:
            notes[e.key] = EpisodeNotes(None if masked else float(a), overlong_penalty=p)
        if e.response_tokens > 0 and not masked:
            samples.append(
                Sample(
                    e.tokens,
                    e.loss_mask,
                    e.engine_logprobs,
                    float(a),
                    source=e.env,
                    task_id=e.task_id,
                )
            )
        for tokens, mask, logprobs in [] if masked else e.extra_sequences:  # agent runs only
            samples.append(
                Sample(tokens, mask, logprobs, float(a), source=e.env, task_id=e.task_id)
            )
    return samples


def overlong_metrics(batch: RolloutBatch, notes: dict[str, EpisodeNotes]) -> dict[str, float]:
    """Overlong handling's figures of a step's kept episodes.

    ``overlong/truncated`` (share cut), ``overlong/masked`` (left out of the loss) and
    ``overlong/penalty_mean``.
    """
    kept = batch.kept
    if not kept:
        return {}
    n = len(kept)
    return {
        "overlong/truncated": sum(e.truncated_sample for e in kept) / n,
        "overlong/masked": float(
            sum(notes[e.key].advantage is None for e in kept if e.key in notes)
        ),
        "overlong/penalty_mean": sum(notes[e.key].overlong_penalty for e in kept if e.key in notes)
        / n,
    }


def rollout_settings(config: Config) -> RolloutSettings:
    """Budgets of one rollout from the config (a turn budget per mix source)."""
    turns = {src.name: _source_max_turns(config, src) for src in config.sources()}
    return RolloutSettings(
        group_size=config.rollout.group_size,
        max_turns=max(turns.values()),
        max_seq_len=config.rollout.max_seq_len,
        timeout_s=config.env.call_deadline_s,
        env_concurrency=config.env.concurrency,
        params=config.rollout.sampling.params(),
        source_turns=turns,
    )


@dataclass(frozen=True)
class Beside:
    """What a step does beside the update, each duty held by the room that owns it.

    The draws (sampler, curriculum, launch states) ride with the rollouts
    (:class:`~envhub.trainer.episodes.draws.Draws`); here are the rollout logs
    (:class:`~envhub.trainer.episodes.rollout_log.RolloutLog`), the validation rounds
    (:class:`~envhub.trainer.episodes.validation_rounds.Rounds`, None when off; ``best/``
    and early stopping: :mod:`envhub.trainer.best`) and the run's folder.
    """

    log: RolloutLog
    rounds: Rounds | None
    out: Path

    @property
    def ckpt_root(self) -> Path:
        """Where checkpoints go: ``out/checkpoints``."""
        return self.out / "checkpoints"


def _observe(config: Config, draws: Draws, step: int, filtered: Filtered) -> dict[str, float]:
    """Count the step's results into the curriculum; its per-source and curriculum figures.

    Dynamic sampling's figures (``filter/*``) come with them, in the order the metrics had.
    """
    draws.observe(step, filtered)
    share = config.logging.min_counted_share
    per_source = source_metrics(filtered.generated, draws.primaries, share)
    return per_source | filtered.metrics | draws.metrics()


def train(config: Config, out: Path) -> ckpt.TrainerState:
    """Run GRPO as configured, writing everything under ``out``; returns the final state."""
    from transformers import AutoTokenizer

    from envhub.trainer.workers.cluster import Cluster

    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(_dump_yaml(config))
    model_dir = str(resolve_model(config.model.path))
    check_rank(config.model.lora, model_dir)
    chat = ChatFormatter(AutoTokenizer.from_pretrained(model_dir))
    pad_id = chat.tokenizer.pad_token_id
    pad_id = chat.eos_id if pad_id is None else pad_id
    settings = rollout_settings(config)
    draws = Draws(config.sources(), config.seed, config.max_trajectory_age)
    lg = config.logging
    log_ = RolloutLog(
        out / "rollouts", lg.rollouts_every, lg.rollouts_max_samples, chat.tokenizer.decode
    )
    beside = Beside(log_, rounds_of(config, out, chat), out)  # refuses an overlapping split
    pins = _pins(config, out)
    state = ckpt.TrainerState(
        fingerprint=config.fingerprint(), config_digest=config.digest(), pins=pins
    )
    resume_from = ckpt.latest(beside.ckpt_root) if config.checkpoint.resume else None
    if resume_from is not None:  # refuse an incompatible config before starting anything
        saved = ckpt.read_state(resume_from)
        ckpt.check_compatible(saved, config.fingerprint(), resume_from)
        ckpt.check_pins(saved, pins, resume_from)
    logger = MetricsLogger(out, config.logging, config.train.steps, config.model_dump(mode="json"))
    with Cluster(config, model_dir) as cluster:
        _write_placement(out, cluster)
        curriculum = config.rollout.curriculum
        draws.attach(cluster.env_info(with_tasks=curriculum.enabled), curriculum)
        if beside.rounds is not None:
            beside.rounds.attach(cluster)
        if resume_from is not None:
            state = _resume(cluster, resume_from, config)
            state.pins = pins  # a checkpoint from before pins were kept has none
            draws.resume(state.sampler)
            if beside.rounds is not None:
                beside.rounds.start_at(state.step)
        else:
            cluster.refit()  # engines start from the policy's exact weights
            validate(beside.rounds, cluster, config, out, 0, state)
        logger.start_at(state.step)
        rollouts = _Rollouts(cluster, chat, config, settings, draws, out)
        if rollouts.teacher is not None:  # a model-path teacher's own held-out pass@1
            rollouts.teacher.measure(cluster, config, out)
        try:
            _loop(cluster, config, state, rollouts, logger, pad_id, settings, beside)
        except ray_actor_error() as e:
            raise WorkerLost(_lost_message(e, state, out)) from e
        finally:
            rollouts.close()
        if config.checkpoint.export_final:
            cluster.export(str(out / "final"))
    logger.close(state.history)
    return state


class _Rollouts:
    """Collects step batches: now (synchronous), or up to N steps ahead in a background thread.

    With ``max_trajectory_age_steps: N`` (``one_step_off_policy`` is N = 1) the batches of
    the next N steps are queued on one background thread as soon as a step's batch is taken,
    so generation runs while the trainer trains. A batch for step k is launched at step
    k - N or later, so its weights are at most N versions old when trained. Without
    ``in_flight_updates`` a refit waits for the running rollout to end (and the next one
    waits for the refit); with it, the engines take the new weights between two generate
    calls.
    """

    def __init__(
        self,
        cluster: Cluster,
        chat: ChatFormatter,
        config: Config,
        settings: Any,
        draws: Draws,
        out: Path,
    ):
        """``config.max_trajectory_age`` > 0 turns the background collection on.

        ``out``: the run's folder (agents' traces go there).
        """
        self.cluster, self.chat, self.config, self.settings = cluster, chat, config, settings
        self.draws, self.out = draws, out
        self.max_age = config.max_trajectory_age
        self.in_flight = config.generation.in_flight_updates
        self._pool = ThreadPoolExecutor(1, "envhub-rollout") if self.max_age else None
        self._env_calls = EnvCalls(settings.env_concurrency)  # one bounded pool for the run
        self.pending: deque[tuple[int, Future[tuple[Filtered, float]]]] = deque()
        self._next = 0
        self._weights = threading.Lock()  # held by a running rollout, and by a refit
        self._refit_waiting = threading.Event()
        self._busy: list[tuple[float, float]] = []
        self.generated_groups = 0
        self.teacher = (
            None
            if config.loss.distill is None
            else Teacher(config.loss.distill, chat, config.sources())
        )
        """``loss.distill``'s teacher (None: the step is GRPO's alone)."""

    @property
    def background(self) -> bool:
        """True when rollouts run ahead of training."""
        return self._pool is not None

    def run(self, step: int, snapshot: Any = None) -> tuple[Filtered, float]:
        """Collect step ``step``'s batch (backfilled if filtering); returns it, seconds.

        ``snapshot``: the curriculum state to draw with (taken when the step was launched).
        """
        while self._refit_waiting.is_set():  # a waiting refit goes first
            time.sleep(0.005)
        hold = self.background and not self.in_flight
        with self._weights if hold else contextlib.nullcontext():
            t0 = time.perf_counter()
            r = self.config.rollout
            filtered = collect_filtered(
                lambda round_, n: self._round(step, round_, n, snapshot),
                r.prompts_per_step,
                self.draws.primary_of,
                enabled=r.filter_groups == "zero_variance",
                max_rounds=r.max_backfill_rounds,
            )
            t1 = time.perf_counter()
        self._busy.append((t0, t1))
        self.generated_groups += int(filtered.metrics["filter/groups_generated"])
        return filtered, t1 - t0

    def _round(self, step: int, round_: int, n: int, snapshot: Any) -> RolloutBatch:
        """One rollout round of ``n`` groups drawn from the mix (an agent's, with ``agent:``)."""
        seeds = self.draws.sampler.draw(step, n, round_, snapshot)
        sample_seed = (self.config.seed * 1_000_003 + step) * 1000 + 50 * round_
        agents = self.config.agent_of()
        if any(agents.values()):
            from envhub.gateway.trace import TraceWriter
            from envhub.trainer.episodes.agents import collect_mixed

            every = self.config.logging.rollouts_every  # traces at the rollout logs' cadence
            trace = TraceWriter(self.out) if every and step % every == 0 else None
            return collect_mixed(
                self.cluster.generate,
                self.cluster.env_pool,
                self.chat,
                seeds,
                self.settings,
                agents,
                sample_seed=sample_seed,
                calls=self._env_calls,
                trace=trace,
                step=step,
            )
        return collect(
            self.cluster.generate,
            self.cluster.env_pool,
            self.chat,
            seeds,
            self.settings,
            sample_seed=sample_seed,
            calls=self._env_calls,
        )

    def take(self, step: int) -> tuple[Filtered, float]:
        """Step ``step``'s batch: launched earlier if it was, else collected now."""
        if self.pending and self.pending[0][0] == step:
            return self.pending.popleft()[1].result()
        return self.run(step, self.draws.snapshot(step))

    def launch(self, step: int) -> None:
        """Queue the batches of steps ``step + 1 .. step + N`` not queued yet.

        Each is drawn with the curriculum's counts as of its launch (``Draws.snapshot``).
        """
        if self._pool is None:
            return
        last = min(step + self.max_age, self.config.train.steps)
        for k in range(max(self._next, step + 1), last + 1):
            snap = self.draws.snapshot(k)
            self.pending.append((k, self._pool.submit(self.run, k, snap)))
        self._next = max(self._next, last + 1)

    @contextlib.contextmanager
    def refit_window(self, since: float, times: dict[str, float]) -> Iterator[None]:
        """Around a refit: wait for the running rollout (unless in-flight updates).

        Logs ``time/overlap_wait`` (seconds waited for it) and ``time/overlap_saved`` (the
        background rollouts' time since ``since``, the end of this step's take, less that
        wait: generation done while the trainer trained).
        """
        if self._pool is None:
            yield
            return
        t0 = time.perf_counter()
        if self.in_flight:
            acquired = t0
            yield
        else:
            self._refit_waiting.set()
            with self._weights:
                self._refit_waiting.clear()
                acquired = time.perf_counter()
                yield
        waited = acquired - t0
        busy = sum(max(0.0, min(b, acquired) - max(a, since)) for a, b in list(self._busy))
        times["time/overlap_wait"] = waited
        times["time/overlap_saved"] = max(0.0, busy - waited)

    def take_generated(self) -> int:
        """Groups generated since the last call."""
        n, self.generated_groups = self.generated_groups, 0
        return n

    def close(self) -> None:
        """Stop the background thread (pending rollouts are abandoned) and the env calls.

        Also closes the distillation teacher's environments.
        """
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._env_calls.close()
        if self.teacher is not None:
            self.teacher.close()


def _loop(
    cluster: Cluster,
    config: Config,
    state: ckpt.TrainerState,
    rollouts: _Rollouts,
    logger: MetricsLogger,
    pad_id: int,
    settings: RolloutSettings,
    beside: Beside,
) -> None:
    """The steps, from ``state.step + 1`` to ``train.steps``."""
    draws = rollouts.draws
    guard = FailedSteps(config.watchdog)
    while state.step < config.train.steps:
        step = state.step + 1
        t_step = time.perf_counter()

        # 1. rollout: G episodes for each of this step's tasks, drawn from the mix (off-policy:
        #    launched during an earlier step); zero-variance groups replaced when filtering
        filtered, rollout_s = rollouts.take(step)
        t_taken = time.perf_counter()
        times = {
            "time/rollout": rollout_s,
            "time/generation": filtered.generated.generation_time,
            "time/env": filtered.generated.env_time,
        }
        mix_metrics = _observe(config, draws, step, filtered)  # counted before the next launch
        rollouts.launch(step)

        # 2. groups older than max_trajectory_age_steps are discarded; rewards -> advantages
        samples, metrics, notes = _advantages(cluster, config, rollouts, filtered)
        metrics |= mix_metrics

        # 3-4. logprobs (reference, pre-update policy) and the update
        if samples:
            metrics |= _update(cluster, config, samples, pad_id, settings, times, rollouts.teacher)
        times["time/rollout_log"] = beside.log.write(step, filtered, notes, cluster.weights_version)

        # 5. refit: the engines get the new weights (and, if asked, are checked against them);
        #    asynchronous runs first let the running rollout end (unless in-flight updates)
        with rollouts.refit_window(t_taken, times):
            t0 = time.perf_counter()
            cluster.refit()
            times["time/refit"] = time.perf_counter() - t0
        if config.generation.verify_refit and samples:
            metrics["refit/logprob_max_diff"] = verify_refit(cluster, config, samples)

        state.step = step
        state.data_position += int(filtered.metrics["filter/groups_generated"])
        state.history.append(_history_row(step, metrics))
        # the weights of this step, never trained on
        times |= validate(beside.rounds, cluster, config, beside.out, step, state)
        _save(cluster, config, state, draws, beside, times)
        times["time/step"] = time.perf_counter() - t_step
        _account(step, cluster, filtered, samples, metrics | times, logger, guard)
        if should_stop(beside.rounds):
            log.info(
                "validation: no improvement in %d rounds; stopping", config.validation.patience
            )
            break


def _account(
    step: int,
    cluster: Cluster,
    filtered: Filtered,
    samples: list[Sample],
    metrics: dict[str, Any],
    logger: MetricsLogger,
    guard: FailedSteps,
) -> None:
    """Log the step with its failures counted, then let the guard stop a failing run.

    Raises:
        RunFailed: too many failed or empty steps in a row (the step is logged first).
    """
    failures = cluster.take_failures() + _dropped_failure(filtered.generated)
    logger.log(step, metrics | {"failures": float(len(failures))})
    trained = any(s.advantage != 0 or s.token_advantages_targets for s in samples)
    guard.record(step, failures, trained, _why_empty(filtered, samples))


def _dropped_failure(batch: RolloutBatch) -> list[str]:
    """A step whose every episode was dropped failed: one line naming the first error."""
    if not batch.episodes or batch.kept:
        return []
    counts = ", ".join(f"{n} {s}" for s, n in sorted(batch.dropped_by_status().items()))
    first = next((e for e in batch.episodes if e.error), None)
    where = f" (first: {first.env}: {first.error})" if first is not None else ""
    return [f"every episode was dropped: {counts}{where}"]


def _why_empty(filtered: Filtered, samples: list[Sample]) -> str:
    """Why a step trained on nothing (read only when it did)."""
    generated = filtered.generated
    if not generated.episodes:
        return "no episode was played"
    if not generated.kept:
        return "every episode was dropped (see dropped/* in metrics.jsonl)"
    if not filtered.batch.kept:
        return (
            "every group had the same outcome and was filtered out (rollout.filter_groups), "
            "and the backfill rounds found no other"
        )
    if not samples:
        return "no kept episode had a token to train on"
    return (
        "every group had the same reward (zero variance): no advantage to learn from; the "
        "tasks are too hard or too easy for the model (try rollout.filter_groups=zero_variance, "
        "another mix, or a warm start)"
    )


def _save(
    cluster: Cluster,
    config: Config,
    state: ckpt.TrainerState,
    draws: Draws,
    beside: Beside,
    times: dict[str, float],
) -> None:
    """A checkpoint when due (or when validation stops the run), with the sampler's state."""
    state.sampler = draws.state_dict(state.step)
    if _checkpoint_due(config, state.step) or should_stop(beside.rounds):
        t0 = time.perf_counter()
        ckpt.save(beside.ckpt_root, state, cluster.save, keep=config.checkpoint.keep)
        times["time/checkpoint"] = time.perf_counter() - t0


def _advantages(
    cluster: Cluster, config: Config, rollouts: _Rollouts, filtered: Filtered
) -> tuple[list[Sample], dict[str, float], dict[str, EpisodeNotes]]:
    """Age filter, advantages (with overlong handling), and the step's rollout metrics."""
    aged = filter_by_age(filtered.batch, cluster.weights_version, rollouts.max_age)
    notes: dict[str, EpisodeNotes] = {}
    samples = to_samples(
        aged.batch,
        config.loss.normalize_std,
        overlong=config.rollout.overlong,
        max_tokens=config.rollout.sampling.max_tokens,
        notes=notes,
    )
    share = config.logging.min_counted_share
    metrics = rollout_metrics(filtered.generated, share) | aged.metrics()
    metrics |= overlong_metrics(aged.batch, notes)
    metrics["groups_generated"] = float(rollouts.take_generated())
    return samples, metrics, notes


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
    teacher: Teacher | None = None,
) -> dict[str, float]:
    """Logprob passes and the policy update; returns the training metrics.

    With a ``teacher`` (``loss.distill``) it scores the samples first and sets their
    per-token distillation advantages.
    """
    distill = teacher.apply(cluster, samples) if teacher is not None else {}
    t0 = time.perf_counter()
    if config.loss.kl_beta > 0:
        for s, ref in zip(samples, cluster.reference_logprobs(samples), strict=True):
            s.ref_logprobs_targets = ref
    minibatches = split_minibatches(samples, config.train.minibatches)
    norm_len = settings.params.max_tokens * settings.max_turns
    for mb in minibatches:
        assign_weights(mb, config.loss.aggregation, norm_len)
    skipped = 0
    if config.train.skip_zero_advantage:  # after the weights, which count them
        kept = [[s for s in mb if carries_gradient(s, config.loss)] for mb in minibatches]
        skipped = len(samples) - sum(map(len, kept))
        minibatches = kept  # an emptied minibatch still takes its optimizer step
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
    return train_metrics(stats) | {"skipped_zero_advantage": float(skipped)} | distill


def _pins(config: Config, out: Path) -> list[dict[str, str]]:
    """Each environment the run plays, pinned by name, version and digest.

    Kept in ``pins.json`` beside ``config.yaml`` and in every checkpoint: a resume refuses an
    environment that changed since.
    """
    from envhub.registry.catalog import spec
    from envhub.registry.pins import pin

    pins = [pin(spec(source.name)).model_dump() for source in config.sources()]
    (out / "pins.json").write_text(json.dumps(pins, indent=2) + "\n")
    return pins


def _resume(cluster: Cluster, found: Path, config: Config) -> ckpt.TrainerState:
    saved = ckpt.read_state(found)
    cluster.load(str(found))
    log.info("resumed from %s (step %d, data position %d)", found, saved.step, saved.data_position)
    return saved


class WorkerLost(EnvhubError):
    """A worker the run cannot go on without (a policy or reference worker) died."""


def ray_actor_error() -> type[BaseException]:
    """Ray's error for a call to a dead actor (imported late: ``import trainer`` is light)."""
    import ray

    return ray.exceptions.RayActorError


def _lost_message(err: BaseException, state: ckpt.TrainerState, out: Path) -> str:
    newest = ckpt.latest(out / "checkpoints")
    where = f"the newest checkpoint is {newest}" if newest else "there is no checkpoint yet"
    return (
        f"a policy (or reference) worker died at step {state.step + 1} "
        f"({type(err).__name__}): the run stops, as FSDP ranks cannot be replaced mid-run; "
        f"{where}. Rerun the same command with --resume auto (checkpoint.resume=true) to "
        "continue from it; set checkpoint.every to lose fewer steps."
    )


def _write_placement(out: Path, cluster: Cluster) -> None:
    """``DIR/placement.json``: every actor's group, rank, node id, node IP and pid."""
    import json

    rows = cluster.placement()
    (out / "placement.json").write_text(json.dumps(rows, indent=1) + "\n")
    nodes = sorted({r["node_id"][:8] for r in rows})
    log.info("placement: %d actors on %d node(s) %s", len(rows), len(nodes), nodes)


def _checkpoint_due(config: Config, step: int) -> bool:
    every = config.checkpoint.every
    return step == config.train.steps or (every > 0 and step % every == 0)


def _history_row(step: int, metrics: dict[str, float]) -> dict[str, float]:
    keep = ("reward_mean", "accuracy")
    return {"step": step, **{k: metrics[k] for k in keep if k in metrics}}


def _source_max_turns(config: Config, source: MixSource) -> int:
    """A source's turn budget: its own, ``rollout.max_turns``, then the environment's."""
    import envhub

    if source.max_turns:
        return source.max_turns
    if config.rollout.max_turns:
        return config.rollout.max_turns
    if "max_turns" in source.overrides:
        return int(source.overrides["max_turns"])
    return envhub.spec(source.name).max_turns or 1


def _dump_yaml(config: Config) -> str:
    import yaml

    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
