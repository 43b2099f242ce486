"""The providers `toolstream record` can ask, and the request that runs a recipe on one.

A provider is a name and the dialect it speaks. Each dialect with the `Requesting` role is its
own provider (`openai`, `anthropic`, `bedrock` ...) and knows its endpoint, request body and
credentials; `COMPATIBLE` lists the servers that speak a dialect without being its provider.
What is left here is the same for every provider: choosing the API root, reading the key,
encoding the body.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from harness.errors import UsageError
from harness.wire import dialects
from harness.wire.codecs import STREAM_CONTENT_TYPES
from harness.wire.dialects.requesting import PreparedRequest, Recipe, Requesting, required_variable

__all__ = ["COMPATIBLE", "PreparedRequest", "Provider", "prepare_request", "provider", "providers"]


@dataclass(frozen=True, slots=True)
class Provider:
    """A name `toolstream record` takes, and the dialect it speaks."""

    name: str
    dialect: str
    own_endpoint: bool = True  # False: a server of the user's, so --base-url and --model are needed
    key_optional: bool = False  # local servers (vLLM, llama.cpp) usually take no key

    @property
    def default_model(self) -> str | None:
        asking = dialects.get(self.dialect)
        return asking.default_model if self.own_endpoint and isinstance(asking, Requesting) else None


# Servers that speak a dialect but are not its provider.
COMPATIBLE: Final = (Provider("openai-compatible", "openai-chat", own_endpoint=False, key_optional=True),)


def providers() -> dict[str, Provider]:
    """Every provider by name: each dialect that can ask its provider, and `COMPATIBLE`."""
    own = [
        Provider(d.provider, d.name) for d in map(dialects.get, dialects.names()) if isinstance(d, Requesting)
    ]
    return {p.name: p for p in sorted([*own, *COMPATIBLE], key=lambda p: p.name)}


def provider(name: str) -> Provider:
    known = providers()
    if name not in known:
        raise UsageError(f"unknown provider {name!r}; choose one of {', '.join(known)}")
    return known[name]


def prepare_request(
    provider_name: str,
    rec: Recipe,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    env: Mapping[str, str] | None = None,
    now: dt.datetime | None = None,
) -> PreparedRequest:
    """The request that runs `rec` against `provider_name`, with its credentials.

    Raises `UsageError` for an unknown provider, a recipe the provider cannot run, a missing
    model or base URL, or a missing key (naming the variable to set).
    """
    env = os.environ if env is None else env
    spec = provider(provider_name)
    asking = dialects.get(spec.dialect)
    if not isinstance(asking, Requesting):
        raise UsageError(f"dialect {asking.name} does not know how to ask its provider for a stream")
    if rec.thinking and not asking.streams_reasoning:
        thinking = [p.name for p in providers().values() if _streams_reasoning(p)]
        raise UsageError(
            f"recipe {rec.name} needs reasoning, which {spec.name} does not stream; "
            f"use {', '.join(thinking[:-1])} or {thinking[-1]}"
        )
    if any(t.freeform for t in rec.tools) and not asking.takes_freeform_tools:
        freeform = [p.name for p in providers().values() if _takes_freeform(p)]
        raise UsageError(
            f"recipe {rec.name} needs custom (freeform) tools, which {spec.name} does not take; "
            f"use {', '.join(freeform[:-1])} or {freeform[-1]}"
        )
    if rec.web_search and not asking.searches_web:
        searching = [p.name for p in providers().values() if _searches_web(p)]
        raise UsageError(
            f"recipe {rec.name} needs a web search tool the provider runs, which {spec.name} does not "
            f"have; use {', '.join(searching[:-1])} or {searching[-1]}"
        )
    model = model or spec.default_model
    if not model:
        raise UsageError(f"provider {spec.name} needs --model")
    # Like the provider's SDK: --base-url, else its endpoint variable (OPENAI_BASE_URL ...), else the default.
    root = base_url or next((env[v] for v in asking.base_url_env if env.get(v)), None)
    if not root and spec.own_endpoint:
        root = asking.root_in(env)
    if not root:
        raise UsageError(
            f"provider {spec.name} needs --base-url (the server's API root, e.g. http://localhost:8000/v1)"
        )
    url = root.rstrip("/") + asking.request_path(model)
    body = json.dumps(asking.request_body(rec, model), ensure_ascii=False, separators=(",", ":"))
    accept = STREAM_CONTENT_TYPES[asking.codec_name].split(";")[0]
    request = PreparedRequest(
        "POST", url, {"content-type": "application/json", "accept": accept}, body.encode("utf-8")
    )
    names = (api_key_env,) if api_key_env else asking.key_env
    key = ""
    if names:
        # A root of the user's (--base-url, OPENAI_BASE_URL ...: a local server, a gateway) may take
        # no key: the provider's variable is sent when set, none otherwise (as a compatible server).
        # A variable named with --api-key-env is the user saying the key is there: still required.
        theirs = spec.key_optional or root.rstrip("/") != (asking.root_in(env) or "").rstrip("/")
        optional = theirs and not api_key_env
        key = next((env[n] for n in names if env.get(n)), "") if optional else required_variable(env, names)
    request.headers.update(asking.credentials(request, key, env, now))
    return request


def _takes_freeform(spec: Provider) -> bool:
    asking = dialects.get(spec.dialect)
    return isinstance(asking, Requesting) and asking.takes_freeform_tools


def _searches_web(spec: Provider) -> bool:
    asking = dialects.get(spec.dialect)
    return isinstance(asking, Requesting) and asking.searches_web


def _streams_reasoning(spec: Provider) -> bool:
    asking = dialects.get(spec.dialect)
    return isinstance(asking, Requesting) and asking.streams_reasoning
