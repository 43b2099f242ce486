"""`strands-agents`: the Strands Agents SDK's own model providers and event loop over the replay transport.

A Strands `Agent` streams each model call through `strands.event_loop.streaming.stream_messages(model,
system_prompt, messages, tool_specs)`: the provider's `model.stream(...)` turns its API's stream into
Bedrock Converse-shaped chunks, `process_stream` builds the message from them, and its last event,
`ModelStopReason`, is what the agent acts on (`stop_reason == "tool_use"`: the message's `toolUse`
blocks are run). This adapter makes that call, the recorded tools as `ToolSpec`s, on Strands' own
provider for the case's dialect:
- `bedrock-converse`: `BedrockModel` (the default model), on a `boto3.Session` with placeholder
  credentials; botocore sends through its `before-send` event hook (its documented seam for a
  handler that answers a request itself), which sends the request through an `httpx.Client` on the
  replay transport and gives botocore that response's raw bytes to parse as its event stream.
- `openai-chat`: `OpenAIModel(client=openai.AsyncOpenAI(..., http_client=httpx.AsyncClient(transport=...)))`.
- `anthropic`: `AnthropicModel(client_args={..., "http_client": httpx.AsyncClient(transport=...)})`.
- `gemini`: `GeminiModel(client_args=...)`, the google-genai client for the recording's backend on
  the replay transport (`harness.accumulators.google_genai`), the recorded `toolConfig` in `params`.
The outcome is the final message's `toolUse` blocks (their `input` as Strands parsed it: text that
is not JSON becomes `{}`, as its user gets it) and text blocks, and usage. The stop reason is
Strands' own (`StopReason`: the Converse vocabulary), the provider's for Bedrock Converse and
Anthropic, which use it too; for OpenAI and Gemini Strands maps the provider's to it, so the finish
is `FINISH_NOT_SURFACED`. Where Strands raises, its user gets no message: the outcome is that error
with the text streamed so far and no call.
Needs `pip install 'toolstream-harness[strands-agents]'`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from harness.accumulators import google_genai
from harness.accumulators.client import (
    Adapter,
    base_url,
    raised,
    raised_error,
    recorded_request,
    request_body,
    require,
)
from harness.cassettes.outcome import FINISH_NOT_SURFACED, Outcome, ToolCall
from harness.errors import NotApplicable

if TYPE_CHECKING:
    from harness.mutate.case import Case

__all__ = ["accumulator", "run"]

NAME = "strands-agents"
EXTRA = "strands-agents"
DIALECTS = ("bedrock-converse", "openai-chat", "anthropic", "gemini")
_MODEL_IN_URL = re.compile(r"/model/([^/:?]+)")  # a Converse URL's model id
_OWN_FINISH = ("bedrock-converse", "anthropic")  # whose stop reasons Strands hands over unchanged


def run(transport: Any, case: Case) -> Outcome:
    """One case through `stream_messages`, as an agent's event loop calls it."""
    return asyncio.run(_stream(transport, case))


accumulator = Adapter(
    NAME,
    DIALECTS,
    run,
    needs=(
        ("strands.event_loop.streaming", EXTRA),
        ("strands.models.bedrock", EXTRA),
        ("strands.models.openai", EXTRA),
        ("strands.models.anthropic", EXTRA),
        ("strands.models.gemini", EXTRA),
    ),
    environment=google_genai.ENVIRONMENT,
)


def _model(transport: Any, case: Case) -> Any:
    """Strands' provider for the case's dialect, on the replay transport."""
    httpx = require("httpx", EXTRA)
    body = request_body(case)
    request = recorded_request(case)
    if case.dialect == "bedrock-converse":
        boto3 = require("boto3", EXTRA)
        found = _MODEL_IN_URL.search(request.url)
        session = boto3.Session(
            aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1"
        )
        bedrock = require("strands.models.bedrock", EXTRA).BedrockModel
        config = require("botocore.config", EXTRA).Config(retries={"total_max_attempts": 1})  # no retry
        model_id = unquote(found.group(1)) if found else "toolstream"
        model = bedrock(model_id=model_id, boto_session=session, boto_client_config=config)
        model.client.meta.events.register("before-send.bedrock-runtime.*", _BotocoreSend(transport))
        return model
    if case.dialect == "gemini":
        gemini = require("strands.models.gemini", EXTRA).GeminiModel
        # The recorded tool config (streamed function-call arguments asked for) goes in as a
        # Strands user sets it: `params`, which GeminiModel passes into GenerateContentConfig.
        tool_config = body.get("toolConfig")
        return gemini(
            client_args=google_genai.client_arguments(case, transport, EXTRA),
            model_id=google_genai.model_name(case),
            params={"tool_config": tool_config} if isinstance(tool_config, dict) else {},
        )
    name = str(body.get("model") or "toolstream")
    if case.dialect == "openai-chat" and any(
        isinstance(tool, dict) and tool.get("type", "function") != "function"
        for tool in body.get("tools") or []
    ):
        # OpenAIModel declares every tool as a function: a stream answering a custom (freeform)
        # tool is one its request cannot ask for.
        raise NotApplicable(f"{NAME}: OpenAIModel declares function tools only; this request offers others")
    if case.dialect == "anthropic":
        anthropic = require("strands.models.anthropic", EXTRA).AnthropicModel
        client_args = {
            "api_key": "test",
            "base_url": base_url(request, "/v1/messages"),
            "http_client": httpx.AsyncClient(transport=transport),
            "max_retries": 0,
        }
        return anthropic(
            client_args=client_args, model_id=name, max_tokens=int(body.get("max_tokens") or 1024)
        )
    openai = require("openai", EXTRA)
    client = openai.AsyncOpenAI(
        api_key="test",
        base_url=base_url(request, "/chat/completions"),
        http_client=httpx.AsyncClient(transport=transport),
        max_retries=0,
    )
    return require("strands.models.openai", EXTRA).OpenAIModel(client=client, model_id=name)


class _BotocoreSend:
    """A botocore `before-send` handler: the prepared request sent through an `httpx.Client` on
    the replay transport, its response handed back as botocore's `AWSResponse` over the raw bytes."""

    def __init__(self, transport: Any) -> None:
        self.client = require("httpx", EXTRA).Client(transport=transport)

    def __call__(self, request: Any, **_: Any) -> Any:
        httpx = require("httpx", EXTRA)
        body = request.body
        sent = httpx.Request(
            request.method,
            request.url,
            headers=dict(request.headers.items()),
            content=body.read() if hasattr(body, "read") else body,
        )
        response = self.client.send(sent, stream=True)
        aws_response = require("botocore.awsrequest", EXTRA).AWSResponse
        return aws_response(request.url, response.status_code, dict(response.headers), _RawBody(response))


class _RawBody:
    """What botocore reads an `AWSResponse`'s body through (`stream()`, as urllib3's response)."""

    def __init__(self, response: Any) -> None:
        self.response = response

    def stream(self, *_: Any, **__: Any) -> Iterator[bytes]:
        yield from self.response.iter_raw()

    def read(self, *_: Any, **__: Any) -> bytes:
        return b"".join(self.response.iter_raw())

    def close(self) -> None:
        self.response.close()


def _tool_specs(case: Case) -> list[dict[str, Any]]:
    """The recorded request's tools as Strands `ToolSpec`s, whatever API's form they were sent in
    (Converse's `toolConfig.tools[].toolSpec`, OpenAI's `function`, Anthropic's, Gemini's
    `functionDeclarations`)."""
    body = request_body(case)
    listed: list[Any] = list(body.get("tools") or [])
    config = body.get("toolConfig")
    if isinstance(config, dict):
        listed += config.get("tools") or []
    specs: list[dict[str, Any]] = []
    for tool in listed:
        if not isinstance(tool, dict):
            continue
        declared = tool.get("functionDeclarations") or tool.get("function_declarations")
        if isinstance(declared, list):
            specs.extend(d for d in declared if isinstance(d, dict))
        else:
            spec = tool.get("toolSpec") or tool.get("function") or tool
            specs.append(spec if isinstance(spec, dict) else {})
    out = []
    for spec in specs:
        name = spec.get("name")
        schema = spec.get("inputSchema") or spec.get("parameters") or spec.get("input_schema")
        if isinstance(schema, dict) and isinstance(schema.get("json"), dict):
            schema = schema["json"]  # Converse wraps the JSON schema
        if isinstance(name, str):
            schema = schema if isinstance(schema, dict) else {"type": "object", "properties": {}}
            out.append(
                {
                    "name": name,
                    "description": str(spec.get("description") or name),
                    "inputSchema": {"json": schema},
                }
            )
    return out


async def _stream(transport: Any, case: Case) -> Outcome:
    streaming = require("strands.event_loop.streaming", EXTRA)
    stop_type = require("strands.types.events", EXTRA).ModelStopReason
    text_type = require("strands.types._events", EXTRA).TextStreamEvent
    model = _model(transport, case)
    messages = [{"role": "user", "content": [{"text": "toolstream"}]}]
    streamed: list[str] = []  # the text its callback handler was shown
    stop: Any = None
    own = case.dialect in _OWN_FINISH
    notes = () if own else (FINISH_NOT_SURFACED,)
    try:
        async for event in streaming.stream_messages(model, None, messages, _tool_specs(case)):
            if isinstance(event, stop_type):
                stop = event
            elif isinstance(event, text_type):
                streamed.append(str(event["data"]))
    except Exception as exc:  # whatever Strands raises: `client.raised`
        state = raised(exc, _cut())
        return Outcome(text="".join(streamed), state=state, error=raised_error(exc), notes=notes)
    if stop is None:
        return Outcome(text="".join(streamed), notes=notes)
    stop_reason, message, usage, _ = stop["stop"]
    content = message.get("content") or []
    return Outcome(
        tool_calls=tuple(_call(block["toolUse"]) for block in content if "toolUse" in block),
        text="".join(block["text"] for block in content if "text" in block),
        finish_reason=str(stop_reason) if own else None,
        usage=dict(usage) if usage else None,
        notes=notes,
    )


def _cut() -> tuple[type[BaseException], ...]:
    """What a cut raises: the HTTP library's transport errors, and the SDKs' wrappers of them."""
    cut: list[type[BaseException]] = [require("httpx", EXTRA).TransportError]
    for sdk in ("openai", "anthropic"):
        connection = getattr(require(sdk, EXTRA), "APIConnectionError", None)
        if connection is not None:
            cut.append(connection)
    return tuple(cut)


def _call(use: dict[str, Any]) -> ToolCall:
    return ToolCall(
        name=str(use.get("name") or ""), arguments=use.get("input"), id=use.get("toolUseId") or None
    )
