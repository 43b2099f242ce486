"""litellm's `completion(stream=True)` and `stream_chunk_builder` (`litellm` adapter) in
`.venv-litellm`, through `serve-accumulator`: seed 004's shape, confirmed in litellm's source.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from _side_venvs import ROOT, served, side_python
from test_accumulators_prepare import FIRST_CASE

SLOW = pytest.mark.slow  # the library's import and warm-up take tens of seconds on a loaded machine

SEED_004 = "anthropic/seed004-interleaved-input-json::original::s0"


def check(*cases: str) -> subprocess.CompletedProcess[str]:
    spec = served("litellm", "litellm")
    options = [option for case in cases for option in ("--case", case)]
    command = [sys.executable, "-m", "harness", "check", "--accumulator", spec, *options, "--timeout", "300"]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)


@SLOW
def test_sends_anthropic_argument_deltas_to_the_latest_tool() -> None:
    """`ModelResponseIterator._content_block_delta_helper` (`llms/anthropic/chat/handler.py`) gives
    every `input_json_delta` `"index": self.tool_index,` (the last tool block started), not the
    delta's own block index: interleaved deltas of two parallel tool_use blocks (seed 004) are
    joined into the wrong calls."""
    run = check(SEED_004)
    assert run.returncode == 1, run.stdout + run.stderr
    assert (
        'call 1: arguments {"repo":"acme/widgets","state":"open"} expected, got invalid {"repo": "ac'
        in run.stdout
    )
    assert "call 2: arguments" in run.stdout and "got invalid 'me/widgets" in run.stdout


@SLOW
def test_parallel_calls_in_order_pass() -> None:
    """Calls that arrive one after another (each block's deltas before the next starts) come out
    right, through both of litellm's paths (its Anthropic parser and the openai client); the
    Anthropic stop_reason comes back in OpenAI's words (`tool_calls`), a cosmetic warning."""
    run = check("anthropic/parallel-calls::original::s0", "openai-chat/parallel-2::original::s0")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 cases: 1 pass, 0 fail, 1 warn" in run.stdout
    assert "cosmetic finish_reason differs" in run.stdout


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
