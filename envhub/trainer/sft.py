"""Supervised fine-tuning on the trainer's own parts: ``envhub sft CONFIG [--out DIR]``.

One step:

1. **Batch**: ``sft.batch_size`` conversations drawn from the mix of ``sft.data`` sources by
   weight (:class:`envhub.trainer.episodes.sft_data.SFTMix`: deterministic in seed and step,
   so a resumed run trains on exactly what the uninterrupted one did), tokenized once at
   start with the loss on assistant tokens only.
2. **Update**: the FSDP2 policy workers' own update (:meth:`Policy.train`, sequence packing,
   micro-batches, gradient clipping, the optimizer and its schedule) on samples whose
   advantage is 1 and whose "old" logprobs are the current ones: the clipped surrogate's
   gradient is then exactly ``-grad log p`` of each assistant token, weighted by
   ``loss.aggregation`` (``token_mean``: the mean negative log-likelihood over the batch's
   assistant tokens). The logged ``nll`` is that mean.
3. **Validation** (``validation.every``): the engines are refit and ``envhub eval``'s episodes
   run on held-out tasks of the ``env`` section's environments, exactly as in ``envhub
   train``; a held-out task whose prompt (as the model sees it) or id is in the SFT data is
   refused before anything starts.

Everything else is ``envhub train``'s: the ``model`` section (LoRA, dtype), ``optim``,
``train`` (micro-batch, packing, fused), ``cluster``, ``checkpoint`` (atomic, resumable,
``--force``), ``logging`` (metrics.jsonl, progress lines) and the export to ``OUT/final``,
which ``envhub train`` then takes as ``model.path``.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from pydantic import Field, model_validator

from envhub.engines.weights import resolve_model
from envhub.trainer import checkpoint as ckpt
from envhub.trainer.algo.batch import Sample, assign_weights, shard
from envhub.trainer.config import Config, _Section
from envhub.trainer.episodes.sft_data import (
    Conversation,
    SFTDataError,
    SFTMix,
    SFTSource,
    Tokenized,
    iter_user_texts,
    load_source,
    tokenize_chat,
)
from envhub.trainer.episodes.validation import Validator, check_held_out
from envhub.trainer.metrics import MetricsLogger, train_metrics
from envhub.trainer.workers.lora import check_rank

if TYPE_CHECKING:
    from envhub.trainer.workers.cluster import Cluster

log = logging.getLogger("envhub.trainer")


class SFTSection(_Section):
    """The ``sft`` section: what is trained on, and how much of it per step."""

    data: list[SFTSource] = Field(min_length=1)
    """Sources mixed by weight (:class:`envhub.trainer.episodes.sft_data.SFTSource`)."""
    batch_size: int = Field(default=16, ge=1)
    """Conversations per optimizer step (over all policy workers)."""
    max_seq_len: int = Field(default=1024, ge=16)
    """Conversations longer than this many tokens are left out (counted as ``too_long``)."""

    @model_validator(mode="after")
    def _check_labels(self) -> SFTSection:
        labels = [s.label for s in self.data]
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise ValueError(f"sft.data names {dup} more than once; give each a distinct 'name'")
        return self


class SFTConfig(Config):
    """``envhub train``'s config with an ``sft`` section; ``env`` names what validation runs."""

    sft: SFTSection

    @model_validator(mode="after")
    def _check_sft(self) -> SFTConfig:
        if self.rollout.sampling.temperature != 1.0:
            raise ValueError(
                "rollout.sampling.temperature divides the policy's logits in training; SFT "
                "trains at temperature 1: drop it (validation.temperature sets the sampling)"
            )
        if self.train.minibatches != 1:
            raise ValueError("train.minibatches: SFT takes one optimizer step per batch")
        if self.loss.kl_beta > 0:
            raise ValueError("loss.kl_beta: SFT has no KL term; drop it")
        return self

    def resolve_paths(self, base_dir: Path) -> None:
        """Also the ``path`` of each ``sft.data`` source, relative to the config file."""
        super().resolve_paths(base_dir)
        for source in self.sft.data:
            if source.path and not Path(source.path).is_absolute():
                source.path = str((base_dir / source.path).resolve())

    def fingerprint(self) -> dict[str, Any]:
        """The run's own settings a checkpoint must be resumed under, and the data's."""
        data = [[s.label, s.kind, s.weight] for s in self.sft.data]
        return super().fingerprint() | {"sft.data": data, "sft.batch_size": self.sft.batch_size}


# ---------------------------------------------------------------------------- data


def build_data(
    config: SFTConfig, tokenizer: Any
) -> tuple[dict[str, list[Tokenized]], list[Conversation], dict[str, float]]:
    """Every source loaded and tokenized; the conversations; what loading counted."""
    data: dict[str, list[Tokenized]] = {}
    convs: list[Conversation] = []
    counts: dict[str, float] = {}
    for source in config.sft.data:
        found, extra = load_source(source)
        toks = [tokenize_chat(tokenizer, c) for c in found]
        kept = [t for t in toks if len(t.ids) <= config.sft.max_seq_len and t.n_trained > 0]
        label = source.label
        counts[f"sft/{label}/conversations"] = float(len(kept))
        counts[f"sft/{label}/too_long"] = float(len(toks) - len(kept))
        counts |= {f"sft/{label}/{k}": v for k, v in extra.items()}
        if not kept:
            raise SFTDataError(
                f"sft.data source {label!r}: none of its {len(toks)} conversations fits "
                f"sft.max_seq_len={config.sft.max_seq_len} tokens; raise it"
            )
        log.info("sft data: %s: %d conversations (%s)", label, len(kept), source.kind)
        data[label] = kept
        convs += found
    return data, convs, counts


def check_no_overlap(validator: Validator, convs: list[Conversation]) -> None:
    """Refuse held-out tasks that the SFT data trains on (by id, or by prompt as shown).

    A held-out task is compared through its opening user message (the environment's prompt
    template applied), which is what a conversation of the data would hold.

    Raises:
        ConfigError: from :func:`envhub.trainer.episodes.validation.check_held_out`.
    """
    train = [
        (env or "", SimpleNamespace(task_id=None, prompt=text))
        for env, text in iter_user_texts(convs)
    ]
    train += [
        (c.env or "", SimpleNamespace(task_id=c.task_id, prompt=f"\0{c.task_id}"))
        for c in convs
        if c.task_id
    ]
    for source in validator.sources:
        env = validator._env(source)
        try:
            split = validator.split_of(source)
            held = []
            for t in env.tasks(split):
                users = [m.content for m in env.opening_messages(t) if m.role == "user"]
                held.append(SimpleNamespace(task_id=t.task_id, prompt=users[-1] if users else ""))
            check_held_out(
                source.name, [p for p in train if p[1].prompt or p[1].task_id], held, split
            )
        finally:
            env.close()


def to_samples(batch: list[Tokenized], aggregation: str) -> list[Sample]:
    """Training samples: advantage 1 on the assistant tokens, weights over the batch."""
    samples = [Sample(t.ids, t.mask, [0.0] * len(t.ids), 1.0) for t in batch]
    assign_weights(samples, aggregation, max(len(t.ids) for t in batch))
    return samples


# ---------------------------------------------------------------------------- the run


def sft(config: SFTConfig, out: Path) -> ckpt.TrainerState:
    """Fine-tune as configured, writing everything under ``out``; returns the final state."""
    from transformers import AutoTokenizer

    from envhub.trainer.train import _dump_yaml, _write_placement
    from envhub.trainer.workers.cluster import Cluster

    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(_dump_yaml(config))
    model_dir = str(resolve_model(config.model.path))
    check_rank(config.model.lora, model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    data, convs, counts = build_data(config, tokenizer)
    validator = _validator(config, out)
    if validator is not None:
        check_no_overlap(validator, convs)  # before any worker starts
    mix = SFTMix(data, {s.label: s.weight for s in config.sft.data}, config.seed)
    state = ckpt.TrainerState(fingerprint=config.fingerprint(), config_digest=config.digest())
    ckpt_root = out / "checkpoints"
    resume_from = ckpt.latest(ckpt_root) if config.checkpoint.resume else None
    if resume_from is not None:
        ckpt.check_compatible(ckpt.read_state(resume_from), config.fingerprint(), resume_from)
    logger = MetricsLogger(out, config.logging, config.train.steps, config.model_dump(mode="json"))
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    with Cluster(config, model_dir, env_workers=False) as cluster:
        _write_placement(out, cluster)
        if resume_from is not None:
            state = ckpt.read_state(resume_from)
            cluster.load(str(resume_from))
            log.info("resumed from %s (step %d)", resume_from, state.step)
            if validator is not None:
                validator.start_at(state.step)
        else:
            _validate(cluster, validator, config, 0, state)
        logger.start_at(state.step)
        while state.step < config.train.steps:
            metrics = _step(cluster, config, mix, state, pad_id, validator, ckpt_root)
            logger.log(state.step, metrics | (counts if state.step == 1 else {}))
        if config.checkpoint.export_final:
            cluster.export(str(out / "final"))
    logger.close([])
    return state


def _step(
    cluster: Cluster,
    config: SFTConfig,
    mix: SFTMix,
    state: ckpt.TrainerState,
    pad_id: int,
    validator: Validator | None,
    ckpt_root: Path,
) -> dict[str, Any]:
    """One SFT step (batch, update, validation when due, checkpoint when due); its metrics."""
    step = state.step + 1
    t_step = time.perf_counter()
    batch = mix.batch(step, config.sft.batch_size)
    samples = to_samples(batch, config.loss.aggregation)
    per_rank = [[part] for part in shard(samples, len(cluster.policy), pad_id)]
    t0 = time.perf_counter()
    stats = cluster.train(per_rank)
    times = {"time/train": time.perf_counter() - t0}
    metrics = _sft_metrics(stats, batch) | {
        f"sft/{k}/epoch": v for k, v in mix.epochs(step, config.sft.batch_size).items()
    }
    state.step = step
    state.data_position += len(batch)
    times |= _validate(cluster, validator, config, step, state)
    if step == config.train.steps or (
        config.checkpoint.every and step % config.checkpoint.every == 0
    ):
        t0 = time.perf_counter()
        ckpt.save(ckpt_root, state, cluster.save, keep=config.checkpoint.keep)
        times["time/checkpoint"] = time.perf_counter() - t0
    times["time/step"] = time.perf_counter() - t_step
    times["tokens_per_s"] = sum(len(t.ids) for t in batch) / max(times["time/train"], 1e-9)
    return metrics | times


def _sft_metrics(stats: list[dict[str, float]], batch: list[Tokenized]) -> dict[str, Any]:
    """The update's figures: ``nll`` (mean over assistant tokens), grad norm, lr, tokens."""
    m = train_metrics(stats)
    n = max(m["train_tokens"], 1.0)
    out = {
        "nll": sum(r.get("nll_sum", 0.0) for r in stats) / n,
        "entropy": m.get("entropy", 0.0),
        "grad_norm": m["grad_norm"],
        "lr": m["lr"],
        "train_tokens": m["train_tokens"],
        "sequences": float(len(batch)),
        "memory/worker_peak_mb": m["memory/worker_peak_mb"],
    }
    for name in sorted({t.source for t in batch}):
        out[f"sft/{name}/sequences"] = float(sum(t.source == name for t in batch))
    return out


def _validator(config: SFTConfig, out: Path) -> Validator | None:
    if config.validation.every <= 0:
        return None
    return Validator(
        config.validation,
        out,
        config.sources(),
        lambda: None,  # replaced once the cluster is up (see _validate)
        seed=config.seed,
        max_tokens=config.rollout.sampling.max_tokens,
    )


def _validate(
    cluster: Cluster,
    validator: Validator | None,
    config: SFTConfig,
    step: int,
    state: ckpt.TrainerState,
) -> dict[str, float]:
    """A validation round when due: refit the engines, run ``envhub eval``'s episodes."""
    if validator is None or not validator.due(step, config.train.steps):
        return {}
    from envhub.evaluate.backends import BatchingBackend
    from envhub.evaluate.local import engine_batch_fn
    from envhub.trainer.episodes.validation_rounds import ClusterEngine

    t0 = time.perf_counter()
    cluster.refit()
    chat = _chat(cluster)
    engine = ClusterEngine(cluster, config.rollout.max_seq_len)
    validator.backend_factory = lambda: BatchingBackend(
        "policy", engine_batch_fn(engine, chat), max_batch=config.validation.concurrency
    )
    validator.tracker.load_state_dict(state.validation)
    rows = validator.run(step)
    if validator.tracker.update(step, rows) and config.validation.keep_best:
        with ckpt.atomic_dir(validator.out / "best") as tmp:
            cluster.export(str(tmp))
    state.validation = validator.tracker.state_dict()
    metrics: dict[str, float] = {f"validation/{r['env']}/pass@1": r["pass@1"] for r in rows}
    metrics["time/validation"] = time.perf_counter() - t0
    return metrics


def _chat(cluster: Cluster) -> Any:
    from transformers import AutoTokenizer

    from envhub.engines.chat import ChatFormatter

    return ChatFormatter(AutoTokenizer.from_pretrained(str(resolve_model(cluster.cfg.model.path))))
