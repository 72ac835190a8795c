"""SQL text handling: pull the query out of a chat message and read its shape.

The helpers here never execute anything. A small lexer that knows SQLite's quoting rules
(``'strings'``, ``"identifiers"``, ```backticks```, ``[brackets]``, ``--`` and ``/* */``
comments) lets the executor count statements and check the leading keyword, and lets the
verifier see whether the gold query orders its result (``ORDER BY`` at the top level, not
inside a subquery or a window).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SQL_LANGS = frozenset({"sql", "sqlite", "sqlite3"})
_LABEL_RE = re.compile(r"[ \t]*([A-Za-z0-9_+-]*)[ \t]*(?:\n|$)")
_INLINE_LABEL_RE = re.compile(r"[ \t]*(sql|sqlite3?)[ \t]+(?=\S)", re.IGNORECASE)

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<string>'(?:[^']|'')*(?:'|\Z))
  | (?P<ident>"(?:[^"]|"")*(?:"|\Z)|`(?:[^`]|``)*(?:`|\Z)|\[[^\]]*(?:\]|\Z))
  | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)
  | (?P<punct>.)
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class Extracted:
    """The SQL found in a message."""

    sql: str
    """The query text, stripped (may be empty)."""
    fenced: bool
    """True when it came from a closed ```sql (or ```sqlite) fenced block: the asked format."""


@dataclass(frozen=True)
class Token:
    """One lexical token of a SQL text."""

    kind: str
    """``comment``, ``string``, ``ident``, ``word``, ``number`` or ``punct``."""
    text: str
    depth: int
    """Parenthesis nesting depth where the token starts (0 = top level)."""


def extract_sql(text: str) -> Extracted:
    """The query in a model's message.

    The last closed fenced block labelled ``sql``/``sqlite`` wins (``fenced=True``). Without
    one, the last fenced block of any other label (or an unclosed ``sql`` block, as left by a
    generation cut at its token budget) is used, and otherwise the whole message; both of
    these count as not following the requested format (``fenced=False``).

    Args:
        text: The assistant message's content.

    Returns:
        The extracted query and whether it came in the requested format.
    """
    blocks = fenced_blocks(text)
    closed_sql = [body for lang, body, closed in blocks if lang in _SQL_LANGS and closed]
    if closed_sql:
        return Extracted(sql=closed_sql[-1].strip(), fenced=True)
    if blocks:
        return Extracted(sql=blocks[-1][1].strip(), fenced=False)
    return Extracted(sql=text.strip(), fenced=False)


def fenced_blocks(text: str) -> list[tuple[str, str, bool]]:
    """The fenced blocks of ``text`` as ``(label, body, closed)``, in order.

    Fences pair up in order of appearance; a final unpaired fence opens a block that runs to
    the end (``closed=False``). The label is the word right after the opening fence when the
    line holds nothing else, or ``sql`` in the one-line form ```` ```sql SELECT 1``` ````.
    """
    parts = text.split("```")
    blocks = []
    for i in range(1, len(parts), 2):
        raw, closed = parts[i], i + 1 < len(parts)
        label_m = _LABEL_RE.match(raw)
        inline_m = _INLINE_LABEL_RE.match(raw)
        if label_m:
            label, body = label_m.group(1).lower(), raw[label_m.end() :]
        elif inline_m:
            label, body = inline_m.group(1).lower(), raw[inline_m.end() :]
        else:
            label, body = "", raw
        blocks.append((label, body, closed))
    return blocks


def tokenize(sql: str) -> list[Token]:
    """Lex ``sql`` into tokens (whitespace dropped), tracking parenthesis depth."""
    out: list[Token] = []
    depth = 0
    for m in _TOKEN_RE.finditer(sql):
        kind = m.lastgroup or "punct"
        if kind == "ws":
            continue
        text = m.group(0)
        if kind == "punct" and text == ")":
            depth = max(0, depth - 1)
        out.append(Token(kind, text, depth))
        if kind == "punct" and text == "(":
            depth += 1
    return out


def statements(sql: str) -> list[list[Token]]:
    """The statements of ``sql``: token lists split at ``;``, comments and empty ones dropped."""
    out: list[list[Token]] = []
    current: list[Token] = []
    for tok in tokenize(sql):
        if tok.kind == "comment":
            continue
        if tok.kind == "punct" and tok.text == ";":
            if current:
                out.append(current)
            current = []
        else:
            current.append(tok)
    if current:
        out.append(current)
    return out


def leading_keyword(sql: str) -> str:
    """The first keyword of ``sql`` in upper case (``SELECT``, ``WITH``...), or ``""``."""
    for tok in tokenize(sql):
        if tok.kind == "comment":
            continue
        if tok.kind == "punct" and tok.text == "(":
            continue  # "(SELECT ...)" is still a SELECT
        return tok.text.upper() if tok.kind == "word" else ""
    return ""


def orders_at_top_level(sql: str) -> bool:
    """True when the query's final result is ordered: ``ORDER BY`` outside any parentheses.

    ``ORDER BY`` inside a subquery, a CTE body or a window (``OVER (ORDER BY ...)``) does not
    order the final result and does not count.
    """
    words = [t for t in tokenize(sql) if t.kind not in ("comment",)]
    for a, b in zip(words, words[1:], strict=False):
        if (
            a.depth == 0
            and a.kind == "word"
            and b.kind == "word"
            and a.text.upper() == "ORDER"
            and b.text.upper() == "BY"
        ):
            return True
    return False


def quote_literal(value: object) -> str:
    """Render a Python value as a SQLite literal (for instantiating gold-query templates)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"
