"""Agno's own `OpenAIChat` and `Claude` models, `process_response_stream` and
`get_function_call_for_tool_call` (`agno` adapter) in `.venv-agno`, through `serve-accumulator`:
the streams it reads right and the ones it does not, each confirmed in Agno's source.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from test_accumulators_prepare import FIRST_CASE

from tests._side_venvs import ROOT, side_check, side_python

SLOW = pytest.mark.slow  # the SDKs' imports and warm-up take seconds on a loaded machine

PARALLEL_INDEX0 = "openai-chat/litellm-bridge-parallel-index0::original::s0"
CUSTOM = "openai-chat/custom-tool::original::s0"
CUT = "openai-chat/cut-mid-arguments::original::s0"
NO_MESSAGE_STOP = "anthropic/single-call::D7-truncated-mid-args::s0"
INVALID_JSON = "anthropic/eager-input-streaming::G1-eager-invalid-json-bare-words::s0"
THINKING_SAME_INDEX = "anthropic/interleaved-thinking::A1-parallel-same-index::s0"
HANDLED = [
    "openai-chat/parallel-2::original::s0",
    "openai-chat/single-call::original::s0",
    "anthropic/parallel-calls::original::s0",
    "anthropic/single-call::original::s0",
]


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every case these tests read, through the adapter in one run."""
    chosen = [PARALLEL_INDEX0, CUSTOM, CUT, NO_MESSAGE_STOP, INVALID_JSON, THINKING_SAME_INDEX, *HANDLED]
    return side_check("agno", "agno", chosen, tmp_path_factory.mktemp("agno") / "r.json")


@SLOW
def test_well_formed_streams_of_both_models_pass(cases: dict[str, dict[str, Any]]) -> None:
    assert [cases[i]["verdict"] for i in HANDLED] == ["pass"] * len(HANDLED)


@SLOW
def test_a_cut_stream_is_a_failed_run_without_the_partial_call(cases: dict[str, dict[str, Any]]) -> None:
    """`OpenAIChat.invoke_stream` wraps the transport's error in `ModelProviderError`: the run
    fails, no call is run (what the harness asks of a cut stream)."""
    assert cases[CUT]["verdict"] == "pass"
    assert cases[CUT]["actual"]["state"] == "cut"


@SLOW
def test_parallel_calls_sharing_index_0_merge_into_the_last_name(cases: dict[str, dict[str, Any]]) -> None:
    """`OpenAIChat.parse_tool_calls` (`models/openai/chat.py`) keys calls by `index` alone and
    replaces the name with each delta's: two calls at index 0 are one call under the second's name
    and id, the arguments of both concatenated, which `get_function_call` cannot decode (the tool
    is not run; the model is sent the decoding error)."""
    case = cases[PARALLEL_INDEX0]
    assert case["verdict"] == "fail"
    assert "call 1: name 'read_file' expected, got 'search_text'" in case["diff"]
    assert (
        'call 1: arguments {"path":"foo.txt"} expected, got invalid {"path":"foo.txt"}{"query":"bar"}'
        in case["diff"]
    )


@SLOW
def test_an_anthropic_stream_without_message_stop_ends_the_run_as_complete(
    cases: dict[str, dict[str, Any]],
) -> None:
    """`Claude.invoke_stream` (`models/anthropic/claude.py`) reads the SDK's stream to its end and
    nothing checks `message_stop` came: a stream closed cleanly mid-call is a complete run."""
    case = cases[NO_MESSAGE_STOP]
    assert case["verdict"] == "fail"
    assert "state: cut expected, got complete" in case["diff"]


@SLOW
def test_tool_input_that_is_not_json_fails_the_whole_run(cases: dict[str, dict[str, Any]]) -> None:
    """The anthropic SDK's `messages.stream()` raises `ValueError` on tool input that is not JSON
    (as eager input streaming may send); Claude wraps it in `ModelProviderError`: every call lost."""
    case = cases[INVALID_JSON]
    assert case["verdict"] == "fail"
    assert case["actual"]["state"] == "error"
    assert case["actual"]["error"].startswith("ModelProviderError: Unable to parse tool parameter JSON")


@SLOW
def test_a_tool_use_block_at_the_index_of_a_thinking_block_is_lost(cases: dict[str, dict[str, Any]]) -> None:
    """Claude takes each call from the SDK's `content_block_stop` event, whose block is the
    snapshot's at list position `index`: the thinking block there, so both calls are lost and the
    run is complete."""
    case = cases[THINKING_SAME_INDEX]
    assert case["verdict"] == "fail"
    assert case["actual"]["tool_calls"] == [] and case["actual"]["state"] == "complete"


@SLOW
def test_a_request_offering_a_custom_tool_is_skipped(cases: dict[str, dict[str, Any]]) -> None:
    """OpenAIChat declares its tools as functions: it cannot ask for a custom tool's stream."""
    assert cases[CUSTOM]["verdict"] == "skipped"


@SLOW
def test_after_prepare_the_first_case_loads_no_module() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [str(side_python("agno")), "-c", FIRST_CASE, "agno=openai-chat", "agno=anthropic"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=True, env=env).stdout
    assert out.count("agno []") == 2, out


def test_without_the_library_the_spec_is_one_usage_error_naming_the_extra() -> None:
    import importlib.util

    if importlib.util.find_spec("agno") is not None:
        pytest.skip("agno is installed here")
    case = "openai-chat/single-call::original::s0"
    command = [sys.executable, "-m", "harness", "check", "--accumulator", "agno", "--case", case]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "pip install 'toolstream-harness[agno]'" in run.stderr
