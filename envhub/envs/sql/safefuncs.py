"""Safe replacements for the few sqlite functions whose one call can outrun a deadline.

The deadline of :mod:`envhub.envs.sql.executor` is checked between virtual-machine instructions, so
a single function call is never interrupted. With strings capped at ``max_value_bytes`` most
functions are linear and cheap, but three are not and are replaced on every guarded
connection (an application-defined function overrides the built-in of the same name):

- ``printf``/``format``: a precision on ``%c`` repeats the character one at a time even past
  the string limit (``printf('%.*c', 2000000000, 'x')`` ran 20 s). Widths and precisions
  above :data:`MAX_PRINTF_WIDTH` are refused; anything else is handed to sqlite's own
  ``printf`` on a private in-memory connection, so results are exactly sqlite's.
- ``trim``/``ltrim``/``rtrim`` with a character set: quadratic in the two lengths
  (``trim(<100 kB of 'a'>, <3000 'b'> || 'a')`` ran 11 s). Text arguments are trimmed by
  Python's ``str.strip`` (the same semantics: the characters of the set are removed from the
  ends), short numbers go to sqlite's own function, and blobs are refused.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

MAX_PRINTF_WIDTH = 1000
"""Largest width or precision a ``printf`` conversion may ask for."""
_SPEC_RE = re.compile(r"%([-+ 0#,!]*)(\*|\d+)?(?:\.(\*|\d+))?(?:ll|l)?([a-zA-Z%]?)")
_local = threading.local()


def _builtin() -> sqlite3.Connection:
    """A per-thread in-memory connection whose functions are sqlite's own."""
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", check_same_thread=True)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1_000_000)
        _local.conn = conn
    return conn


def _check_printf(fmt: str, args: tuple[Any, ...]) -> None:
    """Raise ``ValueError`` when a conversion asks for a width or precision over the cap."""
    i = 0
    for m in _SPEC_RE.finditer(fmt):
        if m.group(4) == "%":
            continue
        for part in (m.group(2), m.group(3)):
            if part is None:
                continue
            if part == "*":
                value = args[i] if i < len(args) else 0
                i += 1
                try:
                    part_value = abs(int(value or 0))
                except (TypeError, ValueError):
                    part_value = 0
            else:
                part_value = int(part)
            if part_value > MAX_PRINTF_WIDTH:
                raise ValueError(f"printf width/precision {part_value} over {MAX_PRINTF_WIDTH}")
        i += 1


def safe_printf(fmt: Any = None, *args: Any) -> Any:
    """The built-in ``printf``, refusing widths and precisions over :data:`MAX_PRINTF_WIDTH`."""
    if isinstance(fmt, str):
        _check_printf(fmt, args)
    marks = ", ".join("?" * (len(args) + 1))
    return _builtin().execute(f"SELECT printf({marks})", (fmt, *args)).fetchone()[0]


def _trimmer(name: str, strip: Callable[[str, str], str]) -> Callable[[Any, Any], Any]:
    def trim(value: Any, chars: Any) -> Any:
        if value is None or chars is None:
            return None
        if isinstance(value, bytes) or isinstance(chars, bytes):
            raise ValueError(f"{name}() of a blob with a character set is not supported")
        if isinstance(value, str) and isinstance(chars, str):
            return strip(value, chars)
        # numbers: short texts, so sqlite's own function is cheap and exact
        return _builtin().execute(f"SELECT {name}(?, ?)", (value, chars)).fetchone()[0]

    return trim


def install(conn: sqlite3.Connection) -> None:
    """Override the risky built-ins on ``conn``."""
    for name in ("printf", "format"):
        conn.create_function(name, -1, safe_printf, deterministic=True)
    conn.create_function("trim", 2, _trimmer("trim", str.strip), deterministic=True)
    conn.create_function("ltrim", 2, _trimmer("ltrim", str.lstrip), deterministic=True)
    conn.create_function("rtrim", 2, _trimmer("rtrim", str.rstrip), deterministic=True)
