"""The training loop's edges, each written as the attack on the trainer's configs and data.

Issue 30, item 4: a run that trains on nothing, backfill without a ceiling, mix weights of
inf/NaN/1e308, validation data the mix trains on, terminal control sequences in model text,
a LoRA checkpoint resumed without LoRA, absurd LoRA settings, and rewards that are finite per
step but not over an episode or not in float32. Item 3: metrics that say what they stand on.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from envhub.errors import ConfigError
from envhub.trainer import checkpoint as ckpt
from envhub.trainer.config import TrainConfigError, load_config
from envhub.trainer.episodes.mix import MixSource, quotas
from envhub.trainer.episodes.rollout import RolloutBatch, TrainingEpisode, _record
from envhub.trainer.episodes.validation import (
    BestTracker,
    check_held_out,
    plot_validation,
    round_row,
)
from envhub.trainer.episodes.viewer import render_html, render_text, visible
from envhub.trainer.metrics import MetricsLogger, plot_rewards, rollout_metrics, source_metrics
from envhub.trainer.train import to_samples
from envhub.trainer.watchdog import FailedSteps, RunFailed, WatchdogConfig
from envhub.types import Info, StepResult


def _config(tmp_path: Path, text: str, *overrides: str):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return load_config(path, list(overrides))


# ---------------------------------------------------------------- mix weights


@pytest.mark.parametrize("weight", [".inf", "-.inf", ".nan"])
def test_a_mix_weight_that_is_not_finite_is_refused_naming_the_key(tmp_path, weight):
    text = f"env:\n  mix:\n    - {{name: gsm8k, weight: {weight}}}\n    - {{name: math}}\n"
    with pytest.raises(TrainConfigError, match=r"env\.mix\.0\.weight"):
        _config(tmp_path, text)


def test_huge_mix_weights_are_normalised_without_overflow():
    got = quotas({"a": 1e308, "b": 1e308, "c": 1e308}, 6, random.Random(0))
    assert got == {"a": 2, "b": 2, "c": 2}
    assert MixSource(name="x", weight=1e308).weight == 1e308


def test_backfill_rounds_have_a_ceiling_whatever_the_config_says(tmp_path):
    with pytest.raises(TrainConfigError, match="rollout.max_backfill_rounds"):
        _config(tmp_path, "rollout: {max_backfill_rounds: 1000}\n")


# ---------------------------------------------------------------- validation overlap


def _task(task_id, prompt):
    return SimpleNamespace(task_id=task_id, prompt=prompt)


def test_validation_refuses_a_split_another_source_trains_on():
    train = [("mix-sums", _task("s1", "What is 1 + 2?")), ("other", _task("t9", "2 * 3?"))]
    held = [_task("h1", "2 * 3?")]
    with pytest.raises(ConfigError, match="h1"):
        check_held_out("mix-products", train, held, "test")


def test_validation_refuses_prompts_that_differ_only_by_whitespace_or_case():
    train = [("a", _task("t1", "What is 1 + 2?"))]
    for variant in ("What  is 1 + 2? ", "\nwhat is 1\t+ 2?", "WHAT IS 1 + 2?"):
        with pytest.raises(ConfigError, match="shares 1 task"):
            check_held_out("a", train, [_task("h", variant)], "test")
    check_held_out("a", train, [_task("h", "What is 1 + 3?")], "test")  # a different task
    check_held_out("b", train, [_task("t1", "other")], "test")  # same id, another env: fine


# ---------------------------------------------------------------- rollouts viewer

HOSTILE = "ok\x1b[2J\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\x9b31m\u202eevil\x00done"


def _record_row(**kw):
    row = {
        "env": "e",
        "task_id": "t",
        "group": 0,
        "reward": 1.0,
        "components": {},
        "status": "ok",
        "end": "terminated",
        "turns": 1,
        "advantage": 0.5,
        "response_tokens": 3,
        "total_tokens": 9,
        "age": 0,
        "prompt": HOSTILE,
        "messages": [{"role": "assistant", "content": HOSTILE}],
        "error": HOSTILE,
    }
    return row | kw


def _raw_controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]


def test_the_terminal_view_escapes_every_control_character():
    text = render_text(1, [_record_row(task_id="t\x1b[2J")])
    assert _raw_controls(text) == [] and "\u202e" not in text
    assert "\\x1b]52;c;" in text  # shown, not sent: the reader sees what the model wrote
    assert visible("a\nb\tc") == "a\nb\tc"


def test_the_html_page_escapes_every_control_character(tmp_path):
    from envhub.trainer.episodes.rollout_log import write_step

    run = tmp_path / "run"
    write_step(run / "rollouts", 1, [_record_row()])
    page = tmp_path / "r.html"
    render_html(run, page)
    text = page.read_text()
    assert _raw_controls(text) == [] and "\u202e" not in text and "<pre>ok\\x1b[2J" in text


# ---------------------------------------------------------------- LoRA settings and resume


def test_resuming_a_lora_checkpoint_with_lora_off_is_refused_before_anything_starts(tmp_path):
    lora = _config(tmp_path, "model: {lora: {rank: 4}}\n")
    plain = _config(tmp_path, "{}\n")
    saved = ckpt.TrainerState(fingerprint=lora.fingerprint())
    with pytest.raises(ckpt.ResumeError, match="model.lora"):
        ckpt.check_compatible(saved, plain.fingerprint(), tmp_path)


@pytest.mark.parametrize("alpha", [".inf", ".nan", "1.0e308"])
def test_an_absurd_lora_alpha_is_refused_naming_the_key(tmp_path, alpha):
    with pytest.raises(TrainConfigError, match=r"model\.lora\.alpha"):
        _config(tmp_path, f"model: {{lora: {{rank: 4, alpha: {alpha}}}}}\n")


def test_a_lora_rank_above_the_layers_is_refused_naming_the_key():
    from envhub.engines.weights import resolve_model
    from envhub.trainer.config import LoraSettings
    from envhub.trainer.workers.lora import check_rank

    tiny = resolve_model("tiny")  # hidden size 64
    check_rank(LoraSettings(rank=16), tiny)
    with pytest.raises(TrainConfigError, match=r"model\.lora\.rank=100000 is above .*64"):
        check_rank(LoraSettings(rank=100_000), tiny)


# ---------------------------------------------------------------- rewards


def _episode(group=0, key="k"):
    return TrainingEpisode(task_id="t", seed=0, group=group, key=key, env="e")


def _step(reward, **components):
    info = Info(task_id="t", status="ok", components=components or {"correctness": reward})
    return StepResult(messages=[], reward=reward, terminated=False, truncated=False, info=info)


@pytest.mark.parametrize(
    "rewards",
    [[math.inf], [math.nan], [1e39], [3e38, 3e38], [-3e38, -3e38]],
    ids=["inf", "nan", "past-float32", "sum-past-float32", "negative-sum"],
)
def test_a_reward_not_finite_in_float32_is_the_environments_error(rewards):
    ep = _episode()
    kept = [_record(ep, _step(r)) for r in rewards]
    assert kept[-1] is False and ep.dropped and ep.status == "env_error"
    assert "not a finite float32" in ep.error


def test_large_finite_rewards_give_finite_advantages():
    eps = []
    for i, r in enumerate([1e30, -1e30, 2e30, 0.0]):
        ep = _episode(key=f"k{i}")
        assert _record(ep, _step(r))
        ep.append([1, 2], model=True, logprobs=[-0.1, -0.2])
        eps.append(ep)
    samples = to_samples(RolloutBatch(eps), normalize_std=True)
    assert len(samples) == 4 and all(math.isfinite(s.advantage) for s in samples)
    assert any(s.advantage != 0 for s in samples)


# ---------------------------------------------------------------- failed and empty steps


def test_a_run_that_trains_on_nothing_says_so_each_step_then_stops(caplog):
    guard = FailedSteps(WatchdogConfig(max_empty_steps=3))
    with caplog.at_level(logging.WARNING, logger="envhub.trainer"):
        guard.record(1, [], trained=False, why_empty="every group had the same reward")
        guard.record(2, [], trained=False, why_empty="every group had the same reward")
        assert caplog.text.count("trained on nothing") == 2
        with pytest.raises(RunFailed, match="3 consecutive steps trained on nothing"):
            guard.record(3, [], trained=False, why_empty="every group had the same reward")


def test_consecutive_failed_steps_stop_the_run_naming_the_part():
    guard = FailedSteps(WatchdogConfig(max_failed_steps=2))
    guard.record(1, ["generation engine 0 hung"], trained=True, why_empty="")
    guard.record(2, [], trained=True, why_empty="")  # a good step resets the count
    guard.record(3, ["generation engine 0 hung"], trained=True, why_empty="")
    with pytest.raises(RunFailed, match=r"(?s)2 consecutive steps failed.*generation engine 0"):
        guard.record(4, ["generation engine 0 raised"], trained=True, why_empty="")


# ---------------------------------------------------------------- honest metrics


def _summary(scored, infra):
    return {
        "tasks": 15,
        "episodes": scored + infra,
        "scored": scored,
        "k": 4,
        "pass@1": 1.0,
        "pass@4": 1.0,
        "mean_reward": 1.0,
        "status": {"ok": scored, "infra_error": infra},
    }


def test_a_validation_rate_on_too_few_episodes_is_null_with_the_reason():
    row = round_row(0, "mix-retry", _summary(8, 52), [], 0, expected=60)
    assert row["pass@1"] is None and row["pass@k"] is None and row["pass@1_ci95"] is None
    assert (row["scored"], row["expected"]) == (8, 60)
    assert "only 8 of 60 episodes scored" in row["null_reason"]
    full = round_row(0, "mix-retry", _summary(55, 5), [], 0, expected=60)
    assert full["pass@1"] == 1.0 and "null_reason" not in full  # 55/60 >= 0.9


def test_the_best_checkpoint_is_never_chosen_on_a_nulled_round(tmp_path):
    tracker = BestTracker("pass@1", patience=0)
    thin = round_row(10, "a", _summary(8, 52), [], 0, expected=60)
    good = round_row(10, "b", _summary(60, 0), [], 0, expected=60)
    assert tracker.update(10, [thin, good]) is False and tracker.best is None
    plot_validation([thin, good], tmp_path / "v.png")  # a gap, not a crash
    assert (tmp_path / "v.png").stat().st_size > 0


def test_step_metrics_carry_their_counts_and_null_thin_rates(tmp_path):
    eps = [_episode(key=f"k{i}") for i in range(10)]
    for ep in eps[:5]:
        _record(ep, _step(1.0))
    for ep in eps[5:]:
        ep.fail("infra_error", "engine lost")
    m = rollout_metrics(RolloutBatch(eps))
    assert (m["episodes"], m["kept"], m["dropped/infra_error"]) == (10, 5, 5)
    assert m["infra_error_share"] == 0.5
    assert m["reward_mean"] is None and m["accuracy"] is None and "5 of 10" in m["null_reason"]
    per = source_metrics(RolloutBatch(eps), {"e": "correctness"})
    assert per["accuracy/e"] is None and per["episodes/e"] == 10
    logger = MetricsLogger(
        tmp_path,
        SimpleNamespace(
            tensorboard=False, wandb=False, progress_bar=False, console=True, plot=True
        ),
        1,
        {},
    )
    logger.log(1, m)
    assert json.loads((tmp_path / "metrics.jsonl").read_text())["reward_mean"] is None
    plot_rewards(
        [{"step": 1, "reward_mean": None, "accuracy": None}, {"step": 2, "reward_mean": 0.5}],
        tmp_path / "r.png",
    )


# ---------------------------------------------------------------- deadlines


def test_deadlines_follow_the_work_and_stretch_with_a_slow_machine():
    from envhub.trainer.watchdog import Deadlines

    d = Deadlines(WatchdogConfig())  # floor 60 s, 10 new tokens/s, 20 trained tokens/s
    # the mix example's largest call: validation's 64 prompts of ~150 tokens x 32 new tokens
    assert d.generation([[0] * 150] * 64, 32) == pytest.approx(60 + (64 * 32 + 300) / 10)
    assert d.generation([[0] * 150] * 64, 32) < 300  # a hang is noticed within 5 minutes
    assert d.train(4000) == pytest.approx(60 + 200)
    d.observe("generation", tokens=100, seconds=20)  # 5 tokens/s measured: 4x slack
    assert d.generation([[0] * 10] * 10, 10) == pytest.approx(60 + (100 + 100 / 32) / 1.25)
    d.observe("train", tokens=1000, seconds=0.5)  # under a second says nothing
    assert d.train(4000) == pytest.approx(260)


def test_a_late_worker_still_computing_gets_more_time_and_a_stopped_one_none(caplog):
    """A loaded CI once stretched a policy update past its 115 s deadline while the worker was
    in Adam's step: computing is not hanging. A stopped process uses no CPU and is given up."""
    import signal
    import subprocess
    import sys
    import time

    from envhub.trainer.watchdog import SLACK, CpuClock, _stretch

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        cpu = CpuClock([busy.pid, idle.pid, None])
        cpu.mark()
        time.sleep(1.0)
        assert cpu.share(0) > 0.1 and cpu.share(1) < 0.05 and cpu.share(2) == 0
        with caplog.at_level(logging.WARNING, logger="envhub.trainer"):
            assert _stretch("policy workers (x)", 100, 100, 100, [0], cpu, 30) == 130
        assert "past its deadline of 100 s after 100 s, but computing" in caplog.text
        assert _stretch("p", 100, 390, 390, [0], cpu, 30) == SLACK * 100  # never past 4x
        assert _stretch("p", 100, 400, 400, [0], cpu, 30) == 400  # then it gives up
        assert _stretch("p", 100, 100, 100, [0, 1], cpu, 30) == 100  # one late one is idle
        assert _stretch("p", 100, 100, 100, [2], cpu, 30) == 100  # not on this node: unknown
        os.kill(busy.pid, signal.SIGSTOP)
        time.sleep(0.2)
        cpu.mark()
        time.sleep(1.0)
        assert cpu.share(0) < 0.05  # a stopped process computes nothing
    finally:
        for p in (busy, idle):
            p.kill()
            p.wait()


def test_the_workers_path_is_the_checkout_not_the_package():
    """Ray's workers get this on PYTHONPATH: the package folder there shadowed the standard
    library (envhub/types.py as `types`) and every worker died at start."""
    from envhub.trainer.workers.cluster import checkout_root

    assert (checkout_root() / "envhub" / "__init__.py").is_file()
