"""On-policy distillation: per-token reverse KL to a teacher on the student's own samples.

The student samples as in GRPO; a teacher scores the same tokens; each policy token ``t``
gets the per-token advantage ``-coef * (log pi_student(x_t) - log pi_teacher(x_t))``: the
negative of the single-sample estimate of the reverse KL ``KL(student || teacher)`` at that
position (Agarwal et al. 2024, GKD; Lu & Thinking Machines 2025, "On-Policy Distillation":
reverse KL as a per-token reward with no discount). Under the student's own samples its
expectation is the exact reverse KL (:func:`exact_reverse_kl`), which is mode-seeking: the
student is pushed to put no mass where the teacher puts little, not to cover all of it.

The advantage goes through the GRPO surrogate unchanged (so the clip, importance weights and
aggregation are the same), added to the episode's group advantage, or alone when
``standalone`` (no reward at all). The student's logprobs are the generation engine's, those
of the tokens it sampled; the teacher's come from :attr:`DistillConfig.teacher`.

Shapes as in :mod:`envhub.trainer.algo.grpo`: ``[B, T]`` aligned with the targets.
"""

from __future__ import annotations

import torch
from pydantic import BaseModel, ConfigDict, Field, field_validator

SELF_TEACHER = "self"
"""``loss.distill.teacher: self``: the policy itself, shown the task's reference solution."""

PRIVILEGED_NOTE = (
    "A reference solution, shown to you only (the student does not see it): {reference}\n"
    "Answer as the student should, in the required format."
)


class DistillConfig(BaseModel):
    """``loss.distill``: on-policy distillation (off while unset)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    teacher: str
    """A model (HF folder, GGUF folder or alias, like ``model.path``) with its own worker,
    never refit, that must share the student's tokenizer; or ``self``: the policy's current
    weights under a privileged prompt (the task's reference solution added to the opening
    messages, for the teacher only: self-distillation)."""
    coef: float = Field(default=1.0, gt=0)
    """Weight of the per-token reverse-KL advantage."""
    standalone: bool = False
    """True: train on the distillation signal alone (the reward's advantages are zeroed;
    rewards are still logged). False: added to GRPO's advantages."""
    validate_teacher: bool = True
    """A model-path teacher with ``validation`` on: measure its own held-out pass@1 once at
    start (``distill/teacher/<source>/pass@1``). False skips that round, for a teacher whose
    rate on the same tasks is already known (the run that made it validated it last)."""
    privileged_note: str = PRIVILEGED_NOTE
    """``teacher: self``: the system note added for the teacher; ``{reference}`` is replaced
    by the environment's reference action (the move ``envhub check`` proves scores 1)."""
    cpus: float = Field(default=0.0, ge=0)
    """Ray CPUs the teacher worker reserves (a model-path teacher)."""
    gpus: float = Field(default=0.0, ge=0)
    """Ray GPUs the teacher worker reserves."""
    resources: dict[str, float] = Field(default_factory=dict)
    """Ray custom resources of the teacher worker (its own placement)."""

    @field_validator("privileged_note")
    @classmethod
    def _has_slot(cls, v: str) -> str:
        if "{reference}" not in v:
            raise ValueError("must contain {reference}, where the reference solution goes")
        return v

    @property
    def is_self(self) -> bool:
        """True when the teacher is the policy under a privileged prompt."""
        return self.teacher == SELF_TEACHER


def reverse_kl_estimate(student_logp: torch.Tensor, teacher_logp: torch.Tensor) -> torch.Tensor:
    """Per-token single-sample reverse KL: ``log pi_s(x) - log pi_t(x)`` for ``x ~ pi_s``."""
    return student_logp - teacher_logp


def exact_reverse_kl(student_logits: torch.Tensor, teacher_logits: torch.Tensor) -> torch.Tensor:
    """``KL(student || teacher)`` per position over the whole vocabulary: ``[..., V] -> [...]``."""
    ls = torch.log_softmax(student_logits.float(), -1)
    lt = torch.log_softmax(teacher_logits.float(), -1)
    return (ls.exp() * (ls - lt)).sum(-1)


def distill_advantages(
    student_logp: torch.Tensor, teacher_logp: torch.Tensor, mask: torch.Tensor, coef: float
) -> torch.Tensor:
    """Per-token advantages ``-coef * (student - teacher)`` on policy tokens, 0 elsewhere."""
    return -coef * reverse_kl_estimate(student_logp, teacher_logp) * mask.float()


def token_advantages(
    student_logp: list[float], teacher_logp: list[float], mask: list[int], coef: float
) -> tuple[list[float], float, int]:
    """One sample's target-aligned distillation advantages, its reverse-KL sum and tokens.

    Args:
        student_logp: The engine's logprobs, aligned with the sample's targets.
        teacher_logp: The teacher's, aligned likewise.
        mask: 1 on policy tokens (aligned with the targets).
        coef: :attr:`DistillConfig.coef`.
    """
    s = torch.tensor(student_logp, dtype=torch.float64)
    t = torch.tensor(teacher_logp, dtype=torch.float64)
    m = torch.tensor(mask, dtype=torch.float64)
    adv = distill_advantages(s, t, m, coef)
    kl = float((reverse_kl_estimate(s, t) * m).sum())
    return adv.tolist(), kl, int(m.sum())
