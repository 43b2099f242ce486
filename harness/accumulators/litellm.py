"""`litellm`: `litellm.completion(stream=True)` over the replay transport, then `stream_chunk_builder`.

The documented way to get a final message from a litellm stream: iterate the `CustomStreamWrapper`,
keep the chunks, `litellm.stream_chunk_builder(chunks)`. The transport goes in through litellm's
own `client=` argument: for `anthropic/...` models its `HTTPHandler` wrapping an `httpx.Client`
on the replay transport (litellm parses Anthropic's SSE itself, `ModelResponseIterator` in
`llms/anthropic/chat/handler.py`); for `openai/...` models an `openai.OpenAI` client on it. The
recorded Anthropic tools are given in OpenAI form, as a litellm user writes them. The outcome is
the built message's `tool_calls`, content, finish reason and usage. Where litellm raises mid-stream
(it wraps a cut in `MidStreamFallbackError` around an `APIConnectionError`; anything else:
`client.raised`) its user has no final
message: the outcome is that error with the text of the chunks so far and no call.

Environment traps, handled in `accumulator()` before the first case: litellm fetches a remote
model cost map at import unless `LITELLM_LOCAL_MODEL_COST_MAP=True`, downloads a Hugging Face
tokenizer for llama-named models unless `HF_HUB_OFFLINE=1`. (`mcp` is not needed: litellm imports it
for type checking only; 1.102.4 and 1.110.2 stream tool calls without it.)
Needs `pip install 'toolstream-harness[litellm]'`.
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
from harness.cassettes.outcome import Outcome, ToolCall

if TYPE_CHECKING:
    from harness.mutate.case import Case

__all__ = ["accumulator", "run"]

NAME = "litellm"
EXTRA = "litellm"
DIALECTS = ("openai-chat", "anthropic")


def run(transport: Any, case: Case) -> Outcome:
    """One case through `litellm.completion(stream=True)` and `stream_chunk_builder`."""
    litellm = require("litellm", EXTRA)
    openai = require("openai", EXTRA)
    body = request_body(case)
    model = str(body.get("model") or "toolstream")
    chunks: list[Any] = []
    try:
        for chunk in litellm.completion(
            messages=[{"role": "user", "content": "toolstream"}],
            tools=_tools(body) or None,
            stream=True,
            api_key="test",
            max_retries=0,
            **_provider(transport, case, model),
        ):
            chunks.append(chunk)
    except Exception as exc:  # whatever litellm raises: `client.raised`
        # litellm's exceptions subclass openai's; a cut arrives as `MidStreamFallbackError` around
        # an `APIConnectionError`
        cause = getattr(exc, "original_exception", None) or exc
        state = raised(
            cause if isinstance(cause, openai.APIConnectionError) else exc, (openai.APIConnectionError,)
        )
        return Outcome(text=_streamed_text(chunks), state=state, error=raised_error(exc))
    if not chunks:
        return Outcome()
    try:
        final = litellm.stream_chunk_builder(chunks)
    except Exception as exc:  # the documented final step raised: its user has no message
        return Outcome(text=_streamed_text(chunks), state=raised(exc), error=raised_error(exc))
    choice = final.choices[0]
    calls = tuple(
        ToolCall.from_text(call.function.name, call.function.arguments or "", call.id)
        for call in choice.message.tool_calls or []
    )
    usage = getattr(final, "usage", None)
    return Outcome(
        tool_calls=calls,
        text=_content(final),
        finish_reason=choice.finish_reason,
        usage={"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}
        if usage is not None
        else None,
    )


accumulator = Adapter(
    NAME,
    DIALECTS,
    run,
    needs=(("litellm", EXTRA),),
    # No network fetch of the model cost map at import; and for a llama-named model litellm counts
    # usage with a tokenizer it downloads from Hugging Face, retrying for ~30 s where there is no
    # network: offline, it falls back to its bundled one.
    environment={"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"},
)


def _streamed_text(chunks: list[Any]) -> str:
    """The text of the chunks its user was given (their deltas' content, choice 0)."""
    return "".join(
        (chunk.choices[0].delta.content or "") for chunk in chunks if chunk.choices and chunk.choices[0].delta
    )


def _provider(transport: Any, case: Case, model: str) -> dict[str, Any]:
    """litellm's model prefix and `client=` for the case's dialect, both on the replay transport."""
    httpx = require("httpx", EXTRA)
    if case.dialect == "anthropic":
        handler = require("litellm.llms.custom_httpx.http_handler", EXTRA).HTTPHandler
        url = base_url(recorded_request(case), "/v1/messages")
        return {
            "model": f"anthropic/{model}",
            "api_base": url,
            "client": handler(client=httpx.Client(transport=transport)),
        }
    openai = require("openai", EXTRA)
    url = base_url(recorded_request(case), "/chat/completions")
    client = openai.OpenAI(
        api_key="test", base_url=url, http_client=httpx.Client(transport=transport), max_retries=0
    )
    return {"model": f"openai/{model}", "api_base": url, "client": client}


def _tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The recorded tools in the OpenAI form litellm takes for every provider."""
    out = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if isinstance(tool.get("function"), dict):
            out.append(tool)
        elif isinstance(tool.get("name"), str):
            schema = tool.get("input_schema") or {"type": "object"}
            out.append({"type": "function", "function": {"name": tool["name"], "parameters": schema}})
    return out


def _content(final: Any) -> str:
    choices = getattr(final, "choices", None) or []
    return (choices[0].message.content or "") if choices else ""
