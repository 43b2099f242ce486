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

    name: str  # the name on the command line and in the card
    adapter: str  # the accumulator spec `serve-accumulator` is given in the side environment
    dialects: tuple[str, ...]  # the cassettes that adapter reads (others are not sent to it)
    package: str = ""  # the distribution the code lives in, whose releases are graded (default: name)
    extras: tuple[str, ...] = ()  # the extras of `package` the adapter drives (and only those)
    also: tuple[str, ...] = ()  # other distributions of the same code (a meta package)
    # Libraries whose rows already grade this one's code, as their users run it: a case with the
    # same verdict there is counted in their row, not again in this one (`grading.card`).
    via: tuple[str, ...] = ()
    # Distributions installed beside the release, as of its day: the provider SDK that a model the
    # adapter drives imports, which the library leaves to its user (no extra of its own brings it).
    beside: tuple[str, ...] = ()

    @property
    def distribution(self) -> str:
        return self.package or self.name

    @property
    def distributions(self) -> tuple[str, ...]:
        return (self.distribution, *(d for d in (self.name, *self.also) if d != self.distribution))

    def requirement(self, version: str) -> str:
        """What pip installs for one release: the package with the adapter's extras only."""
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        return f"{self.distribution}{extras}=={version}"


LIBRARIES: dict[str, Library] = {
    lib.name: lib
    for lib in (
        Library("openai", "openai-sdk", ("openai-chat", "openai-responses")),
        Library("anthropic", "anthropic-sdk", ("anthropic",)),
        # Fed the chunks langchain-openai and langchain-anthropic build: it grades langchain-core's
        # own merging across its releases, and what those integrations' rows already show is theirs.
        Library(
            "langchain-core",
            "langchain-core",
            ("openai-chat", "anthropic"),
            via=("langchain-openai", "langchain-anthropic"),
        ),
        Library("langchain-openai", "langchain-openai", ("openai-chat", "openai-responses")),
        Library("langchain-anthropic", "langchain-anthropic", ("anthropic",)),
        # `pydantic-ai` is a meta package pulling in every extra (evals, logfire, ...): the code and
        # the two models the adapter drives are pydantic-ai-slim's.
        Library(
            "pydantic-ai",
            "pydantic-ai",
            ("openai-chat", "anthropic"),
            package="pydantic-ai-slim",
            extras=("openai", "anthropic"),
            also=("pydantic-ai",),
        ),
        Library("litellm", "litellm", ("openai-chat", "anthropic")),
        # ADK's own Gemini model and its AnthropicLlm, whose `anthropic` only the large
        # `extensions` extra brings.
        Library("google-adk", "google-adk", ("gemini", "anthropic"), beside=("anthropic",)),
        # The default Bedrock model (boto3, a dependency) and the providers of three extras.
        Library(
            "strands-agents",
            "strands-agents",
            ("bedrock-converse", "openai-chat", "anthropic", "gemini"),
            extras=("openai", "anthropic", "gemini"),
        ),
        Library("smolagents", "smolagents", ("openai-chat",), extras=("openai",)),
        # Agno's own OpenAIChat and Claude models, whose SDKs its two extras bring.
        Library("agno", "agno", ("openai-chat", "anthropic"), extras=("openai", "anthropic")),
    )
}


def library(name: str) -> Library:
    """The registered library of this name; a usage error naming the known ones otherwise."""
    try:
        return LIBRARIES[name]
    except KeyError:
        raise UsageError(f"--libraries: unknown library {name!r} (known: {', '.join(LIBRARIES)})") from None
