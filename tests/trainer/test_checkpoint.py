"""Checkpoint atomicity: a SIGKILL while writing leaves the previous checkpoint loadable."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from envhub.trainer import checkpoint as ckpt

REPO = Path(__file__).resolve().parents[2]

KILLED_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from envhub.trainer import checkpoint as ckpt

    root = Path(sys.argv[1])

    def shards(d):
        (d / "dcp").mkdir()
        (d / "dcp" / "__0_0.distcp").write_bytes(b"x" * 1000)

    ckpt.save(root, ckpt.TrainerState(step=1, data_position=4), shards, keep=2)

    def half_written(d):
        (d / "dcp").mkdir()
        (d / "dcp" / "__0_0.distcp").write_bytes(b"y" * 10)
        os.kill(os.getpid(), signal.SIGKILL)  # dies in the middle of writing step 2

    ckpt.save(root, ckpt.TrainerState(step=2, data_position=8), half_written, keep=2)
    """
)


def test_sigkill_while_writing_keeps_the_previous_checkpoint(tmp_path):
    root = tmp_path / "checkpoints"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(root)], env=env, timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert ckpt.latest(root) == root / "step_1"
    state = ckpt.read_state(root / "step_1")
    assert (state.step, state.data_position) == (1, 4)
    assert (root / "step_1" / "dcp" / "__0_0.distcp").read_bytes() == b"x" * 1000
    assert any(p.name.startswith(".tmp-step_2") for p in root.iterdir())  # the debris
    # the next save clears the debris and keeps only `keep` checkpoints
    for step in (2, 3):
        ckpt.save(root, ckpt.TrainerState(step=step), lambda d: None, keep=2)
    assert sorted(p.name for p in root.iterdir()) == ["step_2", "step_3"]


def test_incompatible_resume_names_the_keys():
    saved = ckpt.TrainerState(fingerprint={"model.path": "tiny", "rollout.group_size": 4})
    with pytest.raises(
        ckpt.ResumeError, match="rollout.group_size: checkpoint has 4, config has 8"
    ):
        ckpt.check_compatible(saved, {"model.path": "tiny", "rollout.group_size": 8}, Path("x"))
    ckpt.check_compatible(saved, {"model.path": "tiny", "rollout.group_size": 4}, Path("x"))


def test_a_changed_environment_is_refused_and_a_checkpoint_without_pins_is_not_checked():
    pin = {"name": "gsm8k", "version": "v1", "digest": "spec-sha256:aa"}
    saved = ckpt.TrainerState(pins=[pin])
    ckpt.check_pins(saved, [pin], Path("x"))
    with pytest.raises(ckpt.ResumeError, match=r"gsm8k: the run used v1 \(spec-sha256:aa\)"):
        ckpt.check_pins(saved, [{**pin, "digest": "spec-sha256:bb"}], Path("x"))
    ckpt.check_pins(ckpt.TrainerState(), [{**pin, "digest": "spec-sha256:bb"}], Path("x"))
