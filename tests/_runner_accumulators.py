"""Accumulators the runner, pool and compare tests plug in by `module:attr`."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SINGLE = str(ROOT / "cassettes/openai-chat/single-call.yaml")
PARALLEL = str(ROOT / "cassettes/openai-chat/parallel-2.yaml")

ACCUMULATORS = textwrap.dedent(
    '''
    import os
    import time

    from harness.wire import dialects
    from harness.errors import NotApplicable
    from harness.cassettes.outcome import Outcome, State, ToolCall


    def reference(case):
        acc = dialects.get(case.dialect).accumulator()
        for event in case.events:
            acc.feed(event)
        return acc.close(None if case.response.complete else (case.response.error or "stream cut"))


    class Mixed:
        """A different misbehaviour per case: the run must go on after each."""

        name = "mixed"

        def run(self, case):
            key = (case.cassette, case.scenario)
            if key == ("openai-chat/single-call", "F3-single-read"):
                time.sleep(3600)
            if key == ("openai-chat/single-call", "F4-crlf-line-ends"):
                raise NotApplicable("not for CRLF streams")
            if key == ("openai-chat/parallel-2", "original"):
                raise ValueError("boom")
            if key == ("openai-chat/parallel-2", "F3-single-read"):
                os._exit(3)
            if key == ("openai-chat/parallel-2", "F4-crlf-line-ends"):
                return Outcome()
            return reference(case)

        def shutdown(self):
            pass


    mixed = Mixed()


    class Tame(Mixed):
        """Mixed without the hang and the exit, for an in-process run."""

        def run(self, case):
            if case.scenario == "F3-single-read":
                return reference(case)
            return super().run(case)


    tame = Tame()


    class IndexOnly:
        """OpenAI chat tool calls merged by index alone: parallel calls at one index collapse."""

        def __init__(self, dialect):
            self.calls = {}
            self.text = ""
            self.finish = None

        def feed(self, event):
            payload = event.payload
            if not isinstance(payload, dict):
                return
            for choice in payload.get("choices") or []:
                delta = choice.get("delta") or {}
                self.text += delta.get("content") or ""
                for fragment in delta.get("tool_calls") or []:
                    blank = {"id": None, "name": "", "args": ""}
                    call = self.calls.setdefault(fragment.get("index") or 0, blank)
                    function = fragment.get("function") or {}
                    call["id"] = call["id"] or fragment.get("id")
                    call["name"] += function.get("name") or ""
                    call["args"] += function.get("arguments") or ""
                self.finish = choice.get("finish_reason") or self.finish

        def close(self, error):
            calls = tuple(ToolCall.from_text(c["name"], c["args"], c["id"]) for c in self.calls.values())
            state = State.COMPLETE if error is None else State.CUT
            return Outcome(
                tool_calls=calls, text=self.text, finish_reason=self.finish, state=state, error=error
            )
    '''
)

STDIO = textwrap.dedent(
    """
    import json
    import sys

    case = None
    for line in sys.stdin:
        message = json.loads(line)
        if message["op"] == "start":
            case = message["case"]
            if case.startswith("openai-chat/parallel-2::original"):
                sys.exit(5)  # dies mid-case
        elif message["op"] == "end":
            if "F3-single-read" in case:
                print("this is not JSON", flush=True)
            else:
                print(json.dumps({"skip": "stdio test skips it"}), flush=True)
    """
)


def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Write ACCUMULATORS as module `runner_accs` on sys.path (worker processes import it too)."""
    (tmp_path / "runner_accs.py").write_text(ACCUMULATORS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("runner_accs", None)
    return "runner_accs"
