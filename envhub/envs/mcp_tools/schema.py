"""An MCP tool's JSON schema as an envhub :class:`~envhub.tools.Tool`.

envhub checks a call's arguments before it leaves for the server, so a model's malformed call
is its own ``invalid_action`` and never a server failure. The schema's top-level properties
become :class:`~envhub.tools.Param` s with their type, ``enum``, ``minimum``/``maximum`` and
``minLength``/``maxLength``; ``anyOf`` of one type and ``null`` (an optional parameter, as
pydantic writes ``str | None``) counts as that type. Deeper constraints (items of an array,
properties of a nested object, patterns) are left to the server, whose refusal comes back as
a tool error or an invalid-params answer, both the model's. A property with no single JSON
type is a :class:`~envhub.errors.ConfigError` naming the tool: leave it out with
``mcp.tools``.
"""

from __future__ import annotations

from typing import Any, get_args

from envhub.errors import ConfigError
from envhub.tools import JsonType, Param, Tool

JSON_TYPES = frozenset(get_args(JsonType))
MAX_DESCRIPTION_CHARS = 1000
"""A server's descriptions go into the prompt; longer ones are cut."""


def to_tool(name: str, description: str | None, schema: dict[str, Any]) -> Tool:
    """The envhub tool for one MCP tool listing."""
    if schema.get("type", "object") != "object":
        raise ConfigError(f"MCP tool {name!r}: its input schema must be an object schema")
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    params = tuple(_param(name, p, props[p], p in required) for p in props)
    text = (description or name).strip()[:MAX_DESCRIPTION_CHARS]
    return Tool(name=name, description=text, params=params)


def _param(tool: str, name: str, prop: dict[str, Any], required: bool) -> Param:
    json_type, nullable = _type_of(tool, name, prop)
    enum = prop.get("enum")
    return Param(
        name=name,
        type=json_type,
        description=str(prop.get("description") or prop.get("title") or name),
        required=required and not nullable,
        default=prop.get("default"),
        enum=tuple(enum) if isinstance(enum, list) else None,
        minimum=_number(prop.get("minimum")),
        maximum=_number(prop.get("maximum")),
        min_length=_count(prop.get("minLength")),
        max_length=_count(prop.get("maxLength")),
    )


def _type_of(tool: str, name: str, prop: dict[str, Any]) -> tuple[JsonType, bool]:
    """The one JSON type of a property, and whether ``null`` is allowed besides."""
    kinds = prop.get("type")
    if kinds is None and isinstance(prop.get("anyOf"), list):
        kinds = [alt.get("type") for alt in prop["anyOf"] if isinstance(alt, dict)]
    if kinds is None and isinstance(prop.get("enum"), list):
        kinds = sorted({_enum_type(v) for v in prop["enum"]})
    listed = kinds if isinstance(kinds, list) else [kinds]
    nullable = "null" in listed
    rest = [k for k in listed if k != "null"]
    if len(rest) != 1 or rest[0] not in JSON_TYPES:
        raise ConfigError(
            f"MCP tool {tool!r}, parameter {name!r}: envhub needs one JSON type of "
            f"{sorted(JSON_TYPES)} (optionally with null), got {prop!r:.200}; leave the tool "
            "out with options.mcp.tools"
        )
    return rest[0], nullable


def _enum_type(value: Any) -> str:
    kinds = {bool: "boolean", int: "integer", float: "number", str: "string"}
    return kinds.get(type(value), "null" if value is None else "?")


def _number(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
