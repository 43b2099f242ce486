"""pydantic-ai's own OpenAI chat and Anthropic models (`pydantic-ai` adapter) in `.venv-pydantic-ai`,
through `serve-accumulator`: the seed shapes issue 15 names, each confirmed in pydantic-ai's source.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from test_accumulators_prepare import FIRST_CASE

from tests._side_venvs import ROOT, side_check, side_python

SLOW = pytest.mark.slow  # the library's import and warm-up take tens of seconds on a loaded machine

PARALLEL_INDEX0 = "openai-chat/litellm-bridge-parallel-index0::original::s0"
NAME_REPEATED = "openai-chat/groq-whole-calls::B3-name-repeated-in-full::s0"
CUSTOM = "openai-chat/custom-tool::original::s0"


HANDLED = [
    "openai-chat/parallel-2::original::s0",
    "anthropic/parallel-calls::original::s0",
    "anthropic/seed004-interleaved-input-json::original::s0",
]


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every case these tests read, through the adapter in one run."""
    chosen = [PARALLEL_INDEX0, NAME_REPEATED, CUSTOM, *HANDLED]
    return side_check("pydantic-ai", "pydantic-ai", chosen, tmp_path_factory.mktemp("pydantic-ai") / "r.json")


@SLOW
def test_a_custom_tool_it_cannot_declare_is_skipped_with_the_reason(cases: dict[str, dict[str, Any]]) -> None:
    """pydantic-ai declares no custom (freeform) tool (`Custom tool calls are not supported`,
    pydantic-ai#2513): the adapter left it out of the request and judged the library on a call to
    a tool it never offered, 27 spec failures of each pydantic-ai row (the card's triage)."""
    case = cases[CUSTOM]
    assert case["verdict"] == "skipped", case["diff"]
    assert "a custom (freeform) tool is not one pydantic-ai can declare" in case["error"]


@SLOW
def test_merges_parallel_calls_that_share_index_0(cases: dict[str, dict[str, Any]]) -> None:
    """The OpenAI chat stream keys a call's part by its index alone (`models/openai/_chat_streaming.py`,
    `_map_tool_call_delta`: `vendor_part_id=dtc.index,`), so a second call at index 0 extends the
    first: names and arguments joined, the later id kept (`if self.tool_call_id: part = replace(part,
    tool_call_id=self.tool_call_id)` in `messages.py`)."""
    case = cases[PARALLEL_INDEX0]
    assert case["verdict"] == "fail"
    assert "call 1: name 'read_file' expected, got 'read_filesearch_text'" in case["diff"]
    assert any(
        line.startswith('call 1: arguments {"path":"foo.txt"} expected, got invalid') for line in case["diff"]
    )
    assert 'call 2: \'search_text\' {"query":"bar"} expected, missing' in case["diff"]


@SLOW
def test_concatenates_a_name_repeated_on_every_chunk(cases: dict[str, dict[str, Any]]) -> None:
    """`ToolCallPartDelta._apply_to_part` (`messages.py`): `tool_name = part.tool_name +
    self.tool_name_delta`, so a name sent in full on each of three chunks is tripled."""
    case = cases[NAME_REPEATED]
    assert case["verdict"] == "fail"
    assert "call 1: name 'get_weather' expected, got 'get_weatherget_weatherget_weather'" in case["diff"]


@SLOW
def test_well_formed_and_anthropic_streams_pass(cases: dict[str, dict[str, Any]]) -> None:
    """The same adapter passes streams pydantic-ai handles: two parallel OpenAI calls on their own
    indexes, and seed 004's interleaved Anthropic deltas (`vendor_part_id=event.index` in
    `models/anthropic/_streaming.py` routes each by its block index)."""
    assert [cases[i]["verdict"] for i in HANDLED] == ["pass"] * 3


@SLOW
def test_after_prepare_the_first_case_loads_no_module() -> None:
    """`prepare()` pays the library's imports (its warm-up case) before the first case's clock."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    pairs = ["pydantic-ai=openai-chat", "pydantic-ai=anthropic"]
    argv = [str(side_python("pydantic-ai")), "-c", FIRST_CASE, *pairs]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=True, env=env).stdout
    assert out.count("pydantic-ai []") == 2, out


def test_without_the_library_the_spec_is_one_usage_error_naming_the_extra() -> None:
    """Where the library is absent (this test environment), `pydantic-ai` is refused before any case, in
    one line that says what to install."""
    import importlib.util

    if importlib.util.find_spec("pydantic_ai") is not None:
        pytest.skip("pydantic-ai is installed here")
    case = "openai-chat/parallel-2::original::s0"
    command = [sys.executable, "-m", "harness", "check", "--accumulator", "pydantic-ai", "--case", case]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "pip install 'toolstream-harness[pydantic-ai]'" in run.stderr
