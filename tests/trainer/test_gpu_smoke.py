"""scripts/gpu_smoke.py runs on CPU (gloo) with Ray and vLLM unimportable, as on a bare CUDA
machine, and every check passes."""

import subprocess
import sys

import pytest
from train_support import REPO

pytestmark = pytest.mark.slow

BLOCK = """
import importlib.abc, runpy, sys
class NoRayNoVllm(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("ray", "vllm"):
            raise ImportError(f"{name} is not installed on a bare CUDA machine")
sys.meta_path.insert(0, NoRayNoVllm())
sys.argv = ["gpu_smoke.py", "--device", "cpu"]
runpy.run_path("scripts/gpu_smoke.py", run_name="__main__")
"""


def test_gpu_smoke_passes_on_cpu_without_ray_or_vllm():
    proc = subprocess.run(
        [sys.executable, "-c", BLOCK], capture_output=True, text=True, timeout=600, cwd=REPO
    )
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    checks = [line.split()[1] for line in lines if line.split()[0] in ("PASS", "FAIL", "SKIP")]
    for name in ("fsdp2", "engine_generate", "grpo_step", "refit_in_process", "logprob_check"):
        assert {f"{name}[float32]", f"{name}[bfloat16]"} <= set(checks), checks
    assert {"lora", "activation_checkpointing"} <= set(checks)
    assert lines[-1].startswith("summary: 12 passed, 0 failed, 0 skipped"), lines[-1]
