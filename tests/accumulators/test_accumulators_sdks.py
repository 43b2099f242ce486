"""The built-in SDK and langchain adapters end to end over unmutated corpus cases."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness.accumulators import resolve
from harness.accumulators.client import base_url, recorded_request, replay_transport
from harness.cassettes import format as cassette
from harness.cassettes.format import Request
from harness.cassettes.outcome import State, diff
from harness.errors import NotApplicable
from harness.matrix.selection import Selection, build_case
from harness.mutate.scenario import Case, with_parts
from harness.wire import dialects
from harness.wire.dialects import Kind
from harness.wire.synthesis import synthesize

CASSETTES = Path(__file__).resolve().parents[2] / "cassettes"
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


def recorded_case(name: str) -> Case:
    """An unmutated case of a corpus cassette's first interaction."""
    path = CASSETTES / f"{name}.yaml"
    loaded = cassette.load(path)
    item = loaded.interactions[0]
    dialect = loaded.dialect or dialects.detect(item.request)
    assert dialect is not None
    expected = with_parts(item.expected, item.response, dialects.get(dialect))  # as the matrix has it
    events = tuple(dialects.events_of(item.response, dialect))
    return Case(name, dialect, item.response, events, expected, name, "none", 0, request=item.request)


def test_base_url_keeps_the_path_prefix() -> None:
    request = Request("POST", "https://gw.example/openai/v1/chat/completions?x=1")
    assert base_url(request, "/chat/completions") == "https://gw.example/openai/v1"
    assert base_url(Request("POST", "https://api.anthropic.com/v1/messages"), "/v1/messages") == (
        "https://api.anthropic.com"
    )


def test_a_case_without_request_gets_a_placeholder() -> None:
    case = replace(recorded_case("anthropic/single-call"), request=None)
    assert recorded_request(case).url == "https://api.anthropic.com/v1/messages"
    assert replay_transport(case).cassette.interactions[0].response is case.response


OPENAI_AGREES = [
    "openai-chat/parallel-2",
    "openai-chat/cut-mid-arguments",
    "openai-chat/vllm-same-index-fragments-first-delta",
    "openai-chat/azure-prompt-filter",
    "openai-responses/parallel-2",
    "openai-responses/cut-mid-arguments",
    "openai-responses/args-only-in-done",
]


@pytest.mark.parametrize("name", OPENAI_AGREES)
def test_openai_sdk_meets_the_expectation(name: str) -> None:
    case = recorded_case(name)
    assert diff(case.expected, resolve("openai-sdk").run(case)) == []


def test_openai_sdk_merges_parallel_calls_sharing_index_0() -> None:
    # ChatCompletionStreamState keys on index alone and concatenates the rest: the harness sees it.
    case = recorded_case("openai-chat/litellm-bridge-parallel-index0")
    outcome = resolve("openai-sdk").run(case)
    assert [call.name for call in outcome.tool_calls] == ["read_filesearch_text"]


def test_openai_sdk_raising_on_a_null_index_is_the_outcome_its_user_gets() -> None:
    # The SDK raises TypeError on `index: null`: its user gets that raise and no completion.
    outcome = resolve("openai-sdk").run(recorded_case("openai-chat/glm5-openrouter-idless-continuation"))
    assert outcome.state is State.ERROR
    assert outcome.error is not None and outcome.error.startswith("TypeError: ")
    assert outcome.tool_calls == ()


def test_sdk_adapters_refuse_other_dialects() -> None:
    with pytest.raises(NotApplicable, match="not anthropic"):
        resolve("openai-sdk").run(recorded_case("anthropic/single-call"))
    with pytest.raises(NotApplicable, match="not openai-chat"):
        resolve("anthropic-sdk").run(recorded_case("openai-chat/single-call"))


@pytest.mark.parametrize(
    "name",
    [
        "anthropic/parallel-calls",
        "anthropic/seed004-interleaved-input-json",
        "anthropic/cut-mid-args",
        "anthropic/overloaded-mid-call",
        "anthropic/text-before-call",
    ],
)
def test_anthropic_sdk_meets_the_expectation(name: str) -> None:
    case = recorded_case(name)
    outcome = resolve("anthropic-sdk").run(case)
    assert diff(case.expected, outcome) == []


def test_anthropic_sdk_error_event_is_the_error_state() -> None:
    outcome = resolve("anthropic-sdk").run(recorded_case("anthropic/overloaded-mid-call"))
    assert outcome.state is State.ERROR and outcome.error is not None and "Overloaded" in outcome.error


LANGCHAIN_AGREES = [
    "openai-chat/parallel-2",
    "openai-chat/glm5-openrouter-idless-continuation",
    "openai-chat/text-then-call",
    "anthropic/seed000-parallel-read-search",
    "anthropic/seed004-interleaved-input-json",
    "anthropic/thinking-then-call",
]


@pytest.mark.parametrize("name", LANGCHAIN_AGREES)
def test_langchain_core_meets_the_expectation(name: str) -> None:
    pytest.importorskip("langchain_core")
    case = recorded_case(name)
    assert diff(case.expected, resolve("langchain-core").run(case)) == []


@pytest.mark.parametrize(
    ("adapter", "name", "state"),
    [
        ("langchain-core", "openai-chat/cut-mid-arguments", State.CUT),
        ("langchain-openai", "openai-chat/cut-mid-arguments", State.CUT),
        ("langchain-core", "anthropic/overloaded-mid-call", State.ERROR),
        ("langchain-anthropic", "anthropic/overloaded-mid-call", State.ERROR),
        ("langchain-anthropic", "anthropic/cut-mid-args", State.CUT),
    ],
)
def test_langchain_adapters_report_no_call_after_langchain_raised(
    adapter: str, name: str, state: State
) -> None:
    # Before: the chunks summed so far were reported as calls (parse_partial_json even closed the
    # truncated JSON of a cut call), though langchain's `stream` raised and returned no message.
    pytest.importorskip(adapter.replace("-", "_"))
    outcome = resolve(adapter).run(recorded_case(name))
    assert outcome.state is state and outcome.error
    assert outcome.tool_calls == ()


def test_langchain_stream_itself_raises_on_those_streams() -> None:
    # The premise of the rule above, checked against the library: the user gets the exception only.
    pytest.importorskip("langchain_openai")
    import httpx2
    from langchain_openai import ChatOpenAI

    case = recorded_case("openai-chat/cut-mid-arguments")
    model = ChatOpenAI(
        model="m",
        api_key="test",
        base_url=base_url(recorded_request(case), "/chat/completions"),
        http_client=httpx2.Client(transport=replay_transport(case)),
        max_retries=0,
    )
    given = []
    with pytest.raises(Exception, match=r"Connection error|incomplete chunked read|peer closed"):
        for chunk in model.stream("toolstream"):
            given.append(chunk)
    assert given and all(chunk.chunk_position != "last" for chunk in given)


@pytest.mark.parametrize("adapter", ["langchain-core", "langchain-anthropic"])
def test_langchain_keeps_the_text_it_streamed_before_it_raised(adapter: str) -> None:
    pytest.importorskip(adapter.replace("-", "_"))
    case = recorded_case("anthropic/cut-mid-args")
    streamed = resolve(adapter).run(case)
    assert streamed.state is State.CUT and streamed.text == case.expected.text == "Reading both files."


def test_openai_sdk_keeps_the_text_of_a_responses_stream_that_stopped_short() -> None:
    # The SDK gave its user the text on every `response.output_text.delta` (`snapshot=content.text`)
    # before `get_final_response` raised "Didn't receive a `response.completed` event."
    pytest.importorskip("openai")
    case = build_case("openai-responses/text-then-call::D6-missing-done::s0")
    outcome = resolve("openai-sdk").run(case)
    assert outcome.state is State.CUT and "response.completed" in (outcome.error or "")
    assert outcome.text == case.expected.text == "Let me open the install guide first."


def test_openai_sdk_reports_an_in_band_responses_error_event_it_yielded() -> None:
    # A Responses `error` event has no `error` key, so the SDK yields it (ResponseErrorEvent) rather
    # than raising: its user saw the error, not a cut.
    pytest.importorskip("openai")
    case = build_case("openai-responses/args-only-in-done::D8-mid-stream-error::s0")
    outcome = resolve("openai-sdk").run(case)
    assert outcome.state is State.ERROR and outcome.error == case.expected.error


def test_langchain_core_refuses_other_dialects() -> None:
    pytest.importorskip("langchain_core")
    with pytest.raises(NotApplicable):
        resolve("langchain-core").run(recorded_case("gemini/single-call"))


@pytest.mark.parametrize(
    ("adapter", "names"),
    [
        (
            "langchain-openai",
            [
                "openai-chat/parallel-2",
                "openai-chat/litellm-bridge-parallel-index0",
                "openai-chat/cut-mid-arguments",
                "openai-responses/single-call",
            ],
        ),
        (
            "langchain-anthropic",
            [
                "anthropic/seed004-interleaved-input-json",
                "anthropic/cut-mid-args",
                "anthropic/overloaded-mid-call",
            ],
        ),
    ],
)
def test_langchain_chat_models_end_to_end_agree_with_the_event_level_conversion(
    adapter: str, names: list[str]
) -> None:
    pytest.importorskip(adapter.replace("-", "_"))
    end_to_end = resolve(adapter)
    core = resolve("langchain-core")
    for name in names:
        case = recorded_case(name)
        outcome = end_to_end.run(case)
        if case.dialect == "openai-responses":
            assert diff(case.expected, outcome) == [], name
            continue
        assert diff(core.run(case), outcome) == [], name


def test_anthropic_sdk_keeps_the_stop_reason_of_a_stream_cut_after_message_delta() -> None:
    # `accumulate_event` had set `current_snapshot.stop_reason = event.delta.stop_reason` (and the
    # SDK yielded that message_delta) before the cut: the user had seen it.
    pytest.importorskip("anthropic")
    case = build_case("anthropic/single-call::cut-at-every-event::s0::e13")
    outcome = resolve("anthropic-sdk").run(case)
    assert outcome.state is State.CUT
    assert outcome.finish_reason == case.expected.finish_reason == "tool_use"
    assert case.expected.usage is not None and outcome.usage is not None
    assert outcome.usage["output_tokens"] == case.expected.usage["output_tokens"]


def test_openai_sdk_reports_object_arguments_as_the_user_gets_them() -> None:
    """B8: a gateway sends `arguments` as a JSON object. The SDK hands its user that dict where its
    type says str; the adapter reports it as an unparseable argument string, not as its own crash."""
    pytest.importorskip("openai")
    outcome = resolve("openai-sdk").run(build_case("openai-chat/azure-prompt-filter::B8-args-as-object::s0"))
    (call,) = outcome.tool_calls
    assert call.invalid and call.arguments == "dict {'city': 'Seattle', 'unit': 'fahrenheit'}"
    assert outcome.state is State.COMPLETE


def test_openai_sdk_reports_an_empty_object_as_a_dict_not_as_the_text_it_equals() -> None:
    """B8 on a call without arguments: the SDK user gets the dict `{}`, not the string `{}`, so the
    call is lost for a user who parses it; the difference must not read `{}` expected, got `{}`."""
    pytest.importorskip("openai")
    case = build_case("openai-chat/no-arguments::B8-args-as-object::s0")
    outcome = resolve("openai-sdk").run(case)
    (call,) = outcome.tool_calls
    assert call.invalid and call.arguments == "dict {}"
    assert diff(case.expected, outcome) == ["call 1: arguments {} expected, got invalid 'dict {}'"]


def built_case(tmp_path: Path, dialect: str, name: str, events: list[Any], **response: Any) -> Case:
    """The unmutated case of a one-interaction cassette of `events` (a dialect's built events)."""
    d = dialects.get(dialect)
    url = {"anthropic": "https://x/v1/messages", "openai-responses": "https://x/v1/responses"}.get(
        dialect, "https://x/v1/chat/completions"
    )
    path = tmp_path / "corpus" / dialect / f"{name}.yaml"
    path.parent.mkdir(parents=True)
    made = synthesize(name, dialect, url=url, body={"model": "m", "stream": True},
                      events=[d.render(e) for e in events], provenance="test", **response)  # fmt: skip
    cassette.save(made, path)
    return build_case(f"{dialect}/{name}::original::s0", Selection(cassettes=(str(path),)))


FINAL_RAISES = [("length", "LengthFinishReasonError"), ("content_filter", "ContentFilterFinishReasonError")]


@pytest.mark.parametrize(("reason", "raised"), FINAL_RAISES)
def test_openai_sdk_raising_at_the_final_completion_is_the_outcome_its_user_gets(
    reason: str, raised: str, tmp_path: Path
) -> None:
    """`get_final_completion()` raises on a `length` or `content_filter` finish: its user gets that
    raise, and the calls the SDK announced done. The adapter let it out as its own crash (verdict
    `error`, as if the harness had failed), found by running it over built streams."""
    pytest.importorskip("openai")
    d = dialects.get("openai-chat")
    call = d.build(Kind.TOOL_CALL, index=0, id="call_1", name="f", args='{"a":1}')
    events = [*d.build(Kind.META), *call]
    events += [*d.build(Kind.FINISH, reason=reason), *d.build(Kind.SENTINEL)]
    case = built_case(tmp_path, "openai-chat", "ends", events)
    outcome = resolve("openai-sdk").run(case)
    assert outcome.state is State.ERROR and outcome.error is not None and outcome.error.startswith(raised)
    assert [call.name for call in outcome.tool_calls] == ["f"]  # announced done at the finish
    assert outcome.finish_reason == reason


@pytest.mark.parametrize("dialect", ["anthropic", "openai-responses"])
def test_sdk_adapters_report_the_calls_of_a_cut_stream_in_the_messages_order(
    dialect: str, tmp_path: Path
) -> None:
    """Two interleaved calls (C1), the second ended first, then a cut: the SDK announced both done,
    and its message lists them by index. The adapters reported them in the order they ended, which
    read as both calls' ids and arguments swapped (unsafe) where the SDK had mixed up nothing."""
    pytest.importorskip("anthropic" if dialect == "anthropic" else "openai")
    d = dialects.get(dialect)
    calls = [{"index": i, "id": f"call_{i}", "item_id": f"fc_{i}", "name": f"f{i}"} for i in (0, 1)]
    args = ['{"a":0}', '{"b":1}']
    events = [*d.build(Kind.META)]
    events += [e for call in calls for e in d.build(Kind.TOOL_START, **call)]
    pairs = list(zip(calls, args, strict=True))
    events += [e for call, text in pairs for e in d.build(Kind.TOOL_ARGS, **call, args=text)]
    events += [e for call, text in reversed(pairs) for e in d.build(Kind.TOOL_END, **call, args=text)]
    lost = "peer closed connection without sending complete message body"
    case = built_case(tmp_path, dialect, "interleaved-cut", d.resequence(events), complete=False, error=lost)
    assert [c.name for c in case.expected.tool_calls] == ["f0", "f1"]
    outcome = resolve("anthropic-sdk" if dialect == "anthropic" else "openai-sdk").run(case)
    assert outcome.state is State.CUT and diff(case.expected, outcome) == []
