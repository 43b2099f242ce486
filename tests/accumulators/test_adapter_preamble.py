"""One preamble for every library adapter (`harness.accumulators.client.Adapter`): what it needs is
checked before any case, each missing module named with the extra that installs it, environment
defaults set first (never over the user's own), and a case of a dialect it does not read is
`NotApplicable`, never run."""

from __future__ import annotations

import os
from typing import Any

import pytest

from harness.accumulators.client import Adapter
from harness.cassettes.outcome import Outcome
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
