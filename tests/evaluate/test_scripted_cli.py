"""`python -m envhub.evaluate.scripted`: the README's offline endpoint for trying `envhub eval`."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
import typer
from children import SIGINT_IGNORED, stop, wait_or_kill
from typer.testing import CliRunner

from envhub.client.child_server import free_port
from envhub.evaluate.cli import eval_command


def _start(*args, prefix=()):
    proc = subprocess.Popen(
        [*prefix, sys.executable, "-m", "envhub.evaluate.scripted", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, proc.stdout.readline()


@pytest.fixture(params=["foreground", "background"])
def gold_endpoint(request):
    """The endpoint, stopped with Ctrl-C (SIGINT) at the end, as a user would.

    ``background``: started as a script's background job (``.ci/run &``) is, with SIGINT
    ignored; SIGINT must stop it all the same, promptly.
    """
    port = free_port()
    prefix = SIGINT_IGNORED if request.param == "background" else ()
    proc, first = _start("--port", str(port), "--answers-from", "gsm8k", prefix=prefix)
    try:
        assert first.startswith(f"scripted endpoint at http://127.0.0.1:{port}/v1"), (
            first + proc.stderr.read()
        )
        yield port
    finally:
        started = time.monotonic()
        assert stop(proc, signal.SIGINT, timeout=20) == 0, proc.stderr.read()
        assert time.monotonic() - started < 10


def test_readme_offline_eval_scores_the_gold_answers(gold_endpoint, tmp_path):
    app = typer.Typer()
    app.command()(eval_command)
    url = f"http://127.0.0.1:{gold_endpoint}/v1"
    args = ["--base-url", url, "--env", "gsm8k", "--limit", "3", "--out", str(tmp_path / "r")]
    res = CliRunner().invoke(app, [*args, "--no-progress", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())["environments"]["gsm8k"]
    assert summary["episodes"] == 3 and summary["pass@1"] == 1.0
    assert summary["model"] == "scripted"


def test_a_taken_port_is_one_clear_line(gold_endpoint):
    proc, _ = _start("--port", str(gold_endpoint))
    assert wait_or_kill(proc, timeout=20) == 1
    err = proc.stderr.read()
    assert f"cannot listen on 127.0.0.1:{gold_endpoint}" in err and "Traceback" not in err
