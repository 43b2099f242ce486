"""What one dialect's answer becomes in another's words, for judging a gateway that translates
between them (`harness.gateway`): a request asked again in the other dialect, and the outcome a
faithful translation of a stream reaches.

A faithful translation keeps the calls (names and arguments, in order), the text, the state and
the finish's meaning; ids may be minted anew (a dialect without ids, a gateway's own), so none is
expected; the provider's own calls stay apart from the client's (`server_calls`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from harness.cassettes.outcome import Outcome, ServerCall, ToolCall
from harness.errors import UsageError
from harness.wire.dialects import Finish, get
from harness.wire.dialects.requesting import Recipe, Requesting

__all__ = ["asked_again", "requesting", "translated_outcome"]


def requesting(name: str) -> Requesting:
    """A dialect's requesting role; `UsageError` when it has none."""
    d = get(name)
    if not isinstance(d, Requesting):
        raise UsageError(f"dialect {name!r} cannot be asked for a stream, so it cannot be a gateway's side")
    return d


def asked_again(body: Any, source: str, target: str, model: str) -> tuple[str, dict[str, Any]]:
    """The path and body that ask, in `target`'s words, what a request `body` of `source` asked
    (its last user message, its function tools); `UsageError` when `source` cannot read it."""
    recipe = requesting(source).recipe_of(body) if isinstance(body, dict) else None
    if recipe is None:
        raise UsageError(f"the request of a {source} case cannot be read as a question to ask {target}")
    asking = requesting(target)
    made = asking.request_body(_without_thinking(recipe), model)
    if not recipe.tools:  # an empty tool list is refused by some gateways; none is the same question
        made.pop("tools", None)
    return asking.request_path(model), made


def _without_thinking(recipe: Recipe) -> Recipe:
    return replace(recipe, thinking=False)


def translated_outcome(outcome: Outcome, source: str, target: str) -> Outcome:
    """`outcome` of a `source` stream as a faithful translation into `target` reaches it: the
    same calls without their ids, the same text, state and server calls, the finish in
    `target`'s word for the same meaning (None when `target` has no word for it)."""
    return Outcome(
        tool_calls=tuple(ToolCall(c.name, c.arguments, None, c.invalid) for c in outcome.tool_calls),
        text=outcome.text,
        finish_reason=_finish(outcome, source, target),
        state=outcome.state,
        error=outcome.error,
        server_calls=tuple(ServerCall(c.name, c.arguments, None, c.result) for c in outcome.server_calls),
    )


def _finish(outcome: Outcome, source: str, target: str) -> str | None:
    if outcome.finish_reason is None:
        return None
    meanings = {word: meaning for meaning, word in get(source).finish_reasons.items()}
    meaning = meanings.get(outcome.finish_reason)
    if meaning is None:
        return None
    words = get(target).finish_reasons
    if meaning is Finish.STOP and outcome.tool_calls and Finish.TOOL_CALLS not in get(source).finish_reasons:
        meaning = Finish.TOOL_CALLS  # Gemini says STOP after calls; a dialect with a word for them uses it
    if meaning is Finish.TOOL_CALLS and meaning not in words:
        meaning = Finish.STOP  # Responses has no word for them: the response completed
    return words.get(meaning)
