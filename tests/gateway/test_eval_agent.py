"""``envhub eval --agent CMD``: an agent program on a catalog environment, the model behind the
gateway (an upstream scripted endpoint, and the tiny local engine), traces readable by
``envhub rollouts``."""

import json
import sys
from pathlib import Path

from gateway_support import AGENTS
from typer.testing import CliRunner

from envhub.cli import app
from envhub.evaluate.scripted import ScriptedEndpoint, last_user_text
from envhub.gateway.trace import read_trace


def agent(mode):
    return f"{sys.executable} {AGENTS / 'stdlib_agent.py'} {mode}"


def echo_answers(body):
    """A perfect echo model: "Say alpha" -> "alpha"."""
    return {"content": last_user_text(body).split()[-1]}


def test_eval_agent_against_an_upstream_scores_the_last_reply(dummy_registry, tmp_path):
    out = tmp_path / "run"
    with ScriptedEndpoint(echo_answers) as ep:
        args = ["eval", "--agent", agent("once"), "--base-url", ep.base_url, "--model", "s"]
        args += ["--env", "echo", "--limit", "3", "-n", "2", "--out", str(out), "--json"]
        args += ["--no-progress"]
        res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    echo = summary["environments"]["echo"]
    assert echo["episodes"] == 6 and echo["status"]["ok"] == 6
    assert echo["pass@1"] == 1.0
    trace = list(read_trace(out))
    assert len(trace) == 6 and all(len(t["calls"]) == 1 for t in trace)
    assert trace[0]["calls"][0]["prompt_ids"] == []  # an upstream: messages, no ids
    shown = CliRunner().invoke(app, ["rollouts", str(out), "--json"])
    assert shown.exit_code == 0, shown.output
    rows = [json.loads(line) for line in shown.output.splitlines()]
    assert len(rows) == 6 and rows[0]["messages"][-1]["role"] == "assistant"


def test_eval_agent_statuses_and_resume(dummy_registry, tmp_path):
    out = tmp_path / "run"
    with ScriptedEndpoint(echo_answers) as ep:
        base = ["eval", "--base-url", ep.base_url, "--model", "s", "--env", "echo", "--limit", "2"]
        base += ["--out", str(out), "--json", "--no-progress"]
        res = CliRunner().invoke(app, [*base, "--agent", agent("crash_after")])
        assert res.exit_code == 0, res.output
        statuses = {t["status"] for t in read_trace(out)}
        assert statuses == {"invalid_action"}
        summary = json.loads((out / "summary.json").read_text())["environments"]["echo"]
        assert summary["mean_reward"] == 0.0
        # an agent that never reaches the gateway is infra: the run says so and exits 1
        out2 = tmp_path / "run2"
        base2 = [a if a != str(out) else str(out2) for a in base]
        res = CliRunner().invoke(app, [*base2, "--agent", agent("never")])
        assert res.exit_code == 1 and "infra_error" in res.output
        # resume retries the infra episodes (the agent must be the recorded one)
        res = CliRunner().invoke(app, ["eval", "--resume", str(out2), "--agent", agent("once")])
        assert res.exit_code == 1 and "agent differ" in res.output


def test_eval_agent_with_the_local_tiny_model_records_ids(dummy_registry, tmp_path, tiny_path):
    out = tmp_path / "run"
    args = ["eval", "--agent", agent("multi"), "--model", str(tiny_path), "--engine"]
    args += ["transformers", "--env", "echo", "--limit", "2", "--max-tokens", "4"]
    args += ["--out", str(out), "--json", "--no-progress"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    trace = list(read_trace(out))
    assert len(trace) == 2
    for t in trace:
        assert t["status"] == "ok" and t["segments"] == 1 and t["retokenized"] == 0
        calls = t["calls"]
        assert len(calls) == 3 and all(c["sampled_ids"] and c["prompt_ids"] for c in calls)
        assert calls[1]["reused_prefix"] == len(calls[0]["prompt_ids"]) + len(
            calls[0]["sampled_ids"]
        )


def test_bad_agent_options_are_usage_errors(dummy_registry, tmp_path):
    res = CliRunner().invoke(app, ["eval", "--env", "echo", "--model", "x", "--agent-timeout", "3"])
    assert res.exit_code == 2 and "need --agent" in res.output
    res = CliRunner().invoke(app, ["eval", "--env", "echo", "--model", "x", "--agent", "a 'b"])
    assert res.exit_code == 2 and "split" in res.output


def test_the_draft_and_check_example_extends_its_first_call(dummy_registry, tmp_path, tiny_path):
    example = Path(__file__).resolve().parents[2] / "examples" / "agents" / "draft_and_check.py"
    out = tmp_path / "run"
    args = ["eval", "--agent", f"{sys.executable} {example}", "--model", str(tiny_path)]
    args += ["--engine", "transformers", "--env", "echo", "--limit", "2", "--max-tokens", "4"]
    args += ["--out", str(out), "--json", "--no-progress"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    for t in read_trace(out):
        assert t["status"] == "ok", t["agent"]
        first, second = t["calls"]
        assert second["reused_prefix"] == len(first["prompt_ids"]) + len(first["sampled_ids"])
        assert t["segments"] == 1


def search_player(gold):
    """A scripted model for `search`: one search call, then the gold answer."""

    def respond(body):
        last = body["messages"][-1]
        if last["role"] == "tool":
            return {"content": f"<answer>{gold[body['messages'][1]['content']]}</answer>"}
        call = {"name": "search", "arguments": json.dumps({"query": "founder"})}
        return {"content": "", "tool_calls": [{"id": "c1", "type": "function", "function": call}]}

    return respond


def test_the_tool_loop_example_plays_search_through_its_episode_url(tmp_path):
    import envhub

    with envhub.make("search") as env:
        gold = {env.opening_messages(t)[-1].content: t.answer for t in env.tasks()[:3]}
    example = Path(__file__).resolve().parents[2] / "examples" / "agents" / "tool_loop.py"
    out = tmp_path / "run"
    with ScriptedEndpoint(search_player(gold)) as ep:
        args = ["eval", "--agent", f"{sys.executable} {example}", "--base-url", ep.base_url]
        args += ["--model", "s", "--env", "search", "--limit", "2", "--out", str(out)]
        args += ["--json", "--no-progress"]
        res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    trace = list(read_trace(out))
    assert [t["status"] for t in trace] == ["ok", "ok"], [t["agent"] for t in trace]
    for t in trace:
        assert len(t["calls"]) == 2 and t["calls"][0]["reply"]["tool_calls"]
        assert t["reward"] > 0.9 and t["components"]["correctness"] == 1.0


def test_an_agent_cannot_step_the_env_with_its_own_words(served):

    import httpx

    gateway, server = served
    seen = []

    async def stepper(reply):
        seen.append(reply)
        return {"messages": [], "reward": 1.0, "terminated": True, "truncated": False}

    ep = gateway.open()
    ep.stepper = stepper
    key = {"Authorization": f"Bearer {ep.key}"}
    msgs = [{"role": "user", "content": "hi"}]
    url = f"{server.base_url}/episode/step"
    forged = {"message": {"role": "assistant", "content": "alpha"}}
    r = httpx.post(url, json=forged, headers=key)
    assert r.status_code == 400 and "not a reply the model gave" in r.json()["error"]["message"]
    reply = httpx.post(f"{server.base_url}/chat/completions", json={"messages": msgs}, headers=key)
    message = reply.json()["choices"][0]["message"]
    assert httpx.post(url, json={"message": message}, headers=key).json()["terminated"]
    again = httpx.post(url, json={"message": message}, headers=key)
    assert again.status_code == 400 and "already ended" in again.json()["error"]["message"]
    other = gateway.open()
    assert (
        httpx.post(
            url, json={"message": message}, headers={"Authorization": f"Bearer {other.key}"}
        ).status_code
        == 400
    )
    assert seen == [ep.recorder.calls[0].reply]  # stepped once, with the recorded reply


def test_eval_agent_callable(dummy_registry, tmp_path):
    out = tmp_path / "run"
    with ScriptedEndpoint(echo_answers) as ep:
        args = ["eval", "--agent-callable", "test_agents:ok_agent", "--base-url", ep.base_url]
        args += ["--model", "s", "--env", "echo", "--limit", "2", "--out", str(out)]
        res = CliRunner().invoke(app, [*args, "--json", "--no-progress"])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())["environments"]["echo"]
    assert summary["pass@1"] == 1.0
    bad = [a if a != "test_agents:ok_agent" else "nope:fn" for a in args[:-1]]
    res = CliRunner().invoke(app, [*bad, str(tmp_path / "b"), "--no-progress"])
    assert res.exit_code == 1 and "No module named 'nope'" in res.output
