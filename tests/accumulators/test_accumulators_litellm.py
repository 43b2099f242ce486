"""litellm's `completion(stream=True)` and `stream_chunk_builder` (`litellm` adapter) in
`.venv-litellm`, through `serve-accumulator`: seed 004's shape, confirmed in litellm's source.
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

SEED_004 = "anthropic/seed004-interleaved-input-json::original::s0"


IN_ORDER = ["anthropic/parallel-calls::original::s0", "openai-chat/parallel-2::original::s0"]


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every case these tests read, through the adapter in one run."""
    return side_check(
        "litellm", "litellm", [SEED_004, *IN_ORDER], tmp_path_factory.mktemp("litellm") / "r.json"
    )


@SLOW
def test_sends_anthropic_argument_deltas_to_the_latest_tool(cases: dict[str, dict[str, Any]]) -> None:
    """`ModelResponseIterator._content_block_delta_helper` (`llms/anthropic/chat/handler.py`) gives
    every `input_json_delta` `"index": self.tool_index,` (the last tool block started), not the
    delta's own block index: interleaved deltas of two parallel tool_use blocks (seed 004) are
    joined into the wrong calls."""
    case = cases[SEED_004]
    assert case["verdict"] == "fail"
    first = 'call 1: arguments {"repo":"acme/widgets","state":"open"} expected, got invalid {"repo": "ac'
    assert any(line.startswith(first) for line in case["diff"]), case["diff"]
    assert any(
        line.startswith("call 2: arguments") and "got invalid 'me/widgets" in line for line in case["diff"]
    )


@SLOW
def test_parallel_calls_in_order_pass(cases: dict[str, dict[str, Any]]) -> None:
    """Calls that arrive one after another (each block's deltas before the next starts) come out
    right, through both of litellm's paths (its Anthropic parser and the openai client); the
    Anthropic stop_reason comes back in OpenAI's words (`tool_calls`), a cosmetic warning."""
    anthropic, openai = (cases[i] for i in IN_ORDER)
    assert anthropic["verdict"] == "warn" and anthropic["severities"] == ["cosmetic"]
    assert anthropic["diff"] == ["finish_reason: 'tool_use' expected, got 'tool_calls'"]
    assert openai["verdict"] == "pass"


@SLOW
def test_after_prepare_the_first_case_loads_no_module() -> None:
    """`prepare()` pays the library's imports (its warm-up case) before the first case's clock."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [str(side_python("litellm")), "-c", FIRST_CASE, "litellm=openai-chat", "litellm=anthropic"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=True, env=env).stdout
    assert out.count("litellm []") == 2, out


def test_without_the_library_the_spec_is_one_usage_error_naming_the_extra() -> None:
    """Where the library is absent (this test environment), `litellm` is refused before any case, in
    one line that says what to install."""
    import importlib.util

    if importlib.util.find_spec("litellm") is not None:
        pytest.skip("litellm is installed here")
    case = "openai-chat/parallel-2::original::s0"
    command = [sys.executable, "-m", "harness", "check", "--accumulator", "litellm", "--case", case]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "pip install 'toolstream-harness[litellm]'" in run.stderr
