"""Issue 13, done when: a new user's first hour, end to end, in a project of their own.

An accumulator of its own for OpenAI chat (it declares the dialect, and it ignores `close(error)`
as the issue's copied example did), the pytest matrix over the bundled corpus for that dialect, a
failing case, the replay command printed under it run as printed (it fails the same way), and
`toolstream explain` on that case. Everything runs as separate processes, as a user runs it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

ACCUMULATOR = textwrap.dedent(
    '''
    """myagent's own streaming accumulator: OpenAI chat only."""

    import json

    from harness import Outcome, ToolCall


    class Naive:
        dialects = ("openai-chat",)

        def __init__(self, dialect):
            self.calls = {}
            self.finish = None

        def feed(self, event):
            payload = event.payload if isinstance(event.payload, dict) else {}
            for choice in payload.get("choices") or []:
                self.finish = choice.get("finish_reason") or self.finish
                for fragment in (choice.get("delta") or {}).get("tool_calls") or []:
                    slot = fragment.get("index", 0)
                    call = self.calls.setdefault(slot, {"id": None, "name": "", "args": ""})
                    call["id"] = call["id"] or fragment.get("id")
                    function = fragment.get("function") or {}
                    call["name"] += function.get("name") or ""
                    call["args"] += function.get("arguments") or ""

        def close(self, error=None):  # the bug: a cut stream is reported as complete
            calls = []
            for _, call in sorted(self.calls.items()):
                try:
                    calls.append(ToolCall(call["name"], json.loads(call["args"] or "{}"), id=call["id"]))
                except ValueError:
                    calls.append(ToolCall(call["name"], call["args"], id=call["id"], invalid=True))
            return Outcome(tool_calls=tuple(calls), finish_reason=self.finish)
    '''
)


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    for name in ("CI", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        env.pop(name, None)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.slow
def test_a_new_users_first_hour(tmp_path: Path) -> None:
    project = tmp_path / "myagent-project"
    (project / "myagent").mkdir(parents=True)
    (project / "myagent" / "__init__.py").write_text("", encoding="utf-8")
    (project / "myagent" / "streaming.py").write_text(ACCUMULATOR, encoding="utf-8")
    pytest_args = ["-p", "no:randomly", "-p", "no:cacheprovider"]

    # 1. The matrix for the one dialect the accumulator reads.
    first = _run(
        [
            sys.executable, "-m", "pytest", *pytest_args,
            "--toolstream-accumulator", "myagent.streaming:Naive",
            "--toolstream-dialect", "openai-chat",
            "--toolstream-scenarios", "original,truncated-mid-args",
        ],
        project,
    )  # fmt: skip
    out = first.stdout
    assert first.returncode == 1, out + first.stderr
    summary = out.strip().splitlines()[-1]
    assert "failed" in summary and "passed" in summary and "skipped" not in summary  # one dialect only
    # No other dialect's case ids (an openai-chat recording may be named for a provider: gemini-compat-...).
    assert "anthropic/" not in out and "gemini/" not in out

    # 2. A failing case and the command printed under it.
    match = re.search(r"^FAIL (\S+) \(accumulator myagent\.streaming:Naive\)", out, re.M)
    assert match is not None, out
    case_id = match.group(1)
    block = out[match.start() :].split("replay just this case:", 1)[1]
    printed = next(line.strip() for line in block.splitlines() if line.strip().startswith("pytest "))
    assert (
        "--toolstream-accumulator myagent.streaming:Naive" in printed
        and "--toolstream-dialect openai-chat" in printed
    )

    # 3. Run as printed (pytest is `python -m pytest` of this environment): the same failure, alone.
    argv = shlex.split(printed)
    again = _run([sys.executable, "-m", *argv, *pytest_args], project)
    assert again.returncode == 1, again.stdout + again.stderr
    assert re.search(r"\b1 failed\b", again.stdout.strip().splitlines()[-1]), again.stdout
    assert "passed" not in again.stdout.strip().splitlines()[-1]
    assert f"FAIL {case_id} (accumulator myagent.streaming:Naive)" in again.stdout

    # 4. Why the case expects what it expects.
    explained = _run([sys.executable, "-m", "harness.cli", "explain", case_id], project)
    assert explained.returncode == 0, explained.stderr
    said = explained.stdout
    assert f"case {case_id}" in said
    assert "what each step did:" in said and "marks: ~ changed, - removed, + added" in said
    assert re.search(r"class:\s+(spec|quirk|policy): ", said)
    assert re.search(r"situation [a-z-]+ \(docs/oracle\.md", said)


def test_the_users_accumulator_declares_its_dialect_to_the_resolver(tmp_path: Path) -> None:
    """The one resolver reads the accumulator's `dialects`, which is what makes pytest skip the
    other dialects' cases in the slow path above."""
    from harness.accumulators import dialects_of, resolve

    (tmp_path / "myagent_acc.py").write_text(ACCUMULATOR)
    sys.path.insert(0, str(tmp_path))
    try:
        assert dialects_of(resolve("myagent_acc:Naive")) == ("openai-chat",)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("myagent_acc", None)
