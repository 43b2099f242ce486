"""`agno`: Agno's own `OpenAIChat` and `Claude` models and their stream aggregation over the replay transport.

An Agno `Agent` run with `stream=True` calls `model.response_stream(...)`, whose every turn is
`model.process_response_stream(messages, assistant_message, stream_data, tools=...)` (the model's
`invoke_stream` parses each provider event into a `ModelResponse` delta, `_populate_stream_data`
collects them, and at the stream's end `_populate_assistant_message_from_stream_data` builds the
assistant message, its tool calls through the model's `parse_tool_calls`); each of the message's
calls then becomes a `FunctionCall` by `get_function_call_for_tool_call` (the arguments decoded, a
call it cannot decode answered with an error instead of run, one naming no declared function not
run at all) before the agent runs it (`models/base.py`, `Model.response_stream` and
`get_function_calls_to_run`). This adapter does exactly that on the case's dialect's model, the
recorded tools as Agno `Function`s (declared by the model's `_format_tools`, as
`response_stream` does; a server-side tool as the dict Agno passes through):
- `openai-chat`: `OpenAIChat`, its `openai.OpenAI` client given the SDK's HTTP client on the replay
  transport through `client_params` (Agno's own `http_client` field takes an `httpx.Client` only,
  which the httpx2-based SDK refuses: Agno ignores it with a warning).
- `anthropic`: `Claude` with `http_client` on the replay transport (the Anthropic SDK's HTTP
  library, as Agno's `resolve_http_client` requires) and the base URL through `client_params`.
Both with `max_retries=0` on the SDK client (Agno's own `retries` is 0 by default). The outcome
is the calls as the agent gets them (arguments Agno could not decode stay text: invalid), the
message's content and usage. Agno keeps no finish reason (`FINISH_NOT_SURFACED`). Where the stream
raises (Agno wraps every error in `ModelProviderError`), the run fails: the outcome is that error
with the content streamed so far, cut when what it wraps is a transport error.
Needs `pip install 'toolstream-harness[agno]'`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.accumulators.client import (
    Adapter,
    base_url,
    raised,
    raised_error,
    recorded_request,
    request_body,
    require,
    sdk_http,
)
from harness.cassettes.outcome import FINISH_NOT_SURFACED, Outcome, ToolCall
from harness.errors import NotApplicable

if TYPE_CHECKING:
    from harness.mutate.case import Case

__all__ = ["accumulator", "run"]

NAME = "agno"
EXTRA = "agno"
DIALECTS = ("openai-chat", "anthropic")
_NOTES = (FINISH_NOT_SURFACED,)


def run(transport: Any, case: Case) -> Outcome:
    """One case through `process_response_stream`, each call then through
    `get_function_call_for_tool_call`."""
    base = require("agno.models.base", EXTRA)
    message_type = require("agno.models.message", EXTRA).Message
    model = _model(transport, case)
    functions, builtins = _tools(case)
    messages = [message_type(role="user", content="toolstream")]
    assistant = message_type(role=model.assistant_message_role)
    stream_data = base.MessageData()
    # As `response_stream` sets them up before its model call.
    stream_data.response_metrics = base.MessageMetrics()
    stream_data.response_metrics.start_timer()
    model._ensure_message_metrics_initialized(assistant)
    streamed: list[str] = []  # the content the agent's stream showed its user
    try:
        for delta in model.process_response_stream(
            messages=messages,
            assistant_message=assistant,
            stream_data=stream_data,
            tools=model._format_tools([*functions.values(), *builtins]),
        ):
            if isinstance(delta.content, str):
                streamed.append(delta.content)
    except Exception as exc:  # the run fails: `client.raised`, on what Agno's error wraps
        cause = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
        state = raised(cause, _cut())
        return Outcome(text="".join(streamed), state=state, error=raised_error(exc), notes=_NOTES)
    calls = [_call(call, functions) for call in assistant.tool_calls or []]
    metrics = assistant.metrics
    return Outcome(
        tool_calls=tuple(call for call in calls if call is not None),
        text=assistant.content if isinstance(assistant.content, str) else "",
        usage={"input_tokens": metrics.input_tokens, "output_tokens": metrics.output_tokens}
        if metrics is not None
        else None,
        notes=_NOTES,
    )


accumulator = Adapter(
    NAME,
    DIALECTS,
    run,
    needs=(("agno.models.openai", EXTRA), ("agno.models.anthropic", EXTRA)),
)


def _model(transport: Any, case: Case) -> Any:
    """Agno's model for the case's dialect, its SDK client on the replay transport."""
    body = request_body(case)
    request = recorded_request(case)
    name = str(body.get("model") or "toolstream")
    if case.dialect == "anthropic":
        http = sdk_http("anthropic", EXTRA)
        return require("agno.models.anthropic", EXTRA).Claude(
            id=name,
            api_key="test",
            max_tokens=int(body.get("max_tokens") or 1024),
            http_client=http.Client(transport=transport),
            client_params={"base_url": base_url(request, "/v1/messages"), "max_retries": 0},
        )
    http = sdk_http("openai", EXTRA)
    return require("agno.models.openai", EXTRA).OpenAIChat(
        id=name,
        api_key="test",
        base_url=base_url(request, "/chat/completions"),
        max_retries=0,
        client_params={"http_client": http.Client(transport=transport)},
    )


def _tools(case: Case) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The recorded tools: function tools as Agno `Function`s by name (what its agent declares and
    looks calls up in), and the Anthropic server-side tools as the dicts Agno passes through."""
    function_type = require("agno.tools.function", EXTRA).Function
    functions: dict[str, Any] = {}
    builtins: list[dict[str, Any]] = []
    for tool in request_body(case).get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if case.dialect == "openai-chat":
            if tool.get("type", "function") != "function":
                raise NotApplicable(
                    f"{NAME}: OpenAIChat declares function tools only; this request offers others"
                )
            spec = tool["function"] if isinstance(tool.get("function"), dict) else tool
            schema = spec.get("parameters")
        elif "input_schema" in tool or tool.get("type") in (None, "custom"):
            spec, schema = tool, tool.get("input_schema")
        else:  # a server-side tool (web search, tool search): Agno hands the dict on as it is
            builtins.append(tool)
            continue
        name = str(spec.get("name") or "tool")
        functions[name] = function_type(
            name=name,
            description=str(spec.get("description") or name),
            parameters=schema if isinstance(schema, dict) else {"type": "object", "properties": {}},
        )
    return functions, builtins


def _call(call: dict[str, Any], functions: dict[str, Any]) -> ToolCall | None:
    """A call of the message as the agent gets it: decoded by Agno's own
    `get_function_call_for_tool_call`; None where the agent runs nothing (no declared function of
    that name, or a call whose type is not `function`: the model is told the tool does not exist)."""
    found = require("agno.utils.tools", EXTRA).get_function_call_for_tool_call(call, functions)
    if found is None:
        return None
    function = call.get("function") or {}
    name = str(function.get("name") or "")
    if found.error is not None:  # not decoded: the model gets the error, the tool is not run
        return ToolCall.from_text(name, str(function.get("arguments") or ""), found.call_id or None)
    return ToolCall(name=name, arguments=found.arguments or {}, id=found.call_id or None)


def _cut() -> tuple[type[BaseException], ...]:
    """What a cut raises: the HTTP libraries' transport errors, and the SDKs' wrappers of them."""
    cut: list[type[BaseException]] = []
    for sdk in ("openai", "anthropic"):
        cut.append(sdk_http(sdk, EXTRA).TransportError)
        cut.append(require(sdk, EXTRA).APIConnectionError)
    return tuple(cut)
