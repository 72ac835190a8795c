"""Every catalog entry is a Gymnasium environment, through Gymnasium's own ways of finding one.

``import envhub`` pays nothing for it (no gymnasium, no catalog read, no import hook);
``gymnasium.make("envhub.registry.gym:envhub/NAME-vN")`` imports the adapter, which registers
the ids, and ``gymnasium.register_envs(envhub.registry.gym)`` after importing it does the same.
"""

import os
import subprocess
import sys

import pytest

MAKE = (
    "obs, info = env.reset(seed=0); assert '####' in obs, obs; "
    "from gymnasium.utils.env_checker import check_env; "
    "check_env(env.unwrapped, skip_render_check=True); print('ok')"
)


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_import_envhub_imports_no_gymnasium_reads_no_catalog_and_hooks_nothing():
    out = _run(
        "import sys, envhub, envhub.registry.catalog as r; "
        "print(sorted(m for m in ('gymnasium', 'numpy', 'envhub.registry.gym') if m in sys.modules),"
        " r._registry is None, len(sys.meta_path))"
    )
    bare = _run("import sys; print(len(sys.meta_path))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[:2] == ["[]", "True"]
    assert out.stdout.split()[2] == bare.stdout.strip()  # no finder of envhub's on meta_path


@pytest.mark.parametrize(
    "code",
    [
        "import gymnasium; env = gymnasium.make('envhub.registry.gym:envhub/gsm8k-v1')",
        "import envhub, gymnasium; env = gymnasium.make('envhub.registry.gym:envhub/gsm8k-v1')",
        "import gymnasium, envhub.registry.gym; gymnasium.register_envs(envhub.registry.gym); "
        "env = gymnasium.make('envhub/gsm8k-v1')",
        "import envhub.registry.gym, gymnasium; env = gymnasium.make('envhub/gsm8k-v1')",
    ],
    ids=["module-form", "module-form-after-envhub", "register-envs", "adapter-first"],
)
def test_gymnasium_make_reaches_a_catalog_entry_that_passes_the_checker(code):
    out = _run(f"{code}; {MAKE}")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")


def test_broken_user_yaml_warns_and_does_not_break_the_import(tmp_path):
    (tmp_path / "registry.d").mkdir()
    (tmp_path / "registry.d" / "bad.yaml").write_text("environments: [{name: 1, version: x}]\n")
    code = "import gymnasium, envhub.registry.gym; print('envhub/gsm8k-v1' in gymnasium.registry)"
    out = _run(code, ENVHUB_HOME=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    assert "gymnasium ids not registered" in out.stderr
    assert "bad.yaml" in out.stderr
