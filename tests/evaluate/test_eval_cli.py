"""`envhub eval` as a command: table and JSON output, Ctrl-C, --resume, --rescore."""

from __future__ import annotations

import _thread
import json
import signal
import threading
import time

import pytest
import typer
from eval_fakes import policy
from typer.testing import CliRunner

from envhub.evaluate.cli import eval_command
from envhub.evaluate.scripted import ScriptedEndpoint
from envhub.evaluate.store import RunStore

app = typer.Typer()
app.command()(eval_command)


@pytest.fixture()
def endpoint():
    with ScriptedEndpoint(policy) as ep:
        yield ep


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_table_json_and_files(home, endpoint, tmp_path):
    out = tmp_path / "run"
    res = invoke(
        "--base-url",
        endpoint.base_url,
        "--env",
        "arith",
        "--env",
        "guess",
        "--out",
        out,
        "--no-progress",
    )
    assert res.exit_code == 0, res.output
    assert "arith" in res.output and "guess" in res.output and "pass@1" in res.output
    assert "0.833" in res.output  # arith pass@1 = 5/6
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["environments"]) == {"arith", "guess"}
    assert summary["environments"]["guess"]["pass@1"] == 1.0
    assert summary["interrupted"] is False
    config = json.loads((out / "config.json").read_text())
    assert "api_key" not in config and config["envs"] == ["arith", "guess"]

    res = invoke("--rescore", out, "--json")
    assert res.exit_code == 0, res.output
    rescored = json.loads(res.output[res.output.index("{") : res.output.rindex("}") + 1])
    assert rescored["environments"]["arith"]["pass@1"] == pytest.approx(5 / 6)
    assert (out / "rescored" / "summary.json").exists()


def test_api_key_comes_from_the_environment(home, endpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("ENVHUB_API_KEY", "sk-test")
    res = invoke(
        "--base-url",
        endpoint.base_url,
        "-e",
        "arith",
        "--limit",
        "2",
        "--out",
        tmp_path / "r",
        "--no-progress",
    )
    assert res.exit_code == 0, res.output
    assert endpoint.authorizations == {"Bearer sk-test"}
    assert "sk-test" not in (tmp_path / "r" / "config.json").read_text()


@pytest.fixture
def default_sigint():
    """Python's own SIGINT handler for the test: ``interrupt_main`` is a no-op under SIG_DFL or
    SIG_IGN, and asyncio turns SIGINT into a cancellation only over the default handler."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_keeps_finished_episodes_and_resume_completes(home, tmp_path, default_sigint):
    out = tmp_path / "run"
    with ScriptedEndpoint(policy, delay=0.3) as ep:

        def interrupt():
            while ep.requests < 4:
                time.sleep(0.01)
            _thread.interrupt_main()

        threading.Thread(target=interrupt, daemon=True).start()
        res = invoke(
            "--base-url",
            ep.base_url,
            "-e",
            "arith",
            "-n",
            "4",
            "--concurrency",
            "2",
            "--out",
            out,
            "--no-progress",
        )
        assert res.exit_code == 130, res.output
        partial = json.loads((out / "summary.json").read_text())
        assert partial["interrupted"] is True
        kept = RunStore(out).load_records()
        assert 2 <= len(kept) < 24
        assert partial["environments"]["arith"]["episodes"] == len(kept)

        ep.delay = 0
        ep.bodies.clear()
        res = invoke("--resume", out, "--no-progress", "--concurrency", "8")
        assert res.exit_code == 0, res.output
    assert len(ep.bodies) == 24 - len(kept)
    final = json.loads((out / "summary.json").read_text())
    assert final["interrupted"] is False and final["config"]["concurrency"] == 8
    s = final["environments"]["arith"]
    assert s["episodes"] == 24 and s["pass@1"] == pytest.approx(5 / 6)
    assert len({r.key for r in RunStore(out).load_records()}) == 24


def test_usage_errors_name_the_fix(home, endpoint, tmp_path):
    res = invoke("--base-url", endpoint.base_url, "--out", tmp_path / "r")
    assert res.exit_code == 2 and "--env" in res.output
    res = invoke(
        "--base-url",
        endpoint.base_url,
        "-e",
        "arith",
        "--limit",
        "1",
        "--out",
        tmp_path / "r",
        "--no-progress",
    )
    assert res.exit_code == 0
    res = invoke("--base-url", endpoint.base_url, "-e", "arith", "--out", tmp_path / "r")
    assert res.exit_code == 1 and "--resume" in res.output
    res = invoke("--resume", tmp_path / "r", "-e", "guess")
    assert res.exit_code == 1 and "envs" in res.output
    res = invoke("--rescore", tmp_path / "nothing")
    assert res.exit_code == 1 and "episodes.jsonl" in res.output


def test_the_run_pins_its_environments_and_resume_refuses_a_changed_one(home, endpoint, tmp_path):
    from envhub.registry.pins import pulled_path

    out = tmp_path / "pinned"
    args = ("--base-url", endpoint.base_url, "-e", "arith", "--limit", "2", "--no-progress")
    assert invoke(*args, "--out", out).exit_code == 0
    pins = json.loads((out / "config.json").read_text())["pins"]
    assert [(p["name"], p["version"]) for p in pins] == [("arith", "v1")]
    assert pins[0]["digest"].startswith("spec-sha256:")
    res = invoke("--resume", out, "--no-progress")
    assert res.exit_code == 0, res.output  # nothing changed: resumes

    pulled_path().parent.mkdir(parents=True, exist_ok=True)  # as if `envhub pull arith@2.0` ran
    pulled_path().write_text(json.dumps({"arith": {"version": "2.0", "digest": "sha256:ab"}}))
    res = CliRunner().invoke(app, ["--resume", str(out), "--no-progress"])
    assert res.exit_code == 1
    assert "arith: the run used v1 (spec-sha256:" in res.output
    assert "here it is 2.0 (sha256:ab)" in res.output and "envhub pull NAME@VERSION" in res.output


def test_compare_puts_the_stages_side_by_side_on_the_same_tasks(home, tmp_path):
    """Two "stages" (a weaker scripted model, then the full one) on the same tasks: one table,
    the cells each run's pass@1; runs on other tasks are refused naming the environment."""

    def weaker(body):  # answers every arith task wrong
        reply = policy(body)
        return {**reply, "content": "ANSWER: -1"} if not body.get("tools") else reply

    runs = {}
    for name, responder in (("base", weaker), ("trained", policy)):
        with ScriptedEndpoint(responder) as ep:
            runs[name] = tmp_path / name
            res = invoke("--base-url", ep.base_url, "--model", name, "--env", "arith",
                         "--env", "guess", "--out", runs[name], "--no-progress")  # fmt: skip
            assert res.exit_code == 0, res.output
    res = invoke("--compare", runs["base"], "--compare", runs["trained"], "--json")
    assert res.exit_code == 0, res.output
    table = json.loads(res.output)
    assert [r["model"] for r in table["runs"]] == ["base", "trained"]
    arith = [cell["pass@1"] for cell in table["environments"]["arith"]]
    assert arith == [0.0, pytest.approx(5 / 6)]
    assert [cell["pass@1"] for cell in table["environments"]["guess"]] == [1.0, 1.0]
    # the change, paired over tasks: arith gained on 5 of its 6 tasks, guess on none
    (change,) = table["changes"]
    arith, guess = change["environments"]["arith"], change["environments"]["guess"]
    assert (
        arith["delta"] == pytest.approx(5 / 6) and 0.3 < arith["ci95"][0] <= arith["ci95"][1] == 1
    )
    assert guess == {"delta": 0.0, "ci95": [0.0, 0.0]}
    assert change["mean"]["delta"] == pytest.approx(5 / 12)
    assert change["mean"]["ci95"][0] > 0.1 and change["mean"]["ci95"][1] == pytest.approx(0.5)
    res = invoke("--compare", runs["base"], "--compare", runs["trained"])
    assert res.exit_code == 0 and "1. base" in res.output and "2. trained" in res.output
    assert "paired over tasks" in res.output and "+0.417" in res.output

    with ScriptedEndpoint(policy) as ep:
        fewer = tmp_path / "fewer"
        res = invoke("--base-url", ep.base_url, "--env", "arith", "--limit", "2",
                     "--out", fewer, "--no-progress")  # fmt: skip
        assert res.exit_code == 0, res.output
    res = invoke("--compare", runs["base"], "--compare", fewer)
    assert res.exit_code == 1 and "arith:" in res.output and "same tasks" in res.output
    res = invoke("--compare", runs["base"], "--compare", tmp_path / "nothing")
    assert res.exit_code == 1 and "no summary.json" in res.output


def test_compare_takes_a_training_runs_validation_rounds_as_columns(home, tmp_path):
    """A validation round (one eval folder per source) is one column; a run's folder stands for
    its last round; a folder holding neither is refused saying what was expected."""

    def weaker(body):
        reply = policy(body)
        return {**reply, "content": "ANSWER: -1"} if not body.get("tools") else reply

    train = tmp_path / "train"
    for step, responder in (("step_00000", weaker), ("step_00010", policy)):
        with ScriptedEndpoint(responder) as ep:
            for env in ("arith", "guess"):
                out = train / "validation" / step / env
                res = invoke("--base-url", ep.base_url, "--model", "policy", "--env", env,
                             "--out", out, "--no-progress")  # fmt: skip
                assert res.exit_code == 0, res.output
    rounds = train / "validation"
    res = invoke("--compare", rounds / "step_00000", "--compare", train, "--json")
    assert res.exit_code == 0, res.output
    table = json.loads(res.output)
    assert [r["model"] for r in table["runs"]] == ["train step_00000", "train step_00010"]
    assert [c["pass@1"] for c in table["environments"]["arith"]] == [0.0, pytest.approx(5 / 6)]
    assert [c["pass@1"] for c in table["environments"]["guess"]] == [1.0, 1.0]
    res = invoke("--compare", rounds / "step_00000", "--compare", tmp_path)
    assert res.exit_code == 1 and "validation round" in res.output
