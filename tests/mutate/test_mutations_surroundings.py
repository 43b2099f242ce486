from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from harness.cassettes.outcome import PartKind
from harness.errors import NotApplicable
from tests._mutation_streams import apply, assert_oracle, stream_of

NAMES = ["openai-chat/parallel-2", "anthropic/parallel-calls", "gemini/parallel-one-chunk", "ollama/parallel"]


@pytest.mark.parametrize("name", [*NAMES[:2], "gemini/parallel-one-per-chunk", *NAMES[3:]])
def test_text_around_tool_calls_lands_in_order(name: str) -> None:
    stream = stream_of(name)
    out = apply("insert-text", stream, text="I'll check ", where="before-tools")
    out = apply("insert-text", out, text="that now.", where="after-tools")
    assert out.expected.text.endswith("that now.") and "I'll check " in out.expected.text
    assert_oracle(out)


def test_no_text_after_the_finish() -> None:
    # Gemini's calls and finishReason share the last chunk here: nothing may follow it.
    with pytest.raises(NotApplicable, match="finish"):
        apply("insert-text", stream_of("gemini/parallel-one-chunk"), where="after-tools")


@pytest.mark.parametrize("name", NAMES)
def test_reasoning_and_usage_keep_meaning(name: str) -> None:
    out = apply("insert-reasoning", stream_of(name))
    before = stream_of(name).expected
    assert replace(out.expected, parts=()) == replace(before, parts=())
    if before.parts:  # a dialect whose reference reports parts expects the reasoning where it went
        reasoning = [p.text for p in out.expected.parts if p.kind is PartKind.REASONING]
        assert any(text.endswith("I should call the tool.") for text in reasoning)
    assert_oracle(out)


def test_usage_on_every_chunk() -> None:
    stream = stream_of("openai-chat/parallel-2")
    out = apply("usage-chunks", stream, every=True)

    def usage(event: Any) -> bool:
        return isinstance(event.payload, dict) and event.payload.get("usage") is not None

    # The stream's own chunks, in order, each followed by a chunk of usage alone.
    own = [e.payload for e in stream.events if not usage(e)]
    assert [e.payload for e in out.events if not usage(e)] == own
    chunks = [n for n, e in enumerate(out.events) if isinstance(e.payload, dict) and not usage(e)]
    alone = [out.events[n + 1] for n in chunks]
    assert chunks and all(usage(after) and after.payload["choices"] == [] for after in alone)
    assert_oracle(out)


def test_pings_only_where_the_provider_has_them() -> None:
    assert_oracle(apply("pings", stream_of("anthropic/parallel-calls")))
    with pytest.raises(NotApplicable):
        apply("pings", stream_of("openai-chat/parallel-2"))


@pytest.mark.parametrize("what", ["message", "tool"])
def test_duplicate_starts(what: str) -> None:
    assert_oracle(apply("duplicate-start", stream_of("anthropic/parallel-calls"), what=what))


def test_thinking_goes_between_calls_only_where_the_request_interleaves_it() -> None:
    out = apply("insert-reasoning", stream_of("anthropic/interleaved-thinking"), where="between-tools")
    kinds = [p.kind for p in out.expected.parts]
    assert kinds == [PartKind.REASONING, PartKind.CALL, PartKind.REASONING, PartKind.REASONING, PartKind.CALL]
    assert_oracle(out)
    with pytest.raises(NotApplicable, match=r"anthropic\.thinking-not-interleaved"):
        apply("insert-reasoning", stream_of("anthropic/parallel-calls"), where="between-tools")
