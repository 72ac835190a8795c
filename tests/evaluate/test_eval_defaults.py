"""`envhub eval` sends the documented sampling defaults and fails loudly when nothing ran."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer
from eval_fakes import policy
from typer.testing import CliRunner

from envhub.client.child_server import free_port
from envhub.evaluate.cli import eval_command
from envhub.evaluate.scripted import ScriptedEndpoint

app = typer.Typer()
app.command()(eval_command)


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize(
    ("extra", "requests", "temperature"),
    [
        ([], 6, 0.0),  # the documented default: -n 1 samples greedily
        (["-n", "1"], 6, 0.0),
        (["-n", "3"], 18, 1.0),  # pass@k wants diversity
        (["-n", "3", "--temperature", "0.5"], 18, 0.5),
    ],
)
def test_every_request_carries_the_documented_sampling(
    home, tmp_path, extra, requests, temperature
):
    with ScriptedEndpoint(policy) as ep:
        args = ["--base-url", ep.base_url, "--env", "arith", "--out", tmp_path / "r", *extra]
        res = invoke(*args, "--no-progress")
        assert res.exit_code == 0, res.output
        bodies = [b for b in ep.bodies if "messages" in b]
    assert len(bodies) == requests
    for body in bodies:
        assert body["temperature"] == temperature
        assert body["max_tokens"] == 512 and body["n"] == 1


def test_an_unreachable_endpoint_fails_with_the_cause(home, tmp_path):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    res = invoke("--base-url", dead, "--model", "m", "--env", "arith", "--out", tmp_path / "r",
                 "--no-progress")  # fmt: skip
    assert res.exit_code == 1
    assert "6 of 6 episodes ended in infra_error" in res.output
    assert f"{dead}/chat/completions failed" in res.output and "--resume" in res.output


def test_half_infra_errors_is_still_a_result(home, tmp_path):
    with ScriptedEndpoint(policy) as ep:
        res = invoke("--base-url", ep.base_url, "--env", "flaky", "--out", tmp_path / "r",
                     "--no-progress")  # fmt: skip
    assert res.exit_code == 0, res.output


def test_no_progress_silences_the_model_loaders_bars(tmp_path):
    """transformers draws "Loading weights" with tqdm; --no-progress must silence it too."""
    pytest.importorskip("transformers")
    pytest.importorskip("envhub.engines.weights")
    cmd = [sys.executable, "-m", "envhub.cli", "eval", "--model", "tiny", "--env", "gsm8k",
           "--limit", "1", "--max-tokens", "4", "--engine", "transformers"]  # fmt: skip
    quiet = subprocess.run(
        [*cmd, "--out", str(tmp_path / "q"), "--no-progress"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert "it/s" not in quiet.stderr and "Loading" not in quiet.stderr, quiet.stderr[-2000:]
