"""What a pydantic-ai user gets from each case, driven the documented way, beside the adapter's
outcome: one JSON line per case id given on the command line.

Runs in `.venv-pydantic-ai` (tests/accumulators/test_adapter_fidelity.py). The user's way is pydantic-ai's
public direct API, `pydantic_ai.direct.model_request_stream`, with the model built here from the
library's own classes: the user reads the events as they come (a `PartEndEvent` hands over a
finished part) and, when the stream ends without a raise, the final `ModelResponse`. What the
user has after a raise is what the events handed over before it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import anthropic
import httpx2
import openai
from pydantic_ai.direct import model_request_stream
from pydantic_ai.messages import ModelRequest, PartEndEvent
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.tools import ToolDefinition

from harness import Selection
from harness.accumulators.client import replay_transport
from harness.accumulators.pydantic_ai import run
from harness.errors import NotApplicable
from harness.matrix.selection import Matrix


def _model(case: Any) -> Any:
    http_client = httpx2.AsyncClient(transport=replay_transport(case))
    if case.dialect == "openai-chat":
        client = openai.AsyncOpenAI(
            api_key="k", base_url="http://127.0.0.1:9/v1", http_client=http_client, max_retries=0
        )
        return OpenAIChatModel("m", provider=OpenAIProvider(openai_client=client))
    client = anthropic.AsyncAnthropic(
        api_key="k", base_url="http://127.0.0.1:9", http_client=http_client, max_retries=0
    )
    return AnthropicModel("m", provider=AnthropicProvider(anthropic_client=client))


def _tools(case: Any) -> list[ToolDefinition]:
    body = case.request.body if case.request is not None and isinstance(case.request.body, dict) else {}
    out = []
    for tool in body.get("tools") or []:
        spec = tool.get("function", tool) if isinstance(tool, dict) else {}
        name = spec.get("name")
        schema = spec.get("parameters") or spec.get("input_schema") or {"type": "object"}
        if isinstance(name, str) and isinstance(schema, dict):
            out.append(ToolDefinition(name=name, parameters_json_schema=schema))
    return out


def _call(part: Any) -> list[Any]:
    # What an agent's tool receives: `args_as_dict()` ({} for none), except that arguments that are
    # not JSON never reach a tool (pydantic-ai asks the model again): those stay their raw text.
    args = part.args_as_dict()
    if set(args) == {"INVALID_JSON"}:
        args = args["INVALID_JSON"]
    # An id pydantic-ai makes up where the stream had none is new on every run: compare its form.
    made_up = part.tool_call_id.startswith("pyd_ai_")
    return [part.tool_name, args, "pyd_ai_*" if made_up else part.tool_call_id]


async def user(case: Any) -> dict[str, Any]:
    handed: dict[int, Any] = {}
    parameters = ModelRequestParameters(function_tools=_tools(case), allow_text_output=True)
    try:
        async with model_request_stream(
            _model(case), [ModelRequest.user_text_prompt("hi")], model_request_parameters=parameters
        ) as stream:
            async for event in stream:
                if isinstance(event, PartEndEvent) and event.part.part_kind == "tool-call":
                    handed[event.index] = event.part
            response = stream.get()
    except Exception:
        return {"raised": True, "calls": [_call(handed[i]) for i in sorted(handed)]}
    return {"raised": False, "calls": [_call(p) for p in response.parts if p.part_kind == "tool-call"]}


def adapter(case: Any) -> dict[str, Any]:
    outcome = run(replay_transport(case), case)
    calls = [[c.name, c.arguments, "pyd_ai_*" if (c.id or "").startswith("pyd_ai_") else c.id]
             for c in outcome.tool_calls]  # fmt: skip
    return {"raised": outcome.error is not None and outcome.state.value != "complete", "calls": calls}


def main() -> None:
    """Arguments: the scenario names whose openai-chat and Anthropic cases to run."""
    selection = Selection(dialects=("openai-chat", "anthropic"), scenarios=tuple(sys.argv[1:]))
    for case in Matrix(selection).all():
        try:
            handed = adapter(case)
        except NotApplicable:  # a request pydantic-ai cannot make (a custom tool): no user has it
            continue
        print(json.dumps({"id": case.id, "user": asyncio.run(user(case)), "adapter": handed}))


if __name__ == "__main__":
    main()
