"""The text the tools return to the model, and its parsing back (for the scripted agent).

``search`` answers with a header line and, per hit, one line ``[rank] DOC_ID | TITLE`` followed
by a snippet line; ``open`` answers with ``DOC_ID | TITLE`` and the document's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .world import Doc

_HIT_RE = re.compile(r"^\[(\d+)\] (\S+) \| (.*)$")


@dataclass(frozen=True)
class Hit:
    """One search result as the model sees it."""

    rank: int
    doc_id: str
    title: str
    snippet: str


def snippet(text: str, limit: int) -> str:
    """The start of ``text`` cut at a word boundary, at most ``limit`` characters."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + " …"


def format_search(query: str, hits: list[tuple[Doc, float]], total: int, limit: int) -> str:
    """The ``search`` tool's answer."""
    if not hits:
        return f'No document matches "{query}". Try other keywords.'
    lines = [f'Results for "{query}" ({len(hits)} of {total} documents):']
    for rank, (doc, _score) in enumerate(hits, 1):
        lines.append(f"[{rank}] {doc.doc_id} | {doc.title}")
        lines.append(snippet(doc.text, limit))
    return "\n".join(lines)


def format_open(doc: Doc, limit: int) -> str:
    """The ``open`` tool's answer: the whole document, cut at ``limit`` characters."""
    return f"{doc.doc_id} | {doc.title}\n{snippet(doc.text, limit)}"


def parse_search(text: str) -> list[Hit]:
    """The hits listed in a ``search`` answer (empty for "no document matches")."""
    lines = text.splitlines()
    hits = []
    for i, line in enumerate(lines):
        m = _HIT_RE.match(line)
        if m:
            body = lines[i + 1] if i + 1 < len(lines) else ""
            hits.append(Hit(int(m.group(1)), m.group(2), m.group(3), body))
    return hits


def parse_open(text: str) -> tuple[str, str, str] | None:
    """``(doc_id, title, text)`` of an ``open`` answer, or ``None`` if it is not one."""
    head, _, body = text.partition("\n")
    doc_id, sep, title = head.partition(" | ")
    if not sep or " " in doc_id:
        return None
    return doc_id, title, body
