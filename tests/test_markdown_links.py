"""Every relative link in the repository's Markdown files leads somewhere (issue 21, point 7).

A link to a file must name a file or folder that exists, relative to the Markdown file; a
``#fragment`` must name a heading of its target (GitHub's slugs: lower case, punctuation
dropped, spaces as hyphens). Links with a scheme (https:, mailto:) and text inside code are not
checked.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def markdown_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "*.md"], cwd=REPO, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip(f"not a git checkout ({out.stderr.strip()})")
    return [REPO / p for p in out.stdout.splitlines() if (REPO / p).exists()]


def outside_fences(text: str) -> str:
    """``text`` without its fenced code blocks (indented fences too)."""
    kept, fence = [], ""
    for line in text.splitlines():
        mark = re.match(r"\s*(`{3,}(?=[^`]*$)|~{3,})", line)  # no backtick after a ``` fence
        if mark and (not fence or mark.group(1).startswith(fence)):
            fence = "" if fence else mark.group(1)
        elif not fence:
            kept.append(line)
    return "\n".join(kept)


def prose(text: str) -> str:
    return CODE.sub("", outside_fences(text))


def slug(heading: str) -> str:
    text = re.sub(r"[`*_]|<[^>]+>", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(outside_fences(path.read_text())):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in LINK.findall(prose(path.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            continue
        file_part, _, fragment = target.partition("#")
        where = (path.parent / file_part).resolve() if file_part else path
        if not where.exists():
            broken.append(f"{target}: no {where}")
        elif fragment and where.suffix == ".md" and fragment not in anchors(where):
            broken.append(f"{target}: no heading #{fragment} in {where.name}")
    return broken


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(path):
    assert broken_links(path) == []


def test_the_checker_finds_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("# A heading\n")
    page.write_text(
        "# Top\n[ok](there.md) [ok](there.md#a-heading) [ok](#top) [web](https://example.org)\n"
        "`[code](nowhere.md)`\n[bad](../envhub/engines/README.md) [bad](there.md#nope)\n"
    )
    assert broken_links(page) == [
        f"../envhub/engines/README.md: no {tmp_path.parent / 'envhub/engines/README.md'}",
        "there.md#nope: no heading #nope in there.md",
    ]
