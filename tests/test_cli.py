"""The fixed CLI forms: list, info, tasks, verify (single and batch), register, serve."""

import json
import subprocess
import sys

import httpx
import pytest
from children import stop
from typer.testing import CliRunner

from envhub.cli import app
from envhub.client.child_server import free_port
from envhub.errors import GoldAnswerError

runner = CliRunner()


def run(*args):
    result = runner.invoke(app, list(args))
    return result


def test_list_one_env_per_line_name_first(dummy_registry):
    out = run("list").stdout.splitlines()
    names = [line.split()[0] for line in out]
    assert {"gsm8k", "math", "echo", "count"} <= set(names)


def test_info_and_tasks(dummy_registry):
    info = json.loads(run("info", "echo-v1").stdout)
    assert info["id"] == "echo-v1" and info["reward"]["weights"]["format"] == 0.5
    lines = run("tasks", "echo", "--split", "test", "--limit", "3").stdout.splitlines()
    rows = [json.loads(x) for x in lines]
    assert [r["task_id"] for r in rows] == ["test/0", "test/1", "test/2"]
    assert rows[0]["messages"][-1] == {"role": "user", "content": "Say alpha"}


def test_verify_by_gold_and_task_id(dummy_registry, tmp_path):
    out = run("verify", "echo", "--gold", "kilo", "--response", "kilo")
    assert out.exit_code == 0
    score = json.loads(out.stdout)
    assert score["reward"] == 1.5 and score["status"] == "ok"
    assert score["components"] == {"correctness": 1.0, "format": 1.0}
    f = tmp_path / "resp.txt"
    f.write_text("nope")
    out = run("verify", "echo", "--task-id", "train/1", "--response-file", str(f))
    assert out.exit_code == 0 and json.loads(out.stdout)["reward"] == 0.5


def test_verify_status_errors_still_exit_zero(dummy_registry):
    out = run("verify", "echo", "--task-id", "train/1", "--response", "infra")
    assert out.exit_code == 0 and json.loads(out.stdout)["status"] == "infra_error"


def test_verify_usage_errors(dummy_registry):
    assert run("verify", "echo", "--response", "x").exit_code == 2
    assert run("verify", "echo", "--gold", "a", "--task-id", "b", "--response", "x").exit_code == 2


def test_verify_batch_keeps_order_and_isolates_bad_lines(dummy_registry, tmp_path):
    src = tmp_path / "in.jsonl"
    dst = tmp_path / "out.jsonl"
    src.write_text(
        "\n".join(
            [
                json.dumps({"gold": "x", "response": "x"}),
                "{not json",
                json.dumps({"task_id": "train/2", "response": "charlie"}),
                json.dumps({"response": "orphan"}),
                json.dumps({"task_id": "nope", "response": "a"}),
                json.dumps({"task_id": "train/0", "response": "boom"}),
            ]
        )
    )
    out = run("verify", "echo", "--batch", str(src), "--out", str(dst))
    assert out.exit_code == 0
    rows = [json.loads(x) for x in dst.read_text().splitlines()]
    assert [r["line"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert [r["status"] for r in rows] == [
        "ok",
        "bad_input",
        "ok",
        "bad_input",
        "bad_input",
        "env_error",
    ]
    assert rows[0]["reward"] == 1.5 and rows[2]["reward"] == 1.5
    assert "in.jsonl:2" in rows[1]["error"]


def test_register_then_list(tmp_path):
    f = tmp_path / "e.yaml"
    f.write_text("name: cli-echo\nentry_point: dummy_envs:EchoEnv\n")
    import envhub

    envhub.reset_registry()
    out = run("register", str(f))
    assert out.exit_code == 0 and "registered cli-echo-v1" in out.stdout
    envhub.reset_registry()
    assert "cli-echo" in [line.split()[0] for line in run("list").stdout.splitlines()]
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nmax_turns: 0\nentry_point: a:b\n")
    proc = subprocess.run(
        [sys.executable, "-m", "envhub.cli", "register", str(bad)], capture_output=True, text=True
    )
    assert proc.returncode == 1 and "bad.yaml:2" in proc.stderr and "max_turns" in proc.stderr
    for p in envhub.registry.catalog.user_registry_dir().glob("*.yaml"):
        p.unlink()
    envhub.reset_registry()


def test_serve_subprocess_answers_health_and_verify(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("name: served-echo\nentry_point: dummy_envs:EchoEnv\n")
    import envhub

    envhub.register(f)
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "envhub.cli",
            "serve",
            "served-echo",
            "--port",
            str(port),
            "--answers",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                if httpx.get(url + "/health", timeout=0.5).status_code == 200:
                    break
            except httpx.HTTPError:
                import time

                time.sleep(0.05)
        r = httpx.post(url + "/verify", json={"items": [{"gold": "zulu", "response": "zulu"}]})
        assert r.json()["scores"][0]["reward"] == 1.0
    finally:
        stop(proc)
        for p in envhub.registry.catalog.user_registry_dir().glob("*.yaml"):
            p.unlink()
        envhub.reset_registry()


@pytest.mark.parametrize("cmd", [["--help"], ["serve", "--help"], ["verify", "--help"]])
def test_help_texts(cmd):
    out = run(*cmd)
    assert out.exit_code == 0 and "Usage" in out.stdout


class _UnreadableGold(GoldAnswerError):
    """A family's own kind of broken gold: its message says nothing of its type."""


def test_a_gold_the_env_cannot_read_is_the_callers_error_by_its_type(dummy_registry, monkeypatch):
    """Recognised as a GoldAnswerError raised for the typed gold, whatever its message says."""
    from dummy_envs import EchoEnv

    def task_from_gold(self, gold):
        raise _UnreadableGold("the secret word has digits; give letters")

    monkeypatch.setattr(EchoEnv, "task_from_gold", task_from_gold)
    out = run("verify", "echo", "--gold", "k1lo", "--response", "kilo")
    assert out.exit_code == 2 and out.stdout == ""
    assert out.stderr == "error: --gold 'k1lo': the secret word has digits; give letters\n"


def test_a_blank_gold_is_refused_and_a_stored_tasks_broken_gold_stays_env_error(
    dummy_registry, monkeypatch
):
    out = run("verify", "echo", "--gold", "  ", "--response", "kilo")
    assert out.exit_code == 2 and "--gold '  ': the gold answer is empty" in out.stderr
    from dummy_envs import EchoEnv

    def score(self, task, response):
        raise GoldAnswerError(f"task {task.task_id}: gold cannot be parsed")

    # the stored task's gold is the environment's data, not the caller's input: a status
    monkeypatch.setattr(EchoEnv, "score", score)
    out = run("verify", "echo", "--task-id", "train/1", "--response", "kilo")
    assert out.exit_code == 0 and json.loads(out.stdout)["status"] == "env_error"


def test_a_batch_line_whose_gold_the_env_cannot_read_is_bad_input(dummy_registry, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"gold": "", "response": "x"}))
    row = json.loads(run("verify", "echo", "--batch", str(src)).stdout)
    assert row["status"] == "bad_input" and "gold answer is empty" in row["error"]
