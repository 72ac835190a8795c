"""Rollout logs: the step files' records, their size bound, and the viewer's output."""

import gzip
import json

import pytest
import typer
from fake_envs import make_retry
from test_rollout import ScriptedEngine, settings
from typer.testing import CliRunner

from envhub.engines.chat import ChatFormatter
from envhub.trainer.cli import register
from envhub.trainer.config import load_config
from envhub.trainer.episodes import viewer
from envhub.trainer.episodes.dynamic import Filtered
from envhub.trainer.episodes.mix import Job
from envhub.trainer.episodes.rollout import LocalEnvPool, RolloutBatch, RoutedEnvPool, collect
from envhub.trainer.episodes.rollout_log import RolloutLog
from envhub.trainer.train import to_samples


@pytest.fixture
def run_dir(engine, tmp_path):
    """A run folder with the rollout file of step 3: two groups, the second filtered."""
    tok = engine.tokenizer
    chat = ChatFormatter(tok)
    fake = ScriptedEngine(tok, tok.eos_token_id)
    pool = RoutedEnvPool({"retry": LocalEnvPool(make_retry)})
    jobs = [Job("retry", 1, "1+2"), Job("retry", 2, "4+4")]
    batch = collect(fake.generate, pool, chat, jobs, settings(), sample_seed=0)
    trained = RolloutBatch([e for e in batch.episodes if e.group == 0])
    notes = {}
    to_samples(trained, True, notes=notes)
    config = load_config(None, ["env.name=gsm8k", "logging.rollouts_max_samples=3"])
    lg = config.logging
    logs = RolloutLog(tmp_path / "rollouts", lg.rollouts_every, lg.rollouts_max_samples, tok.decode)
    logs.write(3, Filtered(trained, batch), notes, version=5)
    logs.write(4, Filtered(trained, batch), notes, version=5)
    return tmp_path


def test_step_file_records_every_field(run_dir):
    path = run_dir / "rollouts" / "step_00003.jsonl.gz"
    rows = [json.loads(x) for x in gzip.open(path, "rt")]
    assert len(rows) == 2  # whole groups within the cap of 3: the first group only
    r = rows[0]
    assert r["step"] == 3 and r["env"] == "retry" and r["task_id"] == "1+2"
    assert "What is 1+2?" in r["prompt"]
    assert [m["role"] for m in r["messages"]] == ["assistant", "env", "assistant"]
    assert "Wrong, try again." in r["messages"][1]["content"]
    assert r["response_tokens"] == 5 and r["turns"] == 2
    assert r["components"] == {"correctness": 1.0} and r["status"] == "ok"
    assert r["advantage"] == 0.0 and r["trained"] and not r["filtered"]
    assert r["age"] == 0 and r["weights_versions"] == []
    assert r["prompt_tokens"] + 3 + 5 < r["total_tokens"]


def test_logging_every_n_steps(engine, tmp_path):
    config = load_config(None, ["logging.rollouts_every=2"])
    lg = config.logging
    logs = RolloutLog(
        tmp_path / "rollouts", lg.rollouts_every, lg.rollouts_max_samples, engine.tokenizer.decode
    )
    empty = Filtered(RolloutBatch([]), RolloutBatch([]))
    assert logs.write(3, empty, {}, 1) == 0.0
    assert not (tmp_path / "rollouts").exists()


def test_viewer_text_html_and_cli(run_dir, tmp_path):
    step, rows = viewer.select(run_dir, env="retry", order="worst")
    assert step == 4 and rows[0]["reward"] <= rows[-1]["reward"]
    text = viewer.render_text(step, rows)
    assert "task 1+2" in text and "Wrong, try again." in text and "assistant:" in text
    page = tmp_path / "r.html"
    assert viewer.render_html(run_dir, page) == 4
    html = page.read_text()
    assert html.count("<details>") == 4 and "step 3" in html and "What is 1+2?" in html
    app = typer.Typer()
    register(app)
    cli = CliRunner()
    out = cli.invoke(app, ["rollouts", str(run_dir), "--step", "3", "--best"])
    assert out.exit_code == 0 and "step 3: 2 episode(s)" in out.output
    missing = cli.invoke(app, ["rollouts", str(run_dir), "--step", "9"])
    assert missing.exit_code == 1 and "logged steps: [3, 4]" in missing.output
    assert cli.invoke(app, ["rollouts", str(tmp_path / "none")]).exit_code == 1
