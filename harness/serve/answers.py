"""What the replay server says besides the case's own stream, in each provider's shape (the shapes
are the dialect's knowledge: `Requesting` in each dialect module; here is only the choice).

- `final_answer`: the short answer to a follow-up request (it carried tool results), streamed or
  whole, so an agent loop ends cleanly.
- `whole_response`: a case's outcome as one non-streaming body (`stream: false`, Gemini
  `generateContent`, Bedrock `Converse`), for programs that do not stream.
- `error_response`: an in-band error of a case, as the status and body a non-streaming call gets.
"""

from __future__ import annotations

from harness.cassettes.outcome import Outcome
from harness.serve.followup import requesting
from harness.wire.dialects.requesting import FINAL_TEXT, dumps

__all__ = ["FINAL_TEXT", "JSON", "error_response", "final_answer", "media_type", "whole_response"]

JSON = "application/json"


def media_type(dialect: str) -> str:
    """The media type a stream of `dialect` is served with."""
    return requesting(dialect).media_type


def final_answer(dialect: str, *, stream: bool) -> tuple[str, bytes]:
    """The media type and body of the short final answer to a follow-up request."""
    if stream:
        return media_type(dialect), requesting(dialect).final_stream()
    return JSON, whole_response(dialect, Outcome(text=FINAL_TEXT))


def whole_response(dialect: str, outcome: Outcome) -> bytes:
    """A case's outcome as the body of a non-streaming response."""
    return dumps(requesting(dialect).whole_response(outcome)).encode()


def error_response(dialect: str, message: str, *, status: int = 500) -> tuple[int, str, bytes]:
    """Status, media type and body of an error the way the provider returns one."""
    return status, JSON, dumps(requesting(dialect).error_body(message)).encode()
