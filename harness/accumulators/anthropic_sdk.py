"""`anthropic-sdk`: the real `anthropic` client's `messages.stream(...)` over the replay transport,
then `get_final_message()`: the SDK's own SSE parsing and `accumulate_event` decide the outcome.

When the SDK raises mid-stream (a transport error on a cut; an `APIStatusError` for an `error`
event; anything else, such as `RuntimeError("Unexpected event order")` or a JSON `ValueError`:
`client.raised`) the outcome is cut or error and holds only the tool_use blocks the SDK reported
stopped, with the text it streamed and the stop reason and usage of the message it had built.
Needs `pip install 'toolstream-harness[anthropic]'`.
"""

from __future__ import annotations

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
from harness.accumulators.openai_sdk import split_kwargs
from harness.cassettes.outcome import Outcome, State, ToolCall

if TYPE_CHECKING:
    from harness.mutate.case import Case

__all__ = ["accumulator", "run"]

NAME = "anthropic-sdk"


def client_for(transport: Any, case: Case) -> Any:
    """An `anthropic.Anthropic` client whose requests go to `transport`, without retries."""
    anthropic = require("anthropic", "anthropic")
    http = sdk_http("anthropic", "anthropic")
    return anthropic.Anthropic(
        api_key="test",
        base_url=base_url(recorded_request(case), "/v1/messages"),
        http_client=http.Client(transport=transport),
        max_retries=0,
    )


def run(transport: Any, case: Case) -> Outcome:
    """One case through `messages.stream(...)`."""
    anthropic = require("anthropic", "anthropic")
    http = sdk_http("anthropic", "anthropic")
    client = client_for(transport, case)
    # tool_use blocks the SDK reported stopped, with their index: the message lists them by index
    # (interleaved blocks stop out of it), so the calls are reported in that order, as the final
    # message would have them.
    stopped: list[tuple[Any, Any]] = []
    text: list[str] = []
    stream: Any = None
    try:
        with client.messages.stream(**split_kwargs(client.messages.stream, request_body(case))) as stream:
            for event in stream:
                if event.type == "content_block_stop" and event.content_block.type == "tool_use":
                    stopped.append((event.index, event.content_block))
                elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                    text.append(event.delta.text)
            final = stream.get_final_message()
    except Exception as exc:  # whatever the SDK raises: `client.raised`
        state = raised(exc, (http.RequestError, anthropic.APIConnectionError))
        return _partial(stopped, text, _snapshot(stream), state, exc)
    calls = tuple(_call(block) for block in final.content if block.type == "tool_use")
    final_text = "".join(block.text for block in final.content if block.type == "text")
    return Outcome(tool_calls=calls, text=final_text, finish_reason=final.stop_reason, usage=_usage(final))


accumulator = Adapter(
    NAME, ("anthropic",), run, needs=(("anthropic", "anthropic"),), http=("anthropic", "anthropic")
)


def _snapshot(stream: Any) -> Any:
    """The message the SDK had built when it raised (`current_message_snapshot`), None before
    `message_start`: its `stop_reason` and `usage` were the user's to read."""
    if stream is None:
        return None
    try:
        return stream.current_message_snapshot
    except AssertionError:  # the SDK asserts a snapshot exists: none before message_start
        return None


def _usage(message: Any) -> dict[str, Any] | None:
    return message.usage.model_dump() if getattr(message, "usage", None) is not None else None


def _call(block: Any) -> ToolCall:
    return ToolCall(name=block.name, arguments=block.input, id=block.id)


def _partial(
    stopped: list[tuple[Any, Any]], text: list[str], snapshot: Any, state: State, exc: Exception
) -> Outcome:
    return Outcome(
        tool_calls=tuple(_call(block) for block in in_message_order(stopped)),
        text="".join(text),
        finish_reason=getattr(snapshot, "stop_reason", None),
        state=state,
        error=raised_error(exc),
        usage=_usage(snapshot),
    )
