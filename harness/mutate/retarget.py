"""A case retargeted onto the tools a request offers: the calls of its stream renamed onto those
tools and their arguments regenerated to satisfy each tool's JSON schema, every shape the
mutation made kept.

Invariants (a retargeted case is served only when all hold; otherwise `retarget` says why and
the recording is served):
- Only the string literals holding a call's name and its argument pieces change, in place, in the
  response's bytes: fragmentation, ids, indexes, events, reads, cuts and errors are untouched. A
  read boundary inside a changed literal moves with it (proportionally, or at the same stride
  when the reads there were evenly split, as one-byte reads are).
- A call's new argument text is cut into as many pieces as its old one, at the same proportions;
  a `{}` placeholder and a re-sent copy of the whole text keep their roles; a call whose text was
  incomplete stays incomplete.
- The expected outcome is rewritten alike, and the dialect's reference accumulator, run over the
  new bytes, reaches the rewritten reference outcome: what the recording's shape meant, it still
  means.
- Deterministic: the arguments come from a generator seeded by the case id and the call.

Names the request already offers keep their calls as recorded; the others are mapped onto the
offered tools by position of first appearance (or by the `mapping` a test gives).
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from harness.cassettes.model import Chunk
from harness.cassettes.outcome import FUNCTION, Outcome, ToolCall
from harness.mutate.case import Case
from harness.wire import dialects
from harness.wire.codecs.base import decode_all
from harness.wire.dialects.base import MISSING, Dialect, Field
from harness.wire.dialects.retargeting import OfferedTool, ToolPaths, offered_tools, tool_paths

__all__ = ["Retarget", "example_arguments", "offered_tools", "retarget"]

_MAX_DEPTH: Final = 8
_WORDS: Final = ("alpha", "bravo", "delta", "echo", "kilo", "lima", "oscar", "tango")


@dataclass(frozen=True)
class Retarget:
    """What retargeting made of a case: `case` (the retargeted one, or the recording's), the
    `mapping` of recorded names to offered tools (empty when nothing was renamed), and `reason`
    when the recording is served as it is."""

    case: Case
    mapping: dict[str, str] = field(default_factory=dict)
    reason: str | None = None

    @property
    def changed(self) -> bool:
        return self.case is not None and bool(self.mapping) and self.reason is None

    def describe(self) -> str:
        """One line: the mapping, or why the recording is served."""
        if self.reason is not None:
            return f"served as recorded: {self.reason}"
        if not self.mapping:
            return "served as recorded: the request offers every tool the stream calls"
        return "retargeted: " + ", ".join(f"{old} -> {new}" for old, new in self.mapping.items())


class _Refused(Exception):
    """Why a case cannot be retargeted (the recording is served)."""


# ---------------------------------------------------------------------------------------------
# Entry point


def retarget(case: Case, tools: Sequence[OfferedTool], mapping: Mapping[str, str] | None = None) -> Retarget:
    """`case` with its calls moved onto `tools` (see the module docstring)."""
    paths = tool_paths(case.dialect)
    if paths is None:
        return Retarget(case, reason=f"retargeting does not read {case.dialect} streams")
    if not tools:
        return Retarget(case, reason="the request offers no tools")
    try:
        return _retarget(case, paths, list(tools), dict(mapping or {}))
    except _Refused as exc:
        return Retarget(case, reason=str(exc))


def _retarget(case: Case, paths: ToolPaths, tools: list[OfferedTool], given: dict[str, str]) -> Retarget:
    dialect = dialects.get(case.dialect)
    for made in case.expected.tool_calls:
        if made.kind != FUNCTION:  # free-form input, not JSON arguments: no function tool takes it
            raise _Refused(f"it calls a {made.kind} tool ({made.name!r}), not a function the request offers")
    if dialect.codec_name != "sse":
        raise _Refused(f"retargeting reads SSE streams; {case.dialect} is {dialect.codec_name}")
    reads = [chunk.data for chunk in case.response.chunks]
    body = b"".join(reads)
    events = dialects.parse_all(dialect, decode_all(dialect.codec(), reads))
    pieces = _pieces(dialect, events)  # per fragment, in order: (call, name or None, args or None)
    literals = _literals(body, paths)
    names_seen = [(call, name) for call, name, _ in pieces if name is not None]
    args_seen = [(call, args) for call, _, args in pieces if args is not None]
    name_spans = _aligned([n for _, n in names_seen], [s for s in literals if s.kind == "name"])
    args_spans = _aligned([a for _, a in args_seen], [s for s in literals if s.kind == "arguments"])
    name_pieces: dict[int, list[str]] = {}
    for call, name in names_seen:
        name_pieces.setdefault(call, []).append(name)
    call_names = {call: dialect.joined_name(pieces) for call, pieces in name_pieces.items()}
    if not call_names:
        return Retarget(case, reason="the stream calls no tool")
    offered = {t.name: t for t in tools}
    mapping = _mapping([n for n in call_names.values()], tools, offered, given)
    if not mapping:
        return Retarget(case)
    new_names = {
        call: _name_pieces(dialect, pieces, mapping[call_names[call]])
        for call, pieces in name_pieces.items()
        if call_names[call] in mapping
    }
    texts: dict[int, list[str]] = {}
    for call, args in args_seen:
        texts.setdefault(call, []).append(args)
    new_texts: dict[int, list[str]] = {}
    table: list[tuple[ToolCall, ToolCall]] = []  # old call -> new call, for the outcomes
    for call, name in call_names.items():
        if name not in mapping:
            continue
        old = texts.get(call, [])
        tool = offered[mapping[name]]
        whole = example_arguments(tool.schema, random.Random(f"toolstream/retarget/{case.id}/{call}"))
        new = _split_like(old, whole, call)
        new_texts[call] = new
        table.append(
            (
                ToolCall.from_text(name, "".join(_meant(old))),
                ToolCall.from_text(tool.name, "".join(_meant(new))),
            )
        )
    # The literals rewritten, in order.
    replacements: list[tuple[int, int, bytes]] = []
    taken: dict[int, int] = {}
    for (call, _name), span in zip(names_seen, name_spans, strict=True):
        if call in new_names:
            n = taken.get(-1 - call, 0)
            taken[-1 - call] = n + 1
            replacements.append((span.start, span.end, _literal(new_names[call][n])))
    for (call, _args), span in zip(args_seen, args_spans, strict=True):
        if call in new_texts:
            n = taken.get(call, 0)
            taken[call] = n + 1
            replacements.append((span.start, span.end, _literal(new_texts[call][n])))
    new_reads = _rewritten(reads, sorted(replacements))
    offsets = [chunk.offset_ms for chunk in case.response.chunks]
    chunks = [Chunk(data, offsets[i] if i < len(offsets) else None) for i, data in enumerate(new_reads)]
    response = replace(case.response, chunks=chunks)
    new_events = tuple(dialects.parse_all(dialect, decode_all(dialect.codec(), new_reads)))
    expected = _moved(case.expected, table, "its expected outcome")
    error = case.error
    before = _reference(dialect, events, case, error)
    after = _reference(dialect, new_events, case, error)
    if _moved(before, table, "the reference outcome").tool_calls != after.tool_calls:
        raise _Refused("its shape depends on the argument text itself")
    moved = replace(case, response=response, events=new_events, expected=expected)
    return Retarget(moved, mapping)


# ---------------------------------------------------------------------------------------------
# Names


def _mapping(
    names: list[str], tools: list[OfferedTool], offered: Mapping[str, OfferedTool], given: Mapping[str, str]
) -> dict[str, str]:
    """Recorded name -> offered tool, for the names the request does not offer."""
    for old, new in given.items():
        if new not in offered:
            known = ", ".join(offered)
            raise _Refused(
                f"the mapping names {new!r} for {old!r}, a tool the request does not offer ({known})"
            )
    out: dict[str, str] = {}
    position = 0
    for name in dict.fromkeys(names):
        if name in given:
            out[name] = given[name]
        elif name not in offered:
            out[name] = tools[position % len(tools)].name
            position += 1
    return out


def _name_pieces(dialect: Dialect, old: Sequence[str], new: str) -> list[str]:
    """`new` in pieces shaped as the `old` name's (repeated, cumulative or split alike), as the
    dialect joins them (`joined_name`)."""
    whole = dialect.joined_name(old)

    def at(length: int) -> int:
        return len(new) if length >= len(whole) else round(length * len(new) / max(1, len(whole)))

    out: list[str] = []
    old_so_far, new_so_far = "", ""
    for piece in old:
        if dialect.joined_name((old_so_far, piece)) == piece:  # it replaces the name so far
            old_so_far, new_so_far = piece, (new[: at(len(piece))] if piece else "")
            out.append(new_so_far)
        else:  # appended to it
            added = new[len(new_so_far) : at(len(old_so_far) + len(piece))]
            old_so_far, new_so_far = old_so_far + piece, new_so_far + added
            out.append(added)
    return out


# ---------------------------------------------------------------------------------------------
# Arguments


def _meant(pieces: Sequence[str]) -> list[str]:
    """The pieces that make a call's text, as the reference reads them: a `{}` placeholder followed
    by more pieces, and a re-sent copy of the whole text so far, left out."""
    out: list[str] = []
    for n, piece in enumerate(pieces):
        if piece == "{}" and n == 0 and len(pieces) > 1:
            continue
        if out and piece == "".join(out) and _is_object(piece):
            continue
        out.append(piece)
    return out


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _split_like(old: Sequence[str], whole: str, call: int) -> list[str]:
    """`whole` cut into pieces shaped as `old` (see the module docstring)."""
    if any(not piece.isascii() for piece in old):
        raise _Refused(f"call {call + 1}'s arguments carry non-ASCII text a byte split may depend on")
    meant = _meant(old)
    text = "".join(meant)
    if not meant or text.strip() == "":
        return list(old)  # no arguments: `{}` whatever the tool
    target = whole if _is_object(text) else whole[: max(1, len(whole) * 2 // 3)]
    lengths = [len(p) for p in meant]
    total = sum(lengths) or 1
    cuts, running = [], 0
    for length in lengths[:-1]:
        running += length
        cuts.append(round(running * len(target) / total))
    bounds = [0, *cuts, len(target)]
    new_meant = [target[a:b] for a, b in itertools.pairwise(bounds)]
    out: list[str] = []
    it = iter(new_meant)
    old_so_far: list[str] = []
    new_so_far: list[str] = []
    for n, piece in enumerate(old):
        if piece == "{}" and n == 0 and len(old) > 1:
            out.append(piece)  # a placeholder stays one
        elif old_so_far and piece == "".join(old_so_far) and _is_object(piece):
            out.append("".join(new_so_far))  # a re-sent copy of the whole text stays one
        else:
            old_so_far.append(piece)
            new_so_far.append(next(it))
            out.append(new_so_far[-1])
    return out


def example_arguments(schema: Mapping[str, Any], rng: random.Random) -> str:
    """A JSON object text satisfying `schema` (a tool's parameters), drawn from `rng`."""
    value = _value(schema, rng, schema, 0)
    if not isinstance(value, dict):
        value = {}
    return json.dumps(value, separators=(",", ":"))


def _value(schema: Any, rng: random.Random, root: Mapping[str, Any], depth: int) -> Any:
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return rng.choice(_WORDS)
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for key in ref[2:].split("/"):
            target = target.get(key) if isinstance(target, Mapping) else None
        return _value(target, rng, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return rng.choice(schema["enum"])
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            usable = [o for o in options if not (isinstance(o, Mapping) and o.get("type") == "null")]
            return _value((usable or options)[0], rng, root, depth + 1)
    if isinstance(schema.get("allOf"), list):
        merged: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
        for part in schema["allOf"]:
            if isinstance(part, Mapping):
                merged["properties"].update(part.get("properties") or {})
                merged["required"] += list(part.get("required") or [])
        return _value(merged, rng, root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
    if kind == "object":
        props = schema.get("properties")
        if not isinstance(props, Mapping):
            return {}
        return {str(k): _value(v, rng, root, depth + 1) for k, v in props.items()}
    if kind == "array":
        count = max(1, int(schema.get("minItems", 1) or 1))
        return [_value(schema.get("items", {}), rng, root, depth + 1) for _ in range(count)]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        high = schema.get("maximum", schema.get("exclusiveMaximum", low + 100))
        low, high = (int(low), int(high)) if kind == "integer" else (low, high)
        number = rng.randint(int(low) + 1, max(int(low) + 1, int(high) - 1)) if high - low > 2 else low
        return number if kind == "integer" or isinstance(number, float) else float(number)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    text = f"{rng.choice(_WORDS)}-{rng.randint(1, 99)}"
    if schema.get("format") == "date":
        text = "2026-01-02"
    elif schema.get("format") == "date-time":
        text = "2026-01-02T03:04:05Z"
    low_len, high_len = int(schema.get("minLength", 0) or 0), schema.get("maxLength")
    text = text.ljust(low_len, "x")
    return text[: int(high_len)] if isinstance(high_len, int) else text


# ---------------------------------------------------------------------------------------------
# The stream's pieces and the body's literals


def _pieces(dialect: Any, events: Sequence[Any]) -> list[tuple[int, str | None, str | None]]:
    out: list[tuple[int, str | None, str | None]] = []
    for fragment in dialect.fragments(events):
        event = events[fragment.event]
        name = dialect.get(event, fragment.slot, Field.NAME)
        args = dialect.get(event, fragment.slot, Field.ARGS)
        if args is not MISSING and args is not None and not isinstance(args, str):
            if args != {}:  # arguments sent as an object (a start block's `{}` input is none)
                raise _Refused("its arguments come as objects, not text")
            args = None
        out.append(
            (
                fragment.call,
                name if isinstance(name, str) else None,
                args if isinstance(args, str) else None,
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class _Span:
    kind: str  # "name" or "arguments"
    start: int
    end: int
    value: str


def _literals(body: bytes, paths: ToolPaths) -> list[_Span]:
    """The name and argument string literals of each complete SSE event's data, in order (the
    data of an event may span several `data:` lines; lines end in LF, CRLF or CR)."""
    out: list[_Span] = []
    segments: list[tuple[int, int]] = []  # the data lines of the event being read
    for start, end in _lines(body):
        if start == end:
            out.extend(_event_literals(body, segments, paths))
            segments = []
        elif body.startswith(b"data:", start):
            begin = start + 5 + (body[start + 5 : start + 6] == b" ")
            segments.append((begin, end))
    return out  # an event not ended by a blank line was never read


def _lines(body: bytes) -> list[tuple[int, int]]:
    """(start, end) of each complete line, its line end left out."""
    out, start, i, size = [], 0, 0, len(body)
    while i < size:
        c = body[i]
        if c == 10 or c == 13:
            out.append((start, i))
            i += 2 if c == 13 and body[i + 1 : i + 2] == b"\n" else 1
            start = i
        else:
            i += 1
    return out


def _event_literals(body: bytes, segments: list[tuple[int, int]], paths: ToolPaths) -> list[_Span]:
    if not segments or body[segments[0][0] : segments[0][0] + 1] != b"{":
        return []
    # The event's data is its lines joined by LF; each position maps back into the body.
    data = b"\n".join(body[a:b] for a, b in segments)
    where: list[int] = []
    for a, b in segments:
        where.extend(range(a, b))
        where.append(b)  # the joining LF (past the last line: its end)
    out: list[_Span] = []
    for path, a, b in _strings(data, 0, len(data)):
        start, end = where[a], where[b - 1] + 1
        if end - start != b - a:
            continue  # a literal across two data lines is not rewritten
        for kind, patterns in (("name", paths.name), ("arguments", paths.arguments)):
            if any(_matches(path, p) for p in patterns):
                out.append(_Span(kind, start, end, json.loads(data[a:b])))
    return out


def _matches(path: Sequence[str | int], pattern: Sequence[str]) -> bool:
    return len(path) == len(pattern) and all(
        (p == "*" and isinstance(k, int)) or p == k for k, p in zip(path, pattern, strict=True)
    )


def _strings(data: bytes, start: int, end: int) -> list[tuple[tuple[str | int, ...], int, int]]:
    """Every string value of the JSON text `data[start:end]` with its path and byte span (keys are
    not values); tolerant: stops where the text stops making sense."""
    out: list[tuple[tuple[str | int, ...], int, int]] = []
    stack: list[list[Any]] = []  # [kind, key or index, expecting a key]
    i = start
    while i < end:
        c = data[i : i + 1]
        if c in b" \t\r\n":
            i += 1
        elif c in (b"{", b"["):
            stack.append(["obj", None, True] if c == b"{" else ["arr", 0, False])
            i += 1
        elif c in (b"}", b"]"):
            if stack:
                stack.pop()
            i += 1
        elif c == b":":
            if stack:
                stack[-1][2] = False
            i += 1
        elif c == b",":
            if stack:
                top = stack[-1]
                if top[0] == "obj":
                    top[2] = True
                else:
                    top[1] += 1
            i += 1
        elif c == b'"':
            j = i + 1
            while j < end and data[j : j + 1] != b'"':
                j += 2 if data[j : j + 1] == b"\\" else 1
            if j >= end:
                return out
            if stack and stack[-1][0] == "obj" and stack[-1][2]:
                try:
                    stack[-1][1] = json.loads(data[i : j + 1])
                except ValueError:
                    return out
            else:
                path = tuple(frame[1] for frame in stack)
                out.append((path, i, j + 1))
            i = j + 1
        else:
            i += 1  # numbers, true, false, null
    return out


def _aligned(values: Sequence[str], spans: Sequence[_Span]) -> list[_Span]:
    """The literal of each piece, in order: the pieces are a subsequence of the literals (a
    provider's own server-side calls have literals at the same paths, and are left alone)."""
    out: list[_Span] = []
    it = iter(spans)
    for value in values:
        found = next((span for span in it if span.value == value), None)
        if found is None:
            raise _Refused("its events do not line up with the literals of its bytes")
        out.append(found)
    return out


def _literal(text: str) -> bytes:
    return json.dumps(text).encode()


def _rewritten(reads: Sequence[bytes], replacements: Sequence[tuple[int, int, bytes]]) -> list[bytes]:
    """`reads` with each (start, end, new) replacement of their joined bytes made, each boundary
    moved with the bytes around it."""
    body = b"".join(reads)
    bounds, running = [], 0
    for data in reads[:-1]:
        running += len(data)
        bounds.append(running)
    pieces: list[bytes] = []
    new_bounds: list[int] = []
    at, shift = 0, 0
    k = 0
    for start, end, new in replacements:
        pieces.append(body[at:start])
        while k < len(bounds) and bounds[k] <= start:
            new_bounds.append(bounds[k] + shift)
            k += 1
        inside = []
        while k < len(bounds) and bounds[k] < end:
            inside.append(bounds[k] - start)
            k += 1
        new_bounds.extend(start + shift + b for b in _moved_bounds(inside, end - start, len(new)))
        pieces.append(new)
        shift += len(new) - (end - start)
        at = end
    pieces.append(body[at:])
    new_bounds.extend(b + shift for b in bounds[k:])
    joined = b"".join(pieces)
    edges = [0, *new_bounds, len(joined)]
    return [joined[a:b] for a, b in itertools.pairwise(edges)]


def _moved_bounds(inside: list[int], old: int, new: int) -> list[int]:
    """Read boundaries inside a literal of `old` bytes, for its replacement of `new` bytes: at the
    same stride when they were evenly spaced, else at the same proportions."""
    if not inside:
        return []
    gaps = {b - a for a, b in zip([0, *inside], [*inside, old], strict=False)}
    if len(inside) > 1 and len(gaps) <= 2 and min(gaps) == inside[1] - inside[0]:
        stride = inside[1] - inside[0]
        phase = inside[0]
        return list(range(phase, new, stride)) if phase < new else []
    return [min(new, round(b * new / old)) for b in inside]


# ---------------------------------------------------------------------------------------------
# Outcomes


def _reference(dialect: Any, events: Sequence[Any], case: Case, error: str | None) -> Outcome:
    acc = dialect.accumulator()
    for event in events:
        acc.feed(event)
    return acc.close(None if case.complete else error or "cut")


def _moved(outcome: Outcome, table: Sequence[tuple[ToolCall, ToolCall]], what: str) -> Outcome:
    """`outcome` with each call of the `table` (old -> new) replaced, its id kept."""
    used: set[int] = set()
    calls: list[ToolCall] = []
    for call in outcome.tool_calls:
        for n, (old, new) in enumerate(table):
            if n not in used and old.name == call.name and old.arguments == call.arguments:
                used.add(n)
                # The call's ids (and the ids it was also sent under) stay: only name and arguments move.
                calls.append(replace(call, name=new.name, arguments=new.arguments, invalid=new.invalid))
                break
        else:
            if any(old.name == call.name for old, _ in table):
                raise _Refused(f"{what} has a call of {call.name!r} its pieces do not make")
            calls.append(call)
    return replace(outcome, tool_calls=tuple(calls))
