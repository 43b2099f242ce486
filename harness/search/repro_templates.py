'''The code of `toolstream repro` scripts: the mock transport, one `run()` per library, and `main`;
for a gateway's script, the loopback upstream, one `judge()` per downstream dialect, and its `main`.

Each `run()` does what the matching built-in adapter in `harness.accumulators` does and
returns the outcome as plain data (`outcome(...)`, calls made by `call(...)`), using the names the
script defines above it: READS, CUT, STATUS, HEADERS, URL, REQUEST, DIALECT, EXPECTED.
'''

from __future__ import annotations

__all__ = [
    "AGNO",
    "ANTHROPIC",
    "GATEWAY_JUDGES",
    "GATEWAY_MAIN",
    "GATEWAY_UPSTREAM",
    "GOOGLE_ADK",
    "HELPERS",
    "LANGCHAIN_ANTHROPIC",
    "LANGCHAIN_OPENAI",
    "LITELLM",
    "MAIN",
    "OPENAI",
    "PYDANTIC_AI",
    "SMOLAGENTS",
    "STRANDS_AGENTS",
    "TRANSPORT",
]

TRANSPORT = '''
def mock_transport(httpx):
    """`MockTransport` of `httpx` (or its fork `httpx2`) answering any request with the reads above."""

    class Reads(httpx.SyncByteStream, httpx.AsyncByteStream):
        def __init__(self, request):
            self.request = request

        def __iter__(self):
            yield from READS
            self.cut()

        async def __aiter__(self):
            for read in READS:
                yield read
            self.cut()

        def cut(self):
            if CUT is not None:  # the stream was cut: end it with the transport error the client saw
                raise getattr(httpx, CUT[0], httpx.ReadError)(CUT[1], request=self.request)

    return httpx.MockTransport(lambda request: httpx.Response(STATUS, headers=HEADERS, stream=Reads(request)))
'''

OPENAI = '''
import httpx2
import openai
from openai.lib.streaming.chat import ChatCompletionStreamState


def run():
    """`chat.completions.create(stream=True)` fed to the SDK's `ChatCompletionStreamState` (what
    `.stream()` uses), then `get_final_completion()`. If the SDK raises a transport or API error,
    its user has the calls announced done and the text and finish reason of the snapshot."""
    http_client = httpx2.Client(transport=mock_transport(httpx2))
    client = openai.OpenAI(api_key="sk-test", base_url=URL, http_client=http_client, max_retries=0)
    state = ChatCompletionStreamState()
    done = {}  # tool-call index -> its `tool_calls.function.arguments.done` event
    chunks = 0
    try:
        with client.chat.completions.create(**REQUEST, stream=True) as stream:
            for chunk in stream:
                chunks += 1
                for event in state.handle_chunk(chunk):
                    if event.type == "tool_calls.function.arguments.done":
                        done[event.index] = event
    except (httpx2.RequestError, openai.APIError) as exc:
        cut = isinstance(exc, httpx2.RequestError | openai.APIConnectionError)
        if chunks == 0:
            return outcome(state="cut" if cut else "error", error=str(exc))
        choice = next((c for c in state.current_completion_snapshot.choices if c.index == 0), None)
        known = list(choice.message.tool_calls or []) if choice is not None else []
        return outcome(
            calls=[
                call(e.name, e.arguments, known[i].id if i < len(known) else None)
                for i, e in sorted(done.items())
            ],
            text=(choice.message.content or "") if choice is not None else "",
            finish_reason=choice.finish_reason if choice is not None else None,
            state="cut" if cut else "error",
            error=str(exc),
        )
    if chunks == 0:
        return outcome()
    final = state.get_final_completion()
    choice = next((c for c in final.choices if c.index == 0), None)
    if choice is None:
        return outcome()
    return outcome(
        calls=[call(c.function.name, c.function.arguments or "", c.id) for c in choice.message.tool_calls or []],
        text=choice.message.content or "",
        finish_reason=choice.finish_reason,
    )
'''

ANTHROPIC = '''
import anthropic
import httpx2


def run():
    """`messages.stream(...)`, then `get_final_message()`. If the SDK raises a transport or API
    error, its user has the tool_use blocks it reported stopped, the text it streamed and the stop
    reason of its message snapshot."""
    http_client = httpx2.Client(transport=mock_transport(httpx2))
    client = anthropic.Anthropic(api_key="sk-test", base_url=URL, http_client=http_client, max_retries=0)
    stopped, text, stream = [], [], None
    try:
        with client.messages.stream(**REQUEST) as stream:
            for event in stream:
                if event.type == "content_block_stop" and event.content_block.type == "tool_use":
                    stopped.append(event.content_block)
                elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                    text.append(event.delta.text)
            final = stream.get_final_message()
    except (httpx2.RequestError, anthropic.APIConnectionError, anthropic.APIStatusError) as exc:
        try:
            snapshot = stream.current_message_snapshot if stream is not None else None
        except AssertionError:  # no message_start yet
            snapshot = None
        return outcome(
            calls=[call(b.name, b.input, b.id) for b in stopped],
            text="".join(text),
            finish_reason=getattr(snapshot, "stop_reason", None),
            state="error" if isinstance(exc, anthropic.APIStatusError) else "cut",
            error=str(exc),
        )
    return outcome(
        calls=[call(b.name, b.input, b.id) for b in final.content if b.type == "tool_use"],
        text="".join(b.text for b in final.content if b.type == "text"),
        finish_reason=final.stop_reason,
    )
'''

PYDANTIC_AI = '''
import asyncio

import httpx2
from pydantic_ai.exceptions import ModelAPIError, ModelConnectionError
from pydantic_ai.messages import ModelRequest, UserPromptPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import ToolDefinition


def model():
    http_client = httpx2.AsyncClient(transport=mock_transport(httpx2))
    if DIALECT == "openai-chat":
        import openai
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        client = openai.AsyncOpenAI(api_key="sk-test", base_url=URL, http_client=http_client, max_retries=0)
        return OpenAIChatModel(REQUEST["model"], provider=OpenAIProvider(openai_client=client))
    import anthropic
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=URL, http_client=http_client, max_retries=0)
    return AnthropicModel(REQUEST["model"], provider=AnthropicProvider(anthropic_client=client))


def tools():
    out = []
    for tool in REQUEST.get("tools") or []:
        spec = tool.get("function", tool)
        schema = spec.get("parameters") or spec.get("input_schema") or {"type": "object"}
        out.append(ToolDefinition(name=spec["name"], parameters_json_schema=schema))
    return out


async def stream_response():
    parameters = ModelRequestParameters(function_tools=tools(), allow_text_output=True)
    request = [ModelRequest(parts=[UserPromptPart("toolstream")])]
    stream = None
    try:
        async with model().request_stream(request, None, parameters) as stream:
            async for _event in stream:
                pass
            response = stream.get()
    except ModelAPIError as exc:  # the user of a stream that raised gets no response, only its text so far
        parts = stream.get().parts if stream is not None else []
        return outcome(
            text="".join(p.content for p in parts if p.part_kind == "text"),
            state="cut" if isinstance(exc, ModelConnectionError) else "error",
            error=str(exc),
        )
    finish = (response.provider_details or {}).get("finish_reason") or response.finish_reason
    return outcome(
        calls=[call(p.tool_name, p.args or {}, p.tool_call_id) for p in response.parts if p.part_kind == "tool-call"],
        text="".join(p.content for p in response.parts if p.part_kind == "text"),
        finish_reason=finish,
    )


def run():
    """pydantic-ai's own model (`OpenAIChatModel` or `AnthropicModel`): `request_stream(...)` read to
    the end, then `get()`: the `ModelResponse` an Agent turns into tool calls."""
    return asyncio.run(stream_response())
'''

LITELLM = '''
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else litellm fetches a cost map at import

import httpx
import litellm
import openai
from litellm.litellm_core_utils.core_helpers import map_finish_reason
from litellm.llms.custom_httpx.http_handler import HTTPHandler


def expected_as_reported(expected):
    """litellm reports an Anthropic stop_reason in OpenAI's words (`map_finish_reason`: tool_use is
    tool_calls): the expected one is translated with litellm's own map, so only a wrong one differs."""
    if DIALECT == "anthropic" and expected["finish_reason"] is not None:
        return {**expected, "finish_reason": map_finish_reason(expected["finish_reason"])}
    return expected


def tools():
    out = []
    for tool in REQUEST.get("tools") or []:
        if "function" in tool:
            out.append(tool)
        else:  # an Anthropic tool, in the OpenAI form a litellm user writes
            schema = tool.get("input_schema") or {"type": "object"}
            out.append({"type": "function", "function": {"name": tool["name"], "parameters": schema}})
    return out


def run():
    """`litellm.completion(stream=True)` with the mock transport given through `client=` (litellm's
    `HTTPHandler` for anthropic/, an `openai.OpenAI` client for openai/), the chunks then built into
    one message by `litellm.stream_chunk_builder`, as litellm documents."""
    http_client = httpx.Client(transport=mock_transport(httpx))
    if DIALECT == "anthropic":
        provider = {"model": "anthropic/" + REQUEST["model"], "client": HTTPHandler(client=http_client)}
    else:
        client = openai.OpenAI(api_key="sk-test", base_url=URL, http_client=http_client, max_retries=0)
        provider = {"model": "openai/" + REQUEST["model"], "client": client}
    chunks = []
    try:
        for chunk in litellm.completion(
            messages=[{"role": "user", "content": "toolstream"}],
            tools=tools() or None,
            stream=True,
            api_key="sk-test",
            api_base=URL,
            max_retries=0,
            **provider,
        ):
            chunks.append(chunk)
    except openai.APIError as exc:  # the user of a stream that raised gets no message, only its text so far
        cause = getattr(exc, "original_exception", None) or exc
        built = litellm.stream_chunk_builder(chunks) if chunks else None
        return outcome(
            text=(built.choices[0].message.content or "") if built is not None else "",
            state="cut" if isinstance(cause, openai.APIConnectionError) else "error",
            error=str(exc),
        )
    if not chunks:
        return outcome()
    final = litellm.stream_chunk_builder(chunks)
    choice = final.choices[0]
    return outcome(
        calls=[call(c.function.name, c.function.arguments or "", c.id) for c in choice.message.tool_calls or []],
        text=choice.message.content or "",
        finish_reason=choice.finish_reason,
    )
'''

# The google-genai client arguments both Gemini-reading templates build: the recording's backend
# (Vertex AI for a URL under /projects/.../locations/..., else the Gemini API), on the mock transport.
GENAI_CLIENT = '''

def genai_client_args(http_client):
    from google.genai import types

    options = types.HttpOptions(httpx_async_client=http_client)
    vertex = re.search(r"/projects/([^/]+)/locations/([^/]+)/", URL + "/")
    if vertex is None:
        return {"api_key": "sk-test", "http_options": options}
    from google.oauth2.credentials import Credentials

    return {"vertexai": True, "project": vertex[1], "location": vertex[2], "credentials": Credentials(token="test"),
            "http_options": options}


def gemini_model_name():
    found = re.search(r"/models/([^/:?]+)$", URL)
    return found[1] if found else "gemini-2.5-flash"
'''

GOOGLE_ADK = """
import asyncio
import os
import re

os.environ.setdefault("GOOGLE_GENAI_HTTP_CLIENT", "httpx")  # google-genai on httpx, the client handed over

import anthropic
import httpx
from google.adk.models import Gemini
from google.adk.models.anthropic_llm import AnthropicLlm
from google.adk.models.llm_request import LlmRequest
from google.genai import errors, types
""" + GENAI_CLIENT + '''

def expected_as_reported(expected):
    """ADK hands over Google's FinishReason, to which it maps Anthropic's stop_reason: not compared."""
    return {**expected, "finish_reason": None} if DIALECT == "anthropic" else expected


def anthropic_http():
    """The HTTP library the installed anthropic SDK is built on (httpx2 from 1.0, httpx before)."""
    from anthropic import _base_client

    return getattr(_base_client, "httpx2", None) or httpx


def model():
    if DIALECT == "gemini":
        http_client = httpx.AsyncClient(transport=mock_transport(httpx))
        return Gemini(model=gemini_model_name(), client_kwargs=genai_client_args(http_client)), gemini_model_name()
    http = anthropic_http()
    http_client = http.AsyncClient(transport=mock_transport(http))
    client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=URL, http_client=http_client, max_retries=0)
    return AnthropicLlm(model=REQUEST["model"], max_tokens=REQUEST["max_tokens"], client=client), REQUEST["model"]


def declarations():
    out = []
    for tool in REQUEST.get("tools") or []:
        for spec in tool.get("functionDeclarations") or [tool]:
            schema = spec.get("parameters") or spec.get("input_schema") or {"type": "object"}
            out.append(types.FunctionDeclaration(
                name=spec["name"], description=spec.get("description") or "", parameters_json_schema=schema
            ))
    return out


def text_of(response):
    parts = (response.content.parts or []) if response.content is not None else []
    return "".join(p.text for p in parts if p.text and not p.thought)


async def stream_response():
    llm, name = model()
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=declarations())] if REQUEST.get("tools") else None,
        tool_config=REQUEST.get("toolConfig") if DIALECT == "gemini" else None,
    )
    contents = [types.Content(role="user", parts=[types.Part.from_text(text="toolstream")])]
    request = LlmRequest(model=name, contents=contents, config=config)
    transport_errors = (httpx.TransportError, anthropic_http().TransportError, anthropic.APIConnectionError)
    streamed, final = [], None
    try:
        async for response in llm.generate_content_async(request, stream=True):
            if response.partial:
                streamed.append(text_of(response))
            else:
                final = response
    except (*transport_errors, anthropic.APIError, errors.APIError) as exc:  # no final response: its text so far
        cut = isinstance(exc, transport_errors)
        return outcome(text="".join(streamed), state="cut" if cut else "error", error=str(exc))
    if final is None:
        return outcome(text="".join(streamed))
    parts = (final.content.parts or []) if final.content is not None else []
    finish = final.finish_reason
    return outcome(
        calls=[call(p.function_call.name, p.function_call.args or {}, p.function_call.id) for p in parts
               if p.function_call],
        text=text_of(final),
        finish_reason=None if DIALECT == "anthropic" or finish is None else getattr(finish, "value", finish),
        state="error" if final.error_code else "complete",
        error=f"{final.error_code}: {final.error_message or ''}" if final.error_code else None,
    )


def run():
    """ADK's own model (`Gemini`, or `AnthropicLlm` with its client on the mock transport):
    `generate_content_async(..., stream=True)` as an agent run with `StreamingMode.SSE` calls it,
    the last, non-partial response being the turn the agent acts on (runs its function calls)."""
    return asyncio.run(stream_response())
'''

STRANDS_AGENTS = """
import asyncio
import os
import re

os.environ.setdefault("GOOGLE_GENAI_HTTP_CLIENT", "httpx")  # google-genai on httpx, the client handed over

import anthropic
import httpx
import openai
from strands.event_loop.streaming import stream_messages
from strands.types._events import TextStreamEvent
from strands.types.events import ModelStopReason
""" + GENAI_CLIENT + '''

def expected_as_reported(expected):
    """Strands hands over its own StopReason (Converse's words): Anthropic's stop_reason as it is,
    OpenAI's and Gemini's mapped to it, so theirs is not compared."""
    return expected if DIALECT == "anthropic" else {**expected, "finish_reason": None}


def model():
    http_client = httpx.AsyncClient(transport=mock_transport(httpx))
    if DIALECT == "gemini":
        from strands.models.gemini import GeminiModel

        config = REQUEST.get("toolConfig")
        return GeminiModel(client_args=genai_client_args(http_client), model_id=gemini_model_name(),
                           params={"tool_config": config} if config else {})
    if DIALECT == "anthropic":
        from strands.models.anthropic import AnthropicModel

        client_args = {"api_key": "sk-test", "base_url": URL, "http_client": http_client, "max_retries": 0}
        return AnthropicModel(client_args=client_args, model_id=REQUEST["model"], max_tokens=REQUEST["max_tokens"])
    from strands.models.openai import OpenAIModel

    client = openai.AsyncOpenAI(api_key="sk-test", base_url=URL, http_client=http_client, max_retries=0)
    return OpenAIModel(client=client, model_id=REQUEST["model"])


def tool_specs():
    out = []
    for tool in REQUEST.get("tools") or []:
        for spec in tool.get("functionDeclarations") or [tool.get("function", tool)]:
            schema = spec.get("parameters") or spec.get("input_schema") or {"type": "object", "properties": {}}
            out.append({"name": spec["name"], "description": spec.get("description") or spec["name"],
                        "inputSchema": {"json": schema}})
    return out


async def stream_response():
    messages = [{"role": "user", "content": [{"text": "toolstream"}]}]
    streamed, stop = [], None
    try:
        async for event in stream_messages(model(), None, messages, tool_specs()):
            if isinstance(event, ModelStopReason):
                stop = event
            elif isinstance(event, TextStreamEvent):
                streamed.append(event["data"])
    except (httpx.TransportError, openai.APIError, anthropic.APIError) as exc:  # no message: its text so far
        cut = isinstance(exc, (httpx.TransportError, openai.APIConnectionError, anthropic.APIConnectionError))
        return outcome(text="".join(streamed), state="cut" if cut else "error", error=str(exc))
    if stop is None:
        return outcome(text="".join(streamed))
    stop_reason, message, _usage, _metrics = stop["stop"]
    content = message.get("content") or []
    return outcome(
        calls=[call(b["toolUse"]["name"], b["toolUse"]["input"], b["toolUse"]["toolUseId"]) for b in content
               if "toolUse" in b],
        text="".join(b["text"] for b in content if "text" in b),
        finish_reason=stop_reason if DIALECT == "anthropic" else None,
    )


def run():
    """Strands' own model (`OpenAIModel`, `AnthropicModel` or `GeminiModel`, its client on the mock
    transport) through `stream_messages`, as an Agent's event loop calls it: the message of its last
    event (`ModelStopReason`) is the turn the agent acts on (runs its toolUse blocks)."""
    return asyncio.run(stream_response())
'''


AGNO = '''
import anthropic
import httpx2
import openai
from agno.exceptions import ModelProviderError
from agno.metrics import MessageMetrics
from agno.models.anthropic import Claude
from agno.models.base import MessageData
from agno.models.message import Message
from agno.models.openai import OpenAIChat
from agno.tools.function import Function
from agno.utils.tools import get_function_call_for_tool_call


def expected_as_reported(expected):
    """Agno keeps no finish reason: not compared."""
    return {**expected, "finish_reason": None}


def model():
    http_client = httpx2.Client(transport=mock_transport(httpx2))  # the SDKs' HTTP library
    if DIALECT == "anthropic":
        return Claude(id=REQUEST["model"], api_key="sk-test", max_tokens=REQUEST["max_tokens"],
                      http_client=http_client, client_params={"base_url": URL, "max_retries": 0})
    # OpenAIChat's own `http_client` takes an httpx.Client only: the SDK's goes in its client_params.
    return OpenAIChat(id=REQUEST["model"], api_key="sk-test", base_url=URL, max_retries=0,
                      client_params={"http_client": http_client})


def tools():
    """The recorded function tools as Agno Functions by name; server-side tools as dicts."""
    functions, builtins = {}, []
    for tool in REQUEST.get("tools") or []:
        spec = tool.get("function", tool)
        schema = spec.get("parameters") or spec.get("input_schema")
        if DIALECT == "anthropic" and schema is None and tool.get("type") not in (None, "custom"):
            builtins.append(tool)
            continue
        functions[spec["name"]] = Function(name=spec["name"], description=spec.get("description") or spec["name"],
                                           parameters=schema or {"type": "object", "properties": {}})
    return functions, builtins


def run():
    """Agno's own model (`OpenAIChat` or `Claude`, its SDK client on the mock transport) through
    `process_response_stream`, as `Model.response_stream` runs each turn of an `Agent` run with
    `stream=True`; each call of the built message then through `get_function_call_for_tool_call`, as
    `get_function_calls_to_run` does before the agent runs it (a call it cannot decode is not run;
    one it finds no function for is not run at all)."""
    agno_model = model()
    functions, builtins = tools()
    assistant = Message(role="assistant")
    stream_data = MessageData(response_metrics=MessageMetrics())
    agno_model._ensure_message_metrics_initialized(assistant)
    streamed = []
    try:
        for delta in agno_model.process_response_stream(
            messages=[Message(role="user", content="toolstream")], assistant_message=assistant,
            stream_data=stream_data, tools=agno_model._format_tools([*functions.values(), *builtins]),
        ):
            if isinstance(delta.content, str):
                streamed.append(delta.content)
    except ModelProviderError as exc:  # the run fails: the text so far, no call
        cut = isinstance(exc.__cause__, (httpx2.TransportError, openai.APIConnectionError,
                                         anthropic.APIConnectionError))
        return outcome(text="".join(streamed), state="cut" if cut else "error", error=str(exc))
    calls = []
    for tool_call in assistant.tool_calls or []:
        found = get_function_call_for_tool_call(tool_call, functions)
        if found is None:  # no function of that name, or not of type "function": not run
            continue
        function = tool_call.get("function") or {}
        if found.error is not None:  # not decoded: the model is sent the error, the tool is not run
            calls.append({"id": found.call_id, "name": function.get("name"),
                          "arguments": function.get("arguments") or "", "invalid": True})
        else:
            calls.append(call(function.get("name"), found.arguments or {}, found.call_id))
    return outcome(calls=calls, text=assistant.content if isinstance(assistant.content, str) else "")
'''


SMOLAGENTS = '''
import httpx
import openai
from smolagents.models import (
    ChatMessage,
    MessageRole,
    OpenAIModel,
    agglomerate_stream_deltas,
    parse_json_if_needed,
)
from smolagents.tools import Tool


def expected_as_reported(expected):
    """smolagents keeps no finish reason: not compared."""
    return {**expected, "finish_reason": None}


def tools():
    out = []
    for tool in REQUEST.get("tools") or []:
        spec = tool["function"]
        properties = (spec.get("parameters") or {}).get("properties") or {}
        inputs = {k: {"type": "any", **v, "description": v.get("description") or k} for k, v in properties.items()}
        attributes = {"name": spec["name"], "description": spec.get("description") or spec["name"], "inputs": inputs,
                      "output_type": "string", "skip_forward_signature_validation": True,
                      "forward": lambda self, **_: ""}
        out.append(type("RecordedTool", (Tool,), attributes)())
    return out


def run():
    """smolagents' own `OpenAIModel` (its `openai.OpenAI` client on the mock transport):
    `generate_stream(...)` with the tools, the deltas built into one message by
    `agglomerate_stream_deltas`, each call's arguments through `parse_json_if_needed`, as a
    `ToolCallingAgent` step with `stream_outputs=True` does before running the calls."""
    http_client = httpx.Client(transport=mock_transport(httpx))
    model = OpenAIModel(model_id=REQUEST["model"], api_base=URL, api_key="sk-test",
                        client_kwargs={"http_client": http_client, "max_retries": 0})
    messages = [ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": "toolstream"}])]
    deltas = []
    try:
        for delta in model.generate_stream(messages, tools_to_call_from=tools() or None):
            deltas.append(delta)
    except (httpx.TransportError, openai.APIError) as exc:  # the step fails: the text so far, no call
        cut = isinstance(exc, (httpx.TransportError, openai.APIConnectionError))
        return outcome(text="".join(d.content or "" for d in deltas), state="cut" if cut else "error", error=str(exc))
    message = agglomerate_stream_deltas(deltas)
    return outcome(
        calls=[call(c.function.name, parse_json_if_needed(c.function.arguments), c.id or None)
               for c in message.tool_calls or []],
        text=message.content or "",
    )
'''


# What both langchain templates do with the model: `.stream()` summed, and the summed message read.
LANGCHAIN_SUMMED = '''def summed(model, error_types, cut_types):
    """`.stream(...)` of the model with the recorded tools bound, its chunks summed with `+`. If it
    raises, langchain's user has no message: the text and finish reason streamed so far, no call."""
    tools = REQUEST.get("tools")
    runnable = model.bind_tools(tools) if tools else model
    total = None
    try:
        for chunk in runnable.stream("toolstream"):
            total = chunk if total is None else total + chunk
    except error_types as exc:
        got = message_outcome(total)
        return outcome(text=got["text"], finish_reason=got["finish_reason"],
                       state="cut" if isinstance(exc, cut_types) else "error", error=str(exc))
    return message_outcome(total)


def message_outcome(message):
    """The summed message's `tool_calls` and `invalid_tool_calls`, in the order of its chunks."""
    if message is None:
        return outcome()
    from langchain_core.utils.json import parse_partial_json

    valid, invalid = iter(message.tool_calls), iter(message.invalid_tool_calls)
    calls = []
    for chunk in message.tool_call_chunks:
        try:
            is_valid = isinstance(parse_partial_json(chunk["args"]) if chunk["args"] else {}, dict)
        except Exception:
            is_valid = False
        found = next(valid, None) if is_valid else next(invalid, None)
        if found is not None:
            calls.append(call(found["name"], found["args"] or ({} if is_valid else ""), found["id"]))
            if not is_valid:
                calls[-1] = {**calls[-1], "arguments": found["args"] or "", "invalid": True}
    metadata = message.response_metadata or {}
    content = message.content
    text = content if isinstance(content, str) else "".join(
        b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )
    finish = metadata.get("finish_reason") or metadata.get("stop_reason")
    return outcome(calls=calls, text=text, finish_reason=finish if isinstance(finish, str) else None)


'''


LANGCHAIN_OPENAI = '''
import httpx2
import openai
from langchain_openai import ChatOpenAI


''' + LANGCHAIN_SUMMED + '''def run():
    \"\"\"`ChatOpenAI(...).stream(...)` (its `openai` client on the mock transport), chunks summed.\"\"\"
    model = ChatOpenAI(
        model=REQUEST["model"],
        api_key="sk-test",
        base_url=URL,
        http_client=httpx2.Client(transport=mock_transport(httpx2)),
        max_retries=0,
    )
    return summed(model, (httpx2.RequestError, openai.APIError), (httpx2.RequestError, openai.APIConnectionError))
'''

LANGCHAIN_ANTHROPIC = '''
import anthropic
import httpx2
from langchain_anthropic import ChatAnthropic


''' + LANGCHAIN_SUMMED + '''def run():
    \"\"\"`ChatAnthropic(...).stream(...)` (its `anthropic` client on the mock transport), chunks summed.\"\"\"
    model = ChatAnthropic(
        model=REQUEST["model"], api_key="sk-test", base_url=URL, max_tokens=REQUEST["max_tokens"], max_retries=0
    )
    # ChatAnthropic keeps its SDK client in the cached property `_client`: give it one on the mock transport.
    http_client = httpx2.Client(transport=mock_transport(httpx2))
    model.__dict__["_client"] = anthropic.Anthropic(
        api_key="sk-test", base_url=URL, http_client=http_client, max_retries=0
    )
    errors = (httpx2.RequestError, anthropic.APIConnectionError, anthropic.APIStatusError)
    return summed(model, errors, (httpx2.RequestError, anthropic.APIConnectionError))
'''

HELPERS = '''
def expected_as_reported(expected):
    """The expectation in the library's own vocabulary (the same outcome, spelled its way)."""
    return expected


def call(name, arguments, id=None):
    """A call as the harness reports it: JSON text parsed ("" is {}), text that does not parse kept as invalid."""
    if isinstance(arguments, str):
        if not arguments.strip():
            return {"id": id, "name": name, "arguments": {}}
        try:
            return {"id": id, "name": name, "arguments": json.loads(arguments)}
        except ValueError:
            return {"id": id, "name": name, "arguments": arguments, "invalid": True}
    return {"id": id, "name": name, "arguments": arguments}


def outcome(calls=(), text="", finish_reason=None, state="complete", error=None):
    out = {"tool_calls": list(calls), "text": text, "finish_reason": finish_reason, "state": state}
    if error is not None:
        out["error"] = error
    return out


def shown(data):
    """JSON for the terminal: the control characters JSON leaves as they are (DEL, C1) escaped too."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    return "".join(f"\\\\u{ord(c):04x}" if 0x7F <= ord(c) <= 0x9F else c for c in text)


def same_json(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def differences(expected, actual):
    """What the library got wrong, one line each (an id is checked only where the stream has one)."""
    out = []
    want, got = expected["tool_calls"], actual["tool_calls"]
    if len(want) != len(got):
        out.append(f"tool_calls: {len(want)} expected, got {len(got)}")
    for n, (w, g) in enumerate(zip(want, got, strict=False), start=1):
        if w["name"] != g["name"]:
            out.append(f"call {n}: name {w['name']!r} expected, got {g['name']!r}")
        if w.get("id") is not None and w["id"] != g.get("id"):
            out.append(f"call {n}: id {w['id']!r} expected, got {g.get('id')!r}")
        if bool(w.get("invalid")) != bool(g.get("invalid")) or not same_json(w["arguments"], g["arguments"]):
            out.append(f"call {n}: arguments {w['arguments']!r} expected, got {g['arguments']!r}")
    for n, extra in enumerate(got[len(want):], start=len(want) + 1):
        out.append(f"call {n}: unexpected {extra['name']!r} {extra['arguments']!r}")
    for n, missing in enumerate(want[len(got):], start=len(got) + 1):
        out.append(f"call {n}: {missing['name']!r} {missing['arguments']!r} expected, missing")
    for field in ("text", "finish_reason", "state"):
        if expected[field] != actual[field]:
            out.append(f"{field}: {expected[field]!r} expected, got {actual[field]!r}")
    return out
'''

MAIN = '''
def main():
    expected = expected_as_reported(EXPECTED)
    print("What the stream means (the outcome a correct client reaches):")
    print(shown(expected))
    try:
        actual = run()
    except Exception:
        import traceback

        traceback.print_exc()
        print("\\nBUG: the library raised on this stream.")
        return 1
    print("What the library returned:")
    print(shown(actual))
    problems = differences(expected, actual)
    if problems:
        print("\\nBUG: the library's result differs from what the stream means:")
        for line in problems:
            print(f"  {line}")
        return 1
    print("\\nOK: the library handles this stream.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

# -- gateway scripts (`toolstream repro CASE --gateway NAME`) -------------------------------------
# A gateway's script serves READS (the upstream's recorded stream) from a loopback server, starts
# the gateway (PROGRAM beside the Python that runs the script, ARGUMENTS, ENVIRONMENT, CONFIG) with
# that server as its upstream, asks it REQUEST at PATH, reads the answer with the downstream
# dialect's `judge` (one per dialect, below) and compares it with EXPECTED.

GATEWAY_UPSTREAM = '''
def serve_upstream():
    """The recorded stream, read by read, to every POST (the gateway's upstream, on loopback)."""

    class Upstream(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(STATUS)
            self.send_header("content-type", CONTENT_TYPE)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for data in READS:
                self.wfile.write(b"%x\\r\\n%s\\r\\n" % (len(data), data))
                self.wfile.flush()
            self.wfile.write(b"0\\r\\n\\r\\n")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def events(body):
    """The JSON payloads of an SSE body (`[DONE]` as the string)."""
    out = []
    for block in body.replace("\\r\\n", "\\n").split("\\n\\n"):
        data = "\\n".join(line[5:].lstrip() for line in block.split("\\n") if line.startswith("data:"))
        if data:
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def call(name, arguments):
    """A call with its arguments parsed ("" is {}); text that does not parse kept as it is."""
    try:
        return {"name": name, "arguments": json.loads(arguments) if arguments.strip() else {}}
    except ValueError:
        return {"name": name, "arguments": arguments, "invalid": True}
'''

GATEWAY_JUDGES = {
    "anthropic": '''
def judge(found):
    """What a client of Anthropic's Messages API reads in the answer: the tool_use blocks' calls, and
    each rule of the protocol the events break."""
    problems, open_blocks, blocks, stopped = [], [], {}, False
    for event in found:
        kind = event.get("type") if isinstance(event, dict) else None
        index = event.get("index") if isinstance(event, dict) else None
        if kind == "content_block_start":
            if open_blocks:
                problems.append(f"anthropic.block-overlap: block {index} starts while {open_blocks} open")
            open_blocks.append(index)
            block = event.get("content_block") or {}
            blocks[index] = {"type": block.get("type"), "name": block.get("name"), "json": ""}
        elif kind == "content_block_delta" and index in blocks:
            delta = event.get("delta") or {}
            if delta.get("type") == "input_json_delta":
                blocks[index]["json"] += delta.get("partial_json") or ""
        elif kind == "content_block_stop" and index in open_blocks:
            open_blocks.remove(index)
        elif kind == "message_stop":
            stopped = True
    if open_blocks:
        problems.append(f"anthropic.block-not-stopped: blocks {open_blocks} never stopped")
    if not stopped:
        problems.append("gateway.terminal-event: the answer ended without message_stop")
    calls = [call(b["name"], b["json"]) for b in blocks.values() if b["type"] == "tool_use"]
    return calls, problems
''',
    "openai-chat": '''
def judge(found):
    """What a client of OpenAI's Chat Completions reads in the answer: the calls, by index, and each
    rule of the protocol the chunks break."""
    problems, calls, done = [], {}, False
    for chunk in found:
        if chunk == "[DONE]":
            done = True
            continue
        for choice in chunk.get("choices") or [] if isinstance(chunk, dict) else []:
            for part in (choice.get("delta") or {}).get("tool_calls") or []:
                entry = calls.setdefault(part.get("index"), {"name": "", "arguments": ""})
                function = part.get("function") or {}
                entry["name"] = entry["name"] or function.get("name") or ""
                entry["arguments"] += function.get("arguments") or ""
    if not done:
        problems.append("gateway.terminal-event: the answer ended without [DONE]")
    return [call(c["name"], c["arguments"]) for c in calls.values()], problems
''',
}

GATEWAY_MAIN = '''
def differences(calls):
    """Where the calls differ from the ones the upstream's stream means."""
    out = []
    server = set(EXPECTED["server_calls"])
    for got in calls:
        if got["name"] in server:
            out.append(f"gateway.server-call-as-client-call: {got['name']!r}, run by the provider, handed to the client")
    client = [got for got in calls if got["name"] not in server]
    want = EXPECTED["calls"]
    if len(client) != len(want):
        out.append(f"gateway.calls: {len(want)} calls expected, got {len(client)}")
    for n, (w, g) in enumerate(zip(want, client, strict=False), start=1):
        if w["name"] != g["name"] or g.get("invalid") or w["arguments"] != g["arguments"]:
            out.append(f"gateway.calls: call {n}: {w['name']!r} {w['arguments']!r} expected, got {g['name']!r} {g['arguments']!r}")
    return out


def main():
    upstream = serve_upstream()
    port = free_port()
    folder = Path(tempfile.mkdtemp(prefix="gateway-repro-"))
    base = f"http://127.0.0.1:{upstream.server_port}{UPSTREAM_ROOT}"
    config = folder / "config.yaml"
    config.write_text(CONFIG.replace("{upstream}", base))
    program = Path(sys.executable).with_name(PROGRAM)
    filled = {"{config}": str(config), "{port}": str(port), "{upstream}": base}
    argv = []
    for arg in ARGUMENTS:
        for placeholder, value in filled.items():
            arg = arg.replace(placeholder, value)
        argv.append(arg)
    gateway = subprocess.Popen(
        [str(program), *argv],
        env={**os.environ, **ENVIRONMENT},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if gateway.poll() is not None or time.monotonic() > deadline:
                    print(f"{PROGRAM} did not start", file=sys.stderr)
                    return 2
                time.sleep(0.2)
        headers = {"content-type": "application/json", **HEADERS}
        request = urllib.request.Request(f"http://127.0.0.1:{port}{PATH}", json.dumps(REQUEST).encode(), headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                body = answer.read().decode("utf-8", "replace")
        except Exception as exc:  # a connection the gateway broke mid-body is part of what is seen
            partial = getattr(exc, "partial", b"")
            body = partial.decode("utf-8", "replace") if isinstance(partial, bytes) else ""
            print(f"the answer broke: {type(exc).__name__}: {exc}")
        found = events(body)
        for event in found:
            print(json.dumps(event)[:200])
        calls, problems = judge(found)
        if EXPECTED["state"] != "complete":  # a cut upstream: only the calls are compared
            problems = [p for p in problems if not p.startswith("gateway.terminal-event")]
        problems += differences(calls)
        for problem in problems:
            print(f"BUG: {problem}")
        print("bug present" if problems else "fixed: the answer keeps the protocol and the calls")
        return 1 if problems else 0
    finally:
        os.killpg(gateway.pid, 15)
        gateway.wait(30)
        upstream.shutdown()


if __name__ == "__main__":
    sys.exit(main())
'''
