"""What review can miss, caught on every run: committed merge-conflict markers, files too large
to belong in the repository, and trailing whitespace in the docs."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_BYTES = 2_000_000
"""The largest file the repository holds (the reasoning-gym catalog is the largest, ~0.6 MB)."""
MARKER = re.compile(r"^(<<<<<<< |>>>>>>> |=======$)", re.M)
TEXT = (".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".sh", ".json", ".cfg", ".ini")


def tracked() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / p for p in out.decode().split("\0") if p and (ROOT / p).is_file()]


def test_no_merge_conflict_markers_are_committed():
    found = [
        f"{p.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}"
        for p in tracked()
        if p.suffix in TEXT
        for text in [p.read_text(encoding="utf-8", errors="replace")]
        for m in MARKER.finditer(text)
    ]
    assert found == []


def test_no_file_is_too_large_for_the_repository():
    sizes = {p: p.stat().st_size for p in tracked()}
    assert [f"{p.relative_to(ROOT)}: {n:,} bytes" for p, n in sizes.items() if n > MAX_BYTES] == []


def test_the_docs_have_no_trailing_whitespace():
    found = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in tracked()
        if p.suffix == ".md"
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if line != line.rstrip()
    ]
    assert found == []
