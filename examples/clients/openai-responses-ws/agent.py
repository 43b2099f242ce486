"""An agent loop on the openai SDK's Responses WebSocket client (`client.responses.connect`, the
Responses API's WebSocket mode, over the `websockets` library): it asks with the tools offered in
a `response.create`, runs each function call once its item is done
(`response.output_item.done`), sends the results as `function_call_output` items with
`previous_response_id` in the next `response.create`, and reads that response too. It reads
nothing but the provider's environment (OPENAI_BASE_URL, OPENAI_API_KEY). An `error` event, or a
response that does not complete, is raised."""

from __future__ import annotations

import json
from typing import Any

from openai import OpenAI

NAMES = ("get_weather", "get_time", "get_current_time", "web_search", "search_text", "read_file")
TOOLS = [
    {"type": "function", "name": name, "description": f"The {name} tool.", "parameters": {"type": "object"}}
    for name in NAMES
]
ENDS = ("response.completed", "response.failed", "response.incomplete")


def answer(connection: Any) -> tuple[str, list[Any]]:
    """The id of one response and its function calls, as their items were done."""
    calls = []
    for event in connection:
        if event.type == "response.output_item.done" and event.item.type == "function_call":
            calls.append(event.item)
        elif event.type == "error":
            raise RuntimeError(event.error.message)
        elif event.type in ENDS:
            if event.type != "response.completed":
                raise RuntimeError(f"the response ended {event.response.status}")
            return event.response.id, calls
    raise RuntimeError("the session closed before the response ended")


def main() -> None:
    client = OpenAI(max_retries=0)
    with client.responses.connect(max_retries=0) as connection:
        connection.response.create(model="gpt-5.2", store=False, input="Weather in Paris?", tools=TOOLS)
        response_id, calls = answer(connection)
        if not calls:
            return
        outputs = []
        for call in calls:
            arguments = json.loads(call.arguments or "{}")
            outputs.append(
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": f"ok ({', '.join(arguments)})",
                }
            )
        connection.response.create(
            model="gpt-5.2", store=False, previous_response_id=response_id, input=outputs
        )
        answer(connection)


if __name__ == "__main__":
    main()
