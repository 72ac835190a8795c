"""From a chat response to a program: the code block, and HumanEval-style completions."""

from __future__ import annotations

import ast
import re

from envhub.errors import InvalidAction

_FENCE = re.compile(
    r"^[ \t]*```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)",
    re.DOTALL | re.MULTILINE,
)
PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3"})
MAX_PARSE_CHARS = 100_000
"""Longest code (about 2,500 lines) the server parses or sends to the sandbox. ``ast.parse``
of this much takes under 0.1 s; of 2 MB, seconds of the server's time under the GIL."""


def extract_code(text: str) -> tuple[str, bool]:
    """The code of a response: its last fenced Python block, else the whole message.

    A fence tagged ``python``/``py``/``python3`` or untagged counts; blocks in other
    languages are ignored. An unterminated last fence (a response cut off by the token
    budget) counts up to the end of the text.

    Returns:
        ``(code, fenced)``: ``fenced`` is False when the whole message was taken.
    """
    blocks = [m.group(2) for m in _FENCE.finditer(text) if m.group(1).lower() in PYTHON_TAGS]
    if blocks:
        return blocks[-1], True
    return text, False


def defines(code: str, name: str) -> bool:
    """Whether ``code`` parses and defines ``name`` at its top level (def, class or assign).

    The code is the model's, parsed in the server's own process, so the parse is bounded:
    code over :data:`MAX_PARSE_CHARS` is not parsed (the caller refuses it), and every way
    ``ast.parse`` can fail on hostile text (``SyntaxError``, a ``RecursionError`` from a
    100k-term expression, ``MemoryError``, ``ValueError``) reads as "does not define it"; the
    program then fails, if it must, in the sandbox.
    """
    if len(code) > MAX_PARSE_CHARS:
        return False
    try:
        module = ast.parse(code)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return False
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return True
        elif isinstance(node, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return True
    return False


def build_program(code: str, prefix: str, entry_point: str | None) -> str:
    """The program to test: the response's code, completed with the task's prompt if needed.

    HumanEval prompts end inside the function (signature and docstring). A response that
    defines the function itself runs after the prompt (so the prompt's imports and helpers
    exist and its stub is replaced); one that does not is taken as the body completing the
    prompt, as in the HumanEval paper.

    Raises:
        InvalidAction: The code is over :data:`MAX_PARSE_CHARS` (the model's fault).
    """
    if len(code) > MAX_PARSE_CHARS:
        raise InvalidAction(
            f"the code is {len(code)} characters long, over the {MAX_PARSE_CHARS} this "
            "environment accepts; write a shorter program"
        )
    if not prefix:
        return code
    if entry_point and defines(code, entry_point):
        return (
            prefix.rstrip() + "\n    pass\n\n\n" + code
            if _ends_in_stub(prefix)
            else (prefix + "\n\n" + code)
        )
    return prefix + code


def _ends_in_stub(prefix: str) -> bool:
    """A prefix whose last function has no body (only a signature): needs a ``pass``."""
    try:
        ast.parse(prefix)
    except SyntaxError:
        return True
    return False
