"""`langchain-openai`: the real `ChatOpenAI` over the replay transport, `.stream(...)`, chunks summed.

The model gets a client of the HTTP library the `openai` SDK is built on (httpx2; httpx before it)
on the replay transport (langchain-openai hands `http_client` to the SDK), so the SDK's SSE
parsing and langchain's chunk conversion both run. Chat streams use Chat Completions, Responses
streams `use_responses_api`. The recorded tools are bound so the request looks like the recorded
one. When the stream raises (a transport error on a cut, `APIError` for an in-band error, the
`ValueError` langchain-openai raises for a Responses `error` event, anything else:
`client.raised`) the outcome is cut or error with the text and finish reason of the chunks given
until then and no call: langchain re-raises, so its user never gets a message whose calls are
final (see `langchain_core.raised_outcome`).

Custom (freeform) tools are bound as langchain-openai's users bind them, through its `custom_tool`
decorator; a custom call comes back as a tool call whose args are `{"__arg1": input}` (the
convention its `custom_tool` reads the input from), reported as the raw input it is. A client-run
Responses item without streamed arguments (`apply_patch_call`, `computer_call`) is a content block
of the message, its action the item's fields, as its user reads it. A Chat Completions case whose
request offers a custom tool is skipped: langchain-openai sends custom tools to the Responses API
only (a tool that is not a function switches `ChatOpenAI` to it) and reads no custom call from a
chat stream.
Needs `pip install 'toolstream-harness[langchain-openai]'`.
"""

from __future__ import annotations

from dataclasses import replace
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
from harness.accumulators.langchain_core import outcome_of, raised_outcome
from harness.cassettes.outcome import CUSTOM, Outcome, State, ToolCall
from harness.errors import NotApplicable
from harness.wire.dialects.openai_responses import ACTION_ITEM_TYPES

if TYPE_CHECKING:
    from harness.mutate.case import Case

__all__ = ["accumulator", "run"]

NAME = "langchain-openai"
EXTRA = "langchain-openai"
# Why a Chat Completions case with a custom tool is not one this library can be asked.
CHAT_CUSTOM = (
    "langchain-openai sends custom (freeform) tools to the Responses API only "
    "(a tool that is not a function switches ChatOpenAI to it) and reads no custom call from a chat stream"
)
# langchain-openai's key for a custom call's input (`{"__arg1": input}`, what `custom_tool` passes on).
CUSTOM_INPUT = "__arg1"
# An action item block's fields that are not its action: its identity, and langchain's own `index`.
_NOT_ACTION = frozenset({"id", "type", "status", "call_id", "pending_safety_checks", "index"})


def run(transport: Any, case: Case) -> Outcome:
    """One case through `ChatOpenAI.stream`."""
    langchain_openai = require("langchain_openai", EXTRA)
    http = sdk_http("openai", EXTRA)
    openai = require("openai", EXTRA)
    responses = case.dialect == "openai-responses"
    body = request_body(case)
    listed = body.get("tools")
    tools = listed if isinstance(listed, list) else []
    if not responses and any(_is_custom(tool) for tool in tools):
        raise NotApplicable(f"{NAME}: {CHAT_CUSTOM}")
    model = langchain_openai.ChatOpenAI(
        model=str(body.get("model") or "toolstream"),
        api_key="test",
        base_url=base_url(recorded_request(case), "/responses" if responses else "/chat/completions"),
        http_client=http.Client(transport=transport),
        http_async_client=http.AsyncClient(transport=transport),
        max_retries=0,
        use_responses_api=responses,
    )
    bound = [_custom_tool(tool, langchain_openai) if _is_custom(tool) else tool for tool in tools]
    runnable = model.bind_tools(bound) if bound else model
    total: Any = None
    try:
        for chunk in runnable.stream("toolstream"):
            total = chunk if total is None else total + chunk
    except Exception as exc:  # whatever langchain or the SDK raises: `client.raised`
        state = raised(exc, (http.RequestError, openai.APIConnectionError))
        return raised_outcome(total, state, raised_error(exc))
    return _with_items(outcome_of(total, State.COMPLETE, None), total)


def _is_custom(tool: Any) -> bool:
    return isinstance(tool, dict) and tool.get("type") == "custom"


def _custom_tool(tool: dict[str, Any], langchain_openai: Any) -> Any:
    """A recorded Responses custom tool (`name`, `description`, `format`) as its langchain user
    writes it: a function decorated with `langchain_openai.custom_tool`."""

    def run(text: str) -> str:
        return ""

    run.__name__ = str(tool.get("name") or "custom")
    run.__doc__ = str(tool.get("description") or "")
    decorate = langchain_openai.custom_tool
    return decorate(format=tool["format"])(run) if "format" in tool else decorate(run)


def _with_items(outcome: Outcome, message: Any) -> Outcome:
    """`outcome` with the calls as the message's user has them: a custom call's input raw (its
    block in the content says which call is custom), and each action item block a call of its
    own, placed among the calls by its content `index` (the calls keep langchain's order)."""
    if message is None or not isinstance(message.content, list):
        return outcome
    blocks = [b for b in message.content if isinstance(b, dict)]
    custom = {b.get("call_id") for b in blocks if b.get("type") == "custom_tool_call"}
    calls = [_freeform(call) if call.id in custom else call for call in outcome.tool_calls]
    chunks = message.tool_call_chunks
    at = [chunk.get("index") for chunk in chunks] if len(chunks) == len(calls) else [None] * len(calls)
    for block in blocks:
        if block.get("type") not in ACTION_ITEM_TYPES:
            continue
        action = {k: v for k, v in block.items() if k not in _NOT_ACTION}
        index = block.get("index")
        after = [n for n, i in enumerate(at) if isinstance(i, int) and isinstance(index, int) and i > index]
        where = after[0] if after else len(calls)
        calls.insert(where, ToolCall(None, action, block.get("call_id"), kind=str(block["type"])))
        at.insert(where, index)
    return replace(outcome, tool_calls=tuple(calls))


def _freeform(call: ToolCall) -> ToolCall:
    """A custom call as langchain-openai hands it over (`{"__arg1": input}`), with its raw input."""
    args = call.arguments
    if call.kind == CUSTOM or not isinstance(args, dict) or set(args) != {CUSTOM_INPUT}:
        return call
    text = args[CUSTOM_INPUT]
    return ToolCall.freeform(call.name, text, call.id) if isinstance(text, str) else call


accumulator = Adapter(
    NAME,
    ("openai-chat", "openai-responses"),
    run,
    needs=(("langchain_openai", EXTRA),),
    http=("openai", EXTRA),
)
