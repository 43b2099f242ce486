"""Recipes on providers: each provider's request format, credentials from the environment, SigV4 signing."""

from __future__ import annotations

import datetime as dt

import pytest

from harness.errors import UsageError
from harness.record import flow, providers, recipes
from harness.wire.dialects import sigv4

KEYS = {
    "OPENAI_API_KEY": "sk-test-openai",
    "ANTHROPIC_API_KEY": "sk-ant-test",
    "GEMINI_API_KEY": "gm-test",
    "CO_API_KEY": "co-test",
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    "AWS_REGION": "us-east-1",
}
NOW = dt.datetime(2025, 3, 4, 5, 6, 7, tzinfo=dt.UTC)


def build(provider: str, recipe: str = "single", **kwargs: object) -> providers.PreparedRequest:
    kwargs.setdefault("env", KEYS)
    kwargs.setdefault("now", NOW)
    if provider == "openai-compatible":
        kwargs.setdefault("base_url", "http://localhost:8000/v1")
        kwargs.setdefault("model", "local-model")
    return providers.build_request(provider, recipe, **kwargs)  # type: ignore[arg-type]


def tool_names(provider: str, body: dict) -> list[str]:
    if provider in ("openai", "openai-compatible", "ollama", "cohere"):
        return [t["function"]["name"] for t in body["tools"]]
    if provider == "openai-responses":
        return [t["name"] for t in body["tools"]]
    if provider == "anthropic":
        return [t["name"] for t in body["tools"]]
    if provider == "gemini":
        return [t["name"] for t in body["tools"][0]["functionDeclarations"]]
    return [t["toolSpec"]["name"] for t in body["toolConfig"]["tools"]]


@pytest.mark.parametrize("provider", list(providers.providers()))
@pytest.mark.parametrize(
    "recipe",
    [r for r, rec in recipes.RECIPES.items() if not (rec.thinking or rec.web_search or r == "custom-tool")],
)
def test_every_provider_builds_every_recipe_as_a_streaming_request(provider: str, recipe: str) -> None:
    request = build(provider, recipe)
    body = request.json
    assert request.method == "POST"
    assert sorted(tool_names(provider, body)) == sorted(t.name for t in recipes.RECIPES[recipe].tools)
    if provider == "gemini":
        assert "streamGenerateContent" in request.url and "alt=sse" in request.url
    elif provider == "bedrock":
        assert request.url.endswith("/converse-stream")
    else:
        assert body["stream"] is True
    assert recipes.RECIPES[recipe].prompt in request.body.decode()


@pytest.mark.parametrize(
    ("provider", "url", "auth_header", "auth_value"),
    [
        ("openai", "https://api.openai.com/v1/chat/completions", "Authorization", "Bearer sk-test-openai"),
        ("openai-responses", "https://api.openai.com/v1/responses", "Authorization", "Bearer sk-test-openai"),
        ("anthropic", "https://api.anthropic.com/v1/messages", "x-api-key", "sk-ant-test"),
        (
            "gemini",
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            "x-goog-api-key",
            "gm-test",
        ),
        ("cohere", "https://api.cohere.com/v2/chat", "Authorization", "Bearer co-test"),
        ("ollama", "http://localhost:11434/api/chat", None, None),
    ],
)
def test_endpoint_and_key_header(
    provider: str, url: str, auth_header: str | None, auth_value: str | None
) -> None:
    request = build(provider)
    assert request.url == url
    if auth_header is not None:
        assert request.headers[auth_header] == auth_value
    else:
        assert not any(k.lower() in ("authorization", "x-api-key") for k in request.headers)


def test_openai_chat_asks_for_usage_and_names_the_model() -> None:
    body = build("openai", model="gpt-x").json
    assert body["model"] == "gpt-x"
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"][0]["function"]["parameters"]["required"] == ["city"]


def test_gemini_no_args_tool_has_no_parameters() -> None:
    declaration = build("gemini", "no-args").json["tools"][0]["functionDeclarations"][0]
    assert declaration["name"] == "list_open_issues"
    assert "parameters" not in declaration


def test_gemini_key_may_come_from_google_api_key() -> None:
    env = {"GOOGLE_API_KEY": "g-key"}
    assert build("gemini", env=env).headers["x-goog-api-key"] == "g-key"


@pytest.mark.parametrize(
    ("provider", "check"),
    [
        (
            "anthropic",
            lambda b: b["thinking"]["type"] == "enabled" and b["max_tokens"] > b["thinking"]["budget_tokens"],
        ),
        ("openai-responses", lambda b: b["reasoning"]["effort"] == "medium"),
        ("gemini", lambda b: b["generationConfig"]["thinkingConfig"]["includeThoughts"] is True),
        ("ollama", lambda b: b["think"] is True),
        ("cohere", lambda b: b["thinking"]["type"] == "enabled"),
        ("bedrock", lambda b: b["additionalModelRequestFields"]["thinking"]["type"] == "enabled"),
    ],
)
def test_thinking_recipe_enables_reasoning(provider: str, check: object) -> None:
    assert check(build(provider, "thinking-then-tool").json)  # type: ignore[operator]
    assert "thinking" not in build(provider, "single").body.decode().replace("thinking-then", "")


@pytest.mark.parametrize("provider", ["openai", "openai-compatible"])
def test_thinking_recipe_is_refused_where_not_streamed(provider: str) -> None:
    with pytest.raises(UsageError, match="thinking-then-tool needs reasoning") as info:
        build(provider, "thinking-then-tool")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("provider", "tool"),
    [
        ("openai", lambda b: b["tools"][0]["custom"]["format"] == {"type": "text"}),
        ("openai-compatible", lambda b: b["tools"][0]["custom"]["name"] == "run_shell"),
        (
            "openai-responses",
            lambda b: (
                b["tools"][0] | {"description": ""}
                == {"type": "custom", "name": "run_shell", "description": "", "format": {"type": "text"}}
            ),
        ),
    ],
)
def test_custom_tool_recipe_offers_a_freeform_tool(provider: str, tool: object) -> None:
    body = build(provider, "custom-tool").json
    assert body["tools"][0]["type"] == "custom" and tool(body)  # type: ignore[operator]


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "bedrock", "ollama", "cohere"])
def test_custom_tool_recipe_is_refused_where_not_taken(provider: str) -> None:
    with pytest.raises(UsageError, match=r"custom-tool needs custom \(freeform\) tools") as info:
        build(provider, "custom-tool")
    assert "use openai" in str(info.value) and "\n" not in str(info.value)


def test_thinking_on_bedrock_needs_an_anthropic_model() -> None:
    with pytest.raises(UsageError, match="Anthropic model"):
        build("bedrock", "thinking-then-tool", model="amazon.nova-pro-v1:0")


@pytest.mark.parametrize(
    ("provider", "variable"),
    [
        ("openai", "OPENAI_API_KEY"),
        ("openai-responses", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("gemini", "GEMINI_API_KEY or GOOGLE_API_KEY"),
        ("cohere", "CO_API_KEY"),
        ("bedrock", "AWS_ACCESS_KEY_ID"),
    ],
)
def test_missing_key_names_the_variable(provider: str, variable: str) -> None:
    env = {"AWS_REGION": "us-east-1"}
    with pytest.raises(UsageError) as info:
        build(provider, env=env)
    assert variable in str(info.value)
    assert "\n" not in str(info.value)


def test_ollama_needs_no_key_and_compatible_key_is_optional() -> None:
    assert build("ollama", env={}).url.endswith("/api/chat")
    assert "Authorization" not in build("openai-compatible", env={}).headers
    assert build("openai-compatible").headers["Authorization"] == "Bearer sk-test-openai"


def test_api_key_env_overrides_and_is_required() -> None:
    env = {"MY_KEY": "mine"}
    assert build("openai-compatible", env=env, api_key_env="MY_KEY").headers["Authorization"] == "Bearer mine"
    with pytest.raises(UsageError, match="OTHER_KEY"):
        build("openai-compatible", env=env, api_key_env="OTHER_KEY")


def test_compatible_needs_base_url_and_model() -> None:
    with pytest.raises(UsageError, match="--base-url"):
        providers.build_request("openai-compatible", model="m", env={})
    with pytest.raises(UsageError, match="--model"):
        providers.build_request("openai-compatible", base_url="http://localhost:1/v1", env={})


def test_base_url_replaces_the_api_root() -> None:
    assert build("anthropic", base_url="http://127.0.0.1:9/").url == "http://127.0.0.1:9/v1/messages"


def test_unknown_provider_and_recipe() -> None:
    with pytest.raises(UsageError, match="unknown provider"):
        providers.build_request("mistral", env=KEYS)
    with pytest.raises(UsageError, match="unknown recipe"):
        providers.build_request("openai", "sequential", env=KEYS)


def test_bedrock_url_from_region_and_model_is_encoded() -> None:
    request = build("bedrock", model="anthropic.claude-3-haiku-20240307-v1:0")
    assert request.url == (
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream"
    )
    assert request.headers["Authorization"].startswith(
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250304/us-east-1/bedrock/"
    )
    assert request.headers["X-Amz-Date"] == "20250304T050607Z"


def test_bedrock_session_token_is_sent_and_signed() -> None:
    request = build("bedrock", env={**KEYS, "AWS_SESSION_TOKEN": "token-123"})
    assert request.headers["X-Amz-Security-Token"] == "token-123"
    assert "x-amz-security-token" in request.headers["Authorization"]


@pytest.mark.parametrize("token", [None, "session-token-xyz"])
@pytest.mark.parametrize(
    "url",
    [
        "https://bedrock-runtime.us-west-2.amazonaws.com/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream",
        "https://bedrock-runtime.us-west-2.amazonaws.com/model/m/converse-stream?b=2&a=x%20y",
    ],
)
def test_sigv4_matches_botocore(monkeypatch: pytest.MonkeyPatch, url: str, token: str | None) -> None:
    botocore_auth = pytest.importorskip("botocore.auth")
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    body = b'{"messages":[]}'
    headers = {"content-type": "application/json", "accept": "application/vnd.amazon.eventstream"}
    monkeypatch.setattr(botocore_auth, "get_current_datetime", lambda: NOW.replace(tzinfo=None))
    theirs = AWSRequest(method="POST", url=url, data=body, headers=dict(headers))
    botocore_auth.SigV4Auth(
        Credentials("AKIDEXAMPLE", KEYS["AWS_SECRET_ACCESS_KEY"], token), "bedrock", "us-west-2"
    ).add_auth(theirs)
    ours = sigv4.sign_sigv4(
        "POST",
        url,
        headers,
        body,
        access_key="AKIDEXAMPLE",
        secret_key=KEYS["AWS_SECRET_ACCESS_KEY"],
        region="us-west-2",
        service="bedrock",
        session_token=token,
        now=NOW,
    )
    assert ours["Authorization"] == theirs.headers["Authorization"]
    assert ours["X-Amz-Date"] == theirs.headers["X-Amz-Date"]


def test_default_output_is_under_the_dialect_folder() -> None:
    path = flow.default_output("bedrock", "parallel", "us.anthropic.claude:0")
    assert path.as_posix() == "cassettes/bedrock-converse/bedrock-parallel-us.anthropic.claude_0.yaml"


def test_base_url_comes_from_the_sdk_variable_unless_given() -> None:
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    assert providers.build_request("openai", env=env).url == "http://127.0.0.1:9/v1/chat/completions"
    given = providers.build_request("openai", base_url="http://127.0.0.1:8/v1", env=env)
    assert given.url == "http://127.0.0.1:8/v1/chat/completions"
    anthropic = providers.build_request(
        "anthropic", env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://h"}
    )
    assert anthropic.url == "http://h/v1/messages"


@pytest.mark.parametrize("provider", ["anthropic", "openai-responses"])
def test_server_tool_recipe_offers_the_providers_web_search(provider: str) -> None:
    body = build(provider, "server-tool-then-call").json
    hosted = [t for t in body["tools"] if t.get("type", "").startswith("web_search")]
    assert len(hosted) == 1 and tool_names(
        provider, {"tools": [t for t in body["tools"] if t not in hosted]}
    ) == ["get_weather"]


@pytest.mark.parametrize("provider", ["openai", "gemini", "bedrock", "ollama", "cohere"])
def test_server_tool_recipe_is_refused_where_the_provider_runs_no_search(provider: str) -> None:
    with pytest.raises(UsageError, match="server-tool-then-call needs a web search tool") as info:
        build(provider, "server-tool-then-call")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("provider", ["anthropic", "openai-responses", "gemini"])
def test_thinking_parallel_recipe_thinks_and_offers_one_tool(provider: str) -> None:
    body = build(provider, "thinking-parallel").json
    assert tool_names(provider, body) == ["get_weather"]
    assert any(key in body for key in ("thinking", "reasoning", "generationConfig"))
