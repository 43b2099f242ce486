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

from harness.cassettes.outcome import Outcome, Part, ToolCall
from harness.errors import UsageError

if TYPE_CHECKING:
    import datetime as dt

    from harness.wire.codecs import WireEvent

THINKING_BUDGET = 1024  # the reasoning tokens a recipe that thinks asks for


@dataclass(slots=True)
class PreparedRequest:
    """A request ready to send: the body is JSON-encoded exactly as it goes on the wire."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True, slots=True)
class Tool:
    """A provider-neutral function tool; `parameters` is a JSON Schema object. `freeform`: a custom
    tool, whose input is plain text (OpenAI `type: custom`, format text): `parameters` is unused."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    freeform: bool = False

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
    web_search: bool = False  # offer the provider's own web search tool beside the recipe's tools


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
    `previous_response_id`); the results' call ids are then all there is to judge. `parts`: the
    turn's reasoning and call parts in the order sent, with the signatures and payloads sent back
    (text is not among them: a follow-up's text is not judged)."""

    calls: tuple[ToolCall, ...]
    results: tuple[ToolResult, ...]
    text: str = ""
    by_reference: bool = False
    parts: tuple[Part, ...] = ()


class StandingIn(ABC):
    """How to stand in for the server of a dialect (`toolstream serve`): the media type it streams
    with, how a client's follow-up carries back the turn it reassembled, the short final answer, an
    outcome whole, an error. A dialect whose stream comes from an app rather than a provider's API
    (the AI SDK UI message stream, AG-UI) has this role and not `Requesting`."""

    media_type: ClassVar[str] = "text/event-stream"  # what a stream of this dialect is served as

    followup: ClassVar[Followup]  # where the provider's follow-up keeps the turn, in its names

    # Its WebSocket session, when it has one: "on-connect" (the server's events follow the
    # handshake, a client's `response.create` asks for the next response: the Realtime API), or
    # "on-create" (every response follows a client's `response.create`: the Responses API's
    # WebSocket mode); None: it has no WebSocket session.
    websocket_session: ClassVar[str | None] = None

    def websocket_messages(self, events: Iterable[WireEvent]) -> list[WireEvent]:
        """The events of one of its streams as the messages of its WebSocket session."""
        return list(events)

    def websocket_events(self, messages: Iterable[WireEvent]) -> list[WireEvent]:
        """A WebSocket session's messages as the events of one of its streams (a recorded
        session, kept in the dialect's own wire form): `websocket_messages` undone."""
        return list(messages)

    def websocket_followup(self, messages: Sequence[Mapping[str, Any]]) -> Turn | None:
        """The turn a session's client messages so far carry back, read at each `response.create`
        (the last of `messages`); None when they carry no tool results."""
        return None

    def read_followup(self, body: Mapping[str, Any]) -> Turn | None:
        """The assistant turn a parsed request body carries back (its last assistant turn and the
        tool results after it), or None when it carries no tool results after that turn (a first
        request, not a follow-up). A pure function of the body."""
        return self.followup.read(body)

    @abstractmethod
    def final_stream(self) -> bytes:
        """The streamed body of a short final answer (`FINAL_TEXT`), so an agent loop ends cleanly."""

    @abstractmethod
    def whole_response(self, outcome: Outcome) -> dict[str, Any]:
        """`outcome` as the JSON body of a non-streaming response."""

    def error_body(self, message: str) -> Mapping[str, Any]:
        """An error's JSON body, the way the provider returns one."""
        return {"message": message}


class Requesting(StandingIn):
    """How to ask this dialect's provider for a streamed answer to a recipe (`toolstream record`),
    besides standing in for it (`StandingIn`)."""

    provider: ClassVar[str]  # the name `toolstream record` knows the provider by
    api_root: ClassVar[str | None] = None  # None: it depends on the environment (see `root_in`)
    default_model: ClassVar[str]
    key_env: ClassVar[tuple[str, ...]] = ()  # any one of these holds the key; empty: no key
    base_url_env: ClassVar[tuple[str, ...]] = ()  # where the provider's own SDK reads its endpoint
    streams_reasoning: ClassVar[bool] = False  # whether a recipe that thinks can run here
    takes_freeform_tools: ClassVar[bool] = False  # whether a recipe with a freeform tool can run here
    searches_web: ClassVar[bool] = False  # whether the provider runs a web search tool itself

    @abstractmethod
    def request_body(self, recipe: Recipe, model: str) -> dict[str, Any]:
        """The JSON body that runs `recipe` on `model`, streaming on."""

    @abstractmethod
    def request_path(self, model: str) -> str:
        """The path under the API root that the body goes to."""

    def recipe_of(self, body: Mapping[str, Any]) -> Recipe | None:
        """What a request of this dialect asks, in no provider's words: its last user message and
        its function tools (what a gateway's client asks again in another dialect); None where
        the dialect cannot say (the default) or the body asks nothing."""
        return None

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


def chat_body(recipe: Recipe, model: str) -> dict[str, Any]:
    """The body OpenAI chat, Ollama and Cohere share: the model, the prompt as a user message,
    the tools as `function` tools, streaming on."""
    return {"model": model, "messages": user_message(recipe), "tools": function_tools(recipe), "stream": True}


def chat_recipe(body: Mapping[str, Any]) -> Recipe | None:
    """The recipe of a chat-shaped body (OpenAI chat, Ollama, Cohere): the last user message's
    text and the `function` tools."""
    return recipe_from(last_user_text(body.get("messages")), body.get("tools"), ("function",))


def recipe_from(
    prompt: str | None, tools: Any, under: tuple[str, ...], schema: str = "parameters"
) -> Recipe | None:
    """A recipe of `prompt` and the function tools of a request's tool list, each tool's name,
    description and schema read under `under` (("function",) for OpenAI chat, () for a flat
    entry) at `schema`; an entry of another type (a server tool: `web_search`) is left out.
    None when there is no prompt."""
    if prompt is None:
        return None
    found = []
    for entry in mappings(tools):
        kind = entry.get("type")
        if kind is not None and kind not in ("function", "custom"):
            continue
        spec = dig(entry, under) if under else entry
        name = as_str(as_dict(spec).get("name"))
        if name:
            description = as_str(as_dict(spec).get("description")) or ""
            found.append(Tool(name, description, dict(as_dict(as_dict(spec).get(schema)))))
    return Recipe("request", prompt, tuple(found))


def last_user_text(turns: Any) -> str | None:
    """The text of the last `user` message of a list of turns (None when there is none)."""
    for message in reversed(mappings(turns)):
        if message.get("role") == "user":
            return text_of(message.get("content"))
    return None


def function_tools(recipe: Recipe) -> list[dict[str, Any]]:
    """The recipe's tools as OpenAI-style `function` tools (a freeform one as a `custom` tool)."""
    return [
        {
            "type": "custom",
            "custom": {"name": t.name, "description": t.description, "format": {"type": "text"}},
        }
        if t.freeform
        else {
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


def call_from(name: Any, arguments: Any, identifier: Any) -> ToolCall:
    """A call a client echoed: arguments as JSON text (OpenAI, Cohere, or a client that sends the
    text it reassembled) are judged as text, arguments as an object as they are."""
    if isinstance(arguments, str):
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


Path = tuple[str, ...]  # keys into nested objects: ("function", "name")


@dataclass(frozen=True, slots=True)
class Entry:
    """Where a follow-up keeps one tool call or one tool result, in a provider's field names.

    An entry is one when its `kind` key holds one of `kinds` (Anthropic's block `type`, OpenAI's
    message `role`), or, with no `kind`, when it holds the object `under` names (Bedrock `toolUse`);
    an entry is every item there when neither is given (OpenAI's `tool_calls`)."""

    id: Path
    value: Path  # the call's arguments, or the result's content
    names: tuple[Path, ...] = ()  # the first one set is the tool's name (a result may carry none)
    kind: str | None = None
    kinds: tuple[str, ...] = ()
    under: str | None = None

    def matches(self, item: Mapping[str, Any]) -> bool:
        if self.kind is not None:
            return item.get(self.kind) in self.kinds
        return self.under is None or bool(as_dict(item.get(self.under)))

    def name(self, item: Mapping[str, Any]) -> str | None:
        found = None
        for path in self.names:  # like `a or b`: the first set, else the last
            found = dig(item, path)
            if found:
                break
        return as_str(found)


@dataclass(frozen=True, slots=True)
class Followup:
    """How a provider's request carries back the assistant turn: the list of turns, the model's
    role, where the turn keeps its calls and its text, and where the results after it are.

    `results_in` None: each message after the turn may itself be a result (OpenAI-shaped chat);
    otherwise the key of the list of blocks in which they are (Anthropic `content`, Gemini `parts`).
    A text block counts when `text_kind` (if given) says it is text and `thought` (if given) does
    not mark it as reasoning. A dialect names its fields in a `Followup`; `Requesting.read_followup`
    reads every dialect's with this one reader."""

    call: Entry
    result: Entry
    calls_in: str
    results_in: str | None = None
    turns: str = "messages"
    assistant: str = "assistant"
    text_in: str = "content"
    text_kind: tuple[str, str] | None = None
    thought: str | None = None
    plain_text: bool = True  # the content may be a plain string (not Bedrock's, not Gemini's)
    # Where a custom (freeform) call keeps its name and raw input (OpenAI chat `type: custom`):
    # such an entry is read as a freeform call, its input never parsed.
    freeform: Entry | None = None
    # The reasoning and call parts the assistant turn sends back (the dialect's reader), or none.
    parts: Callable[[Mapping[str, Any]], tuple[Part, ...]] | None = None

    def read(self, body: Mapping[str, Any]) -> Turn | None:
        """The last assistant turn's calls and text, and the results after it; None without results."""
        turns = as_list(body.get(self.turns))
        last = -1
        for i, message in enumerate(turns):
            if isinstance(message, Mapping) and message.get("role") == self.assistant:
                last = i
        after = mappings(turns[last + 1 :])
        if self.results_in is not None:
            after = [block for message in after for block in mappings(message.get(self.results_in))]
        results = tuple(
            ToolResult(
                as_str(dig(item, self.result.id)), self.result.name(item), dig(item, self.result.value)
            )
            for item in after
            if self.result.matches(item)
        )
        if not results:
            return None
        turn = as_dict(turns[last]) if last >= 0 else {}
        calls = tuple(
            self._call(item)
            for item in mappings(turn.get(self.calls_in))
            if self.call.matches(item) or (self.freeform is not None and self.freeform.matches(item))
        )
        parts = self.parts(turn) if self.parts is not None else ()
        return Turn(calls, results, self.text(turn.get(self.text_in)), parts=parts)

    def _call(self, item: Mapping[str, Any]) -> ToolCall:
        custom = self.freeform
        if custom is not None and custom.matches(item):
            raw = dig(item, custom.value)
            return ToolCall.freeform(
                custom.name(item), raw if isinstance(raw, str) else "", as_str(dig(item, custom.id))
            )
        return call_from(self.call.name(item), dig(item, self.call.value), dig(item, self.call.id))

    def text(self, content: Any) -> str:
        if isinstance(content, str):
            return content if self.plain_text else ""
        return "".join(
            part["text"]
            for part in mappings(content)
            if isinstance(part.get("text"), str)
            and (self.text_kind is None or part.get(self.text_kind[0]) == self.text_kind[1])
            and not (self.thought and part.get(self.thought))
        )


def mappings(value: Any) -> list[Mapping[str, Any]]:
    """The objects in a list (anything else in it is no entry)."""
    return [item for item in as_list(value) if isinstance(item, Mapping)]


def dig(item: Mapping[str, Any], path: Path) -> Any:
    """The value at `path` in nested objects, or None where one is missing."""
    found: Any = item
    for key in path:
        found = as_dict(found).get(key)
    return found
