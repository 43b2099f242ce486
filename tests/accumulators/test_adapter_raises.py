"""One rule for what a library raises while it streams a case (`client.raised`): the outcome is
that raise with what the library had handed over; a raise in the harness's own code stays the
adapter's error. Each case here was an adapter error before the rule (issue 10, item 9)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from harness.accumulators import resolve
from harness.accumulators.client import raised, raised_error, require_dialect
from harness.cassettes.model import Request
from harness.cassettes.outcome import Outcome, State, diff
from harness.errors import NotApplicable
from harness.matrix.selection import build_case
from harness.oracle.verdict import diff_signature


def _library_raise() -> BaseException:
    try:
        json.loads("{")  # raised inside the standard library's json, not in harness code
    except ValueError as exc:
        return exc
    raise AssertionError("json.loads accepted '{'")


def _harness_raise() -> BaseException:
    try:
        require_dialect(build_case("anthropic/single-call::original::s0"), "x", ("openai-chat",))
    except NotApplicable as exc:  # raised in harness/accumulators/client.py
        return exc
    raise AssertionError("require_dialect accepted a dialect it does not read")


def test_a_library_raise_is_an_error_and_a_transport_error_a_cut() -> None:
    exc = _library_raise()
    assert raised(exc) is State.ERROR
    assert raised(exc, (ValueError,)) is State.CUT
    assert raised_error(exc).startswith("JSONDecodeError: Expecting property name")


def test_a_raise_in_harness_code_is_the_adapters_own_error() -> None:
    exc = _harness_raise()
    with pytest.raises(NotApplicable):
        raised(exc)


@pytest.mark.parametrize("adapter", ["langchain-core", "langchain-openai"])
def test_langchain_validation_error_on_object_arguments_is_the_raise_its_user_gets(adapter: str) -> None:
    pytest.importorskip("langchain_openai")
    case = build_case("openai-chat/parallel-2::B8-args-as-object::s0")
    outcome = resolve(adapter).run(case)
    assert outcome.state is State.ERROR
    assert outcome.error is not None and outcome.error.startswith("ValidationError: ")
    assert outcome.tool_calls == ()  # langchain re-raises: no message, no call


def test_langchain_openai_responses_error_event_is_the_raise_its_user_gets() -> None:
    pytest.importorskip("langchain_openai")
    case = build_case("openai-responses/parallel-2::D8-mid-stream-error::s0")
    outcome = resolve("langchain-openai").run(case)
    assert outcome.state is State.ERROR
    assert outcome.error is not None and outcome.error.startswith("ValueError: ")
    assert outcome.tool_calls == ()


def test_openai_sdk_json_error_on_truncated_strict_arguments_keeps_the_calls_it_announced() -> None:
    pytest.importorskip("openai")
    case = build_case("openai-responses/no-arguments::B10-truncated-args::s0")
    outcome = resolve("openai-sdk").run(case)
    assert outcome.state is State.ERROR
    assert outcome.error is not None and outcome.error.startswith("JSONDecodeError: ")
    # the function_call item was announced done before the final parse raised: its user had it
    assert [c.name for c in outcome.tool_calls] == [c.name for c in case.expected.tool_calls]


def test_an_unexpected_raise_names_itself_in_the_difference_and_the_signature() -> None:
    expected = Outcome(state=State.COMPLETE)
    actual = Outcome(state=State.ERROR, error="IndexError: list index out of range\nmore")
    lines = diff(expected, actual)
    assert lines == ["state: complete expected, got error (IndexError: list index out of range)"]
    assert diff_signature(lines) == "state complete expected, got error (IndexError: list index out of range)"
    cut = diff(expected, Outcome(state=State.CUT, error="ReadError: peer closed"))
    assert cut == ["state: complete expected, got cut"]


def test_a_request_langchain_anthropic_cannot_bind_is_skipped_with_the_reason() -> None:
    # As langchain-anthropic 1.0.0 raised `KeyError: 'parameters'` binding the server-side tool of
    # `anthropic/tool-search-then-call`: the release refuses the request before reading a byte.
    pytest.importorskip("langchain_anthropic")
    case = build_case("anthropic/single-call::original::s0")
    assert isinstance(case.request, Request) and isinstance(case.request.body, dict)
    body = {**case.request.body, "tools": [{"description": "a tool in no format langchain knows"}]}
    unbindable = dataclasses.replace(case, request=Request(case.request.method, case.request.url, {}, body))
    said = r"langchain-anthropic: the library refused the request .*ValueError"
    with pytest.raises(NotApplicable, match=said):
        resolve("langchain-anthropic").run(unbindable)
    assert resolve("langchain-anthropic").run(case).state is State.COMPLETE  # its own tools bind


def test_langchain_core_skips_a_custom_tool_call_no_provider_package_hands_it() -> None:
    # The card's triage (issues 39, 43): the adapter turned a chat custom call into a nameless
    # function call `{}`, a failure of its own making on 66 cases of each langchain-core row;
    # langchain-openai refuses the custom tool in the request and reads `function` only.
    pytest.importorskip("langchain_core")
    from harness import Selection, run_matrix

    case = "openai-chat/custom-tool::original::s0"
    (result,) = run_matrix("langchain-core", Selection(cases=(case,))).results
    assert str(result.verdict) == "skipped", (result.verdict, result.diff)
    assert result.error is not None and "custom (freeform) tool call reaches it as no chunk" in result.error


def test_langchain_openai_hands_a_responses_custom_call_over_as_sent() -> None:
    # The card's triage: langchain-openai gives a custom_tool_call as a tool call whose args are
    # `{"__arg1": input}` (langchain's one-string convention) beside its `custom_tool_call` content
    # block holding the input verbatim; the adapter read the args and judged the input parsed as JSON.
    pytest.importorskip("langchain_openai")
    from harness import Selection, run_matrix

    case = "openai-responses/custom-tool::original::s0"
    (result,) = run_matrix("langchain-openai", Selection(cases=(case,))).results
    assert str(result.verdict) == "pass", result.diff


def test_langchain_openai_hands_a_client_run_responses_item_over_as_a_content_block() -> None:
    # The card's triage: langchain-openai gives an apply_patch_call (as every client-run item) as
    # a content block, the item verbatim, and no tool call; the adapter read tool calls only and
    # judged the call lost (40 spec-heavy verdicts on langchain-openai 1.7.4).
    pytest.importorskip("langchain_openai")
    from harness import Selection, run_matrix

    case = "openai-responses/apply-patch::original::s0"
    (result,) = run_matrix("langchain-openai", Selection(cases=(case,))).results
    assert str(result.verdict) == "pass", result.diff
