"""`smolagents`: Hugging Face smolagents' own `OpenAIModel` and stream aggregation over the replay transport.

A `ToolCallingAgent(..., stream_outputs=True)` step calls `model.generate_stream(messages,
tools_to_call_from=tools)`, keeps every `ChatMessageStreamDelta`, and builds the step's message
with `agglomerate_stream_deltas(deltas)`; each of its tool calls' arguments then goes through
`parse_json_if_needed` and the calls are run (`agents.py`, `ToolCallingAgent._step_stream`). This
adapter does exactly that on `smolagents.OpenAIModel` (alias `OpenAIServerModel`), whose
`openai.OpenAI` client is built from `client_kwargs` (`http_client`: an `httpx.Client` on the
replay transport, `max_retries=0`). The recorded tools become smolagents `Tool`s (their JSON schema
properties as `inputs`). The outcome is the message's tool calls (arguments that do not parse stay
text, as the agent hands them on: invalid), its content and usage. smolagents keeps no finish
reason (`FINISH_NOT_SURFACED`). Where it raises, the agent step fails (`AgentGenerationError`):
the outcome is that error with the content of the deltas so far. A text-only turn is reported as
the message is; what the agent then does with text (look for a call in it) is not stream handling.
Needs `pip install 'toolstream-harness[smolagents]'`.
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
)
from harness.cassettes.outcome import FINISH_NOT_SURFACED, Outcome, ToolCall
from harness.errors import NotApplicable

if TYPE_CHECKING:
    from harness.mutate.case import Case

__all__ = ["accumulator", "run"]

NAME = "smolagents"
EXTRA = "smolagents"
DIALECTS = ("openai-chat",)
_NOTES = (FINISH_NOT_SURFACED,)


def run(transport: Any, case: Case) -> Outcome:
    """One case through `OpenAIModel.generate_stream` and `agglomerate_stream_deltas`."""
    models = require("smolagents.models", EXTRA)
    httpx = require("httpx", EXTRA)
    openai = require("openai", EXTRA)
    body = request_body(case)
    model = models.OpenAIModel(
        model_id=str(body.get("model") or "toolstream"),
        api_base=base_url(recorded_request(case), "/chat/completions"),
        api_key="test",
        client_kwargs={"http_client": httpx.Client(transport=transport), "max_retries": 0},
    )
    messages = [
        models.ChatMessage(role=models.MessageRole.USER, content=[{"type": "text", "text": "toolstream"}])
    ]
    deltas: list[Any] = []
    try:
        for delta in model.generate_stream(messages, tools_to_call_from=_tools(case) or None):
            deltas.append(delta)
    except Exception as exc:  # the agent step fails: `client.raised`
        text = "".join(d.content or "" for d in deltas)
        state = raised(exc, (httpx.TransportError, openai.APIConnectionError))
        return Outcome(text=text, state=state, error=raised_error(exc), notes=_NOTES)
    try:
        message = models.agglomerate_stream_deltas(deltas)
    except Exception as exc:  # its own aggregation raised: the step fails
        text = "".join(d.content or "" for d in deltas)
        return Outcome(text=text, state=raised(exc), error=raised_error(exc), notes=_NOTES)
    usage = message.token_usage
    return Outcome(
        tool_calls=tuple(_call(models, call) for call in message.tool_calls or []),
        text=message.content or "",
        usage={"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens} if usage else None,
        notes=_NOTES,
    )


accumulator = Adapter(NAME, DIALECTS, run, needs=(("smolagents.models", EXTRA), ("openai", EXTRA)))


def _tools(case: Case) -> list[Any]:
    """The recorded function tools as smolagents `Tool`s: its JSON schema's properties as `inputs`
    (each with the description smolagents requires), a forward that is never called."""
    tool_type = require("smolagents.tools", EXTRA).Tool
    out = []
    for tool in request_body(case).get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if tool.get("type", "function") != "function":
            raise NotApplicable(
                f"{NAME}: smolagents declares function tools only; this request offers others"
            )
        spec: dict[str, Any] = tool["function"] if isinstance(tool.get("function"), dict) else tool
        schema: dict[str, Any] = spec["parameters"] if isinstance(spec.get("parameters"), dict) else {}
        found = schema.get("properties")
        properties: dict[str, Any] = found if isinstance(found, dict) else {}
        inputs = {
            key: {"type": "any", **value, "description": str(value.get("description") or key)}
            for key, value in properties.items()
            if isinstance(value, dict)
        }
        attributes = {
            "name": str(spec.get("name") or "tool"),
            "description": str(spec.get("description") or spec.get("name") or "tool"),
            "inputs": inputs,
            "output_type": "string",
            "skip_forward_signature_validation": True,
            "forward": lambda self, **_: "",
        }
        try:
            out.append(type("RecordedTool", (tool_type,), attributes)())
        except Exception as exc:  # smolagents refuses this schema as a tool's inputs
            raise NotApplicable(
                f"{NAME}: the recorded tool is not a smolagents Tool: {raised_error(exc)}"
            ) from exc
    return out


def _call(models: Any, call: Any) -> ToolCall:
    arguments = models.parse_json_if_needed(call.function.arguments)
    if isinstance(arguments, str):  # not JSON: the agent hands the text on as it is
        return ToolCall.from_text(call.function.name, arguments, call.id or None)
    return ToolCall(name=call.function.name, arguments=arguments, id=call.id or None)
