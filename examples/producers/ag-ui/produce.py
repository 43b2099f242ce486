"""A producer of AG-UI events: Pydantic AI's AG-UI bridge (`AGUIAdapter`, encoded by the
`ag-ui-protocol` encoder) running an agent whose tools are the frontend tools of the `RunAgentInput`
(the tools the upstream request offered). The model (TOOLSTREAM_PROVIDER: openai or anthropic) is
the replay server (OPENAI_BASE_URL, TOOLSTREAM_BASE_URL). It prints what a client sent and received
as JSON lines (harness/serve/produce.py): request, response, each read."""

from __future__ import annotations

import asyncio
import json
import os

from pydantic_ai import Agent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.ui.ag_ui import AGUIAdapter


def out(item: object) -> None:
    print(json.dumps(item), flush=True)


async def main() -> None:
    names = json.loads(os.environ.get("TOOLSTREAM_TOOLS", "[]"))
    name = os.environ["TOOLSTREAM_MODEL"]
    if os.environ.get("TOOLSTREAM_PROVIDER") == "anthropic":
        provider = AnthropicProvider(base_url=os.environ["TOOLSTREAM_BASE_URL"], api_key="replay")
        model: object = AnthropicModel(name, provider=provider)
    else:
        model = OpenAIChatModel(
            name, provider=OpenAIProvider(base_url=os.environ["OPENAI_BASE_URL"], api_key="replay")
        )
    body = {
        "threadId": "thread_1",
        "runId": "run_1",
        "state": None,
        "messages": [
            {"id": "msg_user_1", "role": "user", "content": os.environ.get("TOOLSTREAM_PROMPT", "Weather?")}
        ],
        "tools": [
            {"name": tool, "description": f"The {tool} tool.", "parameters": {"type": "object"}}
            for tool in names
        ],
        "context": [],
        "forwardedProps": {},
    }
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    out(
        {
            "request": {
                "method": "POST",
                "url": "http://localhost:8000/ag-ui",
                "headers": headers,
                "body": body,
            }
        }
    )
    agent = Agent(model, retries=0)
    adapter = AGUIAdapter(
        agent=agent,
        run_input=AGUIAdapter.build_run_input(json.dumps(body).encode()),
        accept="text/event-stream",
    )
    out(
        {
            "response": {
                "status": 200,
                "headers": {"content-type": "text/event-stream", "cache-control": "no-cache"},
            }
        }
    )
    try:
        async for read in adapter.encode_stream(adapter.run_stream()):
            out({"read": read})
    except Exception as exc:  # the body broke off: what the client saw
        out({"error": f"{type(exc).__name__}: {exc}"})
        return
    out({"end": True})


asyncio.run(main())
