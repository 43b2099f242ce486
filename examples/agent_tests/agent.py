"""A small agent on the openai SDK: ask, stream the answer, put the streamed tool calls back
together, run the tools, send their results back, until the model answers in words.

Two ways of putting the calls together:
- `calls_by_index`, the common first try: each fragment goes to the call at its `index`.
  Gateways that send parallel calls all at index 0 (each with its own id) make it merge them into
  one call, and it runs the calls of a stream that was cut before it finished.
- `calls_correctly`: what servers really send, minded (the rules are in `_route` and
  `Call.merge`), and no calls run unless the stream finished.
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
    type: str = "function"  # or "custom": a freeform tool whose input is plain text
    extra_content: Any = None  # sent back as it came (Gemini's thought signature rides in it)

    def add(self, fragment: Any) -> None:
        if fragment.function is not None:
            self.name += fragment.function.name or ""
            self.arguments += fragment.function.arguments or ""

    def merge(self, fragment: Any) -> None:
        """`add`, minding what servers send again or send otherwise."""
        given = _get(fragment, "extra_content")
        if given and not _signed(self.extra_content):
            # The first signed one is the call's: a gateway may send it on a later fragment, and
            # an earlier fragment's extra_content may hold nothing.
            self.extra_content = given
        custom = _get(fragment, "custom")
        if custom is not None:  # a custom tool call: its input is text, joined as it comes
            self.type = "custom"
            self.name += _get(custom, "name") or ""
            self.arguments += _get(custom, "input") or ""
            return
        if fragment.function is None:
            return
        name, arguments = fragment.function.name or "", fragment.function.arguments or ""
        # A name sent again in full (or growing on each fragment) replaces it; pieces are joined.
        self.name = name if name.startswith(self.name) else self.name + name
        if isinstance(arguments, dict):  # arguments sent as a JSON object, not as its text
            self.arguments = json.dumps({**_object(self.arguments), **arguments})
        elif arguments == self.arguments and _object(arguments):
            pass  # the whole arguments sent again
        elif self.arguments.strip() == "{}" and arguments:
            self.arguments = arguments  # a "{}" placeholder before the real arguments
        else:
            self.arguments += arguments


def _get(value: Any, key: str) -> Any:
    """A field of an SDK object or of a dict, None when absent (the SDK keeps fields it does not
    know, such as `custom`, `extra_content` or `reasoning_content`, as extra attributes)."""
    if isinstance(value, dict):
        return value.get(key)
    return getattr(value, key, None)


def _signed(extra_content: Any) -> bool:
    """Whether a call's extra_content carries Gemini's thought signature."""
    return bool(_get(_get(extra_content, "google"), "thought_signature"))


class Calls(list[Call]):
    """The calls of a turn, with the reasoning that came with them (it goes back with them)."""

    reasoning: dict[str, str]

    def __init__(self) -> None:
        super().__init__()
        self.reasoning = {}


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


def calls_correctly(chunks: Iterable[Any]) -> tuple[str, list[Call]]:
    """The text and the calls of a streamed completion, put together the way servers really send
    them, and only once the stream said it finished (the calls of a cut stream are not run)."""
    text, calls, finish = "", Calls(), None
    at: dict[int | None, Call] = {}  # the latest call at each index
    by_id: dict[str, Call] = {}
    for chunk in chunks:
        # Only the first choice: an `n>1` request streams the others too, and a chunk may carry
        # no choices at all (usage only). A choice without an index is the first one.
        choice = next((c for c in chunk.choices or [] if (c.index or 0) == 0), None)
        if choice is None:
            continue
        text += choice.delta.content or ""
        finish = choice.finish_reason or finish
        for key in ("reasoning_content", "reasoning"):  # DeepSeek's and vLLM's names for it
            if isinstance(piece := _get(choice.delta, key), str):
                calls.reasoning[key] = calls.reasoning.get(key, "") + piece
        for fragment in choice.delta.tool_calls or []:
            call = _route(fragment, calls, at, by_id)
            if call is None:  # a new call
                call = at[fragment.index] = Call(id=fragment.id or None)
                calls.append(call)
            if fragment.id:
                call.id = call.id or fragment.id  # the first id stays (some servers rotate it)
                by_id.setdefault(fragment.id, call)
            call.merge(fragment)
    if finish is None:
        # Nothing said the turn ended: the connection dropped (or [DONE] came alone). Running
        # these calls would run arguments the model may never have finished.
        raise RuntimeError("the stream ended without a finish_reason")
    if finish == "length" and calls:
        calls.pop()  # the output limit cut the last call short
    for call in calls:
        if call.type == "custom":
            call.arguments = _whole(call.arguments)  # freeform text, not JSON
        else:
            call.arguments = _whole(call.arguments or "{}")  # no arguments at all: an empty object
    return _whole(text), calls


def _route(
    fragment: Any, calls: list[Call], at: dict[int | None, Call], by_id: dict[str, Call]
) -> Call | None:
    """The call a fragment continues, or None when it starts one."""
    custom = _get(fragment, "custom")
    name = (
        _get(custom, "name") if custom is not None else fragment.function.name if fragment.function else None
    )
    if fragment.id and fragment.id in by_id:
        return by_id[fragment.id]  # some servers repeat the id on every fragment
    current = at.get(fragment.index) if fragment.index is not None else (calls[-1] if calls else None)
    if current is None:
        # A fragment with neither an id nor a name at a new index continues the latest call
        # (servers that increment the index on every fragment).
        return None if fragment.id or name or not calls else calls[-1]
    if fragment.id and current.id and name:
        return None  # another id with a name at the same index: parallel calls sharing index 0
    if name and not fragment.id and name != current.name and current.arguments:
        return None  # another function at the same index, without ids
    return current  # a new id without a name is the same call (some servers rotate ids)


def _object(text: str) -> dict[str, Any]:
    """The JSON object `text` holds, or {} when it holds none."""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _whole(text: str) -> str:
    """`text` with the halves of each surrogate pair (split across fragments, one per piece,
    by servers that cut text in UTF-16 units) put back together as the character they encode."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")


def run_tool(call: Call) -> str:
    """Every tool answers; arguments that are not JSON are said back to the model."""
    if call.type == "custom":
        return f"{call.name}: ok ({call.arguments})"
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError as exc:
        return f"error: the arguments are not JSON ({exc})"
    return f"{call.name}: ok ({', '.join(arguments) if isinstance(arguments, dict) else arguments})"


def next_messages(text: str, calls: list[Call]) -> list[Any]:
    """The assistant's turn with its calls, and one tool message per call. What the provider needs
    back goes with them: each call's `extra_content` and the turn's reasoning."""
    turn = [_sent(c) for c in calls]
    results = [{"role": "tool", "tool_call_id": c.id, "content": run_tool(c)} for c in calls]
    reasoning = getattr(calls, "reasoning", {})
    return [{"role": "assistant", "content": text or None, "tool_calls": turn, **reasoning}, *results]


def _sent(call: Call) -> dict[str, Any]:
    """A call as the assistant's turn sends it back."""
    if call.type == "custom":
        sent: dict[str, Any] = {
            "id": call.id,
            "type": "custom",
            "custom": {"name": call.name, "input": call.arguments},
        }
    else:
        sent = {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
        }
    if call.extra_content is not None:
        sent["extra_content"] = call.extra_content
    return sent


def run_agent(client: openai.OpenAI, question: str, reassemble: Reassemble = calls_correctly) -> str:
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
    client: openai.AsyncOpenAI, question: str, reassemble: Reassemble = calls_correctly
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
