"""The Strands Agents SDK's own models and event loop (`strands-agents` adapter) in
`.venv-strands-agents`, through `serve-accumulator`: the streams it reads right and the ones it does
not, each confirmed in Strands' source.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from test_accumulators_prepare import FIRST_CASE

from tests._side_venvs import ROOT, side_check, side_python

SLOW = pytest.mark.slow  # the SDKs' imports and warm-up take tens of seconds on a loaded machine

SEED_004 = "anthropic/seed004-interleaved-input-json::original::s0"
PARALLEL_INDEX0 = "openai-chat/litellm-bridge-parallel-index0::original::s0"
PARTIAL_ARGS = "gemini/partial-args::original::s0"
EXCEPTION = "bedrock-converse/exception-mid-call::original::s0"
CUSTOM = "openai-chat/custom-tool::original::s0"
HANDLED = [
    "bedrock-converse/seed000-parallel-read-search::original::s0",
    "openai-chat/parallel-2::original::s0",
    "anthropic/parallel-calls::original::s0",
    "gemini/thinking-parallel::original::s0",
]


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every case these tests read, through the adapter in one run."""
    chosen = [SEED_004, PARALLEL_INDEX0, PARTIAL_ARGS, EXCEPTION, CUSTOM, *HANDLED]
    report = tmp_path_factory.mktemp("strands-agents") / "r.json"
    return side_check("strands-agents", "strands-agents", chosen, report)


@SLOW
def test_well_formed_streams_of_each_provider_pass(cases: dict[str, dict[str, Any]]) -> None:
    assert [cases[i]["verdict"] for i in HANDLED] == ["pass"] * len(HANDLED)


@SLOW
def test_interleaved_anthropic_argument_deltas_go_to_the_latest_tool(
    cases: dict[str, dict[str, Any]],
) -> None:
    """`process_stream` (`event_loop/streaming.py`) keeps one `current_tool_use`, replaced at each
    `contentBlockStart` and never keyed by `contentBlockIndex`: seed 004's interleaved deltas of two
    tool_use blocks are joined into the later one (not JSON, so `{}`), and the first is lost."""
    case = cases[SEED_004]
    assert case["verdict"] == "fail"
    assert "call 1: name 'list_issues' expected, got 'get_file_contents'" in case["diff"]
    assert 'call 1: arguments {"repo":"acme/widgets","state":"open"} expected, got {}' in case["diff"]


@SLOW
def test_parallel_openai_calls_sharing_index_0_become_one_with_empty_arguments(
    cases: dict[str, dict[str, Any]],
) -> None:
    """OpenAIModel groups tool-call deltas by `index` alone (`tool_calls.setdefault(tool_call.index,
    [])` in `models/openai.py`): two calls at index 0 are one call whose joined arguments are not
    JSON, which `handle_content_block_stop` turns into `{}`."""
    case = cases[PARALLEL_INDEX0]
    assert case["verdict"] == "fail"
    assert 'call 1: arguments {"path":"foo.txt"} expected, got {}' in case["diff"]
    assert 'call 2: \'search_text\' {"query":"bar"} expected, missing' in case["diff"]


@SLOW
def test_gemini_streamed_arguments_come_back_null(cases: dict[str, dict[str, Any]]) -> None:
    """GeminiModel makes each `functionCall` part a whole tool block whose input is
    `json.dumps(function_call.args)` (`models/gemini.py`): Gemini 3's streamed `partialArgs`
    (asked for with `streamFunctionCallArguments`, passed in `params` as a Strands user does) have
    no `args`, so the call's input is `null`."""
    case = cases[PARTIAL_ARGS]
    assert case["verdict"] == "fail"
    assert 'call 1: arguments {"city":"Boston"} expected, got \'null\'' in case["diff"]


@SLOW
def test_a_bedrock_exception_frame_is_an_error_through_the_stdio_protocol(
    cases: dict[str, dict[str, Any]],
) -> None:
    """botocore raises the exception frame as `EventStreamError`, through `serve-accumulator` as in
    process: the frame rebuilt from the protocol's event name keeps its exception headers."""
    case = cases[EXCEPTION]
    assert case["actual"]["state"] == "error"
    assert "modelStreamErrorException" in case["actual"]["error"]


@SLOW
def test_a_request_offering_a_custom_tool_is_skipped(cases: dict[str, dict[str, Any]]) -> None:
    """OpenAIModel declares every tool as a function: it cannot ask for a custom tool's stream."""
    case = cases[CUSTOM]
    assert case["verdict"] == "skipped"
    assert "declares function tools only" in case["error"]


@SLOW
def test_after_prepare_the_first_case_loads_no_module() -> None:
    """`prepare()` pays the SDKs' imports (a warm-up case per dialect) before the first case's clock."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    dialects = ("bedrock-converse", "openai-chat", "anthropic", "gemini")
    pairs = [f"strands-agents={dialect}" for dialect in dialects]
    argv = [str(side_python("strands-agents")), "-c", FIRST_CASE, *pairs]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=True, env=env).stdout
    assert out.count("strands-agents []") == len(dialects), out


def test_without_the_library_the_spec_is_one_usage_error_naming_the_extra() -> None:
    import importlib.util

    if importlib.util.find_spec("strands") is not None:
        pytest.skip("strands-agents is installed here")
    case = "bedrock-converse/single-call::original::s0"
    command = [sys.executable, "-m", "harness", "check", "--accumulator", "strands-agents", "--case", case]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "pip install 'toolstream-harness[strands-agents]'" in run.stderr
