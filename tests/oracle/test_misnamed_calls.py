"""A program that raises on a tool it looked up under a name the stream's own pieces make wrongly
(`Tool _weather not found`: one piece of a split name kept, or no name at all) mangled that name:
the judge says so on the call, from the stream and the raise, instead of a bare missing call."""

from __future__ import annotations

from harness.matrix.case_id import find_case
from harness.oracle.evidence import Evidence, judge_client, misnamed
from harness.oracle.verdict import Verdict, root_cause

SPLIT = "openai-chat/single-call::B2-name-split-across-fragments::s0"  # 'get' + '_weather'
PARALLEL = "openai-chat/parallel-2::B2-name-split-across-fragments::s0"  # get_weather, get_time
WHOLE = "openai-chat/glm5-openrouter-idless-continuation::A5-id-on-every-chunk::s0"  # 'web_search', once


def raised(case_id: str, stderr: str) -> tuple[str, tuple[str, ...]]:
    """The root cause and the diff of a program that asked for the case's stream and raised."""
    case = find_case(case_id).case
    result = judge_client(case, "client", Evidence(exit_code=1, stderr=stderr, requests=1))
    assert result.verdict is Verdict.FAIL and len(result.diff) == len(result.severities)
    return root_cause(result), result.diff


def test_a_tool_looked_up_under_the_last_piece_of_a_split_name_is_that_name_differing() -> None:
    stderr = "Traceback ...\nagents.exceptions.ModelBehaviorError: Tool _weather not found in agent assistant"
    cause, diff = raised(SPLIT, stderr)
    assert cause == "name differs"
    assert diff[:2] == (
        "tool_calls: 1 expected, got 0",
        "call 1: name 'get_weather' expected, got '_weather' (its name came in pieces 'get' + '_weather': "
        "the program kept only the last)",
    )
    assert not any(line.endswith("expected, missing") for line in diff)  # the call is named, not missing
    # The raise stays on the state line: it is what the program's user got.
    assert diff[-1].startswith("state: complete expected, got error (ModelBehaviorError: Tool _weather")


def test_the_call_the_raise_names_comes_first_and_the_others_stay_missing() -> None:
    cause, diff = raised(PARALLEL, "ModelBehaviorError: Tool _time not found in agent assistant")
    assert cause == "name differs"
    assert diff[1].startswith("call 2: name 'get_time' expected, got '_time' (its name came in pieces 'get'")
    assert diff[2].startswith("call 1: 'get_weather' ") and diff[2].endswith("expected, missing")


def test_a_tool_looked_up_under_no_name_is_a_name_missing_from_the_call() -> None:
    cause, diff = raised(WHOLE, "ModelBehaviorError: Tool  not found in agent assistant")
    assert cause == "name differs"
    assert diff[1] == (
        "call 1: name 'web_search' expected, got '' "
        "(the stream sent it whole, once: the program's call has none)"
    )


def test_a_raise_that_names_no_wrong_name_is_judged_as_before() -> None:
    case = find_case(SPLIT).case
    # The right name, a piece that is not about a tool, no tool at all: the call is missing.
    for error in (
        "ModelBehaviorError: Tool get_weather failed",
        "ValueError: could not get _weather",
        "KeyError: 'get_weathers'",
    ):
        assert misnamed(case, error) is None, error
        cause, diff = raised(SPLIT, error)
        assert cause == "missing call" and diff[1].endswith("expected, missing")
    # Another library's wording of the same lookup (pydantic-ai's) is read alike.
    pydantic_ai = "UnexpectedModelBehavior: Unknown tool name: '_weather'. Available tools: 'get_weather'"
    found = misnamed(case, pydantic_ai)
    assert found is not None and (found.call, found.got) == (0, "_weather")
