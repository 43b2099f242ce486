"""`google-adk`: Google's Agent Development Kit's own Gemini and Anthropic models over the replay transport.

An ADK agent run with `RunConfig(streaming_mode=StreamingMode.SSE)` calls its model's
`generate_content_async(llm_request, stream=True)`: every `LlmResponse` it yields while the stream
runs is `partial` (shown, never acted on: `base_llm_flow.py` runs the function calls of non-partial
events only), and the last one is the turn the agent acts on, its function calls run as tools.
This adapter makes that call on ADK's own model classes and reads that last response:
- `gemini`: `google.adk.models.Gemini`, whose google-genai `Client` is given the recording's
  backend and an async client over the replay transport in `client_kwargs` (as the class's
  docstring says to customize the client; `harness.accumulators.google_genai`); its
  `StreamingResponseAggregator` (`utils/streaming_utils.py`) builds the final response.
- `anthropic`: `google.adk.models.anthropic_llm.AnthropicLlm` with its `client` an
  `anthropic.AsyncAnthropic` on the replay transport; ADK reads the raw events itself
  (`_generate_content_streaming`).
The outcome is the final response's function calls (name, args, id) and its text parts (thoughts
left out), its finish reason (Gemini's own; for Anthropic ADK hands over only Google's
`FinishReason` its `stop_reason` is mapped to, so the finish is `FINISH_NOT_SURFACED`), its usage,
and `error` where ADK sets `error_code` (a finish other than STOP). Where ADK raises its user gets
no final response: the outcome is that error with the text of the partial responses so far.
Needs `pip install 'toolstream-harness[google-adk]'`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from harness.accumulators import google_genai
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
from harness.cassettes.outcome import FINISH_NOT_SURFACED, Outcome, State, ToolCall

if TYPE_CHECKING:
    from harness.mutate.case import Case

__all__ = ["accumulator", "run"]

NAME = "google-adk"
EXTRA = "google-adk"
DIALECTS = ("gemini", "anthropic")


def run(transport: Any, case: Case) -> Outcome:
    """One case through the ADK model's `generate_content_async(..., stream=True)`."""
    return asyncio.run(_stream(transport, case))


accumulator = Adapter(
    NAME,
    DIALECTS,
    run,
    needs=(("google.adk.models", EXTRA), ("google.adk.models.anthropic_llm", EXTRA)),
    environment=google_genai.ENVIRONMENT,
)


def _model(transport: Any, case: Case) -> tuple[Any, str]:
    """ADK's model object for the case's dialect, on the replay transport, and the model name."""
    body = request_body(case)
    if case.dialect == "gemini":
        name = google_genai.model_name(case)
        arguments = google_genai.client_arguments(case, transport, EXTRA)
        return require("google.adk.models", EXTRA).Gemini(model=name, client_kwargs=arguments), name
    anthropic = require("anthropic", EXTRA)
    name = str(body.get("model") or "claude-sonnet-4-5")
    client = anthropic.AsyncAnthropic(
        api_key="test",
        base_url=base_url(recorded_request(case), "/v1/messages"),
        http_client=sdk_http("anthropic", EXTRA).AsyncClient(transport=transport),
        max_retries=0,
    )
    llm = require("google.adk.models.anthropic_llm", EXTRA).AnthropicLlm
    return llm(model=name, max_tokens=int(body.get("max_tokens") or 1024), client=client), name


def _declarations(case: Case) -> list[Any]:
    """The recorded request's tools as google-genai `FunctionDeclaration`s (Gemini's
    `functionDeclarations`, or Anthropic's `name` / `input_schema`), their JSON schemas as sent."""
    types = require("google.genai.types", EXTRA)
    specs: list[dict[str, Any]] = []
    for tool in request_body(case).get("tools") or []:
        if not isinstance(tool, dict):
            continue
        listed = tool.get("functionDeclarations") or tool.get("function_declarations")
        specs.extend(s for s in (listed if isinstance(listed, list) else [tool]) if isinstance(s, dict))
    out = []
    for spec in specs:
        name = spec.get("name")
        schema = spec.get("parameters") or spec.get("input_schema") or {"type": "object"}
        if isinstance(name, str) and isinstance(schema, dict):
            out.append(
                types.FunctionDeclaration(
                    name=name, description=str(spec.get("description") or ""), parameters_json_schema=schema
                )
            )
    return out


async def _stream(transport: Any, case: Case) -> Outcome:
    types = require("google.genai.types", EXTRA)
    llm_request_type = require("google.adk.models.llm_request", EXTRA).LlmRequest
    model, name = _model(transport, case)
    declarations = _declarations(case)
    tool_config = request_body(case).get("toolConfig")  # Gemini's, as recorded (streamed arguments asked for)
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=declarations)] if declarations else None,
        tool_config=tool_config if case.dialect == "gemini" and isinstance(tool_config, dict) else None,
    )
    request = llm_request_type(
        model=name,
        contents=[types.Content(role="user", parts=[types.Part.from_text(text="toolstream")])],
        config=config,
    )
    streamed: list[str] = []  # the text of the partial responses, as a UI shows them
    final: Any = None
    # ADK hands over Google's FinishReason, to which it maps Anthropic's stop_reason: not Anthropic's own.
    notes = (FINISH_NOT_SURFACED,) if case.dialect == "anthropic" else ()
    try:
        async for response in model.generate_content_async(request, stream=True):
            if response.partial:
                streamed.append(_text(response))
            else:
                final = response
    except Exception as exc:  # whatever ADK raises: `client.raised`
        state = raised(exc, _cut(case))
        return Outcome(text="".join(streamed), state=state, error=raised_error(exc), notes=notes)
    if final is None:
        return Outcome(text="".join(streamed), notes=notes)
    usage = final.usage_metadata
    finish = final.finish_reason
    error = final.error_code
    return Outcome(
        tool_calls=tuple(_call(part.function_call) for part in _parts(final) if part.function_call),
        text=_text(final),
        finish_reason=None if notes or finish is None else str(getattr(finish, "value", finish)),
        state=State.ERROR if error else State.COMPLETE,
        error=f"{getattr(error, 'value', error)}: {final.error_message or ''}".strip() if error else None,
        usage=usage.model_dump(exclude_none=True) if usage is not None else None,
        notes=notes,
    )


def _cut(case: Case) -> tuple[type[BaseException], ...]:
    """What a cut raises: the HTTP library's transport errors (and the Anthropic SDK's wrapper)."""
    cut: tuple[type[BaseException], ...] = (require("httpx", EXTRA).TransportError,)
    if case.dialect == "anthropic":
        cut += (require("anthropic", EXTRA).APIConnectionError, sdk_http("anthropic", EXTRA).TransportError)
    return cut


def _parts(response: Any) -> list[Any]:
    content = response.content
    return list(content.parts or []) if content is not None else []


def _text(response: Any) -> str:
    return "".join(part.text for part in _parts(response) if part.text and not part.thought)


def _call(function_call: Any) -> ToolCall:
    return ToolCall(name=function_call.name or "", arguments=function_call.args or {}, id=function_call.id)
