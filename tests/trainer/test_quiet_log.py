"""`envhub train` writing to a log file (not a terminal) says what happened and nothing else:
no Ray notice about token authentication on every start, no tqdm "Loading weights" bars from
the workers, no colour codes around the workers' lines (issue 21, point 8). Slow: starts Ray."""

from pathlib import Path

import pytest
from train_support import run_envhub_train

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def test_a_training_log_has_no_ray_notice_no_bars_and_no_colour_codes(tmp_path):
    proc = run_envhub_train(REPO / "examples" / "tiny.yaml", tmp_path / "run", "train.steps=1")
    log = proc.stdout + proc.stderr
    assert "step 1:" in log
    assert "Token authentication" not in log, log[-3000:]
    assert "Loading weights" not in log, log[-3000:]
    assert "\x1b[" not in log, log[-3000:]
