"""The policy on one data-parallel rank: an FSDP2-sharded model, AdamW and the GRPO update.

:class:`Policy` is plain Python so it can run under Ray (``envhub.trainer.workers.cluster``), under
``torch.multiprocessing`` (the FSDP equivalence test) or alone (``world_size=1``). Every
method marked *collective* must be called on all ranks together.

Sharding: ``fully_shard`` on each decoder layer, then on the root (which holds the embeddings,
tied to the LM head, and the final norm). FSDP2 averages gradients over ranks, so each rank's
loss (a partial sum of the batch loss, see ``envhub.trainer.algo.grpo``) is multiplied by the world
size.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import random
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from envhub.engines.weights import quiet_loading_bars
from envhub.trainer.algo.batch import Sample, collate, micro_batches
from envhub.trainer.algo.correction import CorrectionStats, importance_weights
from envhub.trainer.algo.grpo import LossConfig, logprobs_and_entropy, policy_loss
from envhub.trainer.workers.fused import fuse
from envhub.trainer.workers.lora import apply_lora, is_lora, merge_state, save_adapter, scaling
from envhub.trainer.workers.packing import pack
from envhub.trainer.workers.segments import use_segment_attention

if TYPE_CHECKING:
    from envhub.trainer.config import LoraSettings, OptimConfig


CORRECTION_KEYS = tuple(f"rc/{f.name}" for f in fields(CorrectionStats))
"""The rollout-correction sums :meth:`Policy.train` returns (``envhub.trainer.algo.correction``)."""


def init_distributed(rank: int, world_size: int, addr: str, port: int, backend: str) -> None:
    """Join the process group (``tcp://addr:port``) once per process."""
    import torch.distributed as dist

    if dist.is_initialized():
        return
    dist.init_process_group(
        backend=backend, init_method=f"tcp://{addr}:{port}", rank=rank, world_size=world_size
    )


def _distributed() -> bool:
    """True when this process has joined a process group (FSDP2 even at world size 1)."""
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def _peak_memory_mb(device: torch.device) -> float:
    """Peak memory of this process: GPU allocations on CUDA, resident set size on CPU."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def lr_lambda(schedule: str, warmup: int, total: int) -> Any:
    """Multiplier of the base LR at optimizer step ``i``: linear warm-up, then the decay."""

    def constant(progress: float) -> float:
        return 1.0

    def linear(progress: float) -> float:
        return max(0.0, 1.0 - progress)

    def cosine(progress: float) -> float:
        return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    decay = {"constant": constant, "linear": linear, "cosine": cosine}[schedule]

    def fn(i: int) -> float:
        if i < warmup:
            return (i + 1) / warmup
        return decay((i - warmup) / max(1, total - warmup))

    return fn


def _load_model(
    model_path: str,
    dtype: str,
    fused: bool,
    device: torch.device,
    lora: LoraSettings | None = None,
    activation_checkpointing: bool = False,
) -> tuple[int, torch.nn.Module]:
    """The pad id and the model of ``model_path`` on ``device``, prepared as asked.

    Activation checkpointing, then the LoRA adapter, then the fused forwards (the fused MLP
    skips layers whose ``down_proj`` carries an adapter).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    quiet_loading_bars()
    tok = AutoTokenizer.from_pretrained(model_path)
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=getattr(torch, dtype))
    model = model.to(device)
    model.config.use_cache = False
    if activation_checkpointing:  # recompute each decoder layer in backward
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if lora is not None and lora.enabled:
        model = apply_lora(model, lora)
    if fused and fuse(model) == 0:  # the same numbers, fewer activations kept
        logging.getLogger("envhub.trainer").info(
            "train.fused: no MLP or RMSNorm of %s is one envhub.trainer.workers.fused knows; "
            "training "
            "with the model's own modules",
            type(model).__name__,
        )
    return pad_id, model


def _optimizer(model: torch.nn.Module, optim: OptimConfig, total_steps: int) -> tuple[Any, Any]:
    """AdamW over the trainable parameters (a LoRA adapter's alone) and its LR schedule."""
    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad],
        lr=optim.lr,
        betas=tuple(optim.betas),
        weight_decay=optim.weight_decay,
    )
    schedule = lr_lambda(optim.schedule, optim.warmup_steps, total_steps)
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)


class Policy:
    """Model, optimizer and scheduler of one rank."""

    def __init__(
        self,
        model_path: str,
        *,
        rank: int = 0,
        world_size: int = 1,
        optim: OptimConfig,
        loss: LossConfig,
        total_optim_steps: int,
        temperature: float,
        micro_batch_size: int,
        dtype: str,
        seed: int,
        pack: bool,
        fused: bool,
        device: str = "cpu",
        off_policy_cap: float | None = None,
        lora: LoraSettings | None = None,
        activation_checkpointing: bool = False,
    ) -> None:
        """Load the model from an HF directory; shard it in a process group (FSDP2).

        Args:
            model_path: HF directory of the initial weights.
            rank: This process's rank.
            world_size: Number of ranks (the process group must already exist if > 1).
            optim: AdamW, its schedule and the gradient clipping.
            loss: The GRPO objective (clip range, KL weight, aggregation).
            total_optim_steps: Length of the LR schedule.
            temperature: Sampling temperature; logits are divided by it, as the engine does.
            micro_batch_size: Sequences per forward/backward.
            dtype: Parameter dtype (``model.dtype``; no default here: the config's is the one).
            seed: Seeds torch on this rank (``seed``).
            pack: Run each micro-batch as one packed row (``train.pack``,
                :mod:`envhub.trainer.workers.packing`).
            fused: Fuse the model's MLPs and RMSNorms (``train.fused``,
                :mod:`envhub.trainer.workers.fused`).
            device: ``cpu`` or ``cuda``.
            off_policy_cap: Asynchronous runs: truncation of ``pi_old / pi_engine``
                (:func:`envhub.trainer.algo.correction.importance_weights`).
            lora: ``model.lora`` (:mod:`envhub.trainer.workers.lora`).
            activation_checkpointing: ``model.activation_checkpointing``.
        """
        torch.manual_seed(seed + rank)
        self.rank, self.world_size, self.device = rank, world_size, torch.device(device)
        self.loss_cfg, self.temperature = loss, (temperature if temperature > 0 else 1.0)
        self.micro_batch_size, self.off_policy_cap = micro_batch_size, off_policy_cap
        self.max_grad_norm, self.model_path = optim.max_grad_norm, model_path
        self.pad_id, self.model = _load_model(
            model_path, dtype, fused, self.device, lora, activation_checkpointing
        )
        self.pack = pack and use_segment_attention(self.model)  # else padded micro-batches
        self.lora = is_lora(self.model)
        self.sharded = world_size > 1 or _distributed()
        if self.sharded:
            self._shard()
        self.optimizer, self.scheduler = _optimizer(self.model, optim, total_optim_steps)

    def _shard(self) -> None:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        mesh = init_device_mesh(self.device.type, (self.world_size,))
        base = self.model.get_base_model() if self.lora else self.model
        for layer in base.model.layers:
            fully_shard(layer, mesh=mesh)
        fully_shard(self.model, mesh=mesh)

    # ------------------------------------------------------------------ forward

    def _forward(
        self, mb: dict[str, torch.Tensor], samples: Sequence[Sample] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Target logprobs and entropies (at the temperature) from the first policy token on.

        Logits are computed only for target columns ``start:``, where ``start`` is the first
        column holding a policy token in any row: prompt positions before it never carry
        loss, and the vocabulary projection is the costliest part of a small model. With
        ``samples`` (and ``pack``), the micro-batch runs as one packed row
        (:mod:`envhub.trainer.workers.packing`: shared prompt once, no padding); the result is the
        same.

        Memory: the model's ``[K, V]`` logits (``K`` kept rows: packed, the distinct
        positions; padded, ``B * T'``) are the only full-vocabulary tensor;
        :func:`envhub.trainer.algo.grpo.logprobs_and_entropy` reads them in slices, and its backward
        turns them into their own gradient.

        Returns:
            ``(logp [B, T'], entropy [B, T'], start)`` with ``T' = L - 1 - start``;
            ``entropy`` has no gradient.
        """
        mask = mb["mask"]
        cols = mask.any(0).nonzero()
        start = int(cols[0]) if len(cols) else mask.shape[1] - 1
        if samples is not None and self.pack:
            packed = pack(samples, start, mb["input_ids"].shape[1])
            out = self.model(
                input_ids=packed.input_ids.to(self.device),
                position_ids=packed.position_ids.to(self.device),
                use_cache=False,
                logits_to_keep=packed.keep.to(self.device),
                envhub_segments=packed.segments,
            )
            rows = packed.index.to(self.device)
        else:
            out = self.model(
                input_ids=mb["input_ids"].to(self.device),
                attention_mask=mb["attention_mask"].to(self.device),
                use_cache=False,
                logits_to_keep=torch.arange(start, mask.shape[1], device=self.device),
            )
            rows = torch.arange(out.logits.shape[0] * out.logits.shape[1], device=self.device)
            rows = rows.reshape(out.logits.shape[:2])
        logits = out.logits.reshape(-1, out.logits.shape[-1])
        del out  # the autograd function holds the logits alone (it overwrites them)
        targets = mb["targets"][:, start:].to(self.device)
        logp, entropy = logprobs_and_entropy(logits, rows, targets, self.temperature)
        return logp, entropy, start

    def logprobs(self, samples: Sequence[Sample], reference: bool = False) -> list[list[float]]:
        """Target-aligned logprobs of each sample under the current weights. Collective.

        Positions before the batch's first policy token are reported as 0. ``reference``
        (LoRA only): the base model's, with the adapter disabled (the KL term's reference).
        """
        if reference and not self.lora:
            raise ValueError("reference logprobs from the policy need model.lora")
        out: list[list[float]] = [[] for _ in samples]
        index = {id(s): i for i, s in enumerate(samples)}
        self.model.eval()  # no adapter dropout in a logprob pass
        adapter_off = self.model.disable_adapter() if reference else contextlib.nullcontext()
        with torch.no_grad(), adapter_off:
            for mb_samples in micro_batches(samples, self.micro_batch_size, by_prompt=self.pack):
                mb = collate(mb_samples, self.pad_id)
                lp, _, start = self._forward(mb, mb_samples)
                for row, s in enumerate(mb_samples):
                    kept = lp[row, : len(s.tokens) - 1 - start].cpu().tolist()
                    out[index[id(s)]] = [0.0] * start + kept
        return out

    # ------------------------------------------------------------------ update

    def train(self, minibatches: Sequence[Sequence[Sample]]) -> dict[str, float]:
        """One optimizer step per minibatch (this rank's shard of it). Collective.

        Returns:
            Sums over this rank (the driver adds ranks up): ``loss``, ``n_tokens``,
            ``kl_sum``, ``clipped_sum``, ``ratio_sum``, ``entropy_sum``, ``nll_sum`` (the
            policy tokens' negative logprob: SFT's loss), ``mult_err_sum``,
            the importance-weight sums ``is_weight_sum`` and ``rc/*`` (:data:`CORRECTION_KEYS`;
            ``rc/weight_max`` is a max)
            and the per-step ``grad_norm`` (mean over minibatches) and ``lr``.
        """
        self.model.train()
        keys = ["loss", "n_tokens", "kl_sum", "clipped_sum", "ratio_sum", "entropy_sum", "nll_sum"]
        stats = dict.fromkeys([*keys, "is_weight_sum", *CORRECTION_KEYS], 0.0)
        stats["mult_err_sum"], norms = 0.0, []
        for samples in minibatches:
            self.optimizer.zero_grad(set_to_none=True)
            for mb_samples in micro_batches(samples, self.micro_batch_size, by_prompt=self.pack):
                self._micro_step(collate(mb_samples, self.pad_id), mb_samples, stats)
            self._zero_missing_grads()
            norms.append(self._clip_grad())
            stats["lr"] = self.scheduler.get_last_lr()[0]
            self.optimizer.step()
            self.scheduler.step()
        stats["grad_norm"] = sum(norms) / max(1, len(norms))
        stats["peak_memory_mb"] = _peak_memory_mb(self.device)
        return stats

    def _micro_step(
        self, mb: dict[str, torch.Tensor], samples: Sequence[Sample], stats: dict[str, float]
    ) -> None:
        logp, ent, start = self._forward(mb, samples)

        def cut(key: str) -> torch.Tensor:
            return mb[key][:, start:].to(self.device)

        mask = cut("mask")
        # one minibatch: the pre-update policy is the current one (on-policy)
        old = cut("old_logprobs") if "old_logprobs" in mb else logp.detach()
        is_w, corr = importance_weights(
            old, cut("engine_logprobs"), mask, self.loss_cfg.rollout_correction, self.off_policy_cap
        )
        adv = mb["advantages"].to(self.device)
        if "token_advantages" in mb:  # on-policy distillation's per-token term
            adv = adv[:, None] + cut("token_advantages")
        terms = policy_loss(
            logp,
            old,
            adv,
            mask,
            cut("weights"),
            self.loss_cfg,
            cut("ref_logprobs") if "ref_logprobs" in mb else None,
            is_w,
        )
        (terms.loss * self.world_size).backward()
        with torch.no_grad():
            mult = torch.exp((cut("engine_logprobs") - old).abs())
            stats["entropy_sum"] += float((ent * mask).sum())
            stats["nll_sum"] -= float((logp.detach() * mask).sum())
            stats["mult_err_sum"] += float((mult * mask).sum())
        stats["loss"] += float(terms.loss.detach())
        stats["n_tokens"] += terms.n_tokens
        stats["kl_sum"] += terms.kl_sum
        stats["clipped_sum"] += terms.clipped_sum
        stats["ratio_sum"] += terms.ratio_sum
        stats["is_weight_sum"] += terms.is_weight_sum
        for key in CORRECTION_KEYS:
            value = getattr(corr, key.removeprefix("rc/"))
            stats[key] = max(stats[key], value) if key.endswith("_max") else stats[key] + value

    def _zero_missing_grads(self) -> None:
        """Give a zero gradient where no micro-batch gave one.

        Every sample of the minibatch was left out (``train.skip_zero_advantage``): AdamW's
        step is then the one a zero loss would take (its momentum still moves the weights).
        """
        for p in self.model.parameters():
            if p.requires_grad and p.grad is None:
                p.grad = torch.zeros_like(p)

    def _clip_grad(self) -> float:
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        if hasattr(norm, "full_tensor"):
            norm = norm.full_tensor()
        return float(norm)

    # ------------------------------------------------------------------ weights

    def full_state_dict(self, merged: bool = True) -> dict[str, torch.Tensor]:
        """Unsharded weights with Hugging Face names, on every rank. Collective.

        With LoRA: the base model's names with the adapter merged in (what engines load), or
        with ``merged=False`` the ``PeftModel``'s own state (base and adapter apart).
        """
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_model_state_dict,
        )

        if not self.sharded:
            state = {k: v.detach() for k, v in self.model.state_dict().items()}
        else:
            opts = StateDictOptions(full_state_dict=True, cpu_offload=False)
            state = get_model_state_dict(self.model, options=opts)
        if self.lora and merged:
            return merge_state(state, scaling(self.model))
        return state

    def save(self, directory: str | Path) -> None:
        """Write the sharded model and optimizer (DCP), scheduler and RNG. Collective."""
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict

        directory = Path(directory)
        model_sd, optim_sd = self._checkpoint_state(get_state_dict)
        dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=str(directory / "dcp"))
        extra = {
            "scheduler": self.scheduler.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "python_rng": random.getstate(),
        }
        torch.save(extra, directory / f"rank{self.rank}.pt")

    def load(self, directory: str | Path) -> None:
        """Restore what :meth:`save` wrote. Collective."""
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

        directory = Path(directory)
        opts = self._dcp_opts()
        model_sd, optim_sd = self._checkpoint_state(get_state_dict)
        state = {"model": model_sd, "optim": optim_sd}
        dcp.load(state, checkpoint_id=str(directory / "dcp"))
        set_state_dict(
            self.model,
            self.optimizer,
            model_state_dict=state["model"],
            optim_state_dict=state["optim"],
            options=opts,
        )
        extra_path = directory / f"rank{self.rank}.pt"
        if not extra_path.exists():
            extra_path = directory / "rank0.pt"  # resumed on more ranks than saved
        extra = torch.load(extra_path, weights_only=False)
        self.scheduler.load_state_dict(extra["scheduler"])
        torch.set_rng_state(extra["torch_rng"])
        random.setstate(extra["python_rng"])

    def _dcp_opts(self) -> Any:
        """Checkpoint options: with LoRA, the trainable parameters (the adapter) alone."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions

        return StateDictOptions(ignore_frozen_params=self.lora, strict=not self.lora)

    def _checkpoint_state(self, get_state_dict: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """Model and optimizer state to checkpoint; with LoRA, of the trainable tensors only.

        (``ignore_frozen_params`` alone keeps a tied LM head, which ``named_parameters``
        does not list, so it is filtered here by name.)
        """
        model_sd, optim_sd = get_state_dict(self.model, self.optimizer, options=self._dcp_opts())
        if self.lora:
            trainable = {n for n, p in self.model.named_parameters() if p.requires_grad}
            model_sd = {k: v for k, v in model_sd.items() if k in trainable}
        return model_sd, optim_sd

    def export_adapter(self, directory: str | Path, state: dict[str, torch.Tensor]) -> None:
        """Write the LoRA adapter of ``state`` (``full_state_dict(merged=False)``). Rank 0."""
        save_adapter(self.model, directory, state)

    def export(self, directory: str | Path, state: dict[str, torch.Tensor]) -> None:
        """Save ``state`` (from :meth:`full_state_dict`) as a plain HF directory. Rank 0."""
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

        config = AutoConfig.from_pretrained(self.model_path)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
        model.load_state_dict({k: v.cpu() for k, v in state.items()}, strict=True, assign=True)
        if getattr(config, "tie_word_embeddings", False):
            model.tie_weights()
        os.makedirs(directory, exist_ok=True)
        model.save_pretrained(directory)
        AutoTokenizer.from_pretrained(self.model_path).save_pretrained(directory)
