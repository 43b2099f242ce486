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
Needs `pip install 'toolstream-harness[langchain-openai]'`.
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
from harness.accumulators.langchain_core import outcome_of, raised_outcome
from harness.cassettes.outcome import Outcome, State

if TYPE_CHECKING:
    from harness.mutate.case import Case

__all__ = ["accumulator", "run"]

NAME = "langchain-openai"
EXTRA = "langchain-openai"


def run(transport: Any, case: Case) -> Outcome:
    """One case through `ChatOpenAI.stream`."""
    langchain_openai = require("langchain_openai", EXTRA)
    http = sdk_http("openai", EXTRA)
    openai = require("openai", EXTRA)
    responses = case.dialect == "openai-responses"
    body = request_body(case)
    model = langchain_openai.ChatOpenAI(
        model=str(body.get("model") or "toolstream"),
        api_key="test",
        base_url=base_url(recorded_request(case), "/responses" if responses else "/chat/completions"),
        http_client=http.Client(transport=transport),
        http_async_client=http.AsyncClient(transport=transport),
        max_retries=0,
        use_responses_api=responses,
    )
    tools = body.get("tools")
    runnable = model.bind_tools(tools) if isinstance(tools, list) and tools else model
    total: Any = None
    try:
        for chunk in runnable.stream("toolstream"):
            total = chunk if total is None else total + chunk
    except Exception as exc:  # whatever langchain or the SDK raises: `client.raised`
        state = raised(exc, (http.RequestError, openai.APIConnectionError))
        return raised_outcome(total, state, raised_error(exc))
    return outcome_of(total, State.COMPLETE, None)


accumulator = Adapter(
    NAME,
    ("openai-chat", "openai-responses"),
    run,
    needs=(("langchain_openai", EXTRA),),
    http=("openai", EXTRA),
)
