"""mkdocs hooks: the pages made at build time, and links to the source tree.

- One page per entry of the built-in catalog, ``environments/NAME.md``, generated from its card
  (``envhub.authoring.cards``: the same data as ``envhub info NAME --text``), listed in the nav
  under "Environments".
- The READMEs that live beside their code (``INCLUDED``) are pages of the site, read at build
  time, never copied by hand.
- A link from a page to a file of the repository outside ``docs/`` (a module, a script) becomes
  its path in code type: the site is not the source tree. A link to a file that exists nowhere
  is left alone, so ``mkdocs build --strict`` fails on it.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parents[1]
INCLUDED = {
    "training/trainer.md": "envhub/trainer/README.md",
    "interop/details.md": "envhub/interop/README.md",
}
"""Site page -> the README in the source tree it shows."""

LINK = re.compile(r"(!?)\[([^\]]*)\]\(\s*<?([^)\s>]+)>?\s*\)|`[^`\n]*`")
"""A link or an image, or a code span (left as it is: matched so that no link is seen in it)."""
_sources: dict[str, Path] = {}
"""Site page -> the file its Markdown was written beside (links resolve from there)."""


def _catalog_specs() -> list:
    """The built-in catalog's entries: not this machine's registrations or installed packages."""
    from envhub.registry.catalog import BUILTIN_REGISTRY, Registry

    catalog = Registry.load([BUILTIN_REGISTRY])
    return [catalog.spec(name) for name in catalog.names()]


def env_page(spec) -> str:
    """The page of one catalog entry: its card, and where its measured figures come from."""
    from envhub.authoring.cards import card, render

    c = card(spec)
    about = html.escape(c["description"]) or f"A {spec.family} environment."
    lines = [f"# {spec.name}", "", about, ""]
    lines += ["```text", render(c), "```", ""]
    scores = c["scores"] or {}
    if not scores.get("needs_data") and scores.get("measured"):
        lines.append(
            f"Measured {scores['measured']} at envhub commit `{scores.get('envhub_commit')}` "
            "by `python scripts/measure_cards.py "
            f"{spec.name}`; the model's row by the command it names."
        )
    lines += [
        "",
        f"`envhub info {spec.name} --text` prints this card; [all environments](index.md).",
    ]
    return "\n".join(lines) + "\n"


def on_config(config):
    """List the generated environment pages in the nav, after the environments' index."""
    for entry in config["nav"]:
        if isinstance(entry, dict) and "Environments" in entry:
            pages = entry["Environments"]
            pages += [{s.name: f"environments/{s.name}.md"} for s in _catalog_specs()]
    return config


def on_files(files: Files, config) -> Files:
    """Add the generated pages and the included READMEs."""
    for spec in _catalog_specs():
        uri = f"environments/{spec.name}.md"
        files.append(File.generated(config, uri, content=env_page(spec)))
    for uri, source in INCLUDED.items():
        files.append(File.generated(config, uri, content=(REPO / source).read_text()))
        _sources[uri] = REPO / source
    return files


def _site_target(target: Path, docs: Path) -> Path | None:
    """The docs file that shows ``target``, if the site has one."""
    for uri, source in _sources.items():
        if source == target:
            return docs / uri
    return target if docs in target.parents and target.exists() else None


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Rewrite links that leave the site (see the module's docstring)."""
    docs = Path(config["docs_dir"]).resolve()
    uri = page.file.src_uri
    here = _sources.get(uri, docs / uri).parent

    def fix(m: re.Match) -> str:
        bang, text, target = m.group(1), m.group(2), m.group(3)
        if target is None or re.match(r"^[a-z][a-z0-9+.-]*:|^#", target, re.I):
            return m.group(0)
        path, _, fragment = target.partition("#")
        where = (here / path).resolve()
        shown = _site_target(where, docs)
        if shown is not None:
            rel = os.path.relpath(shown, (docs / uri).parent)
            return f"{bang}[{text}]({rel}{'#' + fragment if fragment else ''})"
        if where.exists() and REPO in where.parents:
            name = where.relative_to(REPO).as_posix()
            return text if text.strip("`") == name else f"{text} (`{name}`)"
        return m.group(0)

    return _outside_code(markdown, lambda chunk: LINK.sub(fix, chunk))


def _outside_code(markdown: str, change) -> str:
    """Apply ``change`` to each run of lines outside fenced blocks (a link may span lines)."""
    out, run, fence = [], [], False
    for line in markdown.splitlines(keepends=True):
        is_fence = re.match(r"\s*(```|~~~)", line) is not None
        if fence or is_fence:
            out.append(change("".join(run)))
            run = []
            out.append(line)
        else:
            run.append(line)
        fence = fence != is_fence
    out.append(change("".join(run)))
    return "".join(out)
