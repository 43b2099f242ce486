"""Where the replay server puts each case and each provider endpoint, and the environment an SDK
reads to find them.

Every case lives under `/case/<url-quoted case id>`; below that prefix each provider's own paths
(`/v1/chat/completions`, `/v1/messages`, `/v1beta/models/m:streamGenerateContent`,
`/model/m/converse-stream`, `/api/chat`, `/v2/chat`, ...) reach that case, `/report` takes an
outcome a program reports itself, and the prefix alone describes the case. A test served a case
by the pytest plugin reaches it under `/run/<token>/case/<id>`: its own log, so a late request of
one test is never read as another's.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote, unquote, urlsplit

__all__ = [
    "PREFIX",
    "RUN",
    "Route",
    "base_urls",
    "case_prefix",
    "client_environment",
    "parse",
    "quoted",
    "streams",
]

PREFIX = "/case/"
RUN = "/run/"

# Path endings below a case prefix -> (dialect, streamed); None: the body's `stream` field says.
_ENDINGS: tuple[tuple[str, str, bool | None], ...] = (
    ("/chat/completions", "openai-chat", None),
    ("/responses", "openai-responses", None),
    ("/messages", "anthropic", None),
    (":streamGenerateContent", "gemini", True),
    (":generateContent", "gemini", False),
    ("/converse-stream", "bedrock-converse", True),
    ("/converse", "bedrock-converse", False),
    ("/api/chat", "ollama", None),
    ("/v2/chat", "cohere", None),
)


@dataclass(frozen=True, slots=True)
class Route:
    """What a request path names: a case, and which of its endpoints."""

    case_id: str
    kind: Literal["model", "report", "info"]
    dialect: str | None = None
    stream: bool | None = None  # None: decided by the request body
    token: str | None = None  # under `/run/<token>`: the log of the test served that token


def quoted(case_id: str) -> str:
    """The case id as one URL path segment; a file name that is not UTF-8 (read as lone
    surrogates) keeps its bytes, and `parse` reads them back."""
    return quote(case_id.encode("utf-8", "surrogateescape"), safe="")


def case_prefix(case_id: str, token: str | None = None) -> str:
    run = "" if token is None else RUN + quote(token, safe="")
    return run + PREFIX + quoted(case_id)


def parse(target: str, cases: Container[str]) -> Route | None:
    """The route of a request target (path and query), or None when it names no known case."""
    path = urlsplit(target).path
    token = None
    if path.startswith(RUN):
        head, _, rest = path[len(RUN) :].partition("/")
        token, path = unquote(head), "/" + rest
    if not path.startswith(PREFIX):
        return None
    rest = path[len(PREFIX) :]
    head, slash, tail = rest.partition("/")
    case_id, tail = unquote(head, errors="surrogateescape"), slash + tail
    if case_id not in cases:
        # A client that decoded the quoted id before sending: the longest known id the path starts with.
        case_id, tail = _known_prefix(unquote(rest), cases)
        if not case_id:
            return None
    if tail in ("", "/"):
        return Route(case_id, "info", token=token)
    if tail == "/report":
        return Route(case_id, "report", token=token)
    for ending, dialect, stream in _ENDINGS:
        if tail.endswith(ending):
            return Route(case_id, "model", dialect, stream, token=token)
    return None


def _known_prefix(rest: str, cases: Container[str]) -> tuple[str, str]:
    cut = len(rest)
    while cut > 0:
        candidate = rest[:cut]
        if candidate in cases:
            return candidate, rest[cut:]
        cut = rest.rfind("/", 0, cut)
    return "", rest


def streams(dialect: str, body: Mapping[str, Any]) -> bool:
    """Whether a request body asks for a stream (Ollama streams unless told not to)."""
    if dialect == "ollama":
        return body.get("stream", True) is not False
    return body.get("stream") is True


def base_urls(server: str, case_id: str, token: str | None = None) -> dict[str, str]:
    """Per dialect, the base URL its SDKs take for this case (under a test's `token`)."""
    root = server.rstrip("/") + case_prefix(case_id, token)
    return {
        "openai-chat": root + "/v1",
        "openai-responses": root + "/v1",
        "anthropic": root,
        "gemini": root,
        "bedrock-converse": root,
        "ollama": root,
        "cohere": root,
    }


def client_environment(server: str, case_id: str, token: str | None = None) -> dict[str, str]:
    """The variables provider SDKs read for their endpoint and key, all pointing at this case."""
    urls = base_urls(server, case_id, token)
    return {
        "TOOLSTREAM_CASE": case_id,
        "TOOLSTREAM_BASE_URL": server.rstrip("/") + case_prefix(case_id, token),
        "OPENAI_BASE_URL": urls["openai-chat"],
        "OPENAI_API_KEY": "sk-toolstream-replay",
        "ANTHROPIC_BASE_URL": urls["anthropic"],
        "ANTHROPIC_API_KEY": "sk-ant-toolstream-replay",
        "GOOGLE_GEMINI_BASE_URL": urls["gemini"],
        "GEMINI_BASE_URL": urls["gemini"],
        "GEMINI_API_KEY": "toolstream-replay",
        "GOOGLE_API_KEY": "toolstream-replay",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": urls["bedrock-converse"],
        "AWS_ACCESS_KEY_ID": "toolstream-replay",
        "AWS_SECRET_ACCESS_KEY": "toolstream-replay",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "OLLAMA_HOST": urls["ollama"],
        "CO_API_URL": urls["cohere"],
        "CO_API_KEY": "toolstream-replay",
    }
