"""`Outcome`: the normalized result every accumulator is judged on, and how two are compared."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

from harness import bounded
from harness.errors import OutcomeFormatError


class State(StrEnum):
    """How a stream ended: its terminal signal arrived, it was cut short, or an in-band error ended it."""

    COMPLETE = "complete"
    CUT = "cut"
    ERROR = "error"


# -- call kinds (custom/freeform tools, client-run Responses items) ---------------------------
# A call's kind: what the client runs and how it answers it. `function` calls carry JSON arguments;
# a `custom` (freeform) call carries its raw input text, which is never parsed as JSON; the
# client-run Responses items carry the item's action (`shell_call`, `apply_patch_call` ...).
FUNCTION = "function"
CUSTOM = "custom"
# -- end call kinds ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One reassembled call. `arguments` is the parsed JSON value, or the raw text when `invalid`;
    for a `custom` call (`kind`), the raw input text as streamed, never parsed."""

    name: str | None
    arguments: Any
    id: str | None = None
    invalid: bool = False
    # Other ids the stream sent for this same call (A7: a fresh id on every fragment): a client
    # that keeps one of them answers under an id the provider sent for it. Not compared by `==`.
    aliases: tuple[str, ...] = field(default=(), compare=False)
    kind: str = FUNCTION

    @classmethod
    def from_text(cls, name: str | None, text: str, id: str | None = None) -> ToolCall:
        """Parse an argument string; the empty string is a call with no arguments (`{}`). Text
        nested deeper than `bounded.MAX_DEPTH` is not parsed: invalid, as text that is not JSON."""
        if text.strip() == "":
            return cls(name=name, arguments={}, id=id)
        try:
            return cls(name=name, arguments=bounded.loads(text), id=id)
        except ValueError:
            return cls(name=name, arguments=text, id=id, invalid=True)

    @classmethod
    def freeform(cls, name: str | None, text: str, id: str | None = None) -> ToolCall:
        """A custom (freeform) tool call: its input is the raw text, never parsed (`""` stays `""`)."""
        return cls(name=name, arguments=text, id=id, kind=CUSTOM)

    def with_text(self, text: str) -> ToolCall:
        """This call with other argument text, read the way its kind is: raw for a custom call,
        parsed (`from_text`) otherwise."""
        if self.kind == CUSTOM:
            return ToolCall.freeform(self.name, text, self.id)
        return ToolCall.from_text(self.name, text, id=self.id)


@dataclass(frozen=True, slots=True)
class ServerCall:
    """A tool call the provider ran itself (web search, code execution, tool search, an MCP tool):
    the client must not run it. `result` names what came back (the result block's type or the
    item's status, with an error code when there is one); None while no result has arrived."""

    name: str | None
    arguments: Any
    id: str | None = None
    result: str | None = None


class PartKind(StrEnum):
    """What one part of a response is (`Part.kind`)."""

    TEXT = "text"
    CALL = "call"  # a client call: the n-th call part is the n-th of `Outcome.tool_calls`
    SERVER_CALL = "server_call"  # the n-th server call part is the n-th of `Outcome.server_calls`
    REASONING = "reasoning"  # thinking, a reasoning summary or item, reasoning text, a redacted block


@dataclass(frozen=True, slots=True)
class Part:
    """One part of a response, in the order the stream gave it, with the state that must go back
    with it on the next turn: `signature` (an Anthropic thinking signature, a Gemini
    `thoughtSignature` on the part it rode on, a tool call's `extra_content` thought signature),
    `data` (an opaque payload: `redacted_thinking` data, a Responses item's `encrypted_content`) and
    `id` (a Responses reasoning item's id). `text` is a text part's text or a reasoning part's
    thinking or summary text; a call part holds no call (the call is in `tool_calls`)."""

    kind: PartKind
    text: str = ""
    signature: str | None = None
    data: str | None = None
    id: str | None = None

    @property
    def marked(self) -> bool:
        """Whether the part carries state the provider checks when it comes back."""
        return self.signature is not None or self.data is not None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an accumulator made of a stream. `usage` and `notes` are not compared (by `==` or `diff`):
    `notes` says how it got there (a call reported before it was final), not what it reached.
    `server_calls` are the calls the provider ran, kept apart from the `tool_calls` the client runs.
    `parts` are the response's parts in order (text, calls, server calls, reasoning) with the state
    that must go back with them: compared only when the actual outcome reports some (`diff`)."""

    tool_calls: tuple[ToolCall, ...] = ()
    text: str = ""
    finish_reason: str | None = None
    state: State = State.COMPLETE
    error: str | None = None
    usage: Mapping[str, Any] | None = field(default=None, compare=False)
    notes: tuple[str, ...] = field(default=(), compare=False)
    server_calls: tuple[ServerCall, ...] = ()
    parts: tuple[Part, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tool_calls": [_call_to_dict(call) for call in self.tool_calls]}
        out["text"] = self.text
        out["finish_reason"] = self.finish_reason
        out["state"] = str(self.state)
        if self.server_calls:  # written only when present, so outcomes without any read as before
            out["server_calls"] = [_server_call_to_dict(call) for call in self.server_calls]
        if self.parts:  # written only when present, as server calls are
            out["parts"] = [_part_to_dict(part) for part in self.parts]
        if self.error is not None:
            out["error"] = self.error
        if self.usage is not None:
            out["usage"] = dict(self.usage)
        if self.notes:
            out["notes"] = list(self.notes)
        return out

    def to_record(self) -> tuple[Any, ...]:
        """The fields in order as plain data (each call as its fields in order, the state as its
        text): what crosses to and from worker processes and into the built-case store, read
        back by `from_record`, which trusts it (no checks: `from_dict` is for data from outside)."""
        return (
            tuple((c.name, c.arguments, c.id, c.invalid, c.aliases, c.kind) for c in self.tool_calls),
            self.text,
            self.finish_reason,
            str(self.state),
            self.error,
            None if self.usage is None else dict(self.usage),
            self.notes,
            tuple((c.name, c.arguments, c.id, c.result) for c in self.server_calls),
            tuple((str(p.kind), p.text, p.signature, p.data, p.id) for p in self.parts),
        )

    @classmethod
    def from_record(cls, record: Sequence[Any]) -> Outcome:
        """The outcome `to_record` wrote, built through its slots (not the frozen `__init__`, which
        sets each field through `object.__setattr__`: a pool's parent reads one per result)."""
        calls, text, finish, state, error, usage, notes, servers, parts = record
        made: Outcome = _new(cls)
        _set_calls(made, tuple([_tool_call(c) for c in calls]) if calls else ())
        _set_text(made, text)
        _set_finish(made, finish)
        _set_state(made, _STATES[state])
        _set_error(made, error)
        _set_usage(made, usage)
        _set_notes(made, tuple(notes))
        _set_servers(made, tuple([_server_call(c) for c in servers]) if servers else ())
        _set_parts(made, tuple([_part(p) for p in parts]) if parts else ())
        return made

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Outcome:
        """Build from plain data; raises `OutcomeFormatError` naming the field that is wrong."""
        if not isinstance(data, Mapping):
            raise OutcomeFormatError("", "must be a mapping")
        calls = data.get("tool_calls", [])
        if not isinstance(calls, Sequence) or isinstance(calls, str):
            raise OutcomeFormatError("tool_calls", "must be a list")
        parsed = tuple(_call_from_dict(call, f"tool_calls[{i}]") for i, call in enumerate(calls))
        text = data.get("text", "")
        if not isinstance(text, str):
            raise OutcomeFormatError("text", "must be a string")
        finish = data.get("finish_reason")
        if finish is not None and not isinstance(finish, str):
            raise OutcomeFormatError("finish_reason", "must be a string or null")
        try:
            state = State(data.get("state", "complete"))
        except ValueError:
            raise OutcomeFormatError("state", f"must be one of {', '.join(State)}") from None
        servers = data.get("server_calls", [])
        if not isinstance(servers, Sequence) or isinstance(servers, str):
            raise OutcomeFormatError("server_calls", "must be a list")
        server_calls = tuple(
            _server_call_from_dict(call, f"server_calls[{i}]") for i, call in enumerate(servers)
        )
        listed = data.get("parts", [])
        if not isinstance(listed, Sequence) or isinstance(listed, str):
            raise OutcomeFormatError("parts", "must be a list")
        parts = tuple(_part_from_dict(part, f"parts[{i}]") for i, part in enumerate(listed))
        error = data.get("error")
        usage = data.get("usage")
        notes = data.get("notes", [])
        if not isinstance(notes, list) or not all(isinstance(note, str) for note in notes):
            raise OutcomeFormatError("notes", "must be a list of strings")
        return cls(
            tool_calls=parsed,
            text=text,
            finish_reason=finish,
            state=state,
            error=None if error is None else str(error),
            usage=usage if isinstance(usage, Mapping) else None,
            notes=tuple(notes),
            server_calls=server_calls,
            parts=parts,
        )


def _setters(cls: type) -> tuple[Any, ...]:
    return tuple(cls.__dict__[f.name].__set__ for f in fields(cls))


# Frozen slots dataclasses built from their records through their slots (`Outcome.from_record`).
_new = object.__new__
(_set_calls, _set_text, _set_finish, _set_state, _set_error, _set_usage, _set_notes, _set_servers,
 _set_parts) = _setters(Outcome)  # fmt: skip
_set_name, _set_arguments, _set_id, _set_invalid, _set_aliases, _set_kind = _setters(ToolCall)
_SERVER_CALL_SET = _setters(ServerCall)


def _tool_call(record: Sequence[Any]) -> ToolCall:
    name, arguments, call_id, invalid, aliases, kind = record
    made: ToolCall = _new(ToolCall)
    _set_name(made, name)
    _set_arguments(made, arguments)
    _set_id(made, call_id)
    _set_invalid(made, invalid)
    _set_aliases(made, tuple(aliases))
    _set_kind(made, kind)
    return made


def _server_call(record: Sequence[Any]) -> ServerCall:
    made: ServerCall = _new(ServerCall)
    for set_field, value in zip(_SERVER_CALL_SET, record, strict=True):
        set_field(made, value)
    return made


_STATES = {str(state): state for state in State}
_PART_KINDS = {str(kind): kind for kind in PartKind}
_PART_SET = _setters(Part)


def _part(record: Sequence[Any]) -> Part:
    made: Part = _new(Part)
    kind, *rest = record
    _PART_SET[0](made, _PART_KINDS[kind])
    for set_field, value in zip(_PART_SET[1:], rest, strict=True):
        set_field(made, value)
    return made


def _part_to_dict(part: Part) -> dict[str, Any]:
    # Written out, not a loop over names: two parts per case on average, written twice in a report.
    out: dict[str, Any] = {"kind": str(part.kind)}
    if part.text:
        out["text"] = part.text
    if part.signature is not None:
        out["signature"] = part.signature
    if part.data is not None:
        out["data"] = part.data
    if part.id is not None:
        out["id"] = part.id
    return out


def _part_from_dict(data: Any, where: str) -> Part:
    if not isinstance(data, Mapping):
        raise OutcomeFormatError(where, "must be a mapping with a kind")
    raw = data.get("kind")
    kind = _PART_KINDS.get(raw) if isinstance(raw, str) else None
    if kind is None:
        raise OutcomeFormatError(f"{where}.kind", f"must be one of {', '.join(PartKind)}")
    text = data.get("text", "")
    if not isinstance(text, str):
        raise OutcomeFormatError(f"{where}.text", "must be a string")
    for key in ("signature", "data", "id"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise OutcomeFormatError(f"{where}.{key}", "must be a string or null")
    return Part(kind, text, data.get("signature"), data.get("data"), data.get("id"))


def _call_to_dict(call: ToolCall) -> dict[str, Any]:
    out: dict[str, Any] = {"id": call.id, "name": call.name, "arguments": call.arguments}
    if call.invalid:
        out["invalid"] = True
    if call.aliases:
        out["aliases"] = list(call.aliases)
    if call.kind != FUNCTION:  # written only when not a function call, so outcomes read as before
        out["kind"] = call.kind
    return out


def _call_from_dict(data: Any, where: str) -> ToolCall:
    if not isinstance(data, Mapping):
        raise OutcomeFormatError(where, "must be a mapping with name and arguments")
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise OutcomeFormatError(f"{where}.name", "must be a string or null")
    call_id = data.get("id")
    if call_id is not None and not isinstance(call_id, str):
        raise OutcomeFormatError(f"{where}.id", "must be a string or null")
    invalid = bool(data.get("invalid", False))
    arguments = data.get("arguments", {})
    if invalid and not isinstance(arguments, str):
        raise OutcomeFormatError(f"{where}.arguments", "must be the raw text when invalid")
    aliases = data.get("aliases") or []
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise OutcomeFormatError(f"{where}.aliases", "must be a list of strings")
    kind = data.get("kind", FUNCTION)
    if not isinstance(kind, str) or not kind:
        raise OutcomeFormatError(f"{where}.kind", "must be a non-empty string")
    if kind == CUSTOM and not isinstance(arguments, str):
        raise OutcomeFormatError(f"{where}.arguments", "must be the raw input text for a custom call")
    return ToolCall(
        name=name, arguments=arguments, id=call_id, invalid=invalid, aliases=tuple(aliases), kind=kind
    )


def _server_call_to_dict(call: ServerCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "arguments": call.arguments, "result": call.result}


def _server_call_from_dict(data: Any, where: str) -> ServerCall:
    if not isinstance(data, Mapping):
        raise OutcomeFormatError(where, "must be a mapping with name and arguments")
    for key in ("name", "id", "result"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise OutcomeFormatError(f"{where}.{key}", "must be a string or null")
    arguments = data.get("arguments", {})
    return ServerCall(data.get("name"), arguments, id=data.get("id"), result=data.get("result"))


# What a note says when an outcome's state is not the client's word but taken as expected (a
# follow-up request has no state on its wire, `harness.oracle.evidence`): that state signals nothing
# (`harness.oracle.severity.signalled`).
STATE_TAKEN = "state: not on its wire, taken as expected"
# What a client-level adapter notes when its library never hands its user a finish reason (many
# frameworks): there is nothing to compare, so the finish reason is not (as usage is not).
FINISH_NOT_SURFACED = "finish_reason: not surfaced by the library"


def _finish_compared(expected: Outcome, actual: Outcome) -> bool:
    return expected.finish_reason != actual.finish_reason and FINISH_NOT_SURFACED not in actual.notes

# Fields `diff` compares unless told otherwise.
COMPARED = ("tool_calls", "server_calls", "text", "finish_reason", "state", "parts")


def diff(expected: Outcome, actual: Outcome, *, fields: Sequence[str] = COMPARED) -> list[str]:
    """Readable differences, one per line; empty when `actual` meets `expected`.

    Calls are matched by position; arguments compare as JSON values; an id is compared only where
    the expectation has one (a stream without ids cannot be blamed for not having them). Server
    calls are compared only when `actual` reports some: an accumulator with no notion of them
    runs none, which is right; one that reports them as client calls fails on `tool_calls`.
    """
    out: list[str] = []
    if "tool_calls" in fields:
        out.extend(_diff_calls(expected.tool_calls, actual.tool_calls))
    if "server_calls" in fields and actual.server_calls:
        out.extend(_diff_server_calls(expected.server_calls, actual.server_calls))
    if "text" in fields and expected.text != actual.text:
        left, right = _alike(expected.text, actual.text)
        out.append(f"text: {_short(left)} expected, got {_short(right)}")
    if "finish_reason" in fields and _finish_compared(expected, actual):
        out.append(f"finish_reason: {expected.finish_reason!r} expected, got {actual.finish_reason!r}")
    if "state" in fields and expected.state != actual.state:
        # An unexpected error says which: a library's raise is the failure a maintainer looks for.
        raise_ = _first_line(actual.error) if actual.state is State.ERROR and actual.error else ""
        said = f" ({raise_})" if raise_ else ""
        out.append(f"state: {expected.state} expected, got {actual.state}{said}")
    if "parts" in fields and actual.parts:
        out.extend(line for line, _ in part_differences(expected, actual))
    return out


_RAISE_SHOWN = 80  # characters of a raise's first line a diff shows


def _first_line(error: str) -> str:
    """An error's first line, cut to `_RAISE_SHOWN` characters with `...` where it was cut."""
    line = (error.splitlines() or [""])[0]
    return line if len(line) <= _RAISE_SHOWN else line[: _RAISE_SHOWN - 3] + "..."


def meets(expected: Outcome, actual: Outcome) -> bool:
    """`not diff(expected, actual)`, without writing a line: what judging asks of every case first
    (nearly all meet their expectation, and writing nothing is cheaper than writing no lines)."""
    if (
        expected.text != actual.text
        or _finish_compared(expected, actual)
        or expected.state != actual.state
        or len(expected.tool_calls) != len(actual.tool_calls)
        or (actual.server_calls and _diff_server_calls(expected.server_calls, actual.server_calls))
        or (actual.parts and part_differences(expected, actual))
    ):
        return False
    for want, got in zip(expected.tool_calls, actual.tool_calls, strict=True):
        if (
            want.name != got.name
            or want.kind != got.kind
            or (want.id is not None and want.id != got.id)
            or want.invalid != got.invalid
            or not _same_json(want.arguments, got.arguments)
        ):
            return False
    return True


def paired_by_id(expected: Sequence[ToolCall], actual: Sequence[ToolCall]) -> list[int] | None:
    """For each expected call, the position of the reported call with its id, when ids pair the
    two lists one to one (every expected call has an id of its own, the same ids reported once
    each) and the order differs; None otherwise, and calls are then matched by position. A result
    goes back under its call's id, so an order that differs alone costs nothing."""
    ids = [call.id for call in expected]
    if len(expected) != len(actual) or len(expected) < 2 or not all(ids) or len(set(ids)) != len(ids):
        return None
    where = {call.id: n for n, call in enumerate(actual)}
    if len(where) != len(actual) or set(where) != set(ids):
        return None
    order = [where[i] for i in ids]
    return None if order == sorted(order) else order


ORDER_DIFFERS = "tool_calls: order differs"
# The end of an id line whose id is another the stream sent for the call (`ToolCall.aliases`).
ROTATED = " (another id the stream sent for it)"


def order_line(expected: Sequence[ToolCall], actual: Sequence[ToolCall]) -> str:
    """The one line a reorder of calls paired by id gets."""
    return (
        f"{ORDER_DIFFERS}: {', '.join(repr(c.id) for c in expected)} expected, "
        f"got {', '.join(repr(c.id) for c in actual)}"
    )


def _diff_calls(expected: Sequence[ToolCall], actual: Sequence[ToolCall]) -> list[str]:
    out: list[str] = []
    order = paired_by_id(expected, actual)
    if order is not None:  # each call beside the one reported under its id, numbered as expected
        out.append(order_line(expected, actual))
        actual = [actual[a] for a in order]
    if len(expected) != len(actual):
        out.append(f"tool_calls: {len(expected)} expected, got {len(actual)}")
    for n, (want, got) in enumerate(zip(expected, actual, strict=False), start=1):
        if want.name != got.name:
            out.append(f"call {n}: name {want.name!r} expected, got {got.name!r}")
        if want.id is not None and want.id != got.id:
            other = ROTATED if got.id in want.aliases else ""
            out.append(f"call {n}: id {want.id!r} expected, got {got.id!r}{other}")
        if want.kind != got.kind:
            out.append(_kind_line(n, want, got))
            continue  # the arguments of another kind of call are another thing: the kind says it
        if want.invalid != got.invalid:
            left, right = _alike(_render(want), _render(got))
            state = "invalid" if got.invalid else "valid"
            out.append(f"call {n}: arguments {_short(left)} expected, got {state} {_short(right)}")
        elif not _same_json(want.arguments, got.arguments):
            left, right = _alike(_render(want), _render(got))  # rendered only to be shown
            out.append(f"call {n}: arguments {_short(left)} expected, got {_short(right)}")
    for n, extra in enumerate(actual[len(expected) :], start=len(expected) + 1):
        out.append(f"call {n}: unexpected {extra.name!r} {_short(_render(extra))}")
    for n, missing in enumerate(expected[len(actual) :], start=len(actual) + 1):
        out.append(f"call {n}: {missing.name!r} {_short(_render(missing))} expected, missing")
    return out


def _kind_line(n: int, want: ToolCall, got: ToolCall) -> str:
    """A call of another kind; a freeform input read as JSON arguments is named as such."""
    line = f"call {n}: kind {want.kind!r} expected, got {got.kind!r}"
    if want.kind == CUSTOM and got.kind == FUNCTION:
        if got.invalid or not isinstance(got.arguments, str):
            said = "invalid JSON" if got.invalid else "JSON"
            return (
                f"{line}: custom input {_short(str(want.arguments))} was parsed as {said}"
                f" {_short(_render(got))}; freeform input is raw text, never JSON"
            )
        return f"{line}: a custom call answered as a function call"
    return line


def _diff_server_calls(expected: Sequence[ServerCall], actual: Sequence[ServerCall]) -> list[str]:
    # Its own line kind (`server call N`), so a server call reported as a client call reads as both.
    out: list[str] = []
    if len(expected) != len(actual):
        out.append(f"server_calls: {len(expected)} expected, got {len(actual)}")
    for n, (want, got) in enumerate(zip(expected, actual, strict=False), start=1):
        if want.name != got.name:
            out.append(f"server call {n}: name {want.name!r} expected, got {got.name!r}")
        if want.id is not None and want.id != got.id:
            out.append(f"server call {n}: id {want.id!r} expected, got {got.id!r}")
        if not _same_json(want.arguments, got.arguments):
            out.append(
                f"server call {n}: arguments {_short(_json(want.arguments))} expected, "
                f"got {_short(_json(got.arguments))}"
            )
        if want.result != got.result:
            out.append(f"server call {n}: result {want.result!r} expected, got {got.result!r}")
    for n, extra in enumerate(actual[len(expected) :], start=len(expected) + 1):
        out.append(f"server call {n}: unexpected {extra.name!r} {_short(_json(extra.arguments))}")
    for n, missing in enumerate(expected[len(actual) :], start=len(actual) + 1):
        out.append(f"server call {n}: {missing.name!r} {_short(_json(missing.arguments))} expected, missing")
    return out


def _same_json(a: Any, b: Any) -> bool:
    # JSON equality: 1 == 1.0 but True != 1, and key order never matters.
    if type(a) is str and type(b) is str:  # what arguments nearly always are, asked first
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    # A plain dict is asked for first: the ABC check of `Mapping` costs more than the comparison
    # (paid for every call of every case judged).
    if (type(a) is dict or isinstance(a, Mapping)) and (type(b) is dict or isinstance(b, Mapping)):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _render(call: ToolCall) -> str:
    if call.invalid or call.kind == CUSTOM:
        return str(call.arguments)
    return _json(call.arguments)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED = re.compile("[\ud800-\udfff\U00010000-\U0010ffff]")


def _alike(left: str, right: str) -> tuple[str, str]:
    """Both sides rendered the same way: when either holds a lone surrogate (which no terminal
    prints), characters outside the BMP are escaped on both (`\\U0001f327` beside `\\ud83c\\udf27`)."""
    if not (_SURROGATE.search(left) or _SURROGATE.search(right)):
        return left, right

    def one(found: re.Match[str]) -> str:
        code = ord(found[0])
        return f"\\U{code:08x}" if code > 0xFFFF else f"\\u{code:04x}"

    def escape(text: str) -> str:
        return _ESCAPED.sub(one, text)

    return escape(left), escape(right)


def _short(text: str, limit: int = 120) -> str:
    text = repr(text) if not text.startswith(("{", "[")) else text
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- the parts of a response: order, and the state that must go back with them -------------------
#
# What the next turn needs back is the provider's rule (docs/oracle.md, "State that goes back");
# what is compared here is the same for every dialect: each reasoning part with its text,
# signature, payload and id, each call part's signature, and the order of reasoning and calls.
# A difference is `binding` when the provider checks it on the next turn (a signature or payload
# lost, changed, merged or moved; a signed reasoning text changed; reasoning moved across a call):
# `harness.oracle.severity` makes it `lost`. Anything else (text joined across a call, text
# reordered, a reasoning summary reworded) the API accepts: cosmetic.

_LABEL = {
    PartKind.TEXT: "text",
    PartKind.CALL: "call",
    PartKind.SERVER_CALL: "server call",
    PartKind.REASONING: "reasoning",
}


def normalized(parts: Sequence[Part], leave_out: frozenset[PartKind] = frozenset()) -> list[Part]:
    """The parts as the provider reads them back: adjacent text (or reasoning) parts of which at
    most one carries a signature or payload are one part (streamed chunks, text blocks: a client
    may join them), an empty unmarked text part is nothing; `leave_out` kinds are dropped."""
    out: list[Part] = []
    for part in parts:
        if part.kind in leave_out:
            continue
        last = out[-1] if out else None
        if (
            last is not None
            and last.kind is part.kind
            and part.kind in (PartKind.TEXT, PartKind.REASONING)
            and not (last.marked and part.marked)
            and (last.id is None or part.id is None or last.id == part.id)
        ):
            out[-1] = Part(
                part.kind,
                last.text + part.text,
                last.signature if last.signature is not None else part.signature,
                last.data if last.data is not None else part.data,
                last.id if last.id is not None else part.id,
            )
            continue
        out.append(part)
    return [p for p in out if not (p.kind is PartKind.TEXT and not p.text and not p.marked)]


def coherent(outcome: Outcome) -> bool:
    """Whether an outcome's parts agree with its calls and text: an expectation a mutation edited
    by hand (calls dropped, text inserted) without its parts has parts that say nothing."""
    calls = servers = 0
    text: list[str] = []
    for part in outcome.parts:
        if part.kind is PartKind.CALL:
            calls += 1
        elif part.kind is PartKind.SERVER_CALL:
            servers += 1
        elif part.kind is PartKind.TEXT:
            text.append(part.text)
    return (
        calls == len(outcome.tool_calls)
        and servers == len(outcome.server_calls)
        and "".join(text) == outcome.text
    )


def part_differences(expected: Outcome, actual: Outcome) -> list[tuple[str, bool]]:
    """Readable differences between the parts of two outcomes, each with whether it is binding
    (the provider checks it on the next turn: only on a turn that completed). Empty when `actual`
    reports no parts (it has no notion of them), or when the expectation's parts are not
    `coherent`. Text and server call parts count only when `actual` reports some of that kind."""
    if not actual.parts or actual.parts == expected.parts or not coherent(expected):
        return []  # equal parts first: what judging asks of nearly every case that reports some
    reported = {part.kind for part in actual.parts}
    left = {k for k in (PartKind.TEXT, PartKind.SERVER_CALL) if k not in reported}
    if _count(expected.parts, PartKind.CALL) != _count(actual.parts, PartKind.CALL):
        left.add(PartKind.CALL)  # a call missing or extra: the calls' own lines say so
    leave_out = frozenset(left)
    want, got = normalized(expected.parts, leave_out), normalized(actual.parts, leave_out)
    if want == got:
        return []
    turn = expected.state is State.COMPLETE  # only a whole turn has a next turn to fail
    out: list[tuple[str, bool]] = []
    if [p.kind for p in want] != [p.kind for p in got]:
        bound = _bound_order(want) != _bound_order(got)
        out.append((f"parts: {_kinds(want)} expected, got {_kinds(got)}", turn and bound))
    for kind in (PartKind.REASONING, PartKind.CALL, PartKind.TEXT):
        mine = [p for p in want if p.kind is kind]
        theirs = [p for p in got if p.kind is kind]
        if kind is not PartKind.REASONING and len(mine) != len(theirs):
            continue  # the order line said it; the calls and text themselves have their own lines
        out.extend((line, turn and bound) for line, bound in _pair_lines(kind, mine, theirs))
    return out


def _bound_order(parts: Sequence[Part]) -> list[tuple[PartKind, str | None, str | None]]:
    # The order the provider checks: signed or encrypted reasoning among the calls (a signature
    # rides with its part); unsigned reasoning (a summary, `reasoning_content`) is not checked.
    return [
        (p.kind, p.signature, p.data)
        for p in parts
        if p.kind is PartKind.CALL or (p.kind is PartKind.REASONING and p.marked)
    ]


def _count(parts: Sequence[Part], kind: PartKind) -> int:
    return sum(1 for p in parts if p.kind is kind)


def _kinds(parts: Sequence[Part]) -> str:
    shown = [
        f"{_LABEL[p.kind]} {_short(p.text, 24)}" if p.kind is PartKind.TEXT else _LABEL[p.kind] for p in parts
    ]
    return _short(", ".join(shown) or "none", 240)


def _pair_lines(kind: PartKind, want: Sequence[Part], got: Sequence[Part]) -> list[tuple[str, bool]]:
    label = "call part" if kind is PartKind.CALL else _LABEL[kind]  # not a `call N:` line of tool_calls
    out: list[tuple[str, bool]] = []
    pairs, missing, extra = _paired(want, got)
    for n, w, g in pairs:
        for key in ("signature", "data", "id"):
            a, b = getattr(w, key), getattr(g, key)
            if a != b:
                # A signature or payload lost or changed fails the next turn; one the stream never
                # gave (a text signature, an extra one) is the client's own: not checked. An id
                # goes back with a reasoning item; a missing one cannot reference it.
                binding = a is not None and (kind is not PartKind.TEXT)
                shown = "payload" if key == "data" else key
                out.append((f"{label} {n}: {shown} {_value(a)} expected, got {_value(b)}", binding))
        if kind is not PartKind.CALL and w.text != g.text:
            left, right = _alike(w.text, g.text)
            # A signed thinking text is checked against its signature; a summary is not.
            out.append((f"{label} {n}: text {_short(left)} expected, got {_short(right)}", w.marked))
    for n, part in extra:
        out.append((f"{label} {n}: unexpected {_describe(part)}", part.marked))
    for n, part in missing:
        out.append((f"{label} {n}: {_describe(part)} expected, missing", part.marked))
    return out


Numbered = list[tuple[int, Part]]


def _paired(
    want: Sequence[Part], got: Sequence[Part]
) -> tuple[list[tuple[int, Part, Part]], Numbered, Numbered]:
    """Parts paired by position when as many came back, else each marked part with the one that
    carries its very signature or payload (a block dropped shifts no other), the rest in order;
    then the expected ones left (missing, numbered as expected) and the actual ones left (extra)."""
    if len(want) == len(got):
        return [(n, w, g) for n, (w, g) in enumerate(zip(want, got, strict=True), start=1)], [], []
    left = list(enumerate(got, start=1))
    pairs: list[tuple[int, Part, Part]] = []
    unmatched: Numbered = []
    for n, w in enumerate(want, start=1):
        found = next((i for i, (_, g) in enumerate(left) if w.marked and _marks(g) == _marks(w)), None)
        if found is None:
            unmatched.append((n, w))
        else:
            pairs.append((n, w, left.pop(found)[1]))
    while unmatched and left and not unmatched[0][1].marked:
        n, w = unmatched.pop(0)
        pairs.append((n, w, left.pop(0)[1]))
    return sorted(pairs, key=lambda p: p[0]), unmatched, left


def _marks(part: Part) -> tuple[str | None, str | None, str | None]:
    return part.signature, part.data, part.id


def _describe(part: Part) -> str:
    said = [_short(part.text, 40)] if part.text else []
    for key in ("signature", "data", "id"):
        if getattr(part, key) is not None:
            said.append(f"{'payload' if key == 'data' else key} {_value(getattr(part, key))}")
    return " ".join(said) or "(empty)"


def _value(value: str | None) -> str:
    return "None" if value is None else repr(value if len(value) <= 40 else value[:37] + "...")
