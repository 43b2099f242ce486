"""Google ADK's own Gemini and Anthropic models (`google-adk` adapter) in `.venv-google-adk`, through
`serve-accumulator`: the streams it reads right and the ones it does not, each confirmed in ADK's source.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from test_accumulators_prepare import FIRST_CASE

from tests._side_venvs import ROOT, side_check, side_python

SLOW = pytest.mark.slow  # ADK's import and warm-up take tens of seconds on a loaded machine

# ADK's `StreamingResponseAggregator` (progressive SSE, on by default) joins Gemini 3's streamed
# `partialArgs` by JSON path; its AnthropicLlm keys `input_json_delta`s by block index (seed 004).
HANDLED = [
    "gemini/partial-args::original::s0",
    "gemini/partial-args-nested::original::s0",
    "gemini/thinking-parallel::original::s0",
    "gemini/vertex-single-call::original::s0",
    "anthropic/seed004-interleaved-input-json::original::s0",
    "anthropic/parallel-calls::original::s0",
]
CUT_CLEANLY = "gemini/parallel-one-per-chunk::D7-truncated-mid-args::s0"


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every case these tests read, through the adapter in one run."""
    chosen = [*HANDLED, CUT_CLEANLY]
    return side_check("google-adk", "google-adk", chosen, tmp_path_factory.mktemp("google-adk") / "r.json")


@SLOW
def test_streams_adk_reads_right_pass(cases: dict[str, dict[str, Any]]) -> None:
    assert [cases[i]["verdict"] for i in HANDLED] == ["pass"] * len(HANDLED)


@SLOW
def test_a_gemini_stream_closed_mid_call_is_acted_on_as_whole(cases: dict[str, dict[str, Any]]) -> None:
    """Gemini's stream ends with a chunk carrying `finishReason`; ADK's aggregator never checks one
    came (`StreamingResponseAggregator.close` in `utils/streaming_utils.py` builds the final,
    non-partial response from whatever was read), so a stream closed cleanly before its finish
    gives its agent the calls read so far, as a whole turn to run (a `policy` case: Gemini's wire
    has no terminal event but the finish, so the harness warns; unsafe all the same)."""
    case = cases[CUT_CLEANLY]
    assert (case["verdict"], case["class"]) == ("warn", "policy")
    assert "state: cut expected, got complete" in case["diff"]
    assert case["severities"][case["diff"].index("tool_calls: 0 expected, got 2")] == "unsafe"


@SLOW
def test_after_prepare_the_first_case_loads_no_module() -> None:
    """`prepare()` pays ADK's imports (its warm-up case per dialect) before the first case's clock."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    pairs = ["google-adk=gemini", "google-adk=anthropic"]
    argv = [str(side_python("google-adk")), "-c", FIRST_CASE, *pairs]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=True, env=env).stdout
    assert out.count("google-adk []") == 2, out


def test_without_the_library_the_spec_is_one_usage_error_naming_the_extra() -> None:
    import importlib.util

    if importlib.util.find_spec("google") is not None and importlib.util.find_spec("google.adk") is not None:
        pytest.skip("google-adk is installed here")
    case = "gemini/single-call::original::s0"
    command = [sys.executable, "-m", "harness", "check", "--accumulator", "google-adk", "--case", case]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "pip install 'toolstream-harness[google-adk]'" in run.stderr
