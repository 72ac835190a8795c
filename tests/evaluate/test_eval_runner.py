"""The evaluator against a scripted OpenAI-compatible endpoint on loopback.

Every reward below is known from the rules in eval_fakes: arith answers 0-3 right with the
format (1.5 each), 4 wrong with the format (0.5), 5 right without it (1.0).
"""

from __future__ import annotations

import asyncio
import json

import pytest
from eval_fakes import (
    SECRETS,
    SUMS,
    binary_search_turns,
    policy,
    run_evaluation,
)

import envhub
from envhub.evaluate import EvalConfig, OpenAIEndpoint, RunStore
from envhub.evaluate.rescore import rescore_run
from envhub.evaluate.scripted import ScriptedEndpoint


@pytest.fixture()
def endpoint():
    with ScriptedEndpoint(policy) as ep:
        yield ep


def run_eval(cfg: EvalConfig, out, ep: ScriptedEndpoint, make_env=None, transport="auto"):
    model = OpenAIEndpoint(
        ep.base_url, None, concurrency=cfg.concurrency, max_retries=1, transport=transport
    )
    return run_evaluation(cfg, out, model, make_env or (lambda name: envhub.make(name)))


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_single_turn_rewards_are_exact(home, endpoint, tmp_path, transport):
    cfg = EvalConfig(envs=["arith"], base_url=endpoint.base_url, concurrency=4, seed=7)
    summary = run_eval(cfg, tmp_path / "run", endpoint, transport=transport)
    s = summary["environments"]["arith"]
    assert summary["model"] == "scripted"  # asked of GET /models
    assert s["episodes"] == s["scored"] == 6
    assert s["mean_reward"] == pytest.approx(7.5 / 6)
    assert s["components"] == pytest.approx({"correctness": 5 / 6, "format": 5 / 6})
    assert s["pass@1"] == pytest.approx(5 / 6)
    assert s["status"]["ok"] == 6 and s["status"]["infra_error"] == 0
    assert s["mean_turns"] == 1
    assert s["mean_prompt_tokens"] == 5  # "What is 2 + 3?" is five words
    assert s["mean_completion_tokens"] == pytest.approx((4 * 2 + 2 + 1) / 6)
    assert s["wall_s"] > 0 and s["env_version"] == 1
    on_disk = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert on_disk["environments"]["arith"]["pass@1"] == pytest.approx(5 / 6)

    records = RunStore(tmp_path / "run").load_records()
    by_task = {r.task_id: r for r in records}
    assert len(by_task) == 6
    r0 = by_task["arith/0"]
    assert [m.role for m in r0.messages] == ["user", "assistant"]
    assert r0.messages[-1].content == "ANSWER: 5"
    assert (r0.reward, r0.passed, r0.model, r0.env, r0.env_version) == (
        1.5,
        True,
        "scripted",
        "arith",
        1,
    )
    assert r0.components == {"correctness": 1.0, "format": 1.0}
    assert by_task["arith/4"].passed is False and by_task["arith/4"].reward == 0.5
    assert all(r.seed is not None for r in records)
    assert len({r.seed for r in records}) == 6
    # the seed reaches the endpoint too
    assert {b["seed"] for b in endpoint.bodies} == {r.seed for r in records}


def test_multi_turn_tool_episodes(home, endpoint, tmp_path):
    cfg = EvalConfig(envs=["guess"], base_url=endpoint.base_url, concurrency=3)
    s = run_eval(cfg, tmp_path / "run", endpoint)["environments"]["guess"]
    turns = [binary_search_turns(n) for n in SECRETS]
    assert s["pass@1"] == 1.0 and s["mean_reward"] == 1.0
    assert s["mean_turns"] == pytest.approx(sum(turns) / 3)
    # the env's tools went to the endpoint in OpenAI form on every request
    assert all(b["tools"][0]["function"]["name"] == "guess" for b in endpoint.bodies)
    assert len(endpoint.bodies) == sum(turns)
    # every turn of every episode is a request with its own seed (a turn never replays the
    # random draws of the episode's first)
    assert len({b["seed"] for b in endpoint.bodies}) == sum(turns) > 3
    rec = next(r for r in RunStore(tmp_path / "run").load_records() if r.task_id == "guess/0")
    roles = [m.role for m in rec.messages]
    assert roles == ["user"] + ["assistant", "tool"] * turns[0]
    assert rec.messages[1].tool_calls[0].function.name == "guess"
    assert rec.messages[2].tool_call_id == rec.messages[1].tool_calls[0].id
    assert rec.messages[-1].content == "correct" and rec.terminated


def test_pass_at_k_over_samples(home, tmp_path):
    # Task i gets exactly i+1 correct answers out of n=4 (whatever order they come in).
    seen: dict[str, int] = {}
    correct = {f"What is {a} + {b}?": i + 1 for i, (a, b) in enumerate(SUMS[:3])}

    def responder(body):
        text = body["messages"][-1]["content"]
        seen[text] = seen.get(text, 0) + 1
        a, b = SUMS[list(correct).index(text)]
        good = seen[text] <= correct[text]
        return {"content": f"ANSWER: {a + b if good else -1}"}

    with ScriptedEndpoint(responder) as ep:
        cfg = EvalConfig(envs=["arith"], base_url=ep.base_url, limit=3, n=4, temperature=1.0)
        s = run_eval(cfg, tmp_path / "run", ep)["environments"]["arith"]
    assert s["episodes"] == 12
    assert s["pass@1"] == pytest.approx((1 / 4 + 2 / 4 + 3 / 4) / 3)
    # pass@4 with n=4: 1 if any sample passed
    assert s["pass@4"] == 1.0
    assert s["k"] == 4


def test_infra_errors_are_counted_apart(home, endpoint, tmp_path):
    cfg = EvalConfig(envs=["flaky"], base_url=endpoint.base_url)
    s = run_eval(cfg, tmp_path / "run", endpoint)["environments"]["flaky"]
    # odd tasks hit the dead sandbox: excluded, not failures
    assert s["status"]["infra_error"] == 3 and s["excluded"]["infra_error"] == 3
    assert s["scored"] == 3
    assert s["mean_reward"] == pytest.approx((1.5 + 1.5 + 0.5) / 3)
    assert s["pass@1"] == pytest.approx(2 / 3)
    recs = {r.task_id: r for r in RunStore(tmp_path / "run").load_records()}
    assert recs["arith/1"].passed is None and "sandbox is down" in recs["arith/1"].error


def test_model_endpoint_failure_is_infra_error(home, tmp_path):
    def responder(body):
        if "4 + 4" in body["messages"][-1]["content"]:
            body = dict(body, messages=[{"role": "user", "content": "explode"}])
        if "2 + 3" in body["messages"][-1]["content"]:  # cut by max_tokens, still judged
            return {"content": "ANSWER: 5", "finish_reason": "length"}
        return policy(body)

    with ScriptedEndpoint(responder) as ep:
        cfg = EvalConfig(envs=["arith"], base_url=ep.base_url, concurrency=2)
        s = run_eval(cfg, tmp_path / "run", ep)["environments"]["arith"]
    assert s["status"]["infra_error"] == 1 and s["scored"] == 5
    assert s["pass@1"] == pytest.approx(4 / 5)
    assert s["capped_episodes"] == 1
    rec = next(r for r in RunStore(tmp_path / "run").load_records() if r.task_id == "arith/1")
    assert rec.error.startswith("model:") and "500" in rec.error
    assert rec.passed is None and rec.turns == 0


@pytest.mark.parametrize("env", ["arith", "guess"])
def test_rescore_reproduces_numbers(home, endpoint, tmp_path, env):
    cfg = EvalConfig(envs=[env], base_url=endpoint.base_url, n=2, temperature=0.5)
    before = run_eval(cfg, tmp_path / "run", endpoint)["environments"][env]
    asked = len(endpoint.bodies)
    after = asyncio.run(
        rescore_run(RunStore(tmp_path / "run"), RunStore(tmp_path / "re"), envhub.make)
    )["environments"][env]
    assert len(endpoint.bodies) == asked  # nothing generated
    for key in ("mean_reward", "pass@1", "pass@2", "components", "status", "mean_turns"):
        assert after[key] == before[key], key
    assert after["changed_episodes"] == 0
    old = {r.key: r for r in RunStore(tmp_path / "run").load_records()}
    for r in RunStore(tmp_path / "re").load_records():
        assert r.rescored and r.messages == old[r.key].messages


def test_rescore_measures_a_verifier_change(home, endpoint, tmp_path):
    cfg = EvalConfig(envs=["arith"], base_url=endpoint.base_url)
    run_eval(cfg, tmp_path / "run", endpoint)

    def stricter(name):  # the "fixed" verifier no longer pays for format
        return envhub.make(name, reward={"weights": {"correctness": 1.0, "format": 0.0}})

    s = asyncio.run(rescore_run(RunStore(tmp_path / "run"), RunStore(tmp_path / "re"), stricter))[
        "environments"
    ]["arith"]
    assert s["mean_reward"] == pytest.approx(5 / 6)
    assert s["before"]["mean_reward"] == pytest.approx(7.5 / 6)
    assert s["changed_episodes"] == 5  # every episode that earned the format bonus
    assert s["pass@1"] == s["before"]["pass@1"]


def test_resume_runs_only_what_is_missing(home, endpoint, tmp_path):
    cfg = EvalConfig(envs=["arith", "guess"], base_url=endpoint.base_url, n=2, temperature=0.5)
    full = run_eval(cfg, tmp_path / "full", endpoint)
    store = RunStore(tmp_path / "full")
    lines = store.episodes_path.read_text().splitlines(keepends=True)
    assert len(lines) == 2 * (6 + 3)
    # an interrupted run: 7 episodes finished, the 8th torn mid-write
    part = tmp_path / "part"
    part.mkdir()
    (part / "config.json").write_text((tmp_path / "full" / "config.json").read_text())
    (part / "episodes.jsonl").write_text("".join(lines[:7]) + lines[7][:40])
    done = {json.loads(x)["task_id"] + str(json.loads(x)["sample"]) for x in lines[:7]}
    endpoint.bodies.clear()
    resumed = run_eval(cfg, part, endpoint)
    recs = RunStore(part).load_records()
    assert len(recs) == len({r.key for r in recs}) == 18
    asked_arith = [b for b in endpoint.bodies if not b.get("tools")]
    assert len(asked_arith) == 12 - sum(1 for d in done if d.startswith("arith"))
    for env in ("arith", "guess"):
        for key in ("mean_reward", "pass@1", "pass@2", "status", "episodes"):
            assert resumed["environments"][env][key] == full["environments"][env][key]


def test_resume_retries_infra_errors(home, tmp_path):
    broken = {"on": True}

    def responder(body):
        if broken["on"] and "10 + 7" in body["messages"][-1]["content"]:
            raise __import__("envhub.evaluate.scripted").evaluate.scripted.ScriptedHTTPError(503)
        return policy(body)

    with ScriptedEndpoint(responder) as ep:
        cfg = EvalConfig(envs=["arith"], base_url=ep.base_url)
        first = run_eval(cfg, tmp_path / "run", ep)["environments"]["arith"]
        assert first["status"]["infra_error"] == 1
        broken["on"] = False
        ep.bodies.clear()
        second = run_eval(cfg, tmp_path / "run", ep)["environments"]["arith"]
    assert len(ep.bodies) == 1  # only the failed episode ran again
    assert second["status"]["infra_error"] == 0 and second["pass@1"] == pytest.approx(5 / 6)


def test_interrupted_engine_batch_does_not_hold_the_exit():
    """A cancelled local-engine batch must not keep asyncio.run (and Ctrl-C) waiting."""
    import time

    from envhub.engines.types import SamplingParams
    from envhub.evaluate.backends import BatchingBackend
    from envhub.types import Message

    backend = BatchingBackend("slow", lambda chats, tools, p, seeds: time.sleep(5) or [])

    async def main():
        chat = [Message(role="user", content="hi")]
        await asyncio.wait_for(backend.generate(chat, tools=None, params=SamplingParams()), 0.2)

    t0 = time.perf_counter()
    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(main())
    assert time.perf_counter() - t0 < 3
