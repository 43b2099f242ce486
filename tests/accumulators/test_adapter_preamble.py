"""One preamble for every library adapter (`harness.accumulators.client.Adapter`): what it needs is
checked before any case, each missing module named with the extra that installs it, environment
defaults set first (never over the user's own), and a case of a dialect it does not read is
`NotApplicable`, never run."""

from __future__ import annotations

import os
import warnings
from typing import Any

import httpx
import pytest

from harness.accumulators.client import Adapter, raised_error, require_dialect
from harness.cassettes.outcome import Outcome, State
from harness.errors import NotApplicable, UsageError
from harness.matrix.selection import build_case

CHAT, ANTHROPIC = "openai-chat/single-call::original::s0", "anthropic/single-call::original::s0"


def _text(transport: Any, case: Any) -> Outcome:
    return Outcome(text=f"ran {case.dialect}")


def test_a_case_of_its_dialect_runs_and_another_is_not_applicable() -> None:
    built = Adapter("mine", ("openai-chat",), _text)()
    assert built.name == "mine" and built.dialects == ("openai-chat",)
    assert built.run(build_case(CHAT)).text == "ran openai-chat"
    with pytest.raises(NotApplicable, match="mine reads openai-chat streams, not anthropic"):
        built.run(build_case(ANTHROPIC))


def test_a_missing_module_names_its_extra_before_any_case() -> None:
    needs = (("json", "x"), ("no_such_module_q", "mine-extra"))
    said = r"no_such_module_q is not installed: pip install 'toolstream-harness\[mine-extra\]'"
    with pytest.raises(UsageError, match=said):
        Adapter("mine", ("openai-chat",), _text, needs=needs)()


def test_environment_defaults_are_set_and_the_users_own_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSTREAM_TEST_DEFAULT", "")  # recorded, so the default set below is undone
    monkeypatch.delenv("TOOLSTREAM_TEST_DEFAULT")
    monkeypatch.setenv("TOOLSTREAM_TEST_OWN", "mine")
    env = {"TOOLSTREAM_TEST_DEFAULT": "1", "TOOLSTREAM_TEST_OWN": "theirs"}
    Adapter("mine", ("openai-chat",), _text, environment=env)()
    assert os.environ["TOOLSTREAM_TEST_DEFAULT"] == "1" and os.environ["TOOLSTREAM_TEST_OWN"] == "mine"


def _bind_server_tool(tools: list[Any]) -> None:
    for tool in tools:  # as a release that knows no server-side tool converts them: by `parameters`
        tool["parameters"]  # the KeyError a release without the tool type raised


def _refuses_before_sending(transport: Any, case: Any) -> Outcome:
    _bind_server_tool([{"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}])
    raise AssertionError("unreachable")


def _refusal_caught_as_error(transport: Any, case: Any) -> Outcome:
    try:
        _bind_server_tool([{"type": "tool_search_tool_regex_20251119"}])
    except KeyError as exc:  # an adapter that turns every raise of its `stream()` into the outcome
        return Outcome(state=State.ERROR, error=raised_error(exc))
    raise AssertionError("unreachable")


def _raises_after_reading(transport: Any, case: Any) -> Outcome:
    with httpx.Client(transport=transport) as client:
        client.post("https://api.example.test/v1/messages", json={}).read()
    _bind_server_tool([{}])
    raise AssertionError("unreachable")


def test_a_raise_before_the_request_is_sent_is_not_applicable_with_the_reason() -> None:
    said = r"mine: the library refused the request before reading the stream: KeyError: 'parameters'"
    for run in (_refuses_before_sending, _refusal_caught_as_error):
        with pytest.raises(NotApplicable, match=said):
            Adapter("mine", ("anthropic",), run)().run(build_case(ANTHROPIC))


def test_a_raise_after_the_stream_was_read_stays_the_librarys_raise() -> None:
    with pytest.raises(KeyError):
        Adapter("mine", ("anthropic",), _raises_after_reading)().run(build_case(ANTHROPIC))


def test_an_adapters_own_raise_before_sending_stays_its_error() -> None:
    def ours(transport: Any, case: Any) -> Outcome:
        require_dialect(case, "ours", ("openai-chat",))  # raised in harness code: NotApplicable
        raise AssertionError("unreachable")

    def our_bug(transport: Any, case: Any) -> Outcome:
        return build_case("no/such::case::s0")  # type: ignore[return-value]

    with pytest.raises(NotApplicable, match="ours reads openai-chat"):
        Adapter("ours", ("anthropic",), ours)().run(build_case(ANTHROPIC))
    with pytest.raises(Exception) as raised:
        Adapter("ours", ("anthropic",), our_bug)().run(build_case(ANTHROPIC))
    assert not isinstance(raised.value, NotApplicable)


def test_a_librarys_own_warnings_during_a_case_do_not_reach_the_user() -> None:
    # Over stdio they go to the server's stderr; in process they were printed under every test and
    # `check` run that used the openai or anthropic SDK (a deprecated model name, pydantic's
    # serializer on object arguments).
    def warns(transport: Any, case: Any) -> Outcome:
        warnings.warn("The model claude-3-7-sonnet is deprecated", DeprecationWarning, stacklevel=2)
        return Outcome(text="ran")

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert Adapter("mine", ("openai-chat",), warns)().run(build_case(CHAT)).text == "ran"
    assert seen == []
