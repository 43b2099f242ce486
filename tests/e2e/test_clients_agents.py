"""A Python agent framework's own loop, no adapter: the OpenAI Agents SDK (`Runner.run_streamed`,
examples/clients/openai-agents/agent.py) run by `toolstream check --client` over openai-chat gives
the verdicts of an event-level run of the equivalent accumulator (the SDK's own chat stream
handler fed the same cases, accumulator.py) wherever both apply.

Both apply on the cases whose stream ends cleanly: on a cut or error case the loop raises and
sends nothing (right, as long as nothing ran), while an event-level accumulator has to say what it
kept. The follow-up carries calls only, so the comparison is on the calls: a cosmetic warning of
the event-level run (text, finish reason) counts as a pass.

Runs in the side environment `.ci/run` builds, skipped with its install command where absent.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.oracle.verdict import root_cause

ROOT = Path(__file__).resolve().parents[2]
SIDE = ROOT / ".venv-openai-agents"
EXAMPLE = ROOT / "examples" / "clients" / "openai-agents"
INSTALL = (
    "python3 -m venv .venv-openai-agents && "
    ".venv-openai-agents/bin/pip install . -r examples/clients/openai-agents/requirements.txt"
)
SCENARIOS = ("original", "parallel-calls-share-index-0", "A5-id-on-every-chunk", "B3-name-repeated-in-full")
# A sample of the recordings (the SDK's imports cost ~3 s of CPU per case): the two the Runner
# refuses, parallel calls a gateway merges (two and three of them), a cut.
CASSETTES = tuple(
    str(ROOT / "cassettes" / "openai-chat" / f"{name}.yaml")
    for name in ("glm5-openrouter-idless-continuation", "parallel-2", "parallel-3-same-function",
                 "cut-mid-arguments")
)  # fmt: skip
SELECT = ["--cassettes", *CASSETTES, "--scenarios", *SCENARIOS, "--seeds", "1"]

GLM = "openai-chat/glm5-openrouter-idless-continuation"
REFUSED = {
    f"{GLM}::A5-id-on-every-chunk::s0": "ModelBehaviorError: Tool  not found",
    f"{GLM}::B3-name-repeated-in-full::s0": "ModelBehaviorError: Tool invocations require a non-empty",
}


def toolstream(*args: str, json_path: Path) -> dict[str, dict[str, Any]]:
    run = subprocess.run(
        [str(SIDE / "bin" / "toolstream"), "check", *args, *SELECT, "--json", str(json_path)],
        cwd=EXAMPLE, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert run.returncode in (0, 1), run.stderr[-2000:]
    return {c["id"]: c for c in json.loads(json_path.read_text())["cases"]}


def calls_verdict(case: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    lines = tuple(line for line in case["diff"] if line.startswith(("tool_calls", "call ")))
    verdict = "pass" if case["verdict"] == "warn" and not lines else case["verdict"]
    return verdict, lines


@pytest.mark.slow
def test_the_agents_sdk_loop_gets_the_verdicts_of_its_own_stream_handler(tmp_path: Path) -> None:
    if not (SIDE / "bin" / "python").exists():
        pytest.skip(f"the Agents SDK side environment is not installed: {INSTALL}")
    client = toolstream(
        "--client",
        f"{SIDE / 'bin' / 'python'} agent.py",
        "-j",
        "2",
        "--timeout",
        "60",
        json_path=tmp_path / "c.json",
    )
    events = toolstream(
        "--accumulator", "accumulator:AgentsChatStream", "--timeout", "0", json_path=tmp_path / "e.json"
    )
    assert client.keys() == events.keys()
    both = [i for i, c in events.items() if c["expected"]["state"] == "complete"]
    assert len(both) > 5
    differ = {i: (calls_verdict(client[i]), calls_verdict(events[i])) for i in both}
    differ = {i: pair for i, pair in differ.items() if pair[0] != pair[1]}
    # Where they differ, the Runner refuses to execute a call the handler left without a name or an
    # id (ModelBehaviorError): the program ran nothing and raised (its user's outcome: a failure
    # with the raise), the handler's outcome fails on the call itself.
    assert set(differ) == set(REFUSED)
    for case_id, reason in REFUSED.items():
        raised = f"state: complete expected, got error ({reason}"
        assert client[case_id]["verdict"] == "fail"
        assert any(line.startswith(raised) for line in client[case_id]["diff"])
        assert events[case_id]["verdict"] == "fail"
    # What both see: parallel calls a gateway puts at index 0 are merged into one call.
    merged = "openai-chat/parallel-2::parallel-calls-share-index-0::s0"
    assert client[merged]["verdict"] == "fail" and client[merged]["severity"] == "unsafe"


def test_the_selection_holds_the_cases_the_comparison_names() -> None:
    """The scenarios the comparison selects still exist and still make the two cases it excuses."""
    from harness import Selection
    from harness.matrix.selection import cases

    selection = Selection(cassettes=CASSETTES, scenarios=SCENARIOS, seeds=1)
    ids = {case.id for case in cases(selection)}
    assert set(REFUSED) <= ids and len(ids) > len(REFUSED)


# The scenarios on which the Runner looks a tool up under a name it mangled: the last piece of a
# split name (B2), none at all where GLM-5's header event has no choice index (A5, A7).
MANGLED = ("B2-name-split-across-fragments", "A5-id-on-every-chunk", "A7-id-rotates-per-fragment")


@pytest.mark.slow
def test_the_agent_with_its_own_tools_fails_no_case_on_a_bare_tool_not_found(tmp_path: Path) -> None:
    # examples/clients/openai-agents/own_tools.py, every case retargeted onto its two tools: each
    # `Tool ... not found` raise is judged as the name the SDK made of the stream's pieces (the
    # framework's failure), never as a call that went missing for no said reason.
    if not (SIDE / "bin" / "python").exists():
        pytest.skip(f"the Agents SDK side environment is not installed: {INSTALL}")
    from harness.cli import main  # this checkout's harness (the side environment holds a copy)

    out = tmp_path / "own.json"
    program = f"{SIDE / 'bin' / 'python'} {EXAMPLE / 'own_tools.py'}"
    code = main(
        ["check", "--client", program, "--dialect", "openai-chat", "--scenarios", *MANGLED, "--seeds", "1",
         "-j", "2", "--timeout", "60", "--json", str(out)]
    )  # fmt: skip
    assert code == 1
    cases = {c["id"]: c for c in json.loads(out.read_text())["cases"]}
    lookups = {i: c for i, c in cases.items() if "not found" in ((c["actual"] or {}).get("error") or "")}
    assert len(lookups) >= 10
    for case_id, case in lookups.items():
        assert root_cause(case) == "name differs", (case_id, case["diff"])
    split = cases["openai-chat/single-call::B2-name-split-across-fragments::s0"]["diff"]
    assert split[1] == (
        "call 1: name 'get_forecast' expected, got '_forecast' "
        "(its name came in pieces 'get' + '_forecast': the program kept only the last)"
    )
    nameless = cases["openai-chat/glm5-openrouter-idless-continuation::A5-id-on-every-chunk::s0"]["diff"]
    assert nameless[1].startswith("call 1: name 'get_forecast' expected, got '' ")
