"""Where each dialect keeps a tool's name and arguments, for retargeting a case onto the tools a
request offers (`harness.mutate.retarget`): the request's tool list (name and JSON schema of each
tool) and the JSON paths of the string literals a stream carries a call's name and argument
pieces in. Plain data; a dialect not listed here is served as recorded.

A path is a tuple of keys into a JSON value; `*` stands for any list position.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["OfferedTool", "ToolPaths", "offered_tools", "tool_paths"]

Path = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OfferedTool:
    """One tool a request offers: its name and the JSON schema of its arguments."""

    name: str
    schema: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolPaths:
    """A dialect's places: `tools` (the request's list) with each entry's `name` and `schema`
    paths (the first that holds a value wins); in the stream's event payloads, the string
    literals holding a call's `name` and its argument pieces (`arguments`)."""

    tools: tuple[Path, ...]
    tool_name: tuple[Path, ...]
    tool_schema: tuple[Path, ...]
    name: tuple[Path, ...]
    arguments: tuple[Path, ...]


_PATHS: Final[dict[str, ToolPaths]] = {
    # platform.openai.com/docs/api-reference/chat/create (tools[].function) and the chunk object
    # (choices[].delta.tool_calls[].function.{name,arguments}); `functions` is the legacy list.
    "openai-chat": ToolPaths(
        tools=(("tools",), ("functions",)),
        tool_name=(("function", "name"), ("name",)),
        tool_schema=(("function", "parameters"), ("parameters",)),
        name=(("choices", "*", "delta", "tool_calls", "*", "function", "name"),),
        arguments=(("choices", "*", "delta", "tool_calls", "*", "function", "arguments"),),
    ),
    # docs.anthropic.com/en/docs/build-with-claude/streaming: tool_use content_block_start carries
    # the name, input_json_delta the `partial_json` pieces; tools[].{name,input_schema}.
    "anthropic": ToolPaths(
        tools=(("tools",),),
        tool_name=(("name",),),
        tool_schema=(("input_schema",),),
        name=(("content_block", "name"),),
        arguments=(("delta", "partial_json"),),
    ),
}


def tool_paths(dialect: str) -> ToolPaths | None:
    """Where `dialect` keeps tool names and argument pieces, or None when retargeting does not read it."""
    return _PATHS.get(dialect)


def _at(value: Any, path: Path) -> Any:
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def offered_tools(dialect: str, body: Any) -> list[OfferedTool]:
    """The tools a request body of `dialect` offers, in its order (empty: none, or not read)."""
    paths = tool_paths(dialect)
    if paths is None or not isinstance(body, Mapping):
        return []
    out: list[OfferedTool] = []
    for list_path in paths.tools:
        entries = _at(body, list_path)
        if not isinstance(entries, list):
            continue
        for entry in entries:
            name = next((n for p in paths.tool_name if isinstance(n := _at(entry, p), str) and n), None)
            schema = next((s for p in paths.tool_schema if isinstance(s := _at(entry, p), Mapping)), {})
            if name is not None and all(t.name != name for t in out):
                out.append(OfferedTool(name, schema))
    return out
