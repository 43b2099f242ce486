"""A voice-agent loop on the openai SDK's Realtime client (`client.realtime.connect`, over the
`websockets` library), in text: it asks with the tools offered, runs each function call once its
arguments are done (`response.function_call_arguments.done`: what was streamed, not the final
`response.done`, whose `output` may be null), sends the results as `function_call_output` items
and asks for the next response. It reads nothing but the provider's environment (OPENAI_BASE_URL,
OPENAI_API_KEY). An `error` event is raised."""

from __future__ import annotations

import json

from openai import OpenAI

NAMES = ("get_weather", "get_time", "get_current_time", "web_search", "search_text", "read_file")
TOOLS = [
    {"type": "function", "name": name, "description": f"The {name} tool.", "parameters": {"type": "object"}}
    for name in NAMES
]


def answer(connection: object) -> list[object]:
    """The calls of one response, as their arguments were done."""
    calls = []
    for event in connection:  # type: ignore[attr-defined]
        if event.type == "response.function_call_arguments.done":
            calls.append(event)
        elif event.type == "error":
            raise RuntimeError(event.error.message)
        elif event.type == "response.done":
            return calls
    raise RuntimeError("the session closed before response.done")


def main() -> None:
    client = OpenAI(max_retries=0)
    with client.realtime.connect(model="gpt-realtime") as connection:
        connection.session.update(session={"type": "realtime", "output_modalities": ["text"], "tools": TOOLS})
        connection.conversation.item.create(
            item={
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Weather in Paris?"}],
            }
        )
        connection.response.create()
        calls = answer(connection)
        if not calls:
            return
        for call in calls:
            arguments = json.loads(call.arguments or "{}")
            output = f"ok ({', '.join(arguments)})"
            connection.conversation.item.create(
                item={"type": "function_call_output", "call_id": call.call_id, "output": output}
            )
        connection.response.create()
        answer(connection)


if __name__ == "__main__":
    main()
