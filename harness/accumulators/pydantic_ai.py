"""`pydantic-ai`: pydantic-ai's own OpenAI chat and Anthropic models streaming over the replay transport.

`OpenAIChatModel` / `AnthropicModel` get an `openai.AsyncOpenAI` / `anthropic.AsyncAnthropic`
client on an async client of the HTTP library the SDK is built on (httpx2; httpx before it) over the
replay transport; `model.request_stream(...)` is
iterated to the end and `get()` gives the `ModelResponse` its user sees (the one an `Agent`
turns into tool calls). The recorded tools are passed as `function_tools`. The outcome is that
response's `ToolCallPart`s (string arguments parsed, as `args_as_dict()` does), its text parts
joined, the provider's own finish reason (`provider_details["finish_reason"]`, else pydantic-ai's
normalised one) and usage. Where pydantic-ai raises (`ModelConnectionError` on a cut, another
`ModelAPIError` for an in-band error, anything else such as `UnexpectedModelBehavior`:
`client.raised`) its user gets no response, but it has had the events streamed before the raise:
the outcome is that error with the text streamed so far and the tool calls pydantic-ai announced
complete with a `PartEndEvent` (an agent reading `stream_events()` may have run them), in the
message's order.
Needs `pip install 'toolstream-harness[pydantic-ai]'`.
"""

from __future__ import annotations

import asyncio
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
from harness.cassettes.outcome import Outcome, ToolCall
from harness.errors import NotApplicable

if TYPE_CHECKING:
    from harness.mutate.case import Case

__all__ = ["accumulator", "run"]

NAME = "pydantic-ai"
EXTRA = "pydantic-ai"
DIALECTS = ("openai-chat", "anthropic")


def run(transport: Any, case: Case) -> Outcome:
    """One case through `model.request_stream`."""
    return asyncio.run(_stream(transport, case))


accumulator = Adapter(
    NAME, DIALECTS, run, needs=(("pydantic_ai.models.openai", EXTRA), ("pydantic_ai.models.anthropic", EXTRA))
)


def _model(transport: Any, case: Case) -> Any:
    body = request_body(case)
    name = str(body.get("model") or "toolstream")
    sdk = "openai" if case.dialect == "openai-chat" else "anthropic"
    http_client = sdk_http(sdk, EXTRA).AsyncClient(transport=transport)
    if case.dialect == "openai-chat":
        openai = require("openai", EXTRA)
        models = require("pydantic_ai.models.openai", EXTRA)
        providers = require("pydantic_ai.providers.openai", EXTRA)
        client = openai.AsyncOpenAI(
            api_key="test",
            base_url=base_url(recorded_request(case), "/chat/completions"),
            http_client=http_client,
            max_retries=0,
        )
        return models.OpenAIChatModel(name, provider=providers.OpenAIProvider(openai_client=client))
    anthropic = require("anthropic", EXTRA)
    models = require("pydantic_ai.models.anthropic", EXTRA)
    providers = require("pydantic_ai.providers.anthropic", EXTRA)
    client = anthropic.AsyncAnthropic(
        api_key="test",
        base_url=base_url(recorded_request(case), "/v1/messages"),
        http_client=http_client,
        max_retries=0,
    )
    return models.AnthropicModel(name, provider=providers.AnthropicProvider(anthropic_client=client))


def _tools(case: Case) -> list[Any]:
    """The recorded request's tools as pydantic-ai `ToolDefinition`s."""
    tool_definition = require("pydantic_ai.tools", EXTRA).ToolDefinition
    out = []
    for tool in request_body(case).get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "custom":  # what it cannot ask for, it is not judged on
            raise NotApplicable(f"{NAME}: a custom (freeform) tool is not one pydantic-ai can declare")
        function = tool.get("function")
        spec: dict[str, Any] = function if isinstance(function, dict) else tool
        name = spec.get("name")
        schema = spec.get("parameters") or spec.get("input_schema") or {"type": "object"}
        if isinstance(name, str) and isinstance(schema, dict):
            out.append(tool_definition(name=name, parameters_json_schema=schema))
    return out


async def _stream(transport: Any, case: Case) -> Outcome:
    exceptions = require("pydantic_ai.exceptions", EXTRA)
    models = require("pydantic_ai.models", EXTRA)
    messages = require("pydantic_ai.messages", EXTRA)
    model = _model(transport, case)
    parameters = models.ModelRequestParameters(function_tools=_tools(case), allow_text_output=True)
    request = [messages.ModelRequest(parts=[messages.UserPromptPart("toolstream")])]
    stream: Any = None
    ended: list[tuple[Any, Any]] = []  # tool-call parts pydantic-ai announced complete, with their index
    try:
        async with model.request_stream(request, None, parameters) as stream:
            async for event in stream:
                if isinstance(event, messages.PartEndEvent) and event.part.part_kind == "tool-call":
                    ended.append((event.index, event.part))
            response = stream.get()
    except Exception as exc:  # whatever pydantic-ai raises: `client.raised`
        # ModelConnectionError came in 2.x: an older release raises the SDK's own connection error.
        cut = getattr(exceptions, "ModelConnectionError", None)
        state = raised(exc, (cut,) if cut is not None else _connection_errors(case))
        text = _text(stream.get().parts) if stream is not None else ""
        calls = tuple(_call(part) for part in in_message_order(ended))
        return Outcome(tool_calls=calls, text=text, state=state, error=raised_error(exc))
    details = response.provider_details or {}
    finish = details.get("finish_reason") or response.finish_reason
    usage = response.usage
    return Outcome(
        tool_calls=tuple(_call(part) for part in response.parts if part.part_kind == "tool-call"),
        text=_text(response.parts),
        finish_reason=finish if isinstance(finish, str) else None,
        usage={"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
    )


def _connection_errors(case: Case) -> tuple[type[BaseException], ...]:
    """What a cut raises where pydantic-ai has no `ModelConnectionError`: the SDK's and its HTTP library's."""
    sdk = "openai" if case.dialect == "openai-chat" else "anthropic"
    return (require(sdk, EXTRA).APIConnectionError, sdk_http(sdk, EXTRA).RequestError)


def _text(parts: Any) -> str:
    return "".join(part.content for part in parts if part.part_kind == "text")


def _call(part: Any) -> ToolCall:
    if isinstance(part.args, str):
        return ToolCall.from_text(part.tool_name, part.args, part.tool_call_id)
    return ToolCall(name=part.tool_name, arguments=part.args or {}, id=part.tool_call_id)
