"""`envhub sft`: the update is SFT's, packing changes nothing, resume equals an uninterrupted
run, validation runs and refuses held-out tasks that the data trains on."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from envhub.errors import ConfigError
from envhub.trainer.config import TrainConfigError, load_config
from envhub.trainer.episodes.sft_data import Conversation, Tokenized
from envhub.trainer.sft import SFTConfig, check_no_overlap, to_samples

REPO = Path(__file__).resolve().parents[2]
TINY_SFT = REPO / "examples" / "tiny_sft.yaml"


def _batch() -> list[Tokenized]:
    seqs = [
        ([5, 6, 7, 8, 9, 10], [0, 0, 0, 1, 1, 1]),
        ([5, 6, 7, 11, 12], [0, 0, 0, 1, 1]),
        ([20, 21, 22, 23, 24, 25, 26], [0, 0, 1, 1, 0, 1, 1]),  # two assistant turns
    ]
    return [Tokenized(ids, mask, "s") for ids, mask in seqs]


def _policy(tiny_path, pack: bool):
    from envhub.trainer.algo.grpo import LossConfig
    from envhub.trainer.config import OptimConfig
    from envhub.trainer.workers.policy import Policy

    return Policy(
        str(tiny_path),
        optim=OptimConfig(lr=1e-2),
        loss=LossConfig(),
        total_optim_steps=4,
        temperature=1.0,
        micro_batch_size=4,
        dtype="float32",
        seed=0,
        pack=pack,
        fused=True,
    )


def _one_step(pol):
    """One SFT update of ``pol`` on the batch; its stats, and the gradients before clipping."""
    grads = {}
    clip = pol._clip_grad

    def capture():
        named = pol.model.named_parameters()
        grads.update({k: p.grad.clone() for k, p in named if p.grad is not None})
        return clip()

    pol._clip_grad = capture
    return pol.train([to_samples(_batch(), "token_mean")]), grads


def test_the_update_is_the_mean_nll_of_assistant_tokens_and_packing_changes_nothing(tiny_path):
    """One SFT step on the policy's own update: its gradient is that of the mean negative
    log-likelihood over assistant tokens, computed by hand; packed equals padded."""
    samples = to_samples(_batch(), "token_mean")
    ref = _policy(tiny_path, pack=False)
    # the hand-made loss: mean over the assistant tokens of -log p(token | prefix)
    model = ref.model
    nll, n = 0.0, 0
    for t in _batch():
        logits = model(input_ids=torch.tensor([t.ids])).logits[0, :-1]
        logp = torch.log_softmax(logits.float(), -1)
        for j in range(1, len(t.ids)):
            if t.mask[j]:
                nll = nll - logp[j - 1, t.ids[j]]
                n += 1
    (nll / n).backward()
    hand = {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)

    stats = {pack: _one_step(_policy(tiny_path, pack=pack)) for pack in (False, True)}
    for pack in (False, True):
        out, grads = stats[pack]
        assert out["nll_sum"] / out["n_tokens"] == pytest.approx(float(nll.detach() / n), rel=1e-5)
        for k, g in hand.items():  # the gradients before clipping
            torch.testing.assert_close(grads[k], g, atol=1e-5, rtol=1e-4)
    packed, padded = stats[True][1], stats[False][1]
    for k in padded:
        torch.testing.assert_close(packed[k], padded[k], atol=1e-5, rtol=1e-4)
    assert len(samples) == 3


def _run(out, *overrides) -> list[dict]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "envhub.cli", "sft", str(TINY_SFT), *overrides, "--out", str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]


def test_sft_runs_validates_exports_and_resumes_to_the_same_numbers(tmp_path):
    whole = _run(
        tmp_path / "whole",
        "validation.every=4",
        "validation.tasks=2",
        "validation.max_tokens=8",
    )
    assert [r["step"] for r in whole] == [1, 2, 3, 4]
    assert whole[-1]["nll"] < whole[0]["nll"]
    assert whole[0]["sft/rg-chain_sum/conversations"] == 64
    assert (tmp_path / "whole" / "final" / "config.json").exists()
    rows = [
        json.loads(x) for x in (tmp_path / "whole" / "validation.jsonl").read_text().splitlines()
    ]
    assert [r["step"] for r in rows] == [0, 4]
    # cut after step 2, then continue: the same batches, the same numbers
    _run(tmp_path / "cut", "train.steps=2")
    with pytest.raises(AssertionError, match="already holds a run"):
        _run(tmp_path / "cut")
    resumed = _run(tmp_path / "cut", "--resume", "auto")
    assert [r["step"] for r in resumed] == [1, 2, 3, 4]
    for a, b in zip(whole, resumed, strict=True):
        assert a["nll"] == pytest.approx(b["nll"], rel=1e-5, abs=1e-6)
        assert a["grad_norm"] == pytest.approx(b["grad_norm"], rel=1e-4)
    from safetensors.torch import load_file

    w1 = load_file(tmp_path / "whole" / "final" / "model.safetensors")
    w2 = load_file(tmp_path / "cut" / "final" / "model.safetensors")
    assert w1.keys() == w2.keys()
    for k in w1:
        torch.testing.assert_close(w1[k], w2[k], rtol=0, atol=0)  # bit for bit


def test_a_held_out_task_in_the_sft_data_is_refused(tmp_path):
    import envhub
    from envhub.trainer.episodes.validation import Validator

    cfg = load_config(TINY_SFT, ["validation.every=1"], SFTConfig)
    validator = Validator(
        cfg.validation, tmp_path, cfg.sources(), lambda: None, seed=0, max_tokens=8
    )
    env = envhub.make("rg-chain_sum")
    held = env.tasks("test")[3]
    opening = [m.model_dump(exclude_none=True) for m in env.opening_messages(held)]
    train = env.tasks("train")[0]
    fine = [m.model_dump(exclude_none=True) for m in env.opening_messages(train)]
    env.close()
    answer = {"role": "assistant", "content": "<answer>0</answer>"}
    check_no_overlap(validator, [Conversation("m", [*fine, answer])])
    with pytest.raises(ConfigError, match="shares 1 task"):
        check_no_overlap(validator, [Conversation("m", [*opening, answer])])


def test_sft_config_errors_name_the_key():
    with pytest.raises(TrainConfigError, match="sft"):
        load_config(REPO / "examples" / "tiny.yaml", [], SFTConfig)
    with pytest.raises(TrainConfigError, match="temperature"):
        load_config(TINY_SFT, ["rollout.sampling.temperature=0.7"], SFTConfig)
    with pytest.raises(TrainConfigError, match="did you mean 'sft.batch_size'"):
        load_config(TINY_SFT, ["sft.batch_sise=4"], SFTConfig)
    with pytest.raises(TrainConfigError, match="needs 'env'"):
        load_config(TINY_SFT, ["sft.data=[{kind: reference}]"], SFTConfig)
