"""What the CLI tells a new user: version, what an env needs, taken ports, one-line errors."""

import json
import socket
import subprocess
import sys

from typer.testing import CliRunner

import envhub.registry.needs
from envhub.cli import app
from envhub.install import install_command
from envhub.spec import EnvSpec

runner = CliRunner()


def _cli(*args, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "envhub.cli", *args], capture_output=True, text=True, timeout=timeout
    )


def test_version():
    out = runner.invoke(app, ["--version"])
    assert out.exit_code == 0 and out.stdout.strip() == f"envhub {envhub.__version__}"


def test_list_marks_missing_extras_with_the_install_command(monkeypatch):
    real = envhub.registry.needs._installed
    monkeypatch.setattr(envhub.registry.needs, "_installed", lambda d: d != "sympy" and real(d))
    lines = {ln.split()[0]: ln for ln in runner.invoke(app, ["list"]).stdout.splitlines()}
    hint = install_command(["math"])  # this checkout with its pins (tests/test_install.py)
    assert hint.endswith("pip install -c constraints.txt -e '.[math]'")
    assert lines["math"].endswith(f"[install: {hint}]")
    assert lines["gsm8k"].endswith(f"[install: {hint}]")
    assert "[" not in lines["sql"] and "[" not in lines["connect4"]


def test_needs_names_missing_data(tmp_path):
    local = EnvSpec(name="x", dataset={"kind": "jsonl", "path": str(tmp_path / "{split}.jsonl")})
    assert (
        envhub.registry.needs.needs(local) == f"needs data: {tmp_path / 'train.jsonl'} is missing"
    )
    (tmp_path / "train.jsonl").write_text('{"prompt": "p"}\n')
    assert envhub.registry.needs.needs(local) is None
    hub = EnvSpec(name="y", dataset={"kind": "hf", "path": "org/set"})
    assert "needs data: hub dataset org/set" in envhub.registry.needs.needs(hub)


def test_serve_reports_a_taken_port_before_serving():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _cli("serve", "sql", "--port", str(port))
    assert proc.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert "serving" not in proc.stderr and "Traceback" not in proc.stderr


def test_verify_batch_out_prints_a_one_line_summary(dummy_registry, tmp_path):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    rows = [{"gold": "x", "response": "x"}, {"task_id": "nope", "response": "a"},
            {"task_id": "train/0", "response": "alpha"}]  # fmt: skip
    src.write_text("\n".join(json.dumps(r) for r in rows))
    out = runner.invoke(app, ["verify", "echo", "--batch", str(src), "--out", str(dst)])
    assert out.exit_code == 0 and out.stdout == ""
    assert out.stderr.splitlines() == [
        f"verified 3 lines of {src} into {dst}: bad_input 1, ok 2; mean reward 1.500 over ok"
    ]


def test_verify_batch_keeps_a_response_holding_unicode_line_breaks(dummy_registry, tmp_path):
    src = tmp_path / "in.jsonl"  # json.dumps leaves U+2028 raw with ensure_ascii=False
    src.write_text(json.dumps({"gold": "x\u2028y", "response": "x\u2028y"}, ensure_ascii=False))
    out = runner.invoke(app, ["verify", "echo", "--batch", str(src)])
    rows = [json.loads(line) for line in out.stdout.split("\n") if line]
    assert out.exit_code == 0 and [(r["line"], r["status"]) for r in rows] == [(1, "ok")]


def test_bad_split_and_bad_gold_are_one_line_not_a_traceback():
    proc = _cli("tasks", "gsm8k", "--split", "dev")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "error: gsm8k: cannot load split 'dev': split must be one of ('train', 'test'), got 'dev'"
    ]
    proc = _cli("verify", "math", "--gold", "abc(", "--response", "x")
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --gold 'abc(': ")
    assert "cannot be parsed" in lines[0]


def test_serve_refuses_a_code_env_whose_sandbox_cannot_hide_the_answers():
    """rlimit mode lets a program read HumanEval's solutions: serving it would grade nothing."""
    import os

    env = {**os.environ, "ENVHUB_SANDBOX": "rlimit"}
    out = subprocess.run(
        [sys.executable, "-m", "envhub.cli", "serve", "humaneval", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode != 0
    assert "cannot serve humaneval" in out.stderr and "rlimit" in out.stderr
    assert "serving" not in out.stderr
