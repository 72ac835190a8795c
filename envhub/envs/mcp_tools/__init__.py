"""Tools from an existing MCP server: the ``mcp_tools`` environment family.

An environment whose tool list, tool calls and tool failures are a running MCP server's. See
``envhub/envs/mcp_tools/README.md``.
"""
