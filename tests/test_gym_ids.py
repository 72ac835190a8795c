"""gymnasium ids cost nothing at `import envhub` and still work in every import order."""

import os
import subprocess
import sys

import pytest

MAKE = (
    "env = gymnasium.make('envhub/gsm8k-v1'); obs, info = env.reset(seed=0); "
    "assert '####' in obs, obs; print('ok')"
)


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_import_envhub_neither_imports_gymnasium_nor_reads_the_catalog():
    out = _run(
        "import sys, envhub, envhub.registry.catalog as r; "
        "print(sorted(m for m in ('gymnasium', 'numpy', 'envhub.gym') if m in sys.modules), "
        "r._registry is None)"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "True"]


@pytest.mark.parametrize(
    "imports",
    ["import envhub; import gymnasium", "import gymnasium; import envhub"],
    ids=["envhub-first", "gymnasium-first"],
)
def test_gymnasium_make_after_import_envhub(imports):
    out = _run(f"{imports}; {MAKE}")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_gymnasium_module_form_without_import_envhub():
    code = (
        "import gymnasium; env = gymnasium.make('envhub.gym:envhub/gsm8k-v1'); "
        "obs, _ = env.reset(seed=0); assert '####' in obs; print('ok')"
    )
    out = _run(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_a_find_spec_probe_does_not_spend_the_hook():
    """Libraries probe with importlib.util.find_spec; the ids must still come on import."""
    out = _run(
        f"import importlib.util, envhub; importlib.util.find_spec('gymnasium'); "
        f"import gymnasium; {MAKE}"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_broken_user_yaml_warns_and_does_not_break_import_gymnasium(tmp_path):
    (tmp_path / "registry.d").mkdir()
    (tmp_path / "registry.d" / "bad.yaml").write_text("environments: [{name: 1, version: x}]\n")
    code = "import envhub, gymnasium; print('envhub/gsm8k-v1' in gymnasium.registry)"
    out = _run(code, ENVHUB_HOME=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    assert "gymnasium ids not registered" in out.stderr
    assert "bad.yaml" in out.stderr
