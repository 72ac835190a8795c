"""The distillation teacher of a GRPO run (``loss.distill``): its logprobs, the advantages.

After the rollout and before the update, the teacher scores the student's own samples in
one batched call (:meth:`Teacher.apply`):

- a model path: its own frozen worker (:class:`~envhub.trainer.workers.cluster.ReferenceWorker`
  loaded from that path, on ``loss.distill``'s placement), never refit;
- ``self``: the policy's current weights on the same response tokens after a *privileged*
  opening: the episode's opening messages with a system note holding the task's reference
  solution (the environment's :meth:`~envhub.core.TaskEnv.reference_action`, the move
  ``envhub check`` proves scores 1). The student never sees it. Multi-turn episodes keep
  everything after the first model token as sampled (environment answers included); the
  note holds the first turn's reference.

Each policy token then gets :func:`envhub.trainer.algo.distill.token_advantages` added to its
episode's advantage (or alone, ``standalone``). Metrics: ``distill/kl`` (mean per-token
reverse-KL estimate over policy tokens), ``distill/<source>/kl`` per mix source,
``time/teacher``, and, for a model-path teacher with ``validation`` on, the teacher's own
held-out pass@1 per source ``distill/teacher/<source>/pass@1`` (measured once at start with
validation's episodes, in ``DIR/teacher/``: the teacher is never refit).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envhub.errors import ConfigError
from envhub.trainer.algo.batch import Sample
from envhub.trainer.algo.distill import DistillConfig, token_advantages

if TYPE_CHECKING:
    from envhub.engines.chat import ChatFormatter
    from envhub.trainer.config import Config
    from envhub.trainer.episodes.mix import MixSource
    from envhub.trainer.workers.cluster import Cluster


class Teacher:
    """Scores a step's samples and sets their distillation advantages."""

    def __init__(self, cfg: DistillConfig, chat: ChatFormatter, sources: list[MixSource]):
        """``sources``: the mix's (their environments give ``self``'s reference solutions)."""
        self.cfg, self.chat = cfg, chat
        self.sources = {s.name: s for s in sources}
        self._envs: dict[str, Any] = {}
        self.pass_rates: dict[str, float] = {}
        """The teacher's held-out pass@1 by ``distill/teacher/<source>/pass@1``."""
        if not cfg.is_self:
            check_same_tokenizer(cfg.teacher, chat.tokenizer)

    def apply(self, cluster: Cluster, samples: list[Sample]) -> dict[str, float]:
        """Teacher logprobs of ``samples``; their per-token advantages set; the metrics."""
        t0 = time.perf_counter()
        teacher = self.logprobs(cluster, samples)
        sums: dict[str, list[float]] = {}
        for s, t_lp in zip(samples, teacher, strict=True):
            student = s.engine_logprobs[1:]
            adv, kl, n = token_advantages(student, t_lp, s.loss_mask[1:], self.cfg.coef)
            s.token_advantages_targets = adv
            if self.cfg.standalone:
                s.advantage = 0.0
            acc = sums.setdefault(s.source or "all", [0.0, 0.0])
            acc[0] += kl
            acc[1] += n
        total_kl = sum(v[0] for v in sums.values())
        total_n = sum(v[1] for v in sums.values())
        out = {"distill/kl": total_kl / max(total_n, 1.0)}
        for name, (kl, n) in sorted(sums.items()):
            out[f"distill/{name}/kl"] = kl / max(n, 1.0)
        out["time/teacher"] = time.perf_counter() - t0
        return out | self.pass_rates

    def measure(self, cluster: Cluster, config: Config, out: Path) -> None:
        """The teacher's held-out pass@1 per source: validation's episodes, run once.

        Only for a model-path teacher with ``validation`` on and ``validate_teacher`` (``self``
        is the policy, whose rate validation reports). Rows in ``out/teacher/validation.jsonl``.
        """
        if self.cfg.is_self or not self.cfg.validate_teacher or config.validation.every <= 0:
            return
        from envhub.evaluate.backends import BatchingBackend
        from envhub.evaluate.local import engine_batch_fn
        from envhub.trainer.episodes.validation import Validator

        engine = _TeacherEngine(cluster, config.rollout.max_seq_len)
        folder = out / "teacher"
        folder.mkdir(parents=True, exist_ok=True)
        validator = Validator(
            config.validation,
            folder,
            config.sources(),
            lambda: BatchingBackend(
                "teacher",
                engine_batch_fn(engine, self.chat),
                max_batch=config.validation.concurrency,
            ),
            seed=config.seed,
            max_tokens=config.rollout.sampling.max_tokens,
        )
        rows = validator.run(0)
        self.pass_rates = {f"distill/teacher/{r['env']}/pass@1": r["pass@1"] for r in rows}

    def logprobs(self, cluster: Cluster, samples: list[Sample]) -> list[list[float]]:
        """Target-aligned teacher logprobs of each sample (batched in one call)."""
        if not self.cfg.is_self:
            return cluster.teacher_logprobs(samples)
        privileged, shifts = zip(*(self._privileged(s) for s in samples), strict=True)
        scored = cluster.sharded_logprobs(list(privileged))
        out = []
        for s, lp, shift in zip(samples, scored, shifts, strict=True):
            start = _first_policy(s)
            row = [0.0] * (len(s.tokens) - 1)
            for j in range(max(start - 1, 0), len(row)):
                row[j] = lp[j + shift]
            out.append(row)
        return out

    def _privileged(self, s: Sample) -> tuple[Sample, int]:
        """``s`` after the privileged opening, and how far its tokens moved."""
        env = self._env(s.source)
        res = env.reset(task_id=s.task_id)
        reference = env.reference_action(env._episode)
        if reference is None:
            raise ConfigError(
                f"loss.distill.teacher=self shows the teacher the task's reference solution, "
                f"but {s.source} has none (reference_action() returned None): give a model "
                "path as the teacher, or leave this environment out of the mix"
            )
        note = self.cfg.privileged_note.format(reference=reference.content)
        messages = [m.model_dump(exclude_none=True) for m in res.messages]
        if messages and messages[0]["role"] == "system":
            messages[0]["content"] = messages[0]["content"] + "\n\n" + note
        else:
            messages.insert(0, {"role": "system", "content": note})
        prompt = self.chat.prompt_ids(messages, tools=res.info.tools or None)
        start = _first_policy(s)
        tokens = prompt + s.tokens[start:]
        mask = [0] * len(prompt) + s.loss_mask[start:]
        return Sample(tokens, mask, [0.0] * len(tokens), 0.0), len(prompt) - start

    def _env(self, name: str) -> Any:
        if name not in self._envs:
            import envhub

            src = self.sources[name]
            overrides = dict(src.overrides)
            if src.max_turns:
                overrides["max_turns"] = src.max_turns
            self._envs[name] = envhub.make(name, src.runner, **overrides)
        return self._envs[name]

    def close(self) -> None:
        """Close the environments opened for reference solutions."""
        for env in self._envs.values():
            env.close()
        self._envs.clear()


PROBE = "<answer>42</answer> The quick brown fox, 3.14159; 'über' naïve 東京"


def check_same_tokenizer(teacher_path: str, student_tokenizer: Any) -> None:
    """Refuse a teacher whose tokenizer differs: it must score the student's token ids.

    Raises:
        ConfigError: the vocabularies or a probe text's ids differ, naming both.
    """
    from transformers import AutoTokenizer

    from envhub.engines.weights import resolve_model

    teacher = AutoTokenizer.from_pretrained(str(resolve_model(teacher_path)))
    if (
        len(teacher) != len(student_tokenizer)
        or teacher(PROBE)["input_ids"] != (student_tokenizer(PROBE)["input_ids"])
    ):
        raise ConfigError(
            f"loss.distill.teacher={teacher_path!r} has another tokenizer than the student "
            f"({len(teacher)} vs {len(student_tokenizer)} tokens): on-policy distillation "
            "scores the student's own token ids, so the teacher must share its tokenizer "
            "(pick a teacher of the same family)"
        )


class _TeacherEngine:
    """The teacher worker as the engine ``envhub eval``'s local backend expects."""

    def __init__(self, cluster: Cluster, max_model_len: int):
        self.cluster, self.max_model_len = cluster, max_model_len

    def generate(
        self, prompts: list[list[int]], params: Any, seeds: list[int] | None = None
    ) -> list[Any]:
        """The teacher's generations in prompt order."""
        return self.cluster.teacher_generate(prompts, params, seeds)


def _first_policy(s: Sample) -> int:
    """Index of the sample's first policy token."""
    return s.loss_mask.index(1) if 1 in s.loss_mask else len(s.loss_mask)
