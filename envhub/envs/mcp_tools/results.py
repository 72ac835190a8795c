"""An MCP tool result as the text the model reads."""

from __future__ import annotations

import json

from mcp.types import CallToolResult


def render_result(result: CallToolResult, limit: int) -> str:
    """The result's text blocks (other blocks named, not shown), cut to ``limit`` characters.

    A result with no content but ``structuredContent`` shows that as JSON. A tool error
    (``isError``) is prefixed ``Error:`` so the model can tell it from a value.
    """
    parts = []
    for block in result.content:
        text = getattr(block, "text", None)
        parts.append(text if isinstance(text, str) else f"[{block.type} content not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(parts) or "(no output)"
    if len(text) > limit:
        text = f"{text[:limit]}\n[... {len(text) - limit} more characters cut]"
    return f"Error: {text}" if result.is_error else text
