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
    code = f"import sys; {block}; import envhub, envhub.cli, envhub.client.remote_env, envhub.authoring.checker"
    subprocess.run([sys.executable, "-c", code], check=True)


PUBLIC = {
    "Env": "envhub.core",
    "EnvNotFound": "envhub.errors",
    "EnvSpec": "envhub.spec",
    "EnvhubError": "envhub.errors",
    "Episode": "envhub.core",
    "Feedback": "envhub.core",
    "Info": "envhub.types",
    "Message": "envhub.types",
    "RegistryError": "envhub.errors",
    "ResetResult": "envhub.types",
    "Score": "envhub.types",
    "Status": "envhub.types",
    "StepResult": "envhub.types",
    "Task": "envhub.types",
    "TaskEnv": "envhub.core",
    "make": "envhub.registry.make",
    "register": "envhub.authoring.register",
    "catalog": "envhub.registry.catalog",
    "reset_registry": "envhub.registry.catalog",
    "spec": "envhub.registry.catalog",
}
"""envhub's public names, each with the module that defines it (moving a room keeps them)."""


def test_the_public_api_keeps_its_names():
    import importlib

    import envhub

    assert sorted(envhub.__all__) == sorted(PUBLIC)
    for name, module in PUBLIC.items():
        assert getattr(envhub, name) is getattr(importlib.import_module(module), name), name
    assert callable(envhub.catalog) and callable(envhub.make)  # not shadowed by a subpackage
