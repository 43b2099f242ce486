"""`toolstream record`'s side of the providers: a recipe named in its words, asked of a provider.

What a provider is, the request it takes and the variables it reads are provider knowledge and
live in `harness.wire.dialects.providers`; this module resolves the recipe by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.record.recipes import recipe
from harness.wire.dialects.providers import (
    COMPATIBLE,
    PreparedRequest,
    Provider,
    prepare_request,
    provider,
    providers,
)

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Mapping

__all__ = ["COMPATIBLE", "PreparedRequest", "Provider", "build_request", "provider", "providers"]


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
    """The request that runs the recipe `recipe_name` against `provider_name`, with its credentials.

    Raises `UsageError` for an unknown provider or recipe, and as `prepare_request` does.
    """
    provider(provider_name)  # an unknown provider is named before an unknown recipe
    return prepare_request(
        provider_name,
        recipe(recipe_name),
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        env=env,
        now=now,
    )
