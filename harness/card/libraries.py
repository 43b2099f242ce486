"""What the report card can grade: each library, the adapter that reports what its user sees, and
the dialects that adapter reads.

One line per library. A library whose adapter this harness does not ship yet is still listed:
its row says the adapter is missing rather than stopping the card.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import UsageError

__all__ = ["LIBRARIES", "Library", "library"]


@dataclass(frozen=True)
class Library:
    """A library as the card grades it."""

    name: str  # the PyPI distribution, also the name on the command line
    adapter: str  # the accumulator spec `serve-accumulator` is given in the side environment
    dialects: tuple[str, ...]  # the cassettes that adapter reads (others are not sent to it)
    also: tuple[str, ...] = ()  # other distributions of the same code (a "slim" release)

    @property
    def distributions(self) -> tuple[str, ...]:
        return (self.name, *self.also)


LIBRARIES: dict[str, Library] = {
    lib.name: lib
    for lib in (
        Library("openai", "openai-sdk", ("openai-chat", "openai-responses")),
        Library("anthropic", "anthropic-sdk", ("anthropic",)),
        Library("langchain-core", "langchain-core", ("openai-chat", "anthropic")),
        Library("langchain-openai", "langchain-openai", ("openai-chat", "openai-responses")),
        Library("langchain-anthropic", "langchain-anthropic", ("anthropic",)),
        Library("pydantic-ai", "pydantic-ai", ("openai-chat", "anthropic"), also=("pydantic-ai-slim",)),
        Library("litellm", "litellm", ("openai-chat", "anthropic")),
    )
}


def library(name: str) -> Library:
    """The registered library of this name; a usage error naming the known ones otherwise."""
    try:
        return LIBRARIES[name]
    except KeyError:
        raise UsageError(f"--libraries: unknown library {name!r} (known: {', '.join(LIBRARIES)})") from None
