"""The `google.genai.Client` arguments for a Gemini case, on the replay transport: what every
framework that talks to Gemini through google-genai (ADK's `Gemini`, Strands' `GeminiModel`) is given.

The client is the backend the recording was made against: Vertex AI (`vertexai=True`, the
project and location read from the recorded URL, placeholder OAuth credentials) for a URL under
`/projects/.../locations/...`, the Gemini API (a placeholder key) otherwise. Vertex matters: some
request options exist there only (google-genai refuses `streamFunctionCallArguments` elsewhere).
Its async HTTP client is an `httpx.AsyncClient` on the transport (`HttpOptions.httpx_async_client`);
set `GOOGLE_GENAI_HTTP_CLIENT=httpx` before google-genai is imported so it expects that library.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from harness.accumulators.client import recorded_request, require

if TYPE_CHECKING:
    from harness.mutate.case import Case

__all__ = ["ENVIRONMENT", "client_arguments", "model_name"]

ENVIRONMENT = {"GOOGLE_GENAI_HTTP_CLIENT": "httpx"}  # google-genai on httpx, the client handed over
_MODEL = re.compile(r"/models/([^/:?]+)")
_VERTEX = re.compile(r"/projects/([^/]+)/locations/([^/]+)/")
_DEFAULT_MODEL = "gemini-2.5-flash"


def model_name(case: Case) -> str:
    """The model the recorded URL names (`.../models/NAME:streamGenerateContent`)."""
    found = _MODEL.search(recorded_request(case).url)
    return found.group(1) if found else _DEFAULT_MODEL


def client_arguments(case: Case, transport: Any, extra: str) -> dict[str, Any]:
    """Keyword arguments of `google.genai.Client` for the case's backend, its HTTP on `transport`."""
    httpx = require("httpx", extra)
    types = require("google.genai.types", extra)
    vertex = _VERTEX.search(recorded_request(case).url)
    options = types.HttpOptions(httpx_async_client=httpx.AsyncClient(transport=transport))
    if vertex is None:
        return {"api_key": "test", "http_options": options}
    credentials = require("google.oauth2.credentials", extra).Credentials(token="test")
    return {
        "vertexai": True,
        "project": vertex.group(1),
        "location": vertex.group(2),
        "credentials": credentials,
        "http_options": options,
    }
