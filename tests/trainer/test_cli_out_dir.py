"""``envhub train`` into a folder that holds a run refuses, naming ``--resume auto``/``--force``."""

import subprocess
import sys
from pathlib import Path

import pytest

from envhub.trainer.cli import claim_out_dir
from envhub.trainer.config import TrainConfigError

REPO = Path(__file__).resolve().parents[2]


def _earlier_run(out: Path) -> Path:
    (out / "checkpoints" / "step_1").mkdir(parents=True)
    (out / "metrics.jsonl").write_text('{"step": 1}\n')
    return out


def test_a_folder_holding_a_run_is_refused_with_both_ways_out(tmp_path):
    out = _earlier_run(tmp_path / "run")
    with pytest.raises(TrainConfigError) as e:
        claim_out_dir(out, resuming=False, force=False)
    assert "--resume auto" in str(e.value) and "--force" in str(e.value)
    assert (out / "metrics.jsonl").exists()  # nothing was touched


def test_resume_keeps_the_run_and_force_deletes_it(tmp_path):
    out = _earlier_run(tmp_path / "run")
    claim_out_dir(out, resuming=True, force=False)
    assert (out / "metrics.jsonl").exists()
    claim_out_dir(out, resuming=False, force=True)
    assert not out.exists()


def test_an_empty_or_unrelated_folder_is_fine(tmp_path):
    claim_out_dir(tmp_path / "new", resuming=False, force=False)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README.txt").write_text("mine")
    claim_out_dir(tmp_path / "notes", resuming=False, force=False)
    assert (tmp_path / "notes" / "README.txt").exists()


def test_the_cli_refuses_before_training(tmp_path):
    out = _earlier_run(tmp_path / "run")
    cmd = [sys.executable, "-m", "envhub.cli", "train", "examples/tiny.yaml", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "already holds a run" in proc.stderr and "--resume auto" in proc.stderr
    assert "Traceback" not in proc.stderr
