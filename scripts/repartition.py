"""Move envhub's parts into the one ``envhub`` namespace (issue 13), and rewrite every reference.

Run from the repository root, on a clean work tree::

    python scripts/repartition.py            # moves with git mv, rewrites, prints each file changed
    git diff --stat HEAD; python -m pytest ...  # review, test, commit

Idempotent: a second run finds nothing to move and nothing to rewrite. What it does:

1. ``git mv``: ``servers/`` -> ``envhub/server/``; ``envhub/docker*.py`` -> ``envhub/server/``;
   ``envs/`` -> ``envhub/envs/``; ``trainer/`` -> ``envhub/trainer/``; the server's and the
   Docker runner's tests -> ``tests/server/``.
2. Rewrites module paths (``servers.app`` -> ``envhub.server.app``, ``envs.math.env:MathEnv``
   -> ``envhub.envs.math.env:MathEnv``, ``envhub.docker_image`` ->
   ``envhub.server.docker_image``, ``import servers``, ``from trainer import``) and file paths
   (``servers/Dockerfile``, ``trainer/README.md``, ``tests/test_docker.py``) in every tracked
   text file. A module reference is the old top-level name, not preceded by a name character, a
   dot, a dash or a slash (so ``self.trainer.x``, ``envhub.trainer``, ``tests/envs/`` and
   ``envhub-trainer`` stay), followed by one of the package's own modules (read from the tree)
   and not by a call (``trainer.train()`` is a variable). A line holding ``repartition: keep``
   is left as it is (tests and errors that must spell an old path).
3. Relative imports that crossed the move: ``envhub/server/docker*.py`` import the core
   absolutely (``from .errors`` there would now be the server's own ``errors``).
4. pyproject (``packages.find``, package data), the Docker image's source dirs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PACKAGES = {"servers": "envhub.server", "trainer": "envhub.trainer", "envs": "envhub.envs"}
"""Old top-level package -> its module path now."""
DOCKER_MODULES = ("docker", "docker_image", "docker_relay", "docker_cli")
"""Core modules of the Docker runner that move into the server part."""
TEST_MOVES = ("test_server.py", "test_server_wire.py", "test_docker.py")
"""Top-level test files that move to tests/server/."""
TEXT_SUFFIXES = {
    ".py", ".yaml", ".yml", ".md", ".toml", ".cfg", ".sh", ".json", ".jsonl", ".tmpl", ".txt",
    ".ini",
}  # fmt: skip
TEXT_NAMES = {"Dockerfile", "run", "MANIFEST.in"}
KEEP = "repartition: keep"
MAX_BYTES = 4_000_000


def git(*args: str) -> str:
    """Run git in the repository root; its stdout."""
    res = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"git {' '.join(args)} failed:\n{res.stderr}")
    return res.stdout


def tracked(path: Path) -> bool:
    """Whether git tracks anything at or under ``path``."""
    return bool(git("ls-files", "--", str(path.relative_to(ROOT))).strip())


def move(src: str, dst: str) -> None:
    """``git mv src dst`` when src is still tracked; nothing when already moved."""
    s, d = ROOT / src, ROOT / dst
    if not tracked(s):
        return
    if d.exists() and s.is_dir():
        if tracked(d) or any(p.is_file() and p.suffix != ".pyc" for p in d.rglob("*")):
            sys.exit(f"cannot move {src}: {dst} exists already; move by hand or remove it")
        shutil.rmtree(d)  # only caches left by an earlier layout
    d.parent.mkdir(parents=True, exist_ok=True)
    git("mv", src, dst)
    print(f"moved   {src} -> {dst}")
    if s.is_dir():
        leftover_dir(s)


def leftover_dir(path: Path) -> None:
    """Remove caches left in a moved folder; say what else was left (untracked data)."""
    for cache in list(path.rglob("__pycache__")):
        shutil.rmtree(cache, ignore_errors=True)
    for sub in sorted(path.rglob("*"), key=lambda p: -len(p.parts)):
        if sub.is_dir() and not any(sub.iterdir()):
            sub.rmdir()
    if path.is_dir() and not any(path.iterdir()):
        path.rmdir()
    elif path.exists():
        rest = [str(p.relative_to(ROOT)) for p in path.rglob("*") if p.is_file()]
        print(f"warning: {path.relative_to(ROOT)} still holds untracked files: {rest[:10]}")


def move_all() -> None:
    """Step 1: every git mv of the re-partition."""
    move("servers", "envhub/server")
    for mod in DOCKER_MODULES:
        move(f"envhub/{mod}.py", f"envhub/server/{mod}.py")
    move("envs", "envhub/envs")
    move("trainer", "envhub/trainer")
    for name in TEST_MOVES:
        move(f"tests/{name}", f"tests/server/{name}")
    init = ROOT / "envhub/server/__init__.py"
    if not init.exists():
        init.write_text(
            '"""The server part: serves any environment over HTTP.\n\n'
            "The FastAPI app, its sessions, the Docker image and runner. Imports the core only.\n"
            '"""\n'
        )
        git("add", str(init.relative_to(ROOT)))
        print("created envhub/server/__init__.py")


def children(package: str) -> list[str]:
    """Module and subpackage names of an old top-level package (read where it lies now)."""
    names: set[str] = set()
    for where in (ROOT / package, ROOT / PACKAGES[package].replace(".", "/")):
        if where.is_dir():
            for p in where.iterdir():
                if p.name.startswith((".", "__")):
                    continue
                if p.is_dir() or p.suffix == ".py":
                    names.add(p.stem)
    return sorted(names, key=len, reverse=True)


def child_files(package: str) -> list[str]:
    """Every entry name (files with their suffix too) under an old top-level package."""
    names: set[str] = set()
    for where in (ROOT / package, ROOT / PACKAGES[package].replace(".", "/")):
        if where.is_dir():
            names |= {p.name for p in where.iterdir() if not p.name.startswith((".", "__py"))}
    return sorted(names, key=len, reverse=True)


def rules() -> list[tuple[re.Pattern[str], str]]:
    """The substitutions, in order: (pattern, replacement)."""
    out: list[tuple[re.Pattern[str], str]] = []
    before = r"(?<![\w.\-/])"
    for old, new in PACKAGES.items():
        subs = "|".join(map(re.escape, children(old)))
        files = "|".join(map(re.escape, child_files(old)))
        # import servers  ->  import envhub.server as servers
        out.append(
            (re.compile(rf"^(\s*)import {old}(\s*(?:#.*)?)$", re.M), rf"\1import {new} as {old}\2")
        )
        out.append((re.compile(rf"^(\s*)from {old} import ", re.M), rf"\1from {new} import "))
        # servers.app, envs.math.env:MathEnv, :mod:`trainer.grpo` (not trainer.train(...))
        out.append((re.compile(rf"{before}{old}\.({subs})\b(?!\s*\()"), rf"{new}.\1"))
        # servers/Dockerfile, trainer/README.md, envs/math/ ; a bare "servers/" in prose
        path = new.replace(".", "/")
        out.append(
            (re.compile(rf"{before}{old}/(?=(?:{files})\b|[\s`'\")\]]|$)", re.M), f"{path}/")
        )
    mods = "|".join(sorted(DOCKER_MODULES, key=len, reverse=True))
    out += [
        (re.compile(rf"\benvhub\.({mods})\b"), r"envhub.server.\1"),
        (re.compile(rf"\benvhub/({mods})\.py\b"), r"envhub/server/\1.py"),
        (
            re.compile(rf"^(\s*)from envhub import ({mods})\b", re.M),
            r"\1from envhub.server import \2",
        ),
    ]
    tests = "|".join(re.escape(n.removesuffix(".py")) for n in TEST_MOVES)
    out.append((re.compile(rf"(?<![\w/])tests/({tests})\.py\b"), r"tests/server/\1.py"))
    return out


def is_text(path: Path) -> bool:
    """Files whose references are rewritten."""
    return path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES


def rewrite_text(text: str, subs: list[tuple[re.Pattern[str], str]]) -> str:
    """Apply every rule to every line without the keep marker."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if KEEP in line:
            continue
        for pattern, repl in subs:
            line = pattern.sub(repl, line)
        lines[i] = line
    return "".join(lines)


def rewrite_all() -> list[str]:
    """Step 2: rewrite every tracked text file; the paths changed."""
    subs = rules()
    me = Path(__file__).resolve()
    changed = []
    for rel in git("ls-files", "-z").split("\0"):
        path = ROOT / rel
        if not rel or not path.is_file() or path.resolve() == me or not is_text(path):
            continue
        if path.stat().st_size > MAX_BYTES:
            continue
        text = path.read_text(encoding="utf-8")
        new = rewrite_text(text, subs)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(rel)
    return changed


def fix_relative_imports() -> list[str]:
    """Step 3: the Docker runner's modules import the core by its absolute name."""
    siblings = set(DOCKER_MODULES)
    rel = re.compile(r"^(\s*)from \.(\w+) import ", re.M)
    changed = []
    for mod in DOCKER_MODULES:
        path = ROOT / f"envhub/server/{mod}.py"
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        new = rel.sub(
            lambda m: m[0] if m[2] in siblings else f"{m[1]}from envhub.{m[2]} import ", text
        )
        new = re.sub(r"^(\s*)from \. import ", r"\1from envhub import ", new, flags=re.M)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(str(path.relative_to(ROOT)))
    return changed


EXACT = {
    "pyproject.toml": [
        ('include = ["envhub*", "envs*", "servers*", "trainer*"]', 'include = ["envhub*"]'),
        (
            'envhub = ["registry.yaml"]',
            'envhub = ["registry.yaml", "scaffold/templates/*/*", "server/Dockerfile"]',
        ),
    ],
    "envhub/server/docker_image.py": [
        ("    root = Path(__file__).resolve().parent.parent\n",
         "    root = Path(__file__).resolve().parents[2]\n"),
        ('SOURCE_DIRS = ("envhub", "envs", "servers")', 'SOURCE_DIRS = ("envhub",)'),
        ('root / "servers" / "Dockerfile"', 'root / "envhub" / "server" / "Dockerfile"'),
    ],
    # the repository root, seen from modules one folder deeper than before
    "envhub/envs/math/suite.py": [
        ('CASES = Path(__file__).resolve().parents[2] / "tests"',
         'CASES = Path(__file__).resolve().parents[3] / "tests"'),
    ],
    "envhub/trainer/workers.py": [
        ("repo = str(Path(__file__).resolve().parent.parent)",
         "repo = str(Path(__file__).resolve().parents[2])"),
    ],
    "tests/server/test_docker.py": [  # one folder deeper
        ("REPO = Path(__file__).resolve().parents[1]",
         "REPO = Path(__file__).resolve().parents[2]"),
    ],
    "tests/test_import.py": [
        ('"envs",\n    "servers",\n    "trainer",',
         '"envhub.envs",\n    "envhub.server",\n    "envhub.trainer",'),
    ],
}  # fmt: skip
"""Step 4: exact edits (old text, new text) where a rule cannot know the intent."""


def exact_edits() -> list[str]:
    """Apply :data:`EXACT`; an edit whose old and new text are both absent is reported."""
    changed = []
    for rel, edits in EXACT.items():
        path = ROOT / rel
        if not path.exists():
            print(f"warning: {rel} not found; its edits skipped")
            continue
        text = path.read_text(encoding="utf-8")
        new = text
        for old, repl in edits:
            if old in new:
                new = new.replace(old, repl)
            elif repl not in new:
                print(f"warning: {rel}: neither {old!r} nor its replacement found; edit by hand")
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(rel)
    return changed


def tidy(paths: list[str]) -> None:
    """Sort the imports the rewrite reordered and re-wrap lines it lengthened (ruff)."""
    py = [p for p in sorted(set(paths)) if p.endswith(".py") and (ROOT / p).exists()]
    if not py:
        return
    ruff = [shutil.which("ruff")] if shutil.which("ruff") else [sys.executable, "-m", "ruff"]
    if subprocess.run([*ruff, "--version"], capture_output=True).returncode != 0:
        print("warning: ruff not found; run `ruff check --select I --fix` and `ruff format` on:")
        print("  " + " ".join(py))
        return
    subprocess.run([*ruff, "check", "-q", "--select", "I", "--fix", *py], cwd=ROOT, check=False)
    subprocess.run([*ruff, "format", "-q", *py], cwd=ROOT, check=False)


def too_long(paths: list[str]) -> None:
    """Say which rewritten Python lines went over ruff's 100 (comments, docstrings: wrap them)."""
    for rel in sorted(set(paths)):
        path = ROOT / rel
        if rel.endswith(".py") and path.exists():
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if len(line) > 100 and "envhub." in line or len(line) > 100 and "envhub/" in line:
                    print(f"wrap by hand: {rel}:{n} is {len(line)} characters")


def main() -> None:
    """Run the steps; print each file changed."""
    if git("status", "--porcelain", "--untracked-files=no").strip() and "--dirty" not in sys.argv:
        sys.exit("the work tree has uncommitted changes; commit them first (or pass --dirty)")
    move_all()
    changed = rewrite_all()
    changed += fix_relative_imports()
    changed += exact_edits()
    tidy(changed)
    too_long(changed)
    for rel in sorted(set(changed)):
        print(f"rewrote {rel}")
    if changed:
        git("add", "-u")
    print(f"{len(set(changed))} files rewritten; review with `git diff --cached`")


if __name__ == "__main__":
    main()
