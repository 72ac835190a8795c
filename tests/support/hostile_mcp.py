"""An MCP server whose answers the model's arguments steer, for the ``mcp_tools`` attacks.

Run as ``python tests/support/hostile_mcp.py PORT`` (streamable HTTP at ``/mcp``). A low-level
server, so it can answer what a high-level one never would. Tools:

* ``wait(seconds)``: answers after ``seconds``; the server keeps answering others meanwhile;
* ``refuse(code)``: answers a JSON-RPC error with ``code`` (-32000 is also the code the SDK's
  client gives a closed connection);
* ``shaped(n)``: answers ``{"n": n}`` for ``n >= 0``, else ``{"n": "negative"}``, which breaks
  the output schema the tool declares;
* ``echo(text)``: answers ``text``.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import uvicorn
from mcp import types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError


def _tool(name: str, param: str, kind: str, output: dict[str, Any] | None = None) -> types.Tool:
    schema = {"type": "object", "properties": {param: {"type": kind}}, "required": [param]}
    return types.Tool(name=name, description=name, input_schema=schema, output_schema=output)


SHAPE = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
TOOLS = [
    _tool("wait", "seconds", "number"),
    _tool("refuse", "code", "integer"),
    _tool("shaped", "n", "integer", SHAPE),
    _tool("echo", "text", "string"),
]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "wait":
        await anyio.sleep(float(args["seconds"]))
    if params.name == "refuse":
        raise MCPError(code=int(args["code"]), message=f"refused with {args['code']}")
    if params.name == "shaped":
        n = int(args["n"])
        shaped = {"n": n if n >= 0 else "negative"}
        text = types.TextContent(type="text", text=str(shaped))
        return types.CallToolResult(content=[text], structured_content=shaped)
    text = str(args.get("text", f"{params.name} done"))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def main(port: int) -> None:
    """Serve on 127.0.0.1:``port`` until killed."""
    server = Server("envhub-hostile-tools", on_list_tools=list_tools, on_call_tool=call_tool)
    app = server.streamable_http_app(streamable_http_path="/mcp")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]))
