"""`langchain-anthropic`: the real `ChatAnthropic` over the replay transport, `.stream(...)`, chunks summed.

`ChatAnthropic` takes no `http_client`: it builds its `anthropic.Client` in a cached property,
so the adapter puts a client on the replay transport in that slot before the first call (the
same client `anthropic-sdk` uses). The recorded tools are bound so the request, and
langchain's choice of list content, match the recording. When the stream raises (a transport
error on a cut, `APIStatusError` for an `error` event, anything else: `client.raised`) the
outcome is cut or error with the text and finish reason of the chunks given until then and no
call: langchain re-raises, so its user never gets a message whose calls are final (see
`langchain_core.raised_outcome`).
Needs `pip install 'toolstream-harness[langchain-anthropic]'`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.accumulators.anthropic_sdk import client_for
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

NAME = "langchain-anthropic"
EXTRA = "langchain-anthropic"


def run(transport: Any, case: Case) -> Outcome:
    """One case through `ChatAnthropic.stream`."""
    langchain_anthropic = require("langchain_anthropic", EXTRA)
    anthropic = require("anthropic", EXTRA)
    http = sdk_http("anthropic", EXTRA)
    body = request_body(case)
    model = langchain_anthropic.ChatAnthropic(
        model=str(body.get("model") or "toolstream"),
        api_key="test",
        base_url=base_url(recorded_request(case), "/v1/messages"),
        max_tokens=int(body.get("max_tokens") or 1024),
        max_retries=0,
    )
    # The cached property `_client` is where ChatAnthropic keeps its SDK client.
    model.__dict__["_client"] = client_for(transport, case)
    tools = body.get("tools")
    runnable = model.bind_tools(tools) if isinstance(tools, list) and tools else model
    total: Any = None
    try:
        for chunk in runnable.stream("toolstream"):
            total = chunk if total is None else total + chunk
    except Exception as exc:  # whatever langchain or the SDK raises: `client.raised`
        state = raised(exc, (http.RequestError, anthropic.APIConnectionError))
        return raised_outcome(total, state, raised_error(exc))
    return outcome_of(total, State.COMPLETE, None)


accumulator = Adapter(
    NAME, ("anthropic",), run, needs=(("langchain_anthropic", EXTRA),), http=("anthropic", EXTRA)
)
