"""Warm starts of Node programs (`harness.processes.node_warm`): a case run in a worker of a
kept Node process shows what a cold `node SCRIPT.mjs` shows: the same verdicts, exit codes, raise
on stderr, environment and argv; a hung case ends at its deadline and no other case with it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.accumulators.program import run_clients, run_evidence, warm_starts
from harness.matrix.selection import Selection
from harness.matrix.selection import cases as selected_cases
from harness.mutate.scenario import Case
from harness.oracle.evidence import Evidence, thrown
from harness.processes import node_warm
from harness.processes.warm import SWITCH, enabled
from harness.serve.routes import client_environment
from harness.serve.server import ReplayServer

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

SINGLE = "openai-chat/single-call::original::s0"
PARALLEL = "openai-chat/parallel-2::original::s0"
SHARED_INDEX = "openai-chat/parallel-2::parallel-calls-share-index-0::s0"
CUT = "openai-chat/cut-mid-arguments::original::s0"
CASES = (SINGLE, PARALLEL, SHARED_INDEX, CUT)

# A plain agent on `fetch`, keyed by index like many: one request for the stream, one follow-up.
# MODE (an argument) makes it misbehave after it has read the stream.
AGENT = r"""
const mode = process.argv[2] ?? "";
const base = process.env.OPENAI_BASE_URL;
const headers = { "content-type": "application/json", authorization: `Bearer ${process.env.OPENAI_API_KEY}` };
const tools = [{ type: "function", function: { name: "lookup", parameters: { type: "object" } } }];
const messages = [{ role: "user", content: "Weather?" }];
const chat = (messages) => {
  const body = JSON.stringify({ model: "m", stream: true, tools, messages });
  return fetch(`${base}/chat/completions`, { method: "POST", headers, body });
};
const text = await (await chat(messages)).text();
const calls = [];
for (const line of text.split("\n")) {
  if (!line.startsWith("data: ") || line.startsWith("data: [DONE]")) continue;
  for (const part of JSON.parse(line.slice(6)).choices?.[0]?.delta?.tool_calls ?? []) {
    const fresh = { id: null, type: "function", function: { name: "", arguments: "" } };
    const call = (calls[part.index ?? 0] ??= fresh);
    call.id ??= part.id;
    call.function.name += part.function?.name ?? "";
    call.function.arguments += part.function?.arguments ?? "";
  }
}
const seen = { argv: process.argv.slice(1), env: process.env, execArgv: process.execArgv };
process.stderr.write(JSON.stringify(seen) + "\n");
if (mode === "throw") {
  class APIError extends Error {
    constructor(message, options) { super(message, options); this.name = "APIError"; this.status = 500; }
  }
  throw new APIError("the server said no", { cause: new TypeError("fetch failed") });
}
if (mode === "reject") Promise.reject(new RangeError("nobody caught this"));
if (mode === "exit") { console.log("leaving"); process.exit(3); }
if (mode === "spin") for (;;);
if (mode === "wait") setInterval(() => {}, 1000);
if (mode === "string") throw "a bare string";
if (!mode || mode === "arg") {
  messages.push({ role: "assistant", content: null, tool_calls: calls.filter(Boolean) });
  for (const call of calls.filter(Boolean)) {
    messages.push({ role: "tool", tool_call_id: call.id, content: "ok" });
  }
  await (await chat(messages)).text();
}
"""


@pytest.fixture(scope="module")
def cases() -> dict[str, Case]:
    return {case.id: case for case in selected_cases(Selection(cases=CASES))}


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("node") / "agent.mjs"
    path.write_text(AGENT)
    return path


@pytest.fixture
def server(cases: dict[str, Case]) -> Iterator[ReplayServer]:
    with ReplayServer(list(cases.values())).running() as running:
        yield running


def both(
    monkeypatch: pytest.MonkeyPatch, server: ReplayServer, case: Case, command: str, timeout: float = 20.0
) -> tuple[Evidence, Evidence]:
    """The evidence of a cold run and of a warm one."""
    monkeypatch.setenv(SWITCH, "0")
    cold = run_evidence(server, case, command, timeout=timeout)
    monkeypatch.setenv(SWITCH, "1")
    with warm_starts(command, server.url) as started:
        assert isinstance(started, node_warm.NodeWarmStart)
        warmed = run_evidence(server, case, command, timeout=timeout, warm=started)
    return cold, warmed


def shown(evidence: Evidence) -> dict:
    """What the agent printed of its argv and environment."""
    line = next(line for line in evidence.stderr.splitlines() if line.startswith('{"argv"'))
    return json.loads(line)


def test_only_a_plain_node_script_runs_warm(agent: Path) -> None:
    program = node_warm.node_program(f"exec node {agent} a b")
    assert program is not None and program.script == str(agent) and program.args == ("a", "b")
    assert node_warm.node_program(f"X=1 node {agent}") == node_warm.NodeCommand(
        shutil.which("node") or "", str(agent), (), (("X", "1"),)
    )
    assert node_warm.node_program(["node", str(agent), "x y"]).args == ("x y",)  # type: ignore[union-attr]
    for cold in (
        f"node {agent} | cat",  # shell syntax
        f"node --no-warnings {agent}",  # options to node
        f"NODE_OPTIONS=--x node {agent}",  # how node itself starts
        f"node {agent.with_suffix('.js')}",  # CommonJS: require.main would differ
        f"node {agent.parent / 'missing.mjs'}",
        f"python {agent}",
        "node",
    ):
        assert node_warm.node_program(cold) is None, cold
    assert not enabled({SWITCH: "0"}) and enabled({})


@pytest.mark.slow
def test_warm_and_cold_give_the_same_verdicts(
    agent: Path, cases: dict[str, Case], monkeypatch: pytest.MonkeyPatch
) -> None:
    command = f"exec node {agent}"
    monkeypatch.setenv(SWITCH, "0")
    cold = run_clients(list(cases.values()), command, jobs=2, timeout=20)
    monkeypatch.setenv(SWITCH, "1")
    warm = run_clients(list(cases.values()), command, jobs=2, timeout=20)
    verdicts = [(r.id, str(r.verdict), r.diff, r.error) for r in cold.results]
    assert [(r.id, str(r.verdict), r.diff, r.error) for r in warm.results] == verdicts
    assert [v for _, v, _, _ in verdicts] == ["pass", "pass", "fail", "fail"]


def test_the_case_sees_exactly_its_environment_and_argv(
    agent: Path, server: ReplayServer, cases: dict[str, Case], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLSTREAM_TEST_MARK", "kept")
    cold, warm = both(monkeypatch, server, cases[SINGLE], f"EXTRA=1 exec node {agent} arg")
    expected = {**os.environ, **client_environment(server.url, SINGLE), "EXTRA": "1"}
    assert shown(warm)["env"] == {**expected, SWITCH: "1"}
    assert shown(cold)["env"] == {**expected, SWITCH: "0"}
    assert shown(warm)["argv"] == shown(cold)["argv"] == [str(agent), "arg"]
    assert shown(warm)["execArgv"] == shown(cold)["execArgv"] == []
    # The exit code of the cold run is not compared: on a loaded machine its Node can still be
    # winding down when the grace after its follow-up ends (`program.GRACE_S`), and it is ended.
    assert warm.exit_code == 0 and warm.followup is not None and cold.followup is not None


def test_a_raise_exits_1_with_the_error_on_stderr(
    agent: Path, server: ReplayServer, cases: dict[str, Case], monkeypatch: pytest.MonkeyPatch
) -> None:
    raises = (("throw", "APIError: the server said no"), ("reject", "RangeError: nobody caught this"))
    for mode, error in raises:
        cold, warm = both(monkeypatch, server, cases[SINGLE], f"node {agent} {mode}")
        assert warm.exit_code == cold.exit_code == 1, mode
        assert thrown(warm.stderr) == thrown(cold.stderr) == error, mode
        assert warm.requests == cold.requests == 1
        assert warm.stderr.endswith(f"\n\nNode.js {node_version()}\n")
        if mode == "throw":  # its properties and cause, indented below it, as `node SCRIPT` shows them
            assert "  status: 500,\n  [cause]: TypeError: fetch failed" in warm.stderr
    # A thrown value that is not an error: the same exit, the value printed. (Not the source line
    # `node SCRIPT` prints above it, which can be Node's own: a known difference, see node_warm.)
    cold, warm = both(monkeypatch, server, cases[SINGLE], f"node {agent} string")
    assert warm.exit_code == cold.exit_code == 1
    assert "\na bare string\n" in warm.stderr and "\na bare string\n" in cold.stderr


def node_version() -> str:
    return subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()


def test_process_exit_ends_the_case_with_its_code_and_output(
    agent: Path, server: ReplayServer, cases: dict[str, Case], monkeypatch: pytest.MonkeyPatch
) -> None:
    cold, warm = both(monkeypatch, server, cases[SINGLE], f"node {agent} exit")
    assert warm.exit_code == cold.exit_code == 3
    assert warm.report is cold.report is None and warm.followup is cold.followup is None


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["spin", "wait"])
def test_a_hung_case_is_ended_at_its_deadline_and_no_other(
    mode: str, tmp_path: Path, cases: dict[str, Case], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`spin`: a loop that never yields (the worker is terminated); `wait`: a timer forever."""
    hangs = tmp_path / "hangs.mjs"
    hangs.write_text(
        f'if (process.env.TOOLSTREAM_CASE === "{CUT}") process.argv[2] = "{mode}";\n' + AGENT
    )
    monkeypatch.setenv(SWITCH, "1")
    start = time.monotonic()
    report = run_clients(list(cases.values()), f"node {hangs}", jobs=2, timeout=3)
    assert time.monotonic() - start < 20
    verdicts = {r.id: str(r.verdict) for r in report.results}
    assert verdicts == {SINGLE: "pass", PARALLEL: "pass", SHARED_INDEX: "fail", CUT: "timeout"}
    # The warm process that ran the hung case is usable again (or replaced): the next run passes.
    again = run_clients([cases[SINGLE]], f"node {hangs}", jobs=1, timeout=10)
    assert str(again.results[0].verdict) == "pass"


def test_a_case_runs_in_a_worker_when_warm(
    tmp_path: Path, server: ReplayServer, cases: dict[str, Case], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warm path is taken (not a silent fallback to cold): the program is not a main thread."""
    probe = tmp_path / "probe.mjs"
    probe.write_text(
        'import { isMainThread } from "node:worker_threads";\n'
        'console.error(`main=${isMainThread}`);\n'
        "await fetch(`${process.env.OPENAI_BASE_URL}/chat/completions`, { method: 'POST', body: '{}' });\n"
        "process.exitCode = 7;\n"
    )
    cold, warm = both(monkeypatch, server, cases[SINGLE], f"node {probe}")
    assert "main=true" in cold.stderr and "main=false" in warm.stderr
    assert warm.exit_code == cold.exit_code == 7


@pytest.mark.parametrize("cold", [False, True])
def test_check_client_cold_turns_warm_starts_off(cold: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.accumulators import program
    from harness.cli import main
    from harness.oracle.verdict import Report

    asked: dict[str, object] = {}

    def run_clients(cases: list[Case], command: str, **options: object) -> Report:
        asked.update(options)
        return Report("client:" + command, [])

    monkeypatch.setattr(program, "run_clients", run_clients)
    code = main(["check", "--client", "node agent.mjs", "--case", SINGLE, *(["--cold"] if cold else [])])
    assert code == 0 and asked["warm"] is (not cold)
