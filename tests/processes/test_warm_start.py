"""Warm starts of Python client programs (`harness.processes.python_warm` and `zygote.py`): a run
forked from a preloaded interpreter sees and does what a cold start would, and is contained and
killed the same way."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.accumulators.program import run_clients, run_evidence, warm_starts
from harness.cli import main
from harness.matrix.selection import Selection
from harness.matrix.selection import cases as selected_cases
from harness.mutate.scenario import Case
from harness.oracle.evidence import Evidence
from harness.processes import subreaper
from harness.processes.python_warm import PythonProgram, python_program
from harness.processes.warm import SWITCH
from harness.serve.server import ReplayServer

pytestmark = pytest.mark.skipif(not subreaper.CONTAINED, reason="warm starts need Linux")

ROOT = Path(__file__).resolve().parents[2]
STDLIB_AGENT = ROOT / "examples" / "clients" / "python-stdlib" / "agent.py"
SINGLE = "openai-chat/single-call::original::s0"
PARALLEL = "openai-chat/parallel-2::original::s0"
SHARED_INDEX = "openai-chat/parallel-2::parallel-calls-share-index-0::s0"
CUT = "openai-chat/cut-mid-arguments::original::s0"
MANY = 2000  # modules of about 60 bytes each in a report: twice what a pipe holds
ANTHROPIC_CASES = (
    "anthropic/single-call::original::s0",
    "anthropic/parallel-calls::original::s0",
    "anthropic/cut-mid-args::original::s0",
)

PROBE = textwrap.dedent(
    """\
    import json, os, sys, time
    what = sys.argv[1]
    if what == "show":
        shown = {
            "env": dict(os.environ), "argv": sys.argv, "orig_argv": sys.orig_argv, "cwd": os.getcwd(),
            "name": __name__, "file": __file__, "path0": sys.path[0], "globals": sorted(globals()),
            "cached": __cached__, "spec": getattr(__spec__, "name", None),
            "main": sys.modules["__main__"].__dict__ is globals(),
            "parent": open(f"/proc/{os.getppid()}/cmdline").read(),
            "threads": len(os.listdir("/proc/self/task")),
        }
        sys.stderr.write(json.dumps(shown))
    elif what == "parent":
        sys.stderr.write(open(f"/proc/{os.getppid()}/cmdline").read().replace("\\0", " "))
    elif what == "exit":
        sys.exit(int(sys.argv[2]) if sys.argv[2].lstrip("-").isdigit() else sys.argv[2])
    elif what == "raise":
        def inner():
            raise ValueError("boom")
        inner()
    elif what == "import":
        module = __import__(sys.argv[2])
        sys.stderr.write(json.dumps({"seen": module.SEEN, "env": os.environ.get("OPENAI_BASE_URL")}))
    elif what == "hang":
        if os.fork() == 0:  # a grandchild that leaves the session, then waits forever
            os.setsid()
            with open(sys.argv[2], "w") as out:
                out.write(str(os.getpid()))
            time.sleep(600)
            os._exit(0)
        time.sleep(600)
    """
)


@pytest.fixture(scope="module")
def cases() -> dict[str, Case]:
    return {case.id: case for case in selected_cases(Selection(cases=(SINGLE, PARALLEL, SHARED_INDEX, CUT)))}


@pytest.fixture
def server(cases: dict[str, Case]) -> Iterator[ReplayServer]:
    with ReplayServer(list(cases.values())).running() as running:
        yield running


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    path = tmp_path / "probe" / "probe.py"
    path.parent.mkdir()
    path.write_text(PROBE)
    return path


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSTREAM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(SWITCH, raising=False)


def both(
    server: ReplayServer, case: Case, command: str, *, timeout: float = 20.0, runs: int = 1
) -> tuple[Evidence, list[Evidence]]:
    """One cold run, and `runs` warm ones (the second and later forked with what the first taught)."""
    cold = run_evidence(server, case, command, timeout=timeout)
    with warm_starts(command, server.url) as zygotes:
        assert zygotes is not None
        warm = [run_evidence(server, case, command, timeout=timeout, warm=zygotes) for _ in range(runs)]
    return cold, warm


# ---------------------------------------------------------------------------------------------
# Which commands start warm


def test_python_programs_are_recognised_and_anything_else_starts_cold(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text("")
    found = python_program(f"python3 {script} --flag 'two words'")
    assert found == PythonProgram("python3", str(script), None, (str(script), "--flag", "two words"),
                                  ("python3", str(script), "--flag", "two words"))  # fmt: skip
    assert python_program(f"{sys.executable} {script}") is not None
    assert python_program([sys.executable, str(script)]) is not None
    assert python_program("python -m http.server 0") == PythonProgram(
        "python", None, "http.server", ("http.server", "0"), ("python", "-m", "http.server", "0")
    )
    # The report card's form: variables set for the program, then `exec`.
    carded = python_program(f"TOOLSTREAM_STREAM=1 exec python3 {script}")
    assert carded is not None and carded.assignments == {"TOOLSTREAM_STREAM": "1"}
    for cold in (
        f"python3 {script} | cat", f"python3 {script} > out", f"python3 {script}; true",
        f"python3 $HOME/{script.name}", f"node {script}", f"python3 -u {script}",
        f"python3 {tmp_path / 'missing.py'}", "python3", f"python3 {tmp_path}", "python3 -c 'print(1)'",
        f"python3 {script} 'unclosed",
    ):  # fmt: skip
        assert python_program(cold) is None, cold


def test_turned_off_by_the_environment_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text("")
    monkeypatch.setenv(SWITCH, "0")
    with warm_starts(f"python3 {script}", "http://127.0.0.1:9") as zygotes:
        assert zygotes is None
    with warm_starts(f"python3 {script}", "http://127.0.0.1:9", on=False) as zygotes:
        assert zygotes is None


# ---------------------------------------------------------------------------------------------
# A warm run sees what a cold one does


def shown(evidence: Evidence) -> dict:
    try:
        return json.loads(evidence.stderr)
    except ValueError:
        raise AssertionError(f"the probe said: {evidence.stderr}") from None


def test_the_run_sees_the_environment_argv_cwd_and_main_of_a_cold_start(
    server: ReplayServer, cases: dict[str, Case], probe: Path
) -> None:
    command = f"{sys.executable} {probe} show"
    cold, (warm,) = both(server, cases[SINGLE], command)
    assert cold.exit_code == warm.exit_code == 0
    seen_cold, seen_warm = shown(cold), shown(warm)
    assert "zygote.py" in seen_warm.pop("parent") and "zygote.py" not in seen_cold.pop("parent")
    assert seen_warm == seen_cold
    # Wholesale: the case's own values, nothing of another case's or the zygote's placeholder.
    assert seen_warm["env"]["TOOLSTREAM_CASE"] == SINGLE
    assert seen_warm["name"] == "__main__" and seen_warm["main"] is True and seen_warm["threads"] == 1


def test_each_case_gets_its_own_environment(
    server: ReplayServer, cases: dict[str, Case], probe: Path
) -> None:
    command = f"{sys.executable} {probe} show"
    with warm_starts(command, server.url) as zygotes:
        seen = [
            shown(run_evidence(server, cases[case], command, timeout=20, warm=zygotes))["env"]
            for case in (SINGLE, PARALLEL, SINGLE)
        ]
    assert [env["TOOLSTREAM_CASE"] for env in seen] == [SINGLE, PARALLEL, SINGLE]
    assert seen[0] == seen[2]


@pytest.mark.parametrize(
    ("argv", "code"),
    [("exit 0", 0), ("exit 3", 3), ("exit 256", 0), ("exit -1", 255), ("exit bye", 1), ("raise", 1)],
)
def test_exit_codes_and_tracebacks_are_those_of_a_cold_start(
    server: ReplayServer, cases: dict[str, Case], probe: Path, argv: str, code: int
) -> None:
    cold, (warm,) = both(server, cases[SINGLE], f"{sys.executable} {probe} {argv}")
    assert cold.exit_code == warm.exit_code == code
    assert warm.stderr == cold.stderr  # the traceback holds the program's frames only, as cold
    if argv == "raise":
        assert warm.stderr.startswith("Traceback (most recent call last):\n")
        assert warm.stderr.endswith("ValueError: boom\n")


def test_a_timeout_kills_the_forked_tree_and_the_next_run_still_starts_warm(
    server: ReplayServer, cases: dict[str, Case], probe: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "grandchild.pid"
    command = f"{sys.executable} {probe} hang {marker}"
    with warm_starts(command, server.url) as zygotes:
        assert zygotes is not None
        start = time.monotonic()
        hung = run_evidence(server, cases[SINGLE], command, timeout=1.5, warm=zygotes)
        assert hung.timed_out and time.monotonic() - start < 10
        grandchild = int(marker.read_text())
        assert not Path(f"/proc/{grandchild}").exists() or "Z" in Path(f"/proc/{grandchild}/stat").read_text()
        marker.unlink()
        again = run_evidence(server, cases[SINGLE], command, timeout=1.5, warm=zygotes)
        assert again.timed_out and int(marker.read_text()) != grandchild
        assert zygotes.off is None and len(zygotes.zygotes) == 1  # the same zygote forked both


# ---------------------------------------------------------------------------------------------
# What may not be preloaded


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv whose site-packages holds a module that keeps an environment variable read at
    import, and one that leaves a thread running."""
    where = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    (site,) = where.glob("lib/python*/site-packages")
    many = site / "manymodules"
    many.mkdir()
    (many / "__init__.py").write_text("SEEN = 'many'\n")
    for n in range(MANY):
        (many / f"module_with_a_rather_long_name_{n:04}.py").write_text("")
    (site / "probemodule.py").write_text(PROBE)
    (site / "cachedenv.py").write_text("import os\nSEEN = os.environ.get('OPENAI_BASE_URL')\n")
    (site / "threadsat.py").write_text(
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
        "SEEN = 'x'\n"
    )
    return where / "bin" / "python"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "why"), [("cachedenv", "reads OPENAI_BASE_URL"), ("threadsat", "starts a thread")]
)
def test_a_module_unsafe_to_fork_after_is_never_preloaded(
    server: ReplayServer, cases: dict[str, Case], probe: Path, venv: Path, module: str, why: str
) -> None:
    command = f"{venv} {probe} import {module}"
    with warm_starts(command, server.url) as zygotes:
        assert zygotes is not None
        runs = [
            shown(run_evidence(server, cases[case], command, timeout=20, warm=zygotes))
            for case in (SINGLE, PARALLEL, CUT)
        ]
        assert why in zygotes.unsafe[module]
        assert zygotes.off is None and module not in zygotes.modules
    if module == "cachedenv":  # each run read its own case's URL at import
        assert [run["seen"] for run in runs] == [run["env"] for run in runs]
        assert len({run["seen"] for run in runs}) == 3
    # What was learned is kept for the next run of the same program.
    with warm_starts(command, server.url) as again:
        assert again is not None and module in again.unsafe and again.modules


@pytest.mark.parametrize("zygote", ["refused", "threaded"])
def test_a_zygote_that_cannot_start_or_has_threads_leaves_the_program_cold(
    server: ReplayServer, cases: dict[str, Case], probe: Path, tmp_path: Path, zygote: str
) -> None:
    # An interpreter that runs programs as usual, but fails the zygote, or starts it with a thread.
    threaded = tmp_path / "threaded"
    threaded.mkdir()
    (threaded / "sitecustomize.py").write_text(
        "import threading, time\nthreading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
    )
    then = "exit 3" if zygote == "refused" else f"export PYTHONPATH={threaded}"
    interpreter = tmp_path / "bin" / "python3"
    interpreter.parent.mkdir()
    interpreter.write_text(f'#!/bin/sh\ncase "$1" in *zygote.py) {then};; esac\nexec {sys.executable} "$@"\n')
    interpreter.chmod(0o755)
    command = f"{interpreter} {probe} parent"
    with warm_starts(command, server.url) as zygotes:
        assert zygotes is not None
        runs = [run_evidence(server, cases[SINGLE], command, timeout=20, warm=zygotes) for _ in range(2)]
        assert zygotes.off is not None and not zygotes.zygotes
        assert zygote != "threaded" or "thread" in zygotes.off
    assert all(run.exit_code == 0 and "zygote.py" not in run.stderr for run in runs)


@pytest.mark.slow
def test_python_dash_m_runs_the_module_as_a_cold_start_would(
    server: ReplayServer, cases: dict[str, Case], venv: Path
) -> None:
    command = f"{venv} -m probemodule show"
    cold, warm = both(server, cases[SINGLE], command, runs=2)
    seen_cold = shown(cold)
    seen_cold.pop("parent")
    for run in warm:  # the second one forked from a zygote that preloaded what the first imported
        seen = shown(run)
        assert "zygote.py" in seen.pop("parent")
        assert seen == seen_cold
    assert seen_cold["argv"][0].endswith("probemodule.py")
    assert seen_cold["orig_argv"][1:3] == ["-m", "probemodule"]


@pytest.mark.slow
def test_a_run_that_imports_more_than_a_pipe_holds_still_ends(
    server: ReplayServer, cases: dict[str, Case], probe: Path, venv: Path, tmp_path: Path
) -> None:
    # What a run imported is reported at its end through a pipe: more than the pipe holds
    # (64 KiB) must not block the run's exit.
    program = tmp_path / "many.py"
    program.write_text(
        "import importlib\n"
        f"for n in range({MANY}):\n"
        "    importlib.import_module(f'manymodules.module_with_a_rather_long_name_{n:04}')\n"
    )
    command = f"{venv} {program}"
    with warm_starts(command, server.url) as zygotes:
        assert zygotes is not None
        first = run_evidence(server, cases[SINGLE], command, timeout=20, warm=zygotes)
        assert first.exit_code == 0 and not first.timed_out
        assert len(zygotes.modules) > MANY  # all of them learned
        again = run_evidence(server, cases[SINGLE], command, timeout=20, warm=zygotes)
        assert again.exit_code == 0 and zygotes.off is None


# ---------------------------------------------------------------------------------------------
# Verdicts


def verdicts(report: object) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(r.id, str(r.verdict), r.diff) for r in report.results]  # type: ignore[attr-defined]


@pytest.mark.slow
def test_warm_verdicts_equal_cold_ones_for_stdlib_openai_and_anthropic_sdk_programs(
    cases: dict[str, Case], tmp_path: Path
) -> None:
    sdk = tmp_path / "sdk_agent.py"
    sdk.write_text(
        textwrap.dedent(
            """\
            import json
            from openai import OpenAI

            client = OpenAI(max_retries=0)
            messages = [{"role": "user", "content": "Weather in Paris?"}]
            tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
            for _ in range(3):
                calls = {}
                stream = client.chat.completions.create(
                    model="gpt-4.1", messages=messages, tools=tools, stream=True
                )
                for chunk in stream:
                    for choice in chunk.choices:
                        for part in choice.delta.tool_calls or []:
                            call = calls.setdefault(part.index, {"id": None, "name": "", "arguments": ""})
                            call["id"] = call["id"] or part.id
                            call["name"] += (part.function and part.function.name) or ""
                            call["arguments"] += (part.function and part.function.arguments) or ""
                if not calls:
                    break
                turn = [
                    {"id": c["id"], "type": "function",
                     "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in calls.values()
                ]
                messages.append({"role": "assistant", "tool_calls": turn})
                messages += [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in turn]
            """
        )
    )
    anthropic_sdk = tmp_path / "anthropic_agent.py"
    anthropic_sdk.write_text(
        textwrap.dedent(
            """\
            import anthropic

            client = anthropic.Anthropic(max_retries=0)
            messages = [{"role": "user", "content": "Weather in Paris?"}]
            tools = [{"name": "lookup", "input_schema": {"type": "object"}}]
            for _ in range(3):
                with client.messages.stream(
                    model="claude-sonnet-4-5", max_tokens=1024, messages=messages, tools=tools
                ) as stream:
                    message = stream.get_final_message()
                calls = [block for block in message.content if block.type == "tool_use"]
                if not calls:
                    break
                messages.append({"role": "assistant", "content": [
                    {"type": "tool_use", "id": c.id, "name": c.name, "input": c.input} for c in calls
                ]})
                messages.append({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": c.id, "content": "ok"} for c in calls
                ]})
            """
        )
    )
    openai_cases = [cases[c] for c in (SINGLE, PARALLEL, SHARED_INDEX, CUT)]
    anthropic_cases = list(selected_cases(Selection(cases=ANTHROPIC_CASES)))
    for command, chosen in (
        (f"{sys.executable} {STDLIB_AGENT}", openai_cases),
        (f"{sys.executable} {sdk}", openai_cases),
        (f"{sys.executable} {anthropic_sdk}", anthropic_cases),
    ):
        cold = run_clients(chosen, command, timeout=20, warm=False)
        warm = run_clients(chosen * 2, command, timeout=20)  # the second pass forks what the first taught
        half = len(chosen)
        assert verdicts(warm)[:half] == verdicts(cold) == verdicts(warm)[half:], command


def test_the_cold_option_runs_cold(
    probe: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = {}
    for flag in ([], ["--cold"]):
        out = tmp_path / f"r{len(flag)}.json"
        command = f"{sys.executable} {probe} parent"
        main(["check", "--client", command, "--case", SINGLE, "--json", str(out), "--timeout", "20", *flag])
        results[bool(flag)] = json.loads(out.read_text())["cases"][0]
    capsys.readouterr()
    # The probe's stderr is in the result's error text: its parent is the zygote only when warm.
    assert "zygote.py" in json.dumps(results[False]) and "zygote.py" not in json.dumps(results[True])
