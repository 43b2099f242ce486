"""Producer mutations: a stream that says the same calls a second way (classes C7, E2 and F2).

Other completions of an `n>1` request beside choice 0, a final event whose arguments differ from
the deltas before it, and a gateway re-chunking argument text by UTF-16 code units. Provider
shapes come from the dialect (`as_choice`, `continuation`, `set`, `dumps` escaping lone
surrogates); only the model's argument text is parsed here, never a provider payload.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from harness import bounded
from harness.cassettes.outcome import ToolCall
from harness.errors import NotApplicable
from harness.mutate import Meaning, Mutation, Stream, mutation
from harness.mutate.calls import args_text, by_call, continuation, fragments_or_skip, set_at, spliced, value
from harness.wire.dialects import MISSING, Event, Field, Fragment, Kind, Role

_TEXT_ROLES = (Role.START, Role.ARGS, Role.WHOLE)
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_OTHER_TEXT = (
    "I",
    "can",
    "look",
    "that",
    "up",
    "for",
    "you",
    "once",
    "you",
    "confirm",
    "the",
    "details",
    ".",
)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _text_pieces(stream: Stream, events: Sequence[Event], group: Sequence[Fragment]) -> list[Fragment]:
    return [
        f
        for f in group
        if f.role in _TEXT_ROLES and isinstance(value(stream.dialect, events, f, Field.ARGS), str)
    ]


def _spread(text: str, lengths: Sequence[int]) -> list[str]:
    """`text` cut at the same offsets as pieces of these lengths; the last piece takes the rest."""
    out, at = [], 0
    for n, length in enumerate(lengths):
        end = len(text) if n == len(lengths) - 1 else min(len(text), at + length)
        out.append(text[at:end])
        at = end
    return out


# ---------------------------------------------------------------------------------------------
# C7


@mutation("extra-choices")
@dataclass(frozen=True)
class ExtraChoices(Mutation):
    """Add choices 1..n-1 of an `n>1` request beside choice 0 (C7: autogen read only
    `choices[0]`; a client keyed on the tool-call index alone mixes the choices). `layout`:
    `same-chunk` (every chunk carrying choice 0 carries the others) or `interleaved` (each other
    choice in a chunk of its own right after). `other`: what the other choices say, `calls` (the
    same calls with other ids and arguments) or `text` (a plain answer, finish `stop`). A client
    reading choice 0 reaches the same outcome. Needs a dialect with choices (`as_choice`) and a
    request that asked for `n` choices or more: no provider answers `n=1` with three."""

    n: int = 2
    layout: Literal["same-chunk", "interleaved"] = "same-chunk"
    other: Literal["calls", "text"] = "calls"

    def __post_init__(self) -> None:
        if self.n < 2:
            raise ValueError(f"n must be at least 2, not {self.n}")

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        carriers = {i for i, event in enumerate(stream.events) if d.as_choice(event, 1) is not None}
        if not carriers:
            raise NotApplicable(f"{d.name} streams have no choices to add to")
        fragments = fragments_or_skip(stream)
        others = [
            self._other_calls(stream, fragments, rng)
            if self.other == "calls"
            else self._other_text(stream, carriers)
            for _ in range(1, self.n)
        ]
        out: list[Event] = []
        for i, event in enumerate(stream.events):
            if i not in carriers:
                out.append(event)
                continue
            extra = [d.as_choice(alt[i], k) for k, alt in enumerate(others, start=1)]
            if self.layout == "interleaved":
                out.extend([event, *(e for e in extra if e is not None)])
                continue
            for k, alt in enumerate(others, start=1):
                event = d.as_choice(alt[i], k, into=event) or event
            out.append(event)
        if not isinstance(getattr(stream.request, "body", None), Mapping):
            raise NotApplicable("the request is not known: nothing says it asked for more than one choice")
        unasked = stream.unrequested(out)
        if unasked:
            raise NotApplicable(f"the request did not ask for {self.n} choices ({', '.join(unasked)})")
        return stream.with_events(out)

    @staticmethod
    def _other_calls(stream: Stream, fragments: Sequence[Fragment], rng: random.Random) -> list[Event]:
        """The stream's events with every call id replaced and every argument value changed."""
        d = stream.dialect
        events = list(stream.events)
        ids: dict[str, str] = {}
        for fragment in fragments:
            got = value(d, events, fragment, Field.ID)
            if isinstance(got, str) and got:
                if got not in ids:
                    tail = min(8, len(got))
                    ids[got] = got[:-tail] + "".join(rng.choice(_ALNUM) for _ in range(tail))
                set_at(events, d, fragment, Field.ID, ids[got])
        for group in by_call(fragments).values():
            pieces = _text_pieces(stream, stream.events, group)
            text = args_text(d, stream.events, group)
            other = _other_args(text, rng) if text else None
            if other is None:
                continue
            lengths = [len(str(value(d, stream.events, f, Field.ARGS))) for f in pieces]
            for fragment, piece in zip(pieces, _spread(other, lengths), strict=True):
                set_at(events, d, fragment, Field.ARGS, piece)
        return events

    @staticmethod
    def _other_text(stream: Stream, carriers: set[int]) -> list[Event]:
        """A plain-text answer, one word per chunk carrying choice 0, finished `stop`."""
        d = stream.dialect
        events = list(stream.events)
        words = iter(_OTHER_TEXT)
        last = max(carriers)
        for i in sorted(carriers):
            word = "" if i == last else next(words, "")
            built = d.build(Kind.TEXT, text=word if word in ("", ".") else f"{word} ", like=events[i])
            if not built:
                raise NotApplicable(f"{d.name} has no text event")
            reason = "stop" if d.finish_reason(events[i]) is not MISSING or i == last else MISSING
            events[i] = d.with_finish_reason(built[0], reason)
        return events


def _other_args(text: str, rng: random.Random) -> str | None:
    """A different argument object of the same shape: numbers moved, strings another value."""
    try:
        parsed = bounded.loads(text)
    except ValueError:
        return None
    if not isinstance(parsed, dict) or not parsed:
        return None
    changed = {key: _other_value(item, rng) for key, item in parsed.items()}
    return _compact(changed) if changed != parsed else None


def _other_value(item: Any, rng: random.Random) -> Any:
    if isinstance(item, bool):
        return not item
    if isinstance(item, (int, float)):
        return item + rng.randint(1, 9)
    if isinstance(item, str):
        return f"{item} {rng.choice(['North', 'South', 'Old Town', 'Centre'])}"
    return item


# ---------------------------------------------------------------------------------------------
# E2


@mutation("correct-args-at-done")
@dataclass(frozen=True)
class CorrectArgsAtDone(Mutation):
    """Make each call's end events (Responses `function_call_arguments.done`, `output_item.done`)
    carry arguments other than the concatenated deltas (E2: opencode, kimi-code appended `.done`
    to the deltas or threw on a final that is not a prefix). `how`: `append-key` (a corrected
    object, one more key `"corrected": true`: the expected arguments become it), `rewrite` (the
    same object re-serialised with other spacing: a non-prefix final, same value) or `same` (the
    deltas exactly: a client appending `.done` double-counts). The `.done` arguments win, so the
    expectation is theirs. Applies where end events carry the whole arguments."""

    how: Literal["append-key", "rewrite", "same"] = "append-key"

    meaning = Meaning.CHANGING

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        groups = by_call(fragments_or_skip(stream))
        calls = list(stream.expected.tool_calls)
        if len(groups) != len(calls):
            raise NotApplicable("not every call in the stream is final")
        events = list(stream.events)
        changed = False
        for number, group in groups.items():
            ends = [
                f for f in group if f.role is Role.END and isinstance(value(d, events, f, Field.ARGS), str)
            ]
            text = args_text(d, stream.events, group)
            if not ends or not text:
                continue  # no end event with arguments, or no deltas to differ from (E1)
            final = self._final(text)
            if final is None:
                continue
            for fragment in ends:
                set_at(events, d, fragment, Field.ARGS, final)
            was = calls[number]
            calls[number] = was.with_text(final)
            changed = True
        if not changed:
            raise NotApplicable("no call whose end event carries arguments after deltas")
        return stream.with_events(events, replace(stream.expected, tool_calls=tuple(calls)))

    def _final(self, text: str) -> str | None:
        try:
            parsed = bounded.loads(text)
        except ValueError:
            return None
        if not isinstance(parsed, dict):
            return None
        if self.how == "same":
            return text
        if self.how == "append-key":
            return _compact({**parsed, "corrected": True})
        spellings = (
            json.dumps(parsed, ensure_ascii=False, separators=(", ", ": ")),
            _compact(parsed),
            json.dumps(parsed, ensure_ascii=False, indent=1),
        )
        return next((s for s in spellings if s != text), None)


# ---------------------------------------------------------------------------------------------
# F2


@mutation("split-surrogate-pairs")
@dataclass(frozen=True)
class SplitSurrogatePairs(Mutation):
    """Put a fragment boundary between the two UTF-16 halves of every astral character (emoji,
    CJK extension B) in the argument text (F2: a gateway re-chunking by code units, openclaw).
    Each half travels as a `\\ud83d` / `\\ude00` escape (the dialect's `dumps` escapes lone
    surrogates); a correct client combines the pair and gets the character back. `insert`: text
    with an astral character added at the end of the first string value of each call that has
    none, which changes meaning (that value ends with `insert` in the expectation); None: only
    calls that already have one. End events carrying the whole arguments get the whole new text."""

    insert: str | None = " 🌧"

    meaning = Meaning.CHANGING

    def __post_init__(self) -> None:
        if self.insert is not None and not _ASTRAL.search(self.insert):
            raise ValueError(f"insert must hold a character outside the BMP, not {self.insert!r}")

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        groups = by_call(fragments_or_skip(stream))
        calls = list(stream.expected.tool_calls)
        events = list(stream.events)
        inserts: dict[int, list[Event]] = {}
        for number, group in groups.items():
            pieces = _text_pieces(stream, stream.events, group)
            text = args_text(d, stream.events, group)
            if not pieces or not text:
                continue
            strings = [str(value(d, stream.events, f, Field.ARGS)) for f in pieces]
            whole, added = text, None
            if not _ASTRAL.search(text):
                added = self._inserted(text, strings, calls[number] if len(groups) == len(calls) else None)
                if added is None:
                    continue
                strings, whole = added
            splits = [_split_pairs(s) for s in strings]
            per_event = Counter(f.event for f in group)
            shared = {event for event, count in per_event.items() if count > 1}
            if any(len(parts) > 1 and f.event in shared for f, parts in zip(pieces, splits, strict=True)):
                continue  # a continuation after a packed event would land after its other fragments
            if added is not None:
                was = calls[number]
                calls[number] = was.with_text(whole)
            for fragment, parts in zip(pieces, splits, strict=True):
                set_at(events, d, fragment, Field.ARGS, parts[0])
                inserts.setdefault(fragment.event, []).extend(
                    continuation(d, events[fragment.event], fragment.slot, part) for part in parts[1:]
                )
            for fragment in group:
                if fragment.role is Role.END and isinstance(value(d, events, fragment, Field.ARGS), str):
                    set_at(events, d, fragment, Field.ARGS, whole)
        if not any(inserts.values()):
            raise NotApplicable("no argument text with a character outside the BMP")
        expected = replace(stream.expected, tool_calls=tuple(calls))
        return stream.with_events(spliced(d, events, inserts), expected)

    def _inserted(
        self, text: str, strings: list[str], expected: ToolCall | None
    ) -> tuple[list[str], str] | None:
        """The pieces and whole text with `insert` at the end of the first string value, when the
        expected call is this text's (so its new expectation is known)."""
        if self.insert is None or expected is None or expected.invalid:
            return None
        at = _first_string_value_end(text)
        if at is None:
            return None
        whole = text[:at] + self.insert + text[at:]
        try:
            if bounded.loads(text) != expected.arguments or bounded.loads(whole) == expected.arguments:
                return None
        except ValueError:
            return None
        out, start = list(strings), 0
        for n, piece in enumerate(strings):
            if start <= at < start + len(piece) or n == len(strings) - 1:
                out[n] = piece[: at - start] + self.insert + piece[at - start :]
                return out, whole
            start += len(piece)
        return None


def _split_pairs(text: str) -> list[str]:
    """`text` in pieces cut between the high and low surrogate of each astral character."""
    out: list[str] = []
    current = ""
    for char in text:
        code = ord(char) - 0x10000
        if code < 0:
            current += char
            continue
        out.append(current + chr(0xD800 + (code >> 10)))
        current = chr(0xDC00 + (code & 0x3FF))
    return [*out, current]


def _first_string_value_end(text: str) -> int | None:
    """Where the closing quote of the first string that is an object member's value sits."""
    in_string = is_value = after_colon = False
    i = 0
    while i < len(text):
        char = text[i]
        if in_string:
            if char == "\\":
                i += 2
                continue
            if char == '"':
                in_string = False
                if is_value:
                    return i
        elif char == '"':
            in_string, is_value, after_colon = True, after_colon, False
        elif char == ":":
            after_colon = True
        elif not char.isspace():
            after_colon = False
        i += 1
    return None
