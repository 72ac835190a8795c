"""`import envhub` stays light and never reaches into envs, servers or the trainer."""

import subprocess
import sys

HEAVY = [
    "torch",
    "ray",
    "vllm",
    "transformers",
    "fastapi",
    "docker",
    "sympy",
    "datasets",
    "gymnasium",
    "numpy",
    "envhub.envs",
    "envhub.server",
    "envhub.trainer",
]


def test_import_envhub_is_light():
    """No heavy library at import. (Import *time* is measured, not asserted: a timed unit
    test flakes on a loaded machine; `python -X importtime -c "import envhub"` shows it.)"""
    code = (
        "import sys, time; t = time.perf_counter(); import envhub; dt = time.perf_counter() - t; "
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]; print(dt, heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    _, heavy = out.stdout.split(" ", 1)
    assert heavy.strip() == "[]"


def test_import_envhub_with_heavy_modules_blocked():
    block = "; ".join(f"sys.modules[{m!r}] = None" for m in HEAVY)
    code = f"import sys; {block}; import envhub, envhub.cli, envhub.client.http_env, envhub.authoring.checker"
    subprocess.run([sys.executable, "-c", code], check=True)
