"""`envhub verify humaneval --task-id ... --response-file F` from the shell."""

import json
import os
import subprocess
import sys

import pytest
from bwrap import needs_bwrap

GOLD_0 = """```python
from typing import List


def has_close_elements(numbers: List[float], threshold: float) -> bool:
    return any(
        abs(a - b) < threshold
        for i, a in enumerate(numbers)
        for j, b in enumerate(numbers)
        if i != j
    )
```"""


def verify(tmp_path, response, *extra_env):
    path = tmp_path / "response.md"
    path.write_text(response)
    env = dict(os.environ)
    env.update(dict(extra_env))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "envhub.cli",
            "verify",
            "humaneval",
            "--task-id",
            "HumanEval/0",
            "--response-file",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@needs_bwrap
def test_cli_verifies_a_correct_and_a_forging_program(tmp_path):
    good = verify(tmp_path, GOLD_0)
    assert good["status"] == "ok" and good["components"]["correctness"] == 1.0
    assert good["reward"] == pytest.approx(1.5)
    forged = "```python\nprint('all passed')\nimport sys\nsys.exit(0)\n```"
    bad = verify(tmp_path, forged)
    assert bad["status"] == "ok" and bad["reward"] == 0.0
    assert bad["components"] == {"correctness": 0.0, "pass_fraction": 0.0, "format": 1.0}


def test_cli_without_a_sandbox_reports_infra_error(tmp_path):
    out = verify(tmp_path, GOLD_0, ("PATH", "/nonexistent"), ("ENVHUB_SANDBOX", "auto"))
    assert out["status"] == "infra_error" and "bubblewrap" in out["error"]
