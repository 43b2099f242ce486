"""A small agent on the openai SDK: ask, stream the answer, put the streamed tool calls back
together, run the tools, send their results back, until the model answers in words.

Two ways of putting the calls together, both common in agents:
- `calls_by_index`: each fragment goes to the call at its `index`. Gateways that send parallel
  calls all at index 0 (each with its own id) make it merge them into one call.
- `calls_by_id`: a fragment bringing an id not yet seen at its index starts a new call; one
  without an id continues the call at its index.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import openai

TOOLS: list[Any] = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("get_weather", "get_time", "web_search")
]


@dataclass
class Call:
    id: str | None = None
    name: str = ""
    arguments: str = ""

    def add(self, fragment: Any) -> None:
        if fragment.function is not None:
            self.name += fragment.function.name or ""
            self.arguments += fragment.function.arguments or ""


Reassemble = Callable[[Iterable[Any]], tuple[str, list[Call]]]


def calls_by_index(chunks: Iterable[Any]) -> tuple[str, list[Call]]:
    """The text and the calls of a streamed completion, fragments keyed by their `index`."""
    text, calls = "", dict[int, Call]()
    for chunk in chunks:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for fragment in choice.delta.tool_calls or []:
                call = calls.setdefault(fragment.index, Call())
                call.id = call.id or fragment.id
                call.add(fragment)
    return text, list(calls.values())


def calls_by_id(chunks: Iterable[Any]) -> tuple[str, list[Call]]:
    """The text and the calls of a streamed completion: a new id at an index is a new call."""
    text, calls, at = "", list[Call](), dict[int, Call]()
    for chunk in chunks:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for fragment in choice.delta.tool_calls or []:
                call = at.get(fragment.index)
                if call is None or (fragment.id and fragment.id != call.id):
                    call = at[fragment.index] = Call(id=fragment.id)
                    calls.append(call)
                call.add(fragment)
    return text, calls


def run_tool(call: Call) -> str:
    """Every tool answers; arguments that are not JSON are said back to the model."""
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError as exc:
        return f"error: the arguments are not JSON ({exc})"
    return f"{call.name}: ok ({', '.join(arguments) if isinstance(arguments, dict) else arguments})"


def next_messages(text: str, calls: list[Call]) -> list[Any]:
    """The assistant's turn with its calls, and one tool message per call."""
    turn = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in calls
    ]
    results = [{"role": "tool", "tool_call_id": c.id, "content": run_tool(c)} for c in calls]
    return [{"role": "assistant", "content": text or None, "tool_calls": turn}, *results]


def run_agent(client: openai.OpenAI, question: str, reassemble: Reassemble = calls_by_id) -> str:
    """Ask `question`, running the tools the model calls, and return its answer."""
    messages: list[Any] = [{"role": "user", "content": question}]
    for _ in range(4):
        stream = client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS, stream=True)
        text, calls = reassemble(stream)
        if not calls:
            return text
        messages += next_messages(text, calls)
    raise RuntimeError("no answer after 4 turns")


async def run_agent_async(
    client: openai.AsyncOpenAI, question: str, reassemble: Reassemble = calls_by_id
) -> str:
    """`run_agent` on the async client."""
    messages: list[Any] = [{"role": "user", "content": question}]
    for _ in range(4):
        stream = await client.chat.completions.create(
            model="gpt-4o", messages=messages, tools=TOOLS, stream=True
        )
        text, calls = reassemble([chunk async for chunk in stream])
        if not calls:
            return text
        messages += next_messages(text, calls)
    raise RuntimeError("no answer after 4 turns")
