"""A case retargeted onto the tools a request offers (harness.mutate.retarget): names and argument
text move onto the offered tools, every shape the mutation made stays."""

from __future__ import annotations

import json
import random

from harness.matrix.case_id import find_case
from harness.mutate.retarget import example_arguments, retarget
from harness.wire import dialects
from harness.wire.dialects.retargeting import OfferedTool, offered_tools

WEATHER = OfferedTool(
    "lookup_weather",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "units": {"enum": ["c", "f"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 5},
        },
        "required": ["city", "units", "days"],
        "additionalProperties": False,
    },
)
CLOCK = OfferedTool(
    "current_time", {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}
)


def _case(case_id: str):
    return find_case(case_id).case


def _valid(arguments: object, tool: OfferedTool) -> bool:
    if not isinstance(arguments, dict):
        return False
    props = tool.schema["properties"]
    return set(arguments) == set(props) and all(
        ("enum" not in props[k] or v in props[k]["enum"])
        and (props[k].get("type") != "integer" or (isinstance(v, int) and 1 <= v <= 5))
        and (props[k].get("type") != "string" or isinstance(v, str))
        for k, v in arguments.items()
    )


def test_parallel_calls_move_onto_the_offered_tools_by_position():
    case = _case("openai-chat/parallel-2::original::s0")
    moved = retarget(case, [WEATHER, CLOCK])
    assert moved.reason is None
    assert moved.mapping == {"get_weather": "lookup_weather", "get_time": "current_time"}
    calls = moved.case.expected.tool_calls
    assert [c.name for c in calls] == ["lookup_weather", "current_time"]
    assert [c.id for c in calls] == [c.id for c in case.expected.tool_calls]  # ids kept
    assert _valid(calls[0].arguments, WEATHER) and _valid(calls[1].arguments, CLOCK)
    assert len(moved.case.response.chunks) == len(case.response.chunks)  # the same reads
    assert len(moved.case.events) == len(case.events)  # the same events
    # What the reference makes of the new bytes is the new expectation.
    assert dialects.reference_outcome(moved.case.response, "openai-chat").tool_calls == calls
    assert retarget(case, [WEATHER, CLOCK]).case.expected == moved.case.expected  # deterministic


def test_shapes_the_mutation_made_are_kept():
    shared = retarget(_case("openai-chat/parallel-2::parallel-calls-share-index-0::s0"), [WEATHER, CLOCK])
    indexes = [
        entry.get("index")
        for event in shared.case.events
        if isinstance(event.payload, dict)
        for choice in event.payload.get("choices") or []
        for entry in (choice.get("delta") or {}).get("tool_calls") or []
    ]
    assert set(indexes) == {0} and len(shared.case.expected.tool_calls) == 2
    one_byte = retarget(_case("openai-chat/parallel-2::F3-one-byte-reads::s0"), [WEATHER, CLOCK])
    assert one_byte.changed and {len(chunk.data) for chunk in one_byte.case.response.chunks} == {1}
    cut = retarget(_case("openai-chat/cut-mid-arguments::original::s0"), [WEATHER])
    assert cut.changed and not cut.case.complete
    assert cut.case.expected.state == _case("openai-chat/cut-mid-arguments::original::s0").expected.state


def test_names_the_request_offers_stay_and_a_mapping_is_followed():
    case = _case("openai-chat/parallel-2::original::s0")
    kept = retarget(case, [OfferedTool("get_weather", {}), OfferedTool("get_time", {})])
    assert kept.mapping == {} and kept.case is case
    chosen = retarget(case, [WEATHER, CLOCK], {"get_weather": "current_time", "get_time": "lookup_weather"})
    assert [c.name for c in chosen.case.expected.tool_calls] == ["current_time", "lookup_weather"]
    wrong = retarget(case, [WEATHER], {"get_weather": "nope"})
    assert wrong.reason is not None and "'nope'" in wrong.reason and wrong.case is case


def test_a_case_it_cannot_move_says_why_and_is_the_recording():
    for case_id, tools, words in (
        ("openai-chat/parallel-2::original::s0", [], "offers no tools"),
        ("gemini/parallel-one-chunk::original::s0", [WEATHER], "does not read gemini"),
        ("openai-chat/parallel-2::F2-surrogate-pair-split::s0", [WEATHER], "non-ASCII"),
        # A custom tool's free-form input is no function's JSON arguments (it said "its events do
        # not line up with the literals of its bytes").
        ("openai-chat/custom-tool::original::s0", [WEATHER], "calls a custom tool ('run_shell')"),
    ):
        case = _case(case_id)
        moved = retarget(case, tools)
        assert moved.case is case and words in (moved.reason or ""), (case_id, moved.reason)
        assert moved.describe().startswith("served as recorded")


def test_example_arguments_follow_the_schema_and_the_seed():
    schema = {
        "type": "object",
        "properties": {
            "when": {"$ref": "#/$defs/When"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
        },
        "$defs": {"When": {"anyOf": [{"type": "null"}, {"type": "string", "format": "date"}]}},
    }
    text = example_arguments(schema, random.Random(1))
    assert json.loads(text)["when"] == "2026-01-02" and len(json.loads(text)["tags"]) == 2
    assert text == example_arguments(schema, random.Random(1))


def test_offered_tools_are_read_where_each_dialect_keeps_them():
    chat = {"tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}}]}
    assert offered_tools("openai-chat", chat) == [OfferedTool("a", {"type": "object"})]
    assert offered_tools("anthropic", {"tools": [{"name": "b", "input_schema": {}}]}) == [
        OfferedTool("b", {})
    ]
    assert offered_tools("openai-chat", {"messages": []}) == []


def test_a_stream_without_calls_says_so() -> None:
    case = _case("openai-chat/azure-prompt-filter::D9-finish-without-tool-deltas::s0")
    assert retarget(case, [WEATHER]).describe() == "served as recorded: the stream calls no tool"


def test_the_ids_a_call_was_also_sent_under_stay() -> None:
    case = _case("openai-chat/azure-prompt-filter::A7-id-rotates-per-fragment::s0")
    moved = retarget(case, [WEATHER])
    assert moved.changed
    assert [c.aliases for c in moved.case.expected.tool_calls] == [
        c.aliases for c in case.expected.tool_calls
    ]
    assert moved.case.expected.tool_calls[0].aliases  # the rotated ids, as the expectation keeps them
