"""The role of a dialect that can ask its provider for a stream (`toolstream record`).

The request format is provider knowledge, so it lives with the dialect: its endpoint and path,
the body that runs a recipe, where its key comes from and the header that carries it. What is
the same for every provider (picking the root, reading the key, encoding) is in
`harness.record.providers`.
"""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from harness.errors import UsageError
from harness.record.recipes import Recipe

if TYPE_CHECKING:
    from harness.record.providers import PreparedRequest


class Requesting(ABC):
    """How to ask this dialect's provider for a streamed answer to a recipe."""

    provider: ClassVar[str]  # the name `toolstream record` knows the provider by
    api_root: ClassVar[str | None] = None  # None: it depends on the environment (see `root_in`)
    default_model: ClassVar[str]
    key_env: ClassVar[tuple[str, ...]] = ()  # any one of these holds the key; empty: no key
    base_url_env: ClassVar[tuple[str, ...]] = ()  # where the provider's own SDK reads its endpoint
    streams_reasoning: ClassVar[bool] = False  # whether a recipe that thinks can run here

    @abstractmethod
    def request_body(self, recipe: Recipe, model: str) -> dict[str, Any]:
        """The JSON body that runs `recipe` on `model`, streaming on."""

    @abstractmethod
    def request_path(self, model: str) -> str:
        """The path under the API root that the body goes to."""

    def root_in(self, env: Mapping[str, str]) -> str | None:
        """The API root when none is given (Bedrock's depends on the region)."""
        return self.api_root

    def auth_headers(self, key: str) -> dict[str, str]:
        """The headers that carry a key (a bearer token unless overridden)."""
        return {"Authorization": f"Bearer {key}"}

    def credentials(
        self, request: PreparedRequest, key: str, env: Mapping[str, str], now: dt.datetime | None
    ) -> dict[str, str]:
        """The headers that authenticate `request` (no key, no header); a provider that signs the
        whole request overrides this (Bedrock: SigV4)."""
        return self.auth_headers(key) if key else {}


def chat_body(recipe: Recipe, model: str) -> dict[str, Any]:
    """The body OpenAI chat, Ollama and Cohere share: the model, the prompt as a user message,
    the tools as `function` tools, streaming on."""
    return {"model": model, "messages": user_message(recipe), "tools": function_tools(recipe), "stream": True}


def function_tools(recipe: Recipe) -> list[dict[str, Any]]:
    """The recipe's tools as OpenAI-style `function` tools."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)},
        }
        for t in recipe.tools
    ]


def user_message(recipe: Recipe) -> list[dict[str, Any]]:
    """The recipe's prompt as a one-message chat."""
    return [{"role": "user", "content": recipe.prompt}]


def required_variable(env: Mapping[str, str], names: tuple[str, ...]) -> str:
    """The first of `names` set in `env`; `UsageError` naming them when none is."""
    for name in names:
        if env.get(name):
            return env[name]
    raise UsageError(f"set {' or '.join(names)} in the environment (missing API key)")
