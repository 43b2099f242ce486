"""What an agno user gets from each case, driven the documented way, beside the adapter's outcome:
one JSON line per case of the scenarios named on the command line.

Runs in `.venv-agno` (tests/accumulators/test_adapter_fidelity.py). The user's way is the one
Agno's docs show: an `Agent(model=..., tools=[...])` run with `stream=True, stream_events=True`,
its events read as they come. What the user has from the case's stream is the tools the agent runs
in its first turn (`ToolCallStartedEvent`: name, arguments, id) and whether the run failed
(`RunErrorEvent`, or a raise); the run is left at its second model request, which is the agent's
next turn, not the case's stream.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

# Agno's log handler keeps the `sys.stdout` of its import: its lines go to stderr, the rows to stdout.
ROWS = sys.stdout
sys.stdout = sys.stderr
os.environ["AGNO_TELEMETRY"] = "false"

import httpx2  # noqa: E402
from agno.agent import Agent  # noqa: E402
from agno.models.anthropic import Claude  # noqa: E402
from agno.models.openai import OpenAIChat  # noqa: E402
from agno.run.agent import ModelRequestStartedEvent, RunErrorEvent, ToolCallStartedEvent  # noqa: E402
from agno.tools.function import Function  # noqa: E402

from harness import Selection  # noqa: E402
from harness.accumulators.agno import run  # noqa: E402
from harness.accumulators.client import replay_transport  # noqa: E402
from harness.errors import NotApplicable  # noqa: E402
from harness.matrix.selection import Matrix  # noqa: E402


def _model(case: Any) -> Any:
    http_client = httpx2.Client(transport=replay_transport(case))
    if case.dialect == "openai-chat":
        return OpenAIChat(id="m", api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=0,
                          client_params={"http_client": http_client})  # fmt: skip
    return Claude(id="claude-sonnet-4-5", api_key="k", http_client=http_client,
                  client_params={"base_url": "http://127.0.0.1:9", "max_retries": 0})  # fmt: skip


def _tools(case: Any) -> list[Any]:
    """The request's function tools as Agno `Function`s that return at once; a server-side
    Anthropic tool as the dict Agno passes on."""
    body = case.request.body if case.request is not None and isinstance(case.request.body, dict) else {}
    out: list[Any] = []
    for tool in body.get("tools") or []:
        spec = tool.get("function", tool)
        schema = spec.get("parameters") or spec.get("input_schema")
        if case.dialect == "anthropic" and schema is None and tool.get("type") not in (None, "custom"):
            out.append(tool)
            continue
        out.append(Function(name=spec["name"], description=spec.get("description") or spec["name"],
                            parameters=schema or {"type": "object", "properties": {}},
                            entrypoint=lambda **_: "", skip_entrypoint_processing=True))  # fmt: skip
    return out


def _id(value: Any) -> Any:
    # An id Agno makes up where the stream had none (`uuid4`) is new on every run: compare its form.
    text = str(value or "")
    return "uuid4" if len(text) == 36 and text.count("-") == 4 and text[14] == "4" else value


def user(case: Any) -> dict[str, Any]:
    agent = Agent(model=_model(case), tools=_tools(case), telemetry=False)
    requests, calls, raised = 0, [], False
    try:
        for event in agent.run("toolstream", stream=True, stream_events=True):
            if isinstance(event, ModelRequestStartedEvent):
                requests += 1
                if requests > 1:
                    break
            elif isinstance(event, ToolCallStartedEvent) and event.tool is not None:
                tool = event.tool
                calls.append([tool.tool_name, tool.tool_args or {}, _id(tool.tool_call_id)])
            elif isinstance(event, RunErrorEvent):
                raised = True
    except Exception:
        raised = True
    return {"raised": raised, "calls": calls}


def adapter(case: Any) -> dict[str, Any]:
    """The adapter's calls an agent runs (one it could not decode is not run) and whether it raised."""
    outcome = run(replay_transport(case), case)
    calls = [[c.name, c.arguments, _id(c.id)] for c in outcome.tool_calls if not c.invalid]
    return {"raised": outcome.error is not None, "calls": calls}


def main() -> None:
    """Arguments: the scenario names whose openai-chat and Anthropic cases to run."""
    selection = Selection(dialects=("openai-chat", "anthropic"), scenarios=tuple(sys.argv[1:]))
    for case in Matrix(selection).all():
        try:
            handed = adapter(case)
        except NotApplicable:  # a request OpenAIChat's Functions cannot make (a custom tool)
            continue
        print(json.dumps({"id": case.id, "user": user(case), "adapter": handed}), file=ROWS, flush=True)


if __name__ == "__main__":
    main()
