"""`openai-sdk`: the real `openai` client over the replay transport, accumulating with its own state.

- Chat completions: `chat.completions.create(stream=True)` fed to the SDK's
  `ChatCompletionStreamState` (what `.stream()` uses; `.stream()` itself refuses non-strict tools),
  then `get_final_completion()`, which raises on a `length` or `content_filter` finish.
- Responses: `responses.stream(...)`, then `get_final_response()`.

The SDK's own SSE parsing runs on the case's bytes. When the SDK raises (a transport error on a
cut, `APIError` on an in-band error, `get_final_response` without `response.completed`, anything
else it raises: `client.raised`) the outcome is cut or error and holds only the calls the SDK had
announced as done (`tool_calls.function.arguments.done`, `response.output_item.done`), with the
text, finish reason and usage it had given its user (the chat snapshot; the Responses text
`snapshot`s, a terminal `response.incomplete` / `response.failed`, an in-band `error` event).
Needs `pip install 'toolstream-harness[openai]'`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harness.accumulators.client import (
    Adapter,
    base_url,
    in_message_order,
    raised,
    raised_error,
    recorded_request,
    request_body,
    require,
    sdk_http,
)
from harness.cassettes.outcome import Outcome, State, ToolCall

if TYPE_CHECKING:
    from harness.mutate.case import Case

__all__ = ["accumulator", "run"]

NAME = "openai-sdk"
DIALECTS = ("openai-chat", "openai-responses")


def run(transport: Any, case: Case) -> Outcome:
    """One case through the real client."""
    if case.dialect == "openai-chat":
        return _chat(transport, case)
    return _responses(transport, case)


accumulator = Adapter(NAME, DIALECTS, run, http=("openai", "openai"))


def _client(transport: Any, case: Case, endpoint: str) -> Any:
    openai = require("openai", "openai")
    http = sdk_http("openai", "openai")
    return openai.OpenAI(
        api_key="test",
        base_url=base_url(recorded_request(case), endpoint),
        http_client=http.Client(transport=transport),
        max_retries=0,
    )


def split_kwargs(method: Callable[..., Any], body: dict[str, Any]) -> dict[str, Any]:
    """The recorded body as keyword arguments of an SDK method; keys it does not name go in `extra_body`."""
    known = _parameters(getattr(method, "__func__", method))
    kwargs = {key: value for key, value in body.items() if key in known and not key.startswith("extra_")}
    extra = {key: value for key, value in body.items() if key not in kwargs}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


@functools.cache
def _parameters(function: Callable[..., Any]) -> frozenset[str]:
    """The parameter names of an SDK method, once per function: every case builds a new client,
    whose bound methods share their function, and `inspect.signature` cost 0.1 ms a case."""
    return frozenset(inspect.signature(function).parameters)


def _failure(exc: BaseException) -> State:
    """Cut or error for what the SDK raised mid-stream (`client.raised`)."""
    openai = require("openai", "openai")
    http = sdk_http("openai", "openai")
    return raised(exc, (http.RequestError, openai.APIConnectionError))


def _chat(transport: Any, case: Case) -> Outcome:
    from openai.lib.streaming.chat import ChatCompletionStreamState

    client = _client(transport, case, "/chat/completions")
    state: Any = ChatCompletionStreamState()
    done: dict[int, Any] = {}  # tool-call index -> its arguments.done event
    chunks = 0
    try:
        with client.chat.completions.create(
            **split_kwargs(client.chat.completions.create, request_body(case)), stream=True
        ) as stream:
            for chunk in stream:
                chunks += 1
                for event in state.handle_chunk(chunk):
                    if event.type == "tool_calls.function.arguments.done":
                        done[event.index] = event
        # It raises too: `LengthFinishReasonError` on a `length` finish, `ContentFilterFinishReasonError`
        # on `content_filter`, whatever tools were given (`parse_chat_completion`).
        final = state.get_final_completion() if chunks else None
    except Exception as exc:
        failed = _failure(exc)
        snapshot = _snapshot(state) if chunks else None
        if snapshot is None:
            return Outcome(state=failed, error=raised_error(exc))
        choice = _choice(snapshot.choices)
        tool_calls = list(choice.message.tool_calls or []) if choice is not None else []
        calls = tuple(
            _call(event.name, event.arguments, tool_calls[i].id if i < len(tool_calls) else None)
            for i, event in sorted(done.items())
        )
        return Outcome(
            tool_calls=calls,
            text=(choice.message.content or "") if choice is not None else "",
            finish_reason=choice.finish_reason if choice is not None else None,
            state=failed,
            error=raised_error(exc),
            usage=_usage(snapshot),
        )
    if final is None:
        return Outcome()
    choice = _choice(final.choices)
    if choice is None:
        return Outcome(usage=_usage(final))
    return Outcome(
        tool_calls=tuple(
            _call(call.function.name, call.function.arguments, call.id)
            for call in choice.message.tool_calls or []
        ),
        text=choice.message.content or "",
        finish_reason=choice.finish_reason,
        usage=_usage(final),
    )


def _snapshot(state: Any) -> Any:
    """The completion the SDK had built, None when it raised on the first chunk (it asserts one exists)."""
    try:
        return state.current_completion_snapshot
    except AssertionError:
        return None


def _call(name: str | None, arguments: Any, call_id: str | None) -> ToolCall:
    """A call as the SDK's user gets it. The SDK copies a delta's `arguments` unchecked, so a
    gateway that sends an object (B8) hands the user a dict where the type says str: that is not
    an argument string a user can parse (`json.loads` raises TypeError), so it is reported invalid,
    named by its type: `dict {}` is not mistaken for the text `{}`."""
    if arguments is None or isinstance(arguments, str):
        return ToolCall.from_text(name, arguments or "", call_id)
    shown = f"{type(arguments).__name__} {arguments!r}"
    return ToolCall(name=name, arguments=shown, id=call_id, invalid=True)


def _choice(choices: Any) -> Any:
    for choice in choices or []:
        if choice.index == 0:
            return choice
    return None


def _usage(obj: Any) -> dict[str, Any] | None:
    usage = getattr(obj, "usage", None)
    return usage.model_dump() if usage is not None else None


def _responses(transport: Any, case: Case) -> Outcome:
    client = _client(transport, case, "/responses")
    seen = _ResponseEvents()
    try:
        with client.responses.stream(**split_kwargs(client.responses.stream, request_body(case))) as stream:
            for event in stream:
                seen.add(event)
            final = stream.get_final_response()
    except Exception as exc:
        if isinstance(exc, RuntimeError) and "response.completed" in str(exc):
            # `get_final_response`: "Didn't receive a `response.completed` event." (the stream ended early)
            return seen.outcome(State.CUT, str(exc))
        return seen.outcome(_failure(exc), raised_error(exc))
    calls = tuple(
        _call(item.name, item.arguments, item.call_id)
        for item in final.output
        if item.type == "function_call"
    )
    text = "".join(
        part.text
        for item in final.output
        if item.type == "message"
        for part in item.content
        if part.type == "output_text"
    )
    return Outcome(tool_calls=calls, text=text, finish_reason=final.status, usage=_usage(final))


class _ResponseEvents:
    """What `responses.stream()` gave its user before it stopped short of `response.completed`."""

    def __init__(self) -> None:
        # function_call items announced by `response.output_item.done`, with their output_index: the
        # response lists them by it (interleaved items end out of it), as the final response would
        self.done: list[tuple[Any, Any]] = []
        # (output_index, content_index) -> the text so far: the SDK's `snapshot` on each text delta
        self.texts: dict[tuple[int, int], str] = {}
        self.terminal: Any = None  # the response of a `response.incomplete` / `response.failed`
        self.error: str | None = None  # an in-band `error` event's message, or the failed response's

    def add(self, event: Any) -> None:
        if event.type == "response.output_item.done" and event.item.type == "function_call":
            self.done.append((event.output_index, event.item))
        elif event.type == "response.output_text.delta":
            self.texts[(event.output_index, event.content_index)] = event.snapshot
        elif event.type == "response.output_text.done":
            self.texts[(event.output_index, event.content_index)] = event.text
        elif event.type in ("response.incomplete", "response.failed"):
            self.terminal = event.response
            failure = getattr(event.response, "error", None)
            if event.type == "response.failed" and self.error is None:
                self.error = getattr(failure, "message", None) or "response.failed"
        elif event.type == "error" and self.error is None:
            self.error = event.message

    def outcome(self, state: State, error: str) -> Outcome:
        """The calls announced done, the text streamed, the terminal status and usage seen; an
        in-band error the user was given makes the state error, with its message."""
        return Outcome(
            tool_calls=tuple(_call(i.name, i.arguments, i.call_id) for i in in_message_order(self.done)),
            text="".join(self.texts[key] for key in sorted(self.texts)),
            finish_reason=getattr(self.terminal, "status", None),
            state=State.ERROR if self.error is not None else state,
            error=self.error if self.error is not None else error,
            usage=_usage(self.terminal),
        )
