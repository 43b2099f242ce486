"""Identity mutations: what ties a fragment to its call (id, index, name, type, item id); class A.

General operators over any field rather than one function per bug: drop, null, empty string,
only on the first fragment, repeated on every fragment, a fresh value per fragment, shifted,
moved to a later fragment, set to a constant; plus ids rewritten into other providers' styles.

The oracle: a call's expected id is the first non-empty id its fragments carry (so dropping ids
expects none, and a rotated id keeps the first). Every other change keeps the meaning, and the
operators refuse (`NotApplicable`) the layouts where no client could still tell calls apart:
removing or collapsing indexes needs calls laid out one after another and each with an id (and
a dialect whose rules route fragments without an index: its reference accumulator is asked);
removing ids needs each call at an index of its own.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from harness.cassettes.outcome import diff
from harness.errors import DialectError, MutationError, NotApplicable
from harness.mutate import Meaning, Mutation, Quirk, Stream, evolve, mutation
from harness.mutate.calls import (
    by_call,
    call_value,
    contiguous,
    fragments_or_skip,
    headers_have_ids,
    reference_on,
    spliced,
    value,
)
from harness.wire import dialects
from harness.wire.dialects import MISSING, Event, Field, Fragment, IdStyle, Kind, Role

FieldName = Literal["id", "index", "name", "type", "item_id", "signature"]
# What an index rewritten on purpose breaks: numbering by position, and the routing it gives.
INDEX_BREAKS = (
    "*.block-index-*",
    "*.output-index-*",
    "*.item-index-changed",
    "*.delta-outside-block",
    "*.stop-outside-block",
)
On = Literal["all", "headers", "continuations", "ends"]


def _selected(fragment: Fragment, first: bool, on: str) -> bool:
    if on == "all":
        return True
    if on == "headers":
        return first
    if on == "ends":
        return fragment.role is Role.END
    return not first and fragment.role is not Role.END


def _check_layout(stream: Stream, fragments: Sequence[Fragment], field: Field, removes: bool) -> None:
    """Refuse changes after which calls could no longer be told apart."""
    d, events = stream.dialect, stream.events
    groups = by_call(fragments)
    if len(groups) < 2 or not removes:
        return
    if field is Field.INDEX:
        if not contiguous(fragments):
            raise NotApplicable("calls interleave: without their indexes no client could route them")
        if not headers_have_ids(d, events, fragments):
            raise NotApplicable("calls without ids: without their indexes they cannot be told apart")
    elif field is Field.ID:
        indexes = [call_value(d, events, group, Field.INDEX) for group in groups.values()]
        if any(i is not MISSING for i in indexes) and len(set(map(repr, indexes))) < len(indexes):
            raise NotApplicable("calls share an index: without ids they cannot be told apart")
    elif field is Field.NAME:
        raise NotApplicable("a call's name cannot be removed from its header and still be known")


def rewrite(
    stream: Stream,
    field: Field,
    new_value: Callable[[Fragment, int, Any, random.Random], Any],
    rng: random.Random,
    *,
    on: str = "all",
    removes: bool = False,
    require_change: bool = True,
) -> Stream:
    """Set `field` on the selected fragments to `new_value(fragment, k, call_value, rng)` (k: the
    fragment's position within its call); `KEEP` leaves a fragment as it is."""
    d = stream.dialect
    fragments = fragments_or_skip(stream)
    _check_layout(stream, fragments, field, removes)
    if field is Field.NAME and removes and on in ("all", "headers"):
        raise NotApplicable("a call's name cannot be removed from its header and still be known")
    events = list(stream.events)
    groups = by_call(fragments)
    changed = False
    for group in groups.values():
        original = call_value(d, stream.events, group, field)
        for k, fragment in enumerate(group):
            if not _selected(fragment, k == 0, on):
                continue
            new = new_value(fragment, k, original, rng)
            if new is KEEP or value(d, events, fragment, field) == new:
                continue
            try:
                events[fragment.event] = d.set(events[fragment.event], fragment.slot, field, new)
            except DialectError as exc:
                raise NotApplicable(str(exc)) from None
            changed = True
    if not changed and require_change:
        raise NotApplicable(f"nothing to change for {field} here")
    expected = expected_ids(stream, events, fragments)
    if field is Field.INDEX and removes and changed:
        # Whether a fragment stripped of its index can still be routed is the provider's rule
        # (OpenAI chat continues the latest call; block APIs cannot): its reference decides.
        seen = reference_on(d, events, None if stream.complete else stream.error)
        if diff(expected, seen, fields=("tool_calls",)):
            raise NotApplicable(f"{d.name} cannot route fragments without their index")
    return stream.with_events(events, expected)


class _Keep:
    def __repr__(self) -> str:
        return "KEEP"


KEEP: Any = _Keep()


def expected_ids(stream: Stream, events: Sequence[Event], fragments: Sequence[Fragment]) -> Any:
    """The expectation with each call's id re-read: the first non-empty id its fragments carry
    (expected calls are matched by their old id, or by position when they had none)."""
    d = stream.dialect
    calls = list(stream.expected.tool_calls)
    for n, group in enumerate(by_call(fragments).values()):
        old = call_value(d, stream.events, group, Field.ID)
        new = call_value(d, events, group, Field.ID)
        new_id = new if isinstance(new, str) else None
        if isinstance(old, str):
            calls = [evolve(c, id=new_id) if c.id == old else c for c in calls]
        elif n < len(calls) and calls[n].id is None and len(calls) == len(by_call(fragments)):
            calls[n] = evolve(calls[n], id=new_id)
    return evolve(stream.expected, tool_calls=tuple(calls))


def _named_continuations(stream: Stream) -> bool:
    d, events = stream.dialect, stream.events
    return any(
        value(d, events, f, Field.NAME) not in (MISSING, None, "")
        for group in by_call(d.fragments(events)).values()
        for f in group[1:]
        if f.role is not Role.END
    )


def _rotating_ids(stream: Stream) -> bool:
    d, events = stream.dialect, stream.events
    for group in by_call(d.fragments(events)).values():
        first = call_value(d, events, group, Field.ID)
        if any(value(d, events, f, Field.ID) not in (MISSING, None, "", first) for f in group[1:]):
            return True
    return False


@dataclass(frozen=True)
class _FieldOp(Mutation):
    field: FieldName = "id"
    on: On = "continuations"

    @property
    def key(self) -> Field:
        return Field(self.field)


@mutation("drop-field")
@dataclass(frozen=True)
class DropField(_FieldOp):
    """Remove a field's key (A3 index missing; A4/A10 id only on the header or nowhere; E5 name
    missing from `.done`). On ids this changes the expected ids; otherwise meaning is kept."""

    meaning = Meaning.CHANGING
    imitates = (
        Quirk("A3", "openai/openai-python#2806 (Gemini OpenAI-compat); xorbitsai/inference#3634"),
        Quirk("A10", "apache/flink-agents#947; binaricat/Netcatty#1004"),
        Quirk("E6", "anomalyco/opencode PR #45081 (items without an id)"),
    )
    breaks = ("*.item-id-missing", "*.block-index-invalid", "*.output-index-invalid")

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        return rewrite(stream, self.key, lambda *_: MISSING, rng, on=self.on, removes=True)


@mutation("null-field")
@dataclass(frozen=True)
class NullField(_FieldOp):
    """Set a field to null (A3 `index: null`, SGLang; `id: null` continuations)."""

    meaning = Meaning.CHANGING
    imitates = (Quirk("A3", "sgl-project/sglang PR #4067; Alishahryar1/free-claude-code PR #633"),)
    breaks = ("*.item-id-missing", "*.block-index-invalid", "*.output-index-invalid")

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        return rewrite(stream, self.key, lambda *_: None, rng, on=self.on, removes=True)


@mutation("empty-field")
@dataclass(frozen=True)
class EmptyField(_FieldOp):
    """Set a field to the empty string (A6 `"id":""` continuations, DashScope; A7's empty name)."""

    meaning = Meaning.CHANGING

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        return rewrite(stream, self.key, lambda *_: "", rng, on=self.on, removes=True)


@mutation("null-word-field")
@dataclass(frozen=True)
class NullWordField(_FieldOp):
    """Set a field to the string `"null"` (A12: Mistral sends `"id":"null"` on some continuation
    chunks of a streamed call, zed-industries/zed PR #53605). It is no id: a client that takes it
    as the call's id answers under `"null"`, which the provider rejects."""

    meaning = Meaning.CHANGING
    imitates = (Quirk("A12", "zed-industries/zed PR #53605 (Mistral, devstral-medium-latest)"),)

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        if self.key is not Field.ID:
            raise NotApplicable("only an id is sent as the word null")
        if self.on in ("all", "headers"):
            raise NotApplicable("a call whose header's id is the word null has no id to keep")
        return rewrite(stream, self.key, lambda *_: "null", rng, on=self.on)


@mutation("field-only-on-first")
@dataclass(frozen=True)
class OnlyOnFirst(_FieldOp):
    """Keep a field on each call's first fragment only (A4: the standard OpenAI shape, id on the
    header only, which a consumer keyed on ids mishandles)."""

    on: On = "all"

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        def only_first(fragment: Fragment, k: int, original: Any, rng: random.Random) -> Any:
            if fragment.role is Role.END:
                return KEEP  # an end event that repeats the whole item (Responses output_item.done) keeps it
            return original if k == 0 and original is not MISSING else (MISSING if k else KEEP)

        return rewrite(stream, self.key, only_first, rng, on="all", require_change=False)


@mutation("field-on-every-fragment")
@dataclass(frozen=True)
class OnEveryFragment(_FieldOp):
    """Repeat a call's field on every fragment (A5 id on every chunk: Fireworks, vLLM, DeepSeek;
    B3 name or type repeated in full: `web_searchweb_search` for a concatenating client; a Gemini
    thought signature on every fragment of its call, which clients keep once, earendil-works/pi
    PR #8590)."""

    on: On = "all"

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        if self.key is Field.NAME and _rotating_ids(stream):
            raise NotApplicable("continuations carry other ids: with the name too each would be a new call")

        def repeat(fragment: Fragment, k: int, original: Any, rng: random.Random) -> Any:
            if original is MISSING or fragment.role is Role.END:
                return KEEP
            return original

        # A stream without a signature to repeat would be the original again.
        signature = self.key is Field.SIGNATURE
        return rewrite(stream, self.key, repeat, rng, on=self.on, require_change=signature)


@mutation("fresh-field-per-fragment")
@dataclass(frozen=True)
class FreshPerFragment(_FieldOp):
    """Give every continuation a fresh value (A7 id rotating per fragment, LM Studio; an index
    that restarts or wanders per chunk, A2/A11). The header keeps its own, so an id still names
    its call."""

    imitates = (
        Quirk("A7", "NousResearch/hermes-agent#5254 (LM Studio)"),
        Quirk("A11", "dirac-run/dirac PR #215 (Cerebras, Nebius)"),
        # Identity that changes mid-call: argument events under another item id than the item's.
        Quirk(
            "E6",
            "anomalyco/opencode PR #45081 (argument events under their own item_id, routed by output_index)",
        ),
    )
    breaks = (*INDEX_BREAKS, "*.item-unknown")

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        if self.key is Field.NAME:
            raise NotApplicable("a fresh name per fragment would make a different call")
        if self.key is Field.ID and _named_continuations(stream):
            raise NotApplicable("continuations name a function: with a new id each would be a new call")
        used: set[Any] = set()
        # A fresh id is none of the calls' own (it would name that call) nor one drawn before.
        found = [
            (f.call, value(stream.dialect, stream.events, f, Field.ID)) for f in fragments_or_skip(stream)
        ]
        taken = {i for _, i in found if isinstance(i, str)}
        own: dict[int, str] = {}  # each call's first id: the one the expectation names it by
        for call, i in found:
            if isinstance(i, str) and i:
                own.setdefault(call, i)
        given: dict[str, list[str]] = {}  # a call's id -> the fresh ids its fragments carry

        def fresh(fragment: Fragment, k: int, original: Any, rng: random.Random) -> Any:
            if k == 0 or fragment.role is Role.END:
                return KEEP
            if isinstance(original, int) and not isinstance(original, bool):
                number = 1000 + len(used)
                used.add(number)
                return number
            if isinstance(original, str):
                made = restyled(original, "same", rng, taken=taken)
                if fragment.call in own:
                    given.setdefault(own[fragment.call], []).append(made)
                return made
            return KEEP

        out = rewrite(stream, self.key, fresh, rng, on="all", removes=self.key is Field.INDEX)
        if self.key is not Field.ID or not given:
            return out
        # The expected call carries every id the stream sent for it (a client may keep the last).
        calls = tuple(
            replace(c, aliases=tuple(given[c.id])) if c.id in given else c for c in out.expected.tool_calls
        )
        return replace(out, expected=replace(out.expected, tool_calls=calls))


@mutation("shift-field")
@dataclass(frozen=True)
class ShiftField(_FieldOp):
    """Add `by` (+ `step` times the fragment's position in its call) to an integer field: C4 a
    thinking block shifts or gaps the tool call's index; A11 continuations whose index was
    incremented (`on: continuations, by: 1, step: 1`, Cerebras/Nebius).

    Where the index numbers every block by position (Anthropic and Bedrock content blocks,
    Responses output items: the dialect's `renumber`), a whole shift (`on: all`, `step: 0`, `by`
    above 0) is the producer's counter skipping `by` numbers before the first tool block (omlx
    "skips to 2"): that block and every later one, tool or not, move up alike, so indexes stay
    unique and increasing and only the numbering by position breaks. Shifting the tool blocks
    alone would give a later thinking block the index of a tool block before it."""

    field: FieldName = "index"
    on: On = "all"
    by: int = 1
    step: int = 0

    imitates = (
        Quirk("C4", "ollama/ollama#14816; jundot/omlx#1353; aws-samples/bedrock-access-gateway#134"),
        Quirk("A11", "dirac-run/dirac PR #215 (Cerebras, Nebius)"),
        # A block's or item's deltas one index past its start (`on: continuations, by: 1`).
        Quirk("A11", "Wei-Shaw/sub2api PR #4294 (Anthropic bridge); vercel/ai PR #11771 (Anthropic API)"),
        Quirk("A11", "agentgateway/agentgateway PR #1453 (Responses output_index of added and deltas apart)"),
    )
    breaks = INDEX_BREAKS

    @property
    def _whole(self) -> bool:
        return self.key is Field.INDEX and self.on == "all" and self.step == 0 and self.by > 0

    def declares(self, code: str) -> bool:
        """A whole shift breaks the numbering by position, never by reuse or overlap."""
        if self._whole:
            return code.endswith(GAP_BREAKS)
        return super().declares(code)

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        if self._whole:
            gapped = _skip_block_numbers(stream, self.by)
            if gapped is not None:
                return gapped

        def shift(fragment: Fragment, k: int, original: Any, rng: random.Random) -> Any:
            if not isinstance(original, int) or isinstance(original, bool):
                return KEEP
            return original + self.by + self.step * k

        collapses = self.step != 0 or self.on != "all"
        return rewrite(stream, self.key, shift, rng, on=self.on, removes=collapses)


# What a gap in the numbering of blocks or items breaks (`ShiftField` on a whole stream).
GAP_BREAKS = (".block-index-out-of-order", ".output-index-out-of-order")
_FILLER_INDEX = 2**31  # no block of a stream has it: the filler is routed as a block of its own


def _skip_block_numbers(stream: Stream, by: int) -> Stream | None:
    """The stream with `by` block numbers skipped before its first tool block: `by` filler blocks
    inserted there, every block renumbered by position (`Dialect.renumber`), the fillers taken
    out again. None where the dialect numbers no blocks (OpenAI chat's index counts calls)."""
    d = stream.dialect
    at = fragments_or_skip(stream)[0].event
    filler = d.build(Kind.TEXT, text="", index=_FILLER_INDEX, like=stream.events[0])
    if not filler:
        return None
    padded = d.renumber([*stream.events[:at], *(filler * by), *stream.events[at:]])
    events = [*padded[:at], *padded[at + len(filler) * by :]]
    if all(new is old for new, old in zip(events, stream.events, strict=True)):
        return None
    return stream.with_events(events)


@mutation("move-field-later")
@dataclass(frozen=True)
class MoveLater(_FieldOp):
    """Take a field off each call's header and put it on the call's fragment number `to` (a name
    or id that arrives only with the first argument fragment)."""

    on: On = "all"
    to: int = 1

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        def move(fragment: Fragment, k: int, original: Any, rng: random.Random) -> Any:
            if original is MISSING:
                return KEEP
            return MISSING if k == 0 else (original if k == self.to else KEEP)

        groups = by_call(fragments_or_skip(stream))
        if any(len(group) <= self.to for group in groups.values()):
            raise NotApplicable(f"a call has no fragment number {self.to} to move its {self.field} to")
        return rewrite(stream, self.key, move, rng, on="all")


@mutation("set-field")
@dataclass(frozen=True)
class SetField(_FieldOp):
    """Set a field to one constant on the selected fragments (seed 000 / A1: every parallel call
    at `index: 0`, Bedrock via langchain, LiteLLM and Plexus bridges; A2 an index restarting per
    chunk). On ids it sets the expected ids too."""

    on: On = "all"
    value: Any = 0

    meaning = Meaning.CHANGING
    imitates = (
        Quirk("A1", "langchain-ai/langchain#34807 (Bedrock/Anthropic); ollama/ollama#15457"),
        Quirk("A1", "BerriAI/litellm#21331; mcowger/plexus#691 (Responses-to-Chat bridges)"),
        Quirk("A2", "su-kaka/gcli2api PR #406; BerriAI/litellm PR #16194"),
    )
    breaks = INDEX_BREAKS

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        if self.key is Field.NAME:
            raise NotApplicable("one name for every call would make different calls")
        return rewrite(stream, self.key, lambda *_: self.value, rng, on=self.on, removes=True)


# ---------------------------------------------------------------------------------------------
# Id styles: a provider's is its dialect's knowledge (`dialects.id_style`); these are nobody's.

_GENERIC_STYLES: dict[str, IdStyle] = {"short": IdStyle("c", 3), "long": IdStyle("call_", 64)}


def restyled(
    old: str, style: str, rng: random.Random, length: int | None = None, *, taken: set[str] | None = None
) -> str:
    """A fresh id in a provider's style (`same`: the old id's prefix and length). `taken`: the ids
    in use, which the new one is not (drawn again, and a character longer each time once a few
    draws found only taken ones: a short length holds few ids), and joins."""
    if style == "same":
        cut = old.find("_") + 1
        kind = IdStyle(old[:cut], max(len(old) - cut, 4))
    else:
        kind = _style(style)
    made = kind.fresh(rng, length)
    draws = 1
    while taken is not None and made in taken:
        if draws >= _DRAWS_AT_A_LENGTH:
            length = len(made) + 1
        made = kind.fresh(rng, length)
        draws += 1
    if taken is not None:
        taken.add(made)
    return made


# Draws of a taken id before a longer one is drawn instead.
_DRAWS_AT_A_LENGTH = 8


def _style(name: str) -> IdStyle:
    if name in _GENERIC_STYLES:
        return _GENERIC_STYLES[name]
    try:
        return dialects.id_style(name)
    except DialectError:
        known = ", ".join([*dialects.id_style_names(), *_GENERIC_STYLES, "same"])
        raise MutationError(f"restyle-ids: unknown style {name!r} (styles: {known})") from None


@mutation("restyle-ids")
@dataclass(frozen=True)
class RestyleIds(Mutation):
    """Rewrite every call id into another provider's style and length (Bedrock `tooluse_...`,
    Anthropic `toolu_01...`, Mistral's 9 characters); `shrinking: true` makes each later call's
    id shorter than the one before (seed 002: aichat's `{id}/{index}` length guard dropped the
    later call). The expected ids follow."""

    style: str = "openai"  # a provider's (`openai`, `bedrock` ... as its dialect says), short, long, same
    shrinking: bool = False

    meaning = Meaning.CHANGING

    def __post_init__(self) -> None:
        if self.style != "same":
            _style(self.style)  # an unknown style fails when the scenario loads, not per case

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        fragments = fragments_or_skip(stream)
        groups = by_call(fragments)
        if self.shrinking and len(groups) < 2:
            raise NotApplicable("shorter later ids need two calls")
        mapping: dict[str, str] = {}
        taken: set[str] = set()  # two calls never share an id, restyled or not
        base = max(len(str(call_value(d, stream.events, g, Field.ID))) for g in groups.values()) + 4
        for n, group in enumerate(groups.values()):
            old = call_value(d, stream.events, group, Field.ID)
            if not isinstance(old, str):
                raise NotApplicable("a call without an id cannot be restyled")
            length = max(base - 6 * n, 4) if self.shrinking else None
            mapping[old] = restyled(old, self.style, rng, length, taken=taken)
        events = list(stream.events)
        for fragment in fragments:
            old = value(d, events, fragment, Field.ID)
            if isinstance(old, str) and old in mapping:
                events[fragment.event] = d.set(events[fragment.event], fragment.slot, Field.ID, mapping[old])
        calls = tuple(
            replace(call, id=mapping.get(call.id, call.id)) if call.id is not None else call
            for call in stream.expected.tool_calls
        )
        return stream.with_events(events, replace(stream.expected, tool_calls=calls))


@mutation("split-name")
@dataclass(frozen=True)
class SplitName(Mutation):
    """Send each call's name in two pieces, the second on a fragment of its own right after the
    header (B2: `name:"get_wea"` then `name:"ther"`; a client that overwrites loses the prefix)."""

    at: int = 3

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        events = list(stream.events)
        inserts: dict[int, Event] = {}
        for group in by_call(fragments_or_skip(stream)).values():
            header = group[0]
            name = value(d, events, header, Field.NAME)
            if header.role is not Role.START or not isinstance(name, str) or len(name) <= self.at:
                continue
            if any(f.event == header.event for f in group[1:]):
                continue  # its arguments already started in the header's event
            try:
                events[header.event] = d.set(events[header.event], header.slot, Field.NAME, name[: self.at])
                piece = d.continuation(events[header.event], header.slot, "")
                inserts[header.event] = d.set(piece, 0, Field.NAME, name[self.at :])
            except DialectError as exc:
                raise NotApplicable(str(exc)) from None
        if not inserts:
            raise NotApplicable("no call name long enough to split")
        out = spliced(d, events, {i: [piece] for i, piece in inserts.items()})
        # Whether name pieces are joined is the provider's rule (OpenAI chat joins them).
        seen = reference_on(d, out, None if stream.complete else stream.error)
        if diff(stream.expected, seen, fields=("tool_calls",)):
            raise NotApplicable(f"{d.name} does not join a name sent in pieces")
        return stream.with_events(out)
