"""What a cassette holds, decoded: each interaction's events, their kinds, a one-line gist of
each event, and the reference outcome; and the JSON document `toolstream show --json` prints."""

from __future__ import annotations

import json
from typing import Any

from harness.cassettes.format import Cassette, Interaction
from harness.cassettes.outcome import Outcome
from harness.wire import dialects
from harness.wire.codecs import codec_for_media_type, decode_all, get_codec
from harness.wire.dialects import MISSING, Dialect, Event, Field, Fragment, Kind

__all__ = ["gists", "kinds", "to_json", "view"]


def view(cassette: Cassette, item: Interaction) -> tuple[list[Event], Outcome | None]:
    """Decoded events and the reference outcome (None when the dialect or body is unknown)."""
    dialect = cassette.dialect or dialects.detect(item.request)
    if dialect is not None:
        events = dialects.events_of(item.response, dialect)
        return events, dialects.reference_outcome(item.response, dialect)
    codec = codec_for_media_type(item.response.content_type)
    if codec is None:
        return [], None
    wire = decode_all(get_codec(codec), (c.data for c in item.response.chunks))
    return [Event(w, w.data) for w in wire], None


def to_json(cassette: Cassette) -> dict[str, Any]:
    """`{"name", "dialect", "interactions": [{"events": [{"event", "data"}], "outcome"}]}`, for scripts."""
    interactions = []
    for item in cassette.interactions:
        decoded, outcome = view(cassette, item)
        interactions.append(
            {
                "events": [{"event": e.name, "data": e.payload} for e in decoded if not e.wire.is_comment],
                "outcome": None if outcome is None else outcome.to_dict(),
            }
        )
    return {"name": cassette.name, "dialect": cassette.dialect, "interactions": interactions}


def kinds(cassette: Cassette, event: Event) -> str:
    """What the event carries, as the cassette's dialect says (`tool_args,finish`)."""
    if event.wire.is_comment:
        return Kind.COMMENT
    if cassette.dialect is None:
        return ""
    return ",".join(sorted(dialects.get(cassette.dialect).kinds(event)))


def gists(dialect: str | None, events: list[Event]) -> list[str]:
    """One short line per event: its tool-call fragments as the dialect names their fields, or else
    its JSON without nulls and without the envelope keys every event repeats (id, model, created)."""
    fragments: dict[int, list[Fragment]] = {}
    d = dialects.get(dialect) if dialect else None
    if d is not None:
        for fragment in d.fragments(events):
            fragments.setdefault(fragment.event, []).append(fragment)
    constant = _constant_keys(events)
    out = []
    for i, event in enumerate(events):
        if event.wire.is_comment:
            out.append(event.wire.block if event.wire.block is not None else ":" + (event.wire.comment or ""))
        elif d is not None and i in fragments:
            out.append("  ".join(_fragment_gist(d, event, f) for f in fragments[i]))
        elif isinstance(event.payload, (dict, list)):
            payload = _strip(event.payload, constant)
            out.append(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))
        else:
            out.append(event.wire.data)
    return out


def _fragment_gist(d: Dialect, event: Event, fragment: Fragment) -> str:
    fields = []
    for name in (Field.INDEX, Field.ID, Field.ITEM_ID, Field.NAME, Field.ARGS):
        value = d.get(event, fragment.slot, name)
        if value is not MISSING and value is not None and (value != "" or name == Field.ARGS):
            fields.append(f"{name}={json.dumps(value, ensure_ascii=False, separators=(',', ':'))}")
    return f"call {fragment.call + 1} {fragment.role}: " + " ".join(fields)


def _constant_keys(events: list[Event]) -> frozenset[str]:
    payloads = [e.payload for e in events if isinstance(e.payload, dict)]
    if len(payloads) < 2:
        return frozenset()
    first = payloads[0]
    return frozenset(k for k, v in first.items() if all(p.get(k, _ABSENT) == v for p in payloads[1:]))


_ABSENT = object()


def _strip(value: Any, drop: frozenset[str] = frozenset()) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if v is not None and k not in drop}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value
