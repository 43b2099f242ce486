"""The role of a dialect that speaks its provider's request and response format: asking the
provider for a stream (`toolstream record`), and standing in for the provider (`toolstream serve`).

The request format is provider knowledge, so it lives with the dialect: its endpoint and path,
the body that runs a recipe (`Recipe`: a prompt and `Tool`s), where its key comes from and the
header that carries it. What is the same for every provider (picking the root, reading the key,
encoding) is in `harness.wire.dialects.providers`.

Standing in for the provider is provider knowledge too: the media type it streams with, how a
client's follow-up request carries back the assistant turn it reassembled (`read_followup`: the
tool calls with their ids, names and arguments, and the tool results attached after them), the
short final answer the server streams to a follow-up, a case's outcome as one non-streaming body,
and the provider's error body. What is the same for every provider (routes, pacing, cuts, the
oracle) is in `harness.serve`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from harness.check.outcome import Outcome, ToolCall
from harness.errors import UsageError

if TYPE_CHECKING:
    import datetime as dt

    from harness.wire.dialects.providers import PreparedRequest


THINKING_BUDGET = 1024  # the reasoning tokens a recipe that thinks asks for


@dataclass(frozen=True, slots=True)
class Tool:
    """A provider-neutral function tool; `parameters` is a JSON Schema object."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    @property
    def takes_no_args(self) -> bool:
        return not self.parameters.get("properties")


@dataclass(frozen=True, slots=True)
class Recipe:
    """What to ask a provider, in no provider's words: a prompt and tools that elicit one tool-call
    shape (the recipes themselves are a recording matter: `harness.record.recipes`)."""

    name: str
    prompt: str
    tools: tuple[Tool, ...]
    thinking: bool = False


FINAL_TEXT = "Done."  # the text of the final answer the replay server gives a follow-up
REPLAY_MODEL = "toolstream-replay"  # the model name in what the replay server makes up


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool's result the client attached: which call it answers and what it says."""

    call_id: str | None
    name: str | None
    content: Any


@dataclass(frozen=True, slots=True)
class Turn:
    """The assistant turn a follow-up request carries back, with the results attached to it.

    `by_reference`: the calls were not echoed but named by id only (a Responses request with
    `previous_response_id`); the results' call ids are then all there is to judge."""

    calls: tuple[ToolCall, ...]
    results: tuple[ToolResult, ...]
    text: str = ""
    by_reference: bool = False


class Requesting(ABC):
    """How to ask this dialect's provider for a streamed answer to a recipe, and how to stand in
    for it: read a client's follow-up, answer it, serve an outcome whole, say an error."""

    provider: ClassVar[str]  # the name `toolstream record` knows the provider by
    api_root: ClassVar[str | None] = None  # None: it depends on the environment (see `root_in`)
    default_model: ClassVar[str]
    key_env: ClassVar[tuple[str, ...]] = ()  # any one of these holds the key; empty: no key
    base_url_env: ClassVar[tuple[str, ...]] = ()  # where the provider's own SDK reads its endpoint
    streams_reasoning: ClassVar[bool] = False  # whether a recipe that thinks can run here

    @abstractmethod
    def request_body(self, recipe: Recipe, model: str) -> dict[str, Any]:
        """The JSON body that runs `recipe` on `model`, streaming on."""

    @abstractmethod
    def request_path(self, model: str) -> str:
        """The path under the API root that the body goes to."""

    def root_in(self, env: Mapping[str, str]) -> str | None:
        """The API root when none is given (Bedrock's depends on the region)."""
        return self.api_root

    def auth_headers(self, key: str) -> dict[str, str]:
        """The headers that carry a key (a bearer token unless overridden)."""
        return {"Authorization": f"Bearer {key}"}

    def credentials(
        self, request: PreparedRequest, key: str, env: Mapping[str, str], now: dt.datetime | None
    ) -> dict[str, str]:
        """The headers that authenticate `request` (no key, no header); a provider that signs the
        whole request overrides this (Bedrock: SigV4)."""
        return self.auth_headers(key) if key else {}

    # -- standing in for the provider (`toolstream serve`) ----------------------------------------

    media_type: ClassVar[str] = "text/event-stream"  # what a stream of this dialect is served as

    @abstractmethod
    def read_followup(self, body: Mapping[str, Any]) -> Turn | None:
        """The assistant turn a parsed request body carries back (its last assistant turn and the
        tool results after it), or None when it carries no tool results after that turn (a first
        request, not a follow-up). A pure function of the body."""

    @abstractmethod
    def final_stream(self) -> bytes:
        """The streamed body of a short final answer (`FINAL_TEXT`), so an agent loop ends cleanly."""

    @abstractmethod
    def whole_response(self, outcome: Outcome) -> dict[str, Any]:
        """`outcome` as the JSON body of a non-streaming response."""

    def error_body(self, message: str) -> Mapping[str, Any]:
        """An error's JSON body, the way the provider returns one."""
        return {"message": message}


def chat_body(recipe: Recipe, model: str) -> dict[str, Any]:
    """The body OpenAI chat, Ollama and Cohere share: the model, the prompt as a user message,
    the tools as `function` tools, streaming on."""
    return {"model": model, "messages": user_message(recipe), "tools": function_tools(recipe), "stream": True}


def function_tools(recipe: Recipe) -> list[dict[str, Any]]:
    """The recipe's tools as OpenAI-style `function` tools."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)},
        }
        for t in recipe.tools
    ]


def user_message(recipe: Recipe) -> list[dict[str, Any]]:
    """The recipe's prompt as a one-message chat."""
    return [{"role": "user", "content": recipe.prompt}]


def required_variable(env: Mapping[str, str], names: tuple[str, ...]) -> str:
    """The first of `names` set in `env`; `UsageError` naming them when none is."""
    for name in names:
        if env.get(name):
            return env[name]
    raise UsageError(f"set {' or '.join(names)} in the environment (missing API key)")


# -- helpers for standing in for a provider ----------------------------------------------------


def dumps(payload: Any) -> str:
    """Compact JSON, as providers send it."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def sse(events: Iterable[tuple[str | None, Any]]) -> bytes:
    """Server-sent events: (event name or None, payload; a string payload is sent as it is)."""
    out = []
    for name, payload in events:
        data = payload if isinstance(payload, str) else dumps(payload)
        out.append((f"event: {name}\n" if name else "") + f"data: {data}\n\n")
    return "".join(out).encode()


def args_text(call: ToolCall) -> str:
    """A call's arguments as the JSON text the OpenAI-shaped formats carry."""
    return call.arguments if isinstance(call.arguments, str) else dumps(call.arguments)


def call_id(call: ToolCall, n: int, prefix: str) -> str:
    """A call's id, or a made-up one for the n-th call."""
    return call.id or f"{prefix}{n}"


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def call_from_text(name: Any, arguments: Any, identifier: Any) -> ToolCall:
    """A call echoed with its arguments as a JSON string (OpenAI, Cohere)."""
    if isinstance(arguments, str):
        return ToolCall.from_text(as_str(name), arguments, as_str(identifier))
    return ToolCall(
        name=as_str(name), arguments={} if arguments is None else arguments, id=as_str(identifier)
    )


def call_from_object(name: Any, arguments: Any, identifier: Any) -> ToolCall:
    """A call echoed with its arguments as a JSON object (Anthropic, Gemini, Bedrock, Ollama)."""
    if isinstance(arguments, str):  # some clients send the text they reassembled: judge it as text
        return ToolCall.from_text(as_str(name), arguments, as_str(identifier))
    return ToolCall(
        name=as_str(name), arguments={} if arguments is None else arguments, id=as_str(identifier)
    )


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or the `text` of its parts."""
    if isinstance(content, str):
        return content
    return "".join(
        part["text"]
        for part in as_list(content)
        if isinstance(part, Mapping) and isinstance(part.get("text"), str)
    )


def split_turn(
    messages: Sequence[Any], is_assistant: Callable[[Mapping[str, Any]], bool]
) -> tuple[int, list[Any]]:
    """The index of the last assistant message (-1: none) and the messages after it."""
    last = -1
    for i, message in enumerate(messages):
        if isinstance(message, Mapping) and is_assistant(message):
            last = i
    return last, list(messages[last + 1 :])


def read_block_messages(
    messages: Any,
    assistant: str,
    blocks_key: str,
    result: Callable[[Mapping[str, Any]], ToolResult | None],
    call: Callable[[Mapping[str, Any]], ToolCall | None],
    text: Callable[[list[Mapping[str, Any]], Any], str],
) -> Turn | None:
    """A list of messages whose content is a list of typed blocks (Anthropic and Bedrock `content`,
    Gemini `parts`): the call blocks of the last `assistant` turn and the result blocks after it.
    The three differ only in what makes a block a result (`result`) or a call (`call`), and in the
    turn's text (`text`, from its blocks and its raw content, which Anthropic allows as a string)."""
    items = as_list(messages)
    last, after = split_turn(items, lambda m: m.get("role") == assistant)
    results = tuple(
        found
        for m in after
        if isinstance(m, Mapping)
        for block in as_list(m.get(blocks_key))
        if (found := result(as_dict(block))) is not None
    )
    if not results:
        return None
    content = as_dict(items[last]).get(blocks_key) if last >= 0 else None
    blocks = [as_dict(b) for b in as_list(content)]
    calls = tuple(made for block in blocks if (made := call(block)) is not None)
    return Turn(calls, results, text(blocks, content))


def read_chat_messages(
    body: Mapping[str, Any],
    result_roles: tuple[str, ...],
    result_name: Callable[[Mapping[str, Any]], str | None],
    call: Callable[[Any, Any, Any], ToolCall],
) -> Turn | None:
    """The OpenAI-shaped `messages` list (OpenAI chat, Ollama, Cohere v2): the last assistant turn's
    `tool_calls` and the tool messages after it; the three differ only in the names given here."""
    messages = as_list(body.get("messages"))
    last, after = split_turn(messages, lambda m: m.get("role") == "assistant")
    results = tuple(
        ToolResult(as_str(m.get("tool_call_id")), result_name(m), m.get("content"))
        for m in after
        if isinstance(m, Mapping) and m.get("role") in result_roles
    )
    if not results:
        return None
    turn = as_dict(messages[last]) if last >= 0 else {}
    calls = tuple(
        call(as_dict(c.get("function")).get("name"), as_dict(c.get("function")).get("arguments"), c.get("id"))
        for c in as_list(turn.get("tool_calls"))
        if isinstance(c, Mapping)
    )
    return Turn(calls, results, text_of(turn.get("content")))
