"""The parts of a response in the order they came, as the reference accumulators collect them
(`harness.cassettes.outcome.Part`): text, client calls, server calls and reasoning, each with the
signature, payload and id that must go back with it on the next turn.

A call or server call part is entered when its call begins, under the accumulator's own key for
that call; `close` keeps it only if that call is reported (a call never final is no part either).
Reasoning parts are keyed too, so a signature or a summary delta finds its block or item.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Hashable
from dataclasses import dataclass, field

from harness.cassettes.outcome import Part, PartKind


@dataclass(slots=True)
class _Open:
    kind: PartKind
    key: Hashable = None
    text: list[str] = field(default_factory=list)
    signature: str | None = None
    data: str | None = None
    id: str | None = None


class PartLog:
    """Parts as they arrive; `close` gives them as `Part`s."""

    def __init__(self) -> None:
        self._parts: list[_Open] = []
        self._keyed: dict[tuple[PartKind, Hashable], _Open] = {}

    def text(
        self, piece: str, key: Hashable = None, signature: str | None = None, kind: PartKind = PartKind.TEXT
    ) -> None:
        """A piece of text (or, `kind`, of reasoning that comes in pieces with no key: Gemini
        thoughts): joined to the last part when it is of that kind under the same key, else a part
        of its own. A signed piece is a part of its own (Gemini: never merge a signed part into
        an unsigned one)."""
        last = self._parts[-1] if self._parts else None
        if (
            signature is None
            and last is not None
            and last.kind is kind
            and last.key == key
            and last.signature is None
        ):
            last.text.append(piece)
            return
        self._parts.append(_Open(kind, key, [piece], signature))

    def open(self, kind: PartKind, key: Hashable, **given: str | None) -> None:
        """A part begins under `key` (a call, a server call, a reasoning block or item)."""
        if (kind, key) in self._keyed:
            return  # a repeated start: the part is already there
        part = _Open(kind, key, [], given.get("signature"), given.get("data"), given.get("id"))
        self._parts.append(part)
        self._keyed[(kind, key)] = part

    def reasoning(self, key: Hashable, piece: str = "", **given: str | None) -> None:
        """Reasoning text for the reasoning part under `key` (opened if it is not), and any
        `signature` (appended: a signature split over deltas is one signature), `data` or `id`."""
        self.add(PartKind.REASONING, key, piece, **given)

    def add(self, kind: PartKind, key: Hashable, piece: str = "", **given: str | None) -> None:
        """`reasoning` for a part of any kind (Responses text, keyed by item and content index)."""
        self.open(kind, key)
        part = self._keyed[(kind, key)]
        if piece:
            part.text.append(piece)
        if given.get("signature"):
            part.signature = (part.signature or "") + str(given["signature"])
        for name in ("data", "id"):
            if given.get(name) is not None:
                setattr(part, name, given[name])

    def replace_text(self, kind: PartKind, key: Hashable, text: str) -> None:
        """The whole text of a part, as its final event restates it (a Responses item's `.done`)."""
        part = self._keyed.get((kind, key))
        if part is not None:
            part.text = [text]

    def sign(self, kind: PartKind, key: Hashable, signature: str) -> None:
        """The first signature a call part gets is its own (later fragments restate it)."""
        part = self._keyed.get((kind, key))
        if part is not None and part.signature is None:
            part.signature = signature

    def close(
        self,
        calls: Container[Hashable] = (),
        servers: Container[Hashable] = (),
        text: Callable[[str], str] = str,
    ) -> tuple[Part, ...]:
        """The parts, keeping the call parts whose key is in `calls` and the server call parts
        whose key is in `servers` (the ones reported); `text` finishes each text part's text."""
        out: list[Part] = []
        for part in self._parts:
            if (part.kind is PartKind.CALL and part.key not in calls) or (
                part.kind is PartKind.SERVER_CALL and part.key not in servers
            ):
                continue
            joined = "".join(part.text)
            said = text(joined) if part.kind is PartKind.TEXT else joined
            out.append(Part(part.kind, said, part.signature, part.data, part.id))
        return tuple(out)
