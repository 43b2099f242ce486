"""A case: one recorded response run through one scenario with one seed, with the outcome a
correct client reaches. Made by `harness.mutate.scenario` (which re-exports it); kept apart from
the mutations so what only runs cases (a `serve-accumulator` child) does not import them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.cassettes.model import Declared, Interaction, Response
from harness.cassettes.outcome import Outcome

if TYPE_CHECKING:
    from harness.mutate import Stream
    from harness.wire.dialects import Event

__all__ = ["Case", "Conversation", "DeferredResponse"]


@dataclass(frozen=True, slots=True)
class Conversation:
    """Where a case's stream sits in a recorded conversation (a cassette of several turns): its
    `turn`, from 1 as `show` and the replay messages number interactions; the turns recorded
    `before` it; the turns `after` it, which answer the follow-ups in order (the replay server
    serves them, and a case written as a cassette keeps them all)."""

    turn: int
    before: tuple[Interaction, ...] = ()
    after: tuple[Interaction, ...] = ()


class DeferredResponse:
    """A `Case.response` known only by how it ended until it is read; then `render()` gives it
    (a case read back from the built-case store, `harness.matrix.casecache`, whose bytes were not kept)."""

    __slots__ = ("complete", "error", "render")

    def __init__(self, complete: bool, error: str | None, render: Callable[[], Response]) -> None:
        self.complete = complete
        self.error = error
        self.render = render


class _BuiltOnRead:
    """A `Case.response` given as a `Stream` and the recorded response it is `like` (or as a
    `DeferredResponse`): its bytes and reads are rendered when first read (an event-level
    accumulator never reads them), then kept."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}"

    def __get__(self, case: Any, owner: type | None = None) -> Response:
        if case is None:
            raise AttributeError("no default")  # the dataclass field stays required
        value = case.__dict__[self.slot]
        if isinstance(value, tuple):
            stream, like = value
            value = stream.response(like)
            case.__dict__[self.slot] = value
        elif type(value) is DeferredResponse:
            value = value.render()
            case.__dict__[self.slot] = value
        return value

    def __set__(self, case: Any, value: Response | tuple[Stream, Response] | DeferredResponse) -> None:
        case.__dict__[self.slot] = value


@dataclass(frozen=True)
class Case:
    """One mutated response, replayable from its id, with the outcome a correct client reaches.

    `response` may be given as `(stream, like)`: it is then rendered from the stream when first
    read (`like` gives the status and headers)."""

    id: str
    dialect: str
    if TYPE_CHECKING:
        response: Response
    else:
        response: _BuiltOnRead = _BuiltOnRead()  # a descriptor field: required, settable lazily
    events: tuple[Event, ...]
    expected: Outcome
    cassette: str
    scenario: str
    seed: int
    point: str | None = None
    request: Any = None  # the recorded `Request`, for writing the case as a cassette
    # What its cassette declares of its class (`expected_class`), kept by `replace`: a case written
    # as a cassette and read back is judged as the case was (harness.oracle.expectation).
    declared: Declared | None = field(default=None, compare=False, repr=False)
    # The recorded turns around its stream when its cassette is a conversation, kept by `replace`.
    conversation: Conversation | None = field(default=None, compare=False, repr=False)
    # Its class (`harness.oracle.expectation.Expectation`) when already known: set only on a case
    # read back from the built-case store; not an argument, so `replace` drops it with the events.
    expectation: Any = field(default=None, init=False, compare=False, repr=False)

    @property
    def complete(self) -> bool:
        """Whether the stream ended cleanly (read without rendering the response)."""
        value = self.__dict__["_response"]
        return bool(value[0].complete if isinstance(value, tuple) else value.complete)

    @property
    def error(self) -> str | None:
        """The transport error the client saw when the stream was cut (read without rendering)."""
        value = self.__dict__["_response"]
        error: str | None = value[0].error if isinstance(value, tuple) else value.error
        return error
