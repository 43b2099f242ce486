"""Recording recipes: one request per (provider, recipe) that elicits a tool-call shape, and the
`record` flow that sends it through `RecordingTransport` and stores a corpus-ready cassette.

A recipe is provider-neutral (a prompt, tools, whether to think); each provider's request format
lives in one small builder here, since it is about asking, not about what comes back (that is
the dialects' business). Keys come from the provider's usual environment variables; Bedrock
requests are signed with SigV4 by `sign_sigv4` (hashlib/hmac only).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from harness.errors import UsageError

__all__ = [
    "PROVIDERS",
    "RECIPES",
    "PreparedRequest",
    "Provider",
    "Recipe",
    "Tool",
    "build_request",
    "default_output",
    "record",
    "sign_sigv4",
]


@dataclass(frozen=True, slots=True)
class Tool:
    """A provider-neutral function tool; `parameters` is a JSON Schema object."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    @property
    def takes_no_args(self) -> bool:
        return not self.parameters.get("properties")


@dataclass(frozen=True, slots=True)
class Recipe:
    """A prompt and tools that elicit one tool-call shape."""

    name: str
    prompt: str
    tools: tuple[Tool, ...]
    thinking: bool = False


WEATHER = Tool(
    "get_weather",
    "Current weather for a city.",
    {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name, e.g. Paris"}},
        "required": ["city"],
    },
)
TIME = Tool(
    "get_time",
    "Current local time in an IANA time zone.",
    {
        "type": "object",
        "properties": {"timezone": {"type": "string", "description": "IANA zone, e.g. Asia/Tokyo"}},
        "required": ["timezone"],
    },
)
OPEN_ISSUES = Tool(
    "list_open_issues",
    "List the open issues of the current project. Takes no arguments.",
    {"type": "object", "properties": {}},
)

RECIPES: dict[str, Recipe] = {
    recipe.name: recipe
    for recipe in (
        Recipe("single", "What is the weather in Paris right now? Use the get_weather tool.", (WEATHER,)),
        Recipe(
            "parallel",
            "I need the weather in Paris and the local time in Tokyo. "
            "Call get_weather and get_time in parallel, in one turn, before answering.",
            (WEATHER, TIME),
        ),
        Recipe(
            "parallel-same-tool",
            "Compare the weather in Paris, Tokyo and Lima. "
            "Call get_weather once per city, all three calls in parallel in one turn.",
            (WEATHER,),
        ),
        Recipe(
            "text-then-tool",
            "First tell me in one short sentence what you are about to do, then call get_weather for Paris.",
            (WEATHER,),
        ),
        Recipe("no-args", "Show me the open issues: call list_open_issues.", (OPEN_ISSUES,)),
        Recipe(
            "thinking-then-tool",
            "Which city is the capital of the country that hosted the 1998 football World Cup? "
            "Work it out, then call get_weather for that city.",
            (WEATHER,),
            thinking=True,
        ),
    )
}

THINKING_BUDGET = 1024


@dataclass(slots=True)
class PreparedRequest:
    """A request ready to send: the body is JSON-encoded exactly as it goes on the wire."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True, slots=True)
class Provider:
    """How to ask one provider: its dialect, endpoint, key variables and request format."""

    name: str
    dialect: str
    base_url: str | None  # None: --base-url is required
    default_model: str | None  # None: --model is required
    key_env: tuple[str, ...]  # any one of these; empty: no key
    build: Callable[[Recipe, str], dict[str, Any]] = field(repr=False)
    path: Callable[[str], str] = field(repr=False)
    auth: Callable[[str], dict[str, str]] = field(repr=False)
    thinking: bool = False
    key_optional: bool = False
    base_url_env: tuple[str, ...] = ()  # the variables the provider's own SDK reads its endpoint from


# ---------------------------------------------------------------------------------------------
# Request bodies, one builder per request format


def _user(recipe: Recipe) -> list[dict[str, Any]]:
    return [{"role": "user", "content": recipe.prompt}]


def _function_tools(recipe: Recipe) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)},
        }
        for t in recipe.tools
    ]


def _openai_chat(recipe: Recipe, model: str) -> dict[str, Any]:
    return {
        "model": model,
        "messages": _user(recipe),
        "tools": _function_tools(recipe),
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def _openai_responses(recipe: Recipe, model: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "input": recipe.prompt,
        "tools": [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
            }
            for t in recipe.tools
        ],
        "stream": True,
    }
    if recipe.thinking:
        body["reasoning"] = {"effort": "medium", "summary": "auto"}
    return body


def _anthropic(recipe: Recipe, model: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": 1024,
        "messages": _user(recipe),
        "tools": [
            {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
            for t in recipe.tools
        ],
        "stream": True,
    }
    if recipe.thinking:
        # max_tokens must exceed the thinking budget.
        body["max_tokens"] = THINKING_BUDGET * 4
        body["thinking"] = {"type": "enabled", "budget_tokens": THINKING_BUDGET}
    return body


def _gemini(recipe: Recipe, model: str) -> dict[str, Any]:
    declarations = []
    for t in recipe.tools:
        declaration: dict[str, Any] = {"name": t.name, "description": t.description}
        if not t.takes_no_args:  # Gemini refuses an OBJECT schema with no properties
            declaration["parameters"] = dict(t.parameters)
        declarations.append(declaration)
    body: dict[str, Any] = {
        "contents": [{"role": "user", "parts": [{"text": recipe.prompt}]}],
        "tools": [{"functionDeclarations": declarations}],
    }
    if recipe.thinking:
        body["generationConfig"] = {
            "thinkingConfig": {"includeThoughts": True, "thinkingBudget": THINKING_BUDGET}
        }
    return body


def _bedrock(recipe: Recipe, model: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "messages": [{"role": "user", "content": [{"text": recipe.prompt}]}],
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": t.name,
                        "description": t.description,
                        "inputSchema": {"json": dict(t.parameters)},
                    }
                }
                for t in recipe.tools
            ]
        },
        "inferenceConfig": {"maxTokens": 1024},
    }
    if recipe.thinking:
        if "anthropic" not in model:
            raise UsageError(f"recipe thinking-then-tool on bedrock needs an Anthropic model, not {model!r}")
        body["inferenceConfig"] = {"maxTokens": THINKING_BUDGET * 4}
        body["additionalModelRequestFields"] = {
            "thinking": {"type": "enabled", "budget_tokens": THINKING_BUDGET}
        }
    return body


def _ollama(recipe: Recipe, model: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": _user(recipe),
        "tools": _function_tools(recipe),
        "stream": True,
    }
    if recipe.thinking:
        body["think"] = True
    return body


def _cohere(recipe: Recipe, model: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": _user(recipe),
        "tools": _function_tools(recipe),
        "stream": True,
    }
    if recipe.thinking:
        body["thinking"] = {"type": "enabled", "token_budget": THINKING_BUDGET}
    return body


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider(
            "openai",
            "openai-chat",
            "https://api.openai.com/v1",
            "gpt-4.1-mini",
            ("OPENAI_API_KEY",),
            _openai_chat,
            lambda model: "/chat/completions",
            _bearer,
            base_url_env=("OPENAI_BASE_URL",),
        ),
        Provider(
            "openai-responses",
            "openai-responses",
            "https://api.openai.com/v1",
            "gpt-5-mini",
            ("OPENAI_API_KEY",),
            _openai_responses,
            lambda model: "/responses",
            _bearer,
            thinking=True,
            base_url_env=("OPENAI_BASE_URL",),
        ),
        Provider(
            "anthropic",
            "anthropic",
            "https://api.anthropic.com",
            "claude-sonnet-4-5",
            ("ANTHROPIC_API_KEY",),
            _anthropic,
            lambda model: "/v1/messages",
            lambda key: {"x-api-key": key, "anthropic-version": "2023-06-01"},
            thinking=True,
            base_url_env=("ANTHROPIC_BASE_URL",),
        ),
        Provider(
            "gemini",
            "gemini",
            "https://generativelanguage.googleapis.com",
            "gemini-2.5-flash",
            ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
            _gemini,
            lambda model: f"/v1beta/models/{quote(model, safe='')}:streamGenerateContent?alt=sse",
            lambda key: {"x-goog-api-key": key},
            thinking=True,
        ),
        Provider(
            "bedrock",
            "bedrock-converse",
            None,  # from AWS_REGION: https://bedrock-runtime.<region>.amazonaws.com
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
            _bedrock,
            lambda model: f"/model/{quote(model, safe='')}/converse-stream",
            lambda key: {},  # signed separately: SigV4 needs the whole request
            thinking=True,
        ),
        Provider(
            "ollama",
            "ollama",
            "http://localhost:11434",
            "qwen3",
            (),
            _ollama,
            lambda model: "/api/chat",
            lambda key: {},
            thinking=True,
        ),
        Provider(
            "openai-compatible",
            "openai-chat",
            None,
            None,
            ("OPENAI_API_KEY",),
            _openai_chat,
            lambda model: "/chat/completions",
            _bearer,
            key_optional=True,  # local servers (vLLM, llama.cpp) usually take no key
            base_url_env=("OPENAI_BASE_URL",),
        ),
        Provider(
            "cohere",
            "cohere",
            "https://api.cohere.com",
            "command-a-03-2025",
            ("CO_API_KEY",),
            _cohere,
            lambda model: "/v2/chat",
            _bearer,
            thinking=True,
        ),
    )
}


def provider(name: str) -> Provider:
    if name not in PROVIDERS:
        raise UsageError(f"unknown provider {name!r}; choose one of {', '.join(PROVIDERS)}")
    return PROVIDERS[name]


def recipe(name: str) -> Recipe:
    if name not in RECIPES:
        raise UsageError(f"unknown recipe {name!r}; choose one of {', '.join(RECIPES)}")
    return RECIPES[name]


# ---------------------------------------------------------------------------------------------
# Building and signing


def build_request(
    provider_name: str,
    recipe_name: str = "single",
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    env: Mapping[str, str] | None = None,
    now: dt.datetime | None = None,
) -> PreparedRequest:
    """The request that runs `recipe_name` against `provider_name`, with its credentials.

    Raises `UsageError` for an unknown provider or recipe, a recipe the provider cannot run,
    a missing model or base URL, or a missing key (naming the variable to set).
    """
    env = os.environ if env is None else env
    spec, rec = provider(provider_name), recipe(recipe_name)
    if rec.thinking and not spec.thinking:
        raise UsageError(
            f"recipe {rec.name} needs reasoning, which {spec.name} does not stream; "
            "use anthropic, openai-responses, gemini, bedrock, ollama or cohere"
        )
    model = model or spec.default_model
    if not model:
        raise UsageError(f"provider {spec.name} needs --model")
    # Like the provider's SDK: --base-url, else its endpoint variable (OPENAI_BASE_URL ...), else the default.
    root = base_url or next((env[v] for v in spec.base_url_env if env.get(v)), None) or spec.base_url
    if spec.name == "bedrock" and not root:
        region = _require(env, ("AWS_REGION", "AWS_DEFAULT_REGION"))
        root = f"https://bedrock-runtime.{region}.amazonaws.com"
    if not root:
        raise UsageError(
            f"provider {spec.name} needs --base-url (the server's API root, e.g. http://localhost:8000/v1)"
        )
    url = root.rstrip("/") + spec.path(model)
    body = json.dumps(spec.build(rec, model), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    headers = {"content-type": "application/json", "accept": _accept(spec)}
    if spec.name == "bedrock":
        access, secret = _require(env, ("AWS_ACCESS_KEY_ID",)), _require(env, ("AWS_SECRET_ACCESS_KEY",))
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or _region_of(url)
        headers.update(
            sign_sigv4(
                "POST",
                url,
                headers,
                body,
                access_key=access,
                secret_key=secret,
                session_token=env.get("AWS_SESSION_TOKEN") or None,
                region=region,
                service="bedrock",
                now=now,
            )
        )
    else:
        names = (api_key_env,) if api_key_env else spec.key_env
        if names:
            optional = spec.key_optional and not api_key_env
            key = _optional(env, names) if optional else _require(env, names)
            headers.update(spec.auth(key))
    return PreparedRequest("POST", url, headers, body)


def _accept(spec: Provider) -> str:
    if spec.dialect == "ollama":
        return "application/x-ndjson"
    if spec.dialect == "bedrock-converse":
        return "application/vnd.amazon.eventstream"
    return "text/event-stream"


def _require(env: Mapping[str, str], names: tuple[str, ...]) -> str:
    for name in names:
        if env.get(name):
            return env[name]
    raise UsageError(f"set {' or '.join(names)} in the environment (missing API key)")


def _optional(env: Mapping[str, str], names: tuple[str, ...]) -> str:
    return next((env[name] for name in names if env.get(name)), "")


def _region_of(url: str) -> str:
    match = re.match(r"bedrock-runtime[.-]([a-z0-9-]+)\.", urlsplit(url).hostname or "")
    if not match:
        raise UsageError("set AWS_REGION in the environment (the Bedrock region)")
    return match.group(1)


def sign_sigv4(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    access_key: str,
    secret_key: str,
    region: str,
    service: str,
    session_token: str | None = None,
    now: dt.datetime | None = None,
) -> dict[str, str]:
    """AWS Signature Version 4 for one request: the headers to add (`Authorization`, `X-Amz-Date`,
    and `X-Amz-Security-Token` with temporary credentials). Signs `host` and every given header."""
    now = now or dt.datetime.now(dt.UTC)
    amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    added = {"X-Amz-Date": amz_date}
    if session_token:
        added["X-Amz-Security-Token"] = session_token
    signed = {k.lower(): " ".join(str(v).split()) for k, v in {**headers, **added}.items()}
    signed["host"] = host
    names = sorted(signed)
    canonical = "\n".join(
        [
            method.upper(),
            # Non-S3 services sign the already-encoded path encoded once more.
            quote(parts.path or "/", safe="/~"),
            _canonical_query(parts.query),
            "".join(f"{name}:{signed[name]}\n" for name in names),
            ";".join(names),
            hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + secret_key).encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    added["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, "
        f"SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    return added


def _canonical_query(query: str) -> str:
    pairs = []
    for item in query.split("&") if query else []:
        name, _, value = item.partition("=")
        pairs.append((quote(unquote(name), safe="-_.~"), quote(unquote(value), safe="-_.~")))
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))


# ---------------------------------------------------------------------------------------------
# Recording


def default_output(provider_name: str, recipe_name: str, model: str, root: str | Path = "cassettes") -> Path:
    """`cassettes/<dialect>/<provider>-<recipe>-<model>.yaml`, the model made file-name safe."""
    spec = provider(provider_name)
    safe_model = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"
    return Path(root) / spec.dialect / f"{spec.name}-{recipe_name}-{safe_model}.yaml"


def record(
    provider_name: str,
    recipe_name: str = "single",
    *,
    model: str | None = None,
    output: str | Path | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    mode: str = "all",
    timeout: float = 120.0,
    env: Mapping[str, str] | None = None,
) -> Path:
    """Run a recipe against a live provider (or any `base_url`) and save a corpus cassette.

    The request goes through `RecordingTransport` over httpx's real network transport; the
    stream is read to its end, then the saved cassette gets its source, dialect and each
    interaction's `expected` outcome from the reference accumulator. Returns the cassette path.
    """
    import httpx

    from harness.cassettes import format as cassettes
    from harness.transports import RecordingTransport
    from harness.wire import dialects

    spec = provider(provider_name)
    request = build_request(
        provider_name, recipe_name, model=model, base_url=base_url, api_key_env=api_key_env, env=env
    )
    model = model or spec.default_model or ""
    path = Path(output) if output is not None else default_output(provider_name, recipe_name, model)
    before = _stamp(path)
    transport = RecordingTransport(httpx.HTTPTransport(), path=path, mode=mode)
    try:
        with (
            httpx.Client(transport=transport, timeout=timeout) as client,
            client.stream(
                request.method, request.url, headers=request.headers, content=request.body
            ) as response,
        ):
            for _ in response.iter_raw():
                pass  # every read lands in the cassette; nothing to do with it here
            status = response.status_code
    except httpx.TransportError as exc:
        raise UsageError(
            f"{spec.name} at {request.url}: {type(exc).__name__}: {exc or 'no detail'}"
        ) from None
    if _stamp(path) == before:
        raise UsageError(f"{path}: nothing was recorded (record mode {mode!r} replayed the request)")
    saved = cassettes.load(path)
    if status >= 400:
        # Keep the corpus clean: the failed exchange is reported, not stored.
        failed = saved.interactions.pop()
        snippet = " ".join(failed.response.body.decode("utf-8", "replace").split())[:200]
        if saved.interactions:
            cassettes.save(saved, path)
        else:
            path.unlink()
        raise UsageError(f"{spec.name} answered HTTP {status}: {snippet or '(empty body)'}")
    saved.name = path.stem
    saved.dialect = spec.dialect
    saved.source = cassettes.Source(
        "recorded",
        f"toolstream record {spec.name} --recipe {recipe_name} --model {model} on {dt.date.today():%Y-%m-%d}",
    )
    for interaction in saved.interactions:
        interaction.expected = dialects.reference_outcome(interaction.response, spec.dialect)
    transport.scrub(saved)  # a secret echoed in pieces can reappear whole in `expected`
    cassettes.save(saved, path)
    return path


def _stamp(path: Path) -> tuple[int, int] | None:
    """What changes when a file is (re)written: None when there is no file."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_mtime_ns, stat.st_ino
