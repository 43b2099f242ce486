"""The one request rule every dialect shares, its data apart: `tool_paths` say where a request body
names the tools it offers (`tool_names` reads them), and a streamed call to any other name is
`<dialect>.tool-not-offered`."""

from __future__ import annotations

import pytest

from harness.wire import dialects
from harness.wire.dialects.base import tool_names

GEMINI = dialects.get("gemini").tool_paths
COHERE = dialects.get("cohere").tool_paths


def test_names_are_read_through_nested_lists_and_either_spelling() -> None:
    camel = {"functionDeclarations": [{"name": "a"}, {"name": "b"}]}
    snake = {"function_declarations": [{"name": "c"}]}
    body = {"tools": [camel, snake]}
    assert tool_names(body, GEMINI) == {"a", "b", "c"}
    assert tool_names({"tools": [{"function": {"name": "v2"}}, {"name": "v1"}]}, COHERE) == {"v1", "v2"}


def test_no_tool_listed_lets_any_name_go_and_tools_without_a_name_offer_none() -> None:
    assert tool_names({}, COHERE) is None
    assert tool_names({"tools": []}, COHERE) is None
    assert tool_names({"tools": [{"functionDeclarations": []}]}, GEMINI) is None  # a tool entry, no function
    assert tool_names({"tools": [{"type": "web_search"}]}, COHERE) == frozenset()  # listed, not a name
    assert tool_names({"tools": "not a list"}, COHERE) is None


@pytest.mark.parametrize("name", dialects.names())
def test_a_dialect_with_tool_paths_reports_the_rule_and_one_without_does_not(name: str) -> None:
    dialect = dialects.get(name)
    code = f"{name}.tool-not-offered"
    assert (code in dialect.request_codes) == bool(dialect.tool_paths)
