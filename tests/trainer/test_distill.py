"""On-policy distillation: the reverse KL against hand-computed numbers, per-token advantages
through the GRPO loss, the GRPO path unchanged without it, and a student that comes to answer
what its teacher always answers."""

import math
from pathlib import Path

import pytest
import torch

from envhub.trainer.algo.batch import Sample, assign_weights, collate
from envhub.trainer.algo.distill import (
    DistillConfig,
    distill_advantages,
    exact_reverse_kl,
    reverse_kl_estimate,
    token_advantages,
)
from envhub.trainer.algo.grpo import LossConfig, policy_loss

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_reverse_kl_against_hand_computed_numbers():
    # student (0.75, 0.25), teacher (0.5, 0.5):
    # KL(s||t) = 0.75 ln 1.5 + 0.25 ln 0.5 = 0.3040988 - 0.1732868 = 0.1308120
    s = torch.log(torch.tensor([[0.75, 0.25]]))
    t = torch.log(torch.tensor([[0.5, 0.5]]))
    assert float(exact_reverse_kl(s, t)[0]) == pytest.approx(0.1308120, abs=1e-6)
    # the per-token estimate on each token, and its mean under the student's own samples
    est = reverse_kl_estimate(s[0], t[0])
    assert est.tolist() == pytest.approx([math.log(1.5), math.log(0.5)], abs=1e-6)
    assert float((s[0].exp() * est).sum()) == pytest.approx(0.1308120, abs=1e-6)
    # reverse, not forward: KL(t||s) = 0.5 ln(2/3) + 0.5 ln 2 = 0.1438410
    assert float(exact_reverse_kl(t, s)[0]) == pytest.approx(0.1438410, abs=1e-6)


def test_distill_advantages_by_hand():
    student = torch.tensor([[-0.1, -2.0, -0.7]])
    teacher = torch.tensor([[-0.5, -0.2, -0.7]])
    mask = torch.tensor([[1, 0, 1]])
    adv = distill_advantages(student, teacher, mask, coef=2.0)
    # -2 * (-0.1 + 0.5) = -0.8 ; masked ; -2 * 0 = 0
    assert adv[0].tolist() == pytest.approx([-0.8, 0.0, 0.0], abs=1e-6)
    tok, kl, n = token_advantages([-0.1, -2.0, -0.7], [-0.5, -0.2, -0.7], [1, 0, 1], 2.0)
    assert tok == pytest.approx([-0.8, 0.0, 0.0]) and kl == pytest.approx(0.4) and n == 2


def test_per_token_advantages_through_the_grpo_loss():
    """At ratio 1 the surrogate's gradient is ``-w * A_t`` per token; a [B] advantage and the
    same value expanded to [B, T] give the same loss (the GRPO path is unchanged)."""
    logp = torch.tensor([[-1.0, -2.0, -0.5]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    weights = mask / 2
    cfg = LossConfig()
    tok_adv = torch.tensor([[0.3, -1.2, 5.0]])
    terms = policy_loss(logp, logp.detach(), tok_adv, mask, weights, cfg)
    terms.loss.backward()
    assert logp.grad[0].tolist() == pytest.approx([-0.15, 0.6, 0.0], abs=1e-6)
    seq = policy_loss(logp.detach(), logp.detach(), torch.tensor([0.7]), mask, weights, cfg)
    same = policy_loss(
        logp.detach(), logp.detach(), torch.tensor([[0.7, 0.7, 0.7]]), mask, weights, cfg
    )
    assert float(seq.loss) == float(same.loss)


def test_collate_carries_token_advantages_only_when_set():
    a = Sample([1, 2, 3], [0, 1, 1], [0.0, -1.0, -1.0], 0.5)
    b = Sample([1, 2], [0, 1], [0.0, -1.0], -0.5)
    assert "token_advantages" not in collate([a, b], 0)  # GRPO: as before
    a.token_advantages_targets, b.token_advantages_targets = [0.0, 1.0], [2.0]
    out = collate([a, b], 0)
    assert out["token_advantages"].tolist() == [[0.0, 1.0], [2.0, 0.0]]


def test_distill_config_errors():
    with pytest.raises(ValueError, match="reference"):
        DistillConfig(teacher="self", privileged_note="no slot")
    with pytest.raises(ValueError):
        DistillConfig(teacher="tiny", coef=0)
    assert DistillConfig(teacher="self").is_self


def _policy(tiny_path, lr: float, seed: int = 0):
    from envhub.trainer.config import OptimConfig
    from envhub.trainer.workers.policy import Policy

    return Policy(
        str(tiny_path),
        optim=OptimConfig(lr=lr),
        loss=LossConfig(),
        total_optim_steps=100,
        temperature=1.0,
        micro_batch_size=16,
        dtype="float32",
        seed=seed,
        pack=True,
        fused=True,
    )


def _sft(policy, prompt: list[int], answers: list[int], steps: int) -> None:
    for _ in range(steps):
        batch = [Sample(prompt + [a], [0] * len(prompt) + [1], [0.0] * (len(prompt) + 1), 1.0)
                 for a in answers]  # fmt: skip
        assign_weights(batch, "token_mean", 1)
        policy.train([batch])


def _next_token_probs(policy, prompt: list[int]) -> torch.Tensor:
    policy.model.eval()
    with torch.no_grad():
        logits = policy.model(input_ids=torch.tensor([prompt])).logits[0, -1]
    return torch.softmax(logits.float(), -1)


def test_a_student_distilled_from_a_teacher_that_always_answers_x_comes_to_answer_x(tiny_path):
    """The student answers Y (SFT on 3 Y : 1 X); the teacher always answers X (SFT on X).
    On-policy distillation alone (no reward): sample from the student, score with the
    teacher, per-token reverse-KL advantages through the policy's own update."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_path)
    text = tok.apply_chat_template(
        [{"role": "user", "content": "Pick one."}], tokenize=False, add_generation_prompt=True
    )
    prompt = tok(text, add_special_tokens=False)["input_ids"]
    x, y = tok.convert_tokens_to_ids("X"), tok.convert_tokens_to_ids("Y")
    teacher = _policy(tiny_path, lr=1e-2)
    _sft(teacher, prompt, [x], steps=15)
    assert float(_next_token_probs(teacher, prompt)[x]) > 0.9
    student = _policy(tiny_path, lr=1e-2, seed=1)
    _sft(student, prompt, [y, y, y, x], steps=15)
    p = _next_token_probs(student, prompt)
    assert int(p.argmax()) == y and float(p[x]) > 0.05
    gen = torch.Generator().manual_seed(0)
    kls = []
    for _ in range(12):
        probs = _next_token_probs(student, prompt)
        drawn = torch.multinomial(probs, 16, replacement=True, generator=gen).tolist()
        batch = [
            Sample(prompt + [a], [0] * len(prompt) + [1],
                   [0.0] * len(prompt) + [math.log(float(probs[a]))], 0.0)
            for a in drawn
        ]  # fmt: skip
        t_lp = teacher.logprobs(batch)
        kl_sum = 0.0
        for s, t in zip(batch, t_lp, strict=True):
            adv, kl, _ = token_advantages(s.engine_logprobs[1:], t, s.loss_mask[1:], 1.0)
            s.token_advantages_targets = adv
            kl_sum += kl
        kls.append(kl_sum / len(batch))
        assign_weights(batch, "token_mean", 1)
        student.train([batch])
    p = _next_token_probs(student, prompt)
    assert int(p.argmax()) == x, (float(p[x]), float(p[y]))
    assert kls[-1] < kls[0]


@pytest.mark.slow  # `envhub train` runs through Ray (1-2 min each here)
@pytest.mark.parametrize(
    "overrides",
    [
        # a model path: its own frozen worker, and its own held-out pass rate measured once
        [
            "loss.distill.teacher=tiny",
            "validation.every=2",
            "validation.tasks=2",
            f"env.overrides.dataset.path={EXAMPLES / 'data' / 'sums_{split}.jsonl'}",
        ],
        ["loss.distill.teacher=self", "loss.distill.standalone=true"],  # privileged prompt
        [  # multi-turn episodes, a LoRA student, distillation added to GRPO
            "loss.distill.teacher=self",
            "model.lora.rank=4",
            "env.name=wordle",
            "env.overrides={max_turns: 2, "
            "reward: {weights: {solved: 1.0, format: 0.1, length: -0.1}, length_limit: 40}}",
            "rollout.sampling.max_tokens=12",
            "rollout.prompts_per_step=2",
        ],
        [  # asynchronous: split placement, batches sampled one step ahead
            "loss.distill.teacher=tiny",
            "cluster.placement=split",
            "cluster.num_cpus=3",
            "generation.num_engines=1",
            "generation.max_trajectory_age_steps=1",
        ],
    ],
    ids=["model-path", "self-standalone", "self-multi-turn-lora", "async-split"],
)
def test_envhub_train_with_a_teacher(tmp_path, overrides):
    from train_support import envhub_train

    rows = envhub_train(
        EXAMPLES / "tiny.yaml",
        tmp_path / "run",
        "train.steps=2",
        "loss.kl_beta=0",
        "checkpoint.every=0",
        "cluster.policy_workers=1",
        *overrides,
    )
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        (per_source,) = [k for k in r if k.endswith("/kl") and k.count("/") == 2]
        assert r["distill/kl"] == pytest.approx(r[per_source])
        assert math.isfinite(r["distill/kl"]) and r["time/teacher"] > 0
    if "loss.distill.teacher=tiny" in overrides:
        # the teacher is the student's starting weights: step 1's reverse KL is ~0
        assert abs(rows[0]["distill/kl"]) < 1e-3
    if "validation.every=2" in overrides:
        assert 0 <= rows[-1]["distill/teacher/gsm8k/pass@1"] <= 1
        assert (tmp_path / "run" / "teacher" / "validation.jsonl").exists()


def test_a_teacher_whose_rate_is_known_is_not_validated_again(tiny_path, tmp_path):
    """``validate_teacher: false`` skips the teacher's own held-out round: no engine call, no
    rows, no ``distill/teacher/...`` metrics (validation of the student stays on)."""
    from transformers import AutoTokenizer

    from envhub.engines.chat import ChatFormatter
    from envhub.trainer.config import load_config
    from envhub.trainer.teacher import Teacher

    config = load_config(
        EXAMPLES / "tiny.yaml", [f"loss.distill.teacher={tiny_path}", "validation.every=2"]
    )
    cfg = config.loss.distill.model_copy(update={"validate_teacher": False})
    teacher = Teacher(cfg, ChatFormatter(AutoTokenizer.from_pretrained(tiny_path)), [])

    class NoCluster:
        def __getattr__(self, name):
            raise AssertionError(f"the teacher was asked to {name}")

    teacher.measure(NoCluster(), config, tmp_path)
    assert teacher.pass_rates == {} and not (tmp_path / "teacher").exists()
    assert config.loss.distill.validate_teacher  # on by default
