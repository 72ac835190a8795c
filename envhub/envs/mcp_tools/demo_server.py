"""A small MCP server for the ``mcp_tools`` example and tests: calculator, lookup table, sum.

Run it on loopback (streamable HTTP at ``/mcp``)::

    python -m envhub.envs.mcp_tools.demo_server --port 8765

Tools:

* ``calculate(a, op, b)``: ``a op b`` for ``op`` in ``+ - * /``; division by zero is a tool
  error (``isError``), which the environment shows to the model;
* ``capital(country)``: the capital of a country from a fixed table; an unknown country is a
  tool error naming the countries it knows;
* ``total(numbers)``: the sum of a list of numbers.
"""

from __future__ import annotations

import argparse
import operator
from typing import Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from envhub.lifetime import stop_signals

CAPITALS = {
    "France": "Paris",
    "Japan": "Tokyo",
    "Kenya": "Nairobi",
    "Peru": "Lima",
    "Canada": "Ottawa",
}
OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def build() -> MCPServer:
    """The server with its two tools."""
    server = MCPServer("envhub-demo-tools")

    @server.tool()
    def calculate(a: float, op: Literal["+", "-", "*", "/"], b: float) -> str:
        """Compute `a op b` (op is one of + - * /)."""
        if op == "/" and b == 0:
            raise ToolError("division by zero")
        return f"{OPS[op](a, b):g}"

    @server.tool()
    def capital(country: str) -> str:
        """The capital city of a country."""
        try:
            return CAPITALS[country.strip()]
        except KeyError:
            raise ToolError(
                f"unknown country {country!r}; known: {', '.join(sorted(CAPITALS))}"
            ) from None

    @server.tool()
    def total(numbers: list[float]) -> str:
        """The sum of a list of numbers."""
        return f"{sum(numbers):g}"

    return server


def main() -> None:
    """Serve on 127.0.0.1 at the given port until SIGINT/SIGTERM (whatever was inherited)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    with stop_signals():
        try:
            build().run("streamable-http", host="127.0.0.1", port=args.port)
        except KeyboardInterrupt:
            pass  # stopping on request is success


if __name__ == "__main__":
    main()
