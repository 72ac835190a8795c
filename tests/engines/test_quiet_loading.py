"""Model loading draws transformers' "Loading weights" bar on a terminal only (issue 21, point 8):
in a log file or a Ray worker's output a tqdm bar is raw carriage returns and colour codes."""

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

pytest.importorskip("transformers")

REPO = Path(__file__).resolve().parents[2]
LOAD = """
import sys, torch
from envhub.engines.transformers_engine import TransformersEngine
from envhub.trainer.workers.policy import _load_model
TransformersEngine.from_pretrained(sys.argv[1])
_load_model(sys.argv[1], "float32", False, torch.device("cpu"))
"""


def child_env() -> dict[str, str]:
    path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def test_no_loading_bar_when_stderr_is_a_file(tiny_path, tmp_path):
    log = tmp_path / "stderr.log"
    with log.open("w") as f:
        proc = subprocess.run([sys.executable, "-c", LOAD, str(tiny_path)], stderr=f,
                              timeout=300, env=child_env())  # fmt: skip
    assert proc.returncode == 0, log.read_text()[-3000:]
    assert "Loading weights" not in log.read_text()


def test_the_bar_stays_on_a_terminal(tiny_path):
    leader, follower = pty.openpty()
    # A terminal of 24 x 100 (a new pty has 0 columns, where tqdm draws nothing).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen([sys.executable, "-c", LOAD, str(tiny_path)], stderr=follower,
                            env=child_env())  # fmt: skip
    os.close(follower)
    seen = b""
    try:
        while chunk := os.read(leader, 65536):
            seen += chunk
    except OSError:  # EIO: the child's end is closed and drained
        pass
    finally:
        os.close(leader)
    assert proc.wait(timeout=300) == 0, seen.decode(errors="replace")[-3000:]
    assert b"Loading weights" in seen
