"""Tag blocks in model output (``<answer>...</answer>``, ``<tool_call>...``), found in linear time.

Environments read the model's answer, moves and text tool calls from XML-like tags. The
obvious regular expression, ``<tag>(.*?)</tag>``, is quadratic on hostile text: each of 20,000
unclosed ``<tag>`` openings scans to the end of the message for a closing tag that never comes
(10-14 s per message, issue 17). :func:`tag_blocks` finds the same blocks with one scan:

* it lists every opening ``<name>`` and closing ``</name>`` (blanks allowed before the closing
  ``>``) with one regular expression that never backtracks across the text;
* it pairs them as ``re.finditer`` would pair the lazy pattern: an opening tag starts a block
  that ends at the first closing tag of the same name after it; openings inside a block are
  part of its body; an opening with no closing tag after it is *unclosed*.

The result is the same as the lazy regular expression's on every input, in ``O(len(text))``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class TagBlock:
    """One ``<name>body</name>`` block of a text, or an opening tag left unclosed."""

    name: str
    """The tag's name, lower case."""
    start: int
    """Index of the opening ``<``."""
    body_start: int
    """Index just after the opening tag's ``>``."""
    body_end: int
    """Index of the closing tag's ``<`` (the text's end for an unclosed tag)."""
    end: int
    """Index just after the closing tag (the text's end for an unclosed tag)."""
    closed: bool


@lru_cache(maxsize=64)
def _tag_re(names: tuple[str, ...], ignore_case: bool) -> re.Pattern[str]:
    alt = "|".join(re.escape(n) for n in names)
    return re.compile(rf"<(/?)({alt})(\s*)>", re.IGNORECASE if ignore_case else 0)


def tag_blocks(text: str, *names: str, ignore_case: bool = True) -> list[TagBlock]:
    r"""Every block of the tags ``names`` in ``text``, in order, unclosed openings included.

    Closed blocks are those ``re.finditer(r"<(names)>(.*?)</\1\s*>", text, re.S)`` finds;
    unclosed ones are the openings outside them that no closing tag of their name follows
    (their body runs to the end of the text).

    Args:
        text: The message.
        *names: Tag names (letters, digits, ``_``, ``-``).
        ignore_case: Match the names case-insensitively (``<ANSWER>`` counts).
    """
    tokens = []  # (start, end, is_close, name)
    for m in _tag_re(tuple(names), ignore_case).finditer(text):
        is_close = bool(m.group(1))
        if not is_close and m.group(3):  # "<name >" is not an opening tag
            continue
        name = m.group(2).lower() if ignore_case else m.group(2)
        tokens.append((m.start(), m.end(), is_close, name))
    # next_close[i]: index of the first closing token of token i's name after token i
    next_close: list[int | None] = [None] * len(tokens)
    following: dict[str, int] = {}
    for i in range(len(tokens) - 1, -1, -1):
        _, _, is_close, name = tokens[i]
        if is_close:
            following[name] = i
        else:
            next_close[i] = following.get(name)
    blocks: list[TagBlock] = []
    cursor = 0
    for i, (start, end, is_close, name) in enumerate(tokens):
        if is_close or start < cursor:
            continue
        j = next_close[i]
        if j is None:
            blocks.append(TagBlock(name, start, end, len(text), len(text), closed=False))
            continue
        close_start, close_end = tokens[j][0], tokens[j][1]
        blocks.append(TagBlock(name, start, end, close_start, close_end, closed=True))
        cursor = close_end
    return blocks


def block_text(text: str, block: TagBlock) -> str:
    """The text between a block's tags."""
    return text[block.body_start : block.body_end]


def without_blocks(text: str, blocks: list[TagBlock], fill: str = "") -> str:
    """``text`` with the given blocks (tags and bodies) cut out, each replaced by ``fill``."""
    parts: list[str] = []
    pos = 0
    for b in blocks:
        if b.start < pos:
            continue
        parts.append(text[pos : b.start])
        parts.append(fill)
        pos = b.end
    parts.append(text[pos:])
    return "".join(parts)


def without_thinking(text: str, fill: str = "") -> str:
    """``text`` without its ``<think>`` blocks; a ``<think>`` never closed runs to the end.

    What a model writes inside its thinking is never its answer, so an ``<answer>`` inside an
    unclosed ``<think>`` is not read (it would let a model hedge in its thoughts).
    """
    return without_blocks(text, tag_blocks(text, "think"), fill)
