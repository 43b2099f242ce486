"""Each founding bug (shared/seeds) reproduced by a shipped scenario on a corpus cassette.

The accumulators below are small event-level clients written the buggy way and the fixed way.
Each buggy one must fail its scenario with a diff showing the seed's symptom; the fixed one passes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.accumulators import EventLevel
from harness.cassettes.outcome import Outcome, State, ToolCall, diff
from harness.matrix.selection import build_case
from harness.mutate.scenario import Case
from harness.wire.dialects import Event


def outcome_of(acc: Any, case: Case) -> Outcome:
    """`acc`'s outcome through the library's one decode -> feed -> close loop."""
    return EventLevel(lambda dialect: acc, type(acc).__name__).run(case)


def _choice_delta(event: Event) -> dict[str, Any]:
    payload = event.payload
    if not isinstance(payload, dict) or not payload.get("choices"):
        return {}
    return payload["choices"][0].get("delta") or {}


def _finish(event: Event) -> str | None:
    payload = event.payload
    if isinstance(payload, dict) and payload.get("choices"):
        return payload["choices"][0].get("finish_reason")  # type: ignore[no-any-return]
    return None


class _ChatBase:
    """Shared plumbing: text, finish reason, `[DONE]`; subclasses merge tool-call entries."""

    def __init__(self) -> None:
        self.text = ""
        self.finish: str | None = None
        self.done = False

    def feed(self, event: Event) -> None:
        if event.payload == "[DONE]":
            self.done = True
            return
        delta = _choice_delta(event)
        self.text += delta.get("content") or ""
        entries = [
            {
                "index": e.get("index"),
                "id": e.get("id"),
                "name": (e.get("function") or {}).get("name"),
                "args": (e.get("function") or {}).get("arguments") or "",
            }
            for e in delta.get("tool_calls") or []
        ]
        if entries:
            self.entries(entries)
        self.finish = _finish(event) or self.finish

    def entries(self, entries: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def calls(self) -> list[ToolCall]:
        raise NotImplementedError

    def close(self, error: str | None = None) -> Outcome:
        complete = error is None and (self.finish is not None or self.done)
        return Outcome(
            tool_calls=tuple(self.calls()) if complete else (),
            text=self.text,
            finish_reason=self.finish,
            state=State.COMPLETE if complete else State.CUT,
        )


def _concat(left: dict[str, Any], right: dict[str, Any], *, id_safe: bool) -> None:
    """langchain merge_dicts: None takes the right value, strings concatenate (an equal id stays)."""
    for key in ("id", "name", "args"):
        if right.get(key) is None:
            continue
        if left.get(key) is None:
            left[key] = right[key]
        elif key == "id" and id_safe and left[key] == right[key]:
            continue
        else:
            left[key] += right[key]


class MergeListsAccumulator(_ChatBase):
    """Seed 000: langchain-core `merge_lists` keyed on `index` only (before PR #35281), or, with
    `id_aware`, also requiring compatible ids (the fix). `normalize_delta` merges same-index
    entries inside one delta first (the fix of seed 001); without it each delta's entries are
    kept apart and later continuations merge into the first match, leaving a dangling fragment."""

    def __init__(self, *, id_aware: bool, normalize_delta: bool = True, latest: bool = True) -> None:
        super().__init__()
        self.id_aware = id_aware
        self.latest = latest
        self.normalize_delta = normalize_delta
        self.merged: list[dict[str, Any]] = []

    def _match(self, pool: list[dict[str, Any]], entry: dict[str, Any]) -> dict[str, Any] | None:
        # Correct: the latest call at that index (an id-less continuation belongs to the call just
        # opened); langchain takes the first match, `to_merge[0]`.
        for left in reversed(pool) if self.latest else pool:
            if left["index"] != entry["index"]:
                continue
            if self.id_aware and left.get("id") and entry.get("id") and left["id"] != entry["id"]:
                continue
            return left
        return None

    def entries(self, entries: list[dict[str, Any]]) -> None:
        incoming: list[dict[str, Any]] = []
        for entry in entries:
            target = self._match(incoming, entry) if self.normalize_delta else None
            if target is None:
                incoming.append(dict(entry))
            else:
                _concat(target, entry, id_safe=self.id_aware)
        if not self.merged:
            self.merged = incoming
            return
        for entry in incoming:
            target = self._match(self.merged, entry)
            if target is None:
                self.merged.append(entry)
            else:
                _concat(target, entry, id_safe=self.id_aware)

    def calls(self) -> list[ToolCall]:
        return [ToolCall.from_text(e.get("name") or None, e["args"], e.get("id")) for e in self.merged]


class AichatAccumulator(_ChatBase):
    """Seed 002: aichat's `{id}/{index}` call-boundary key. `guard`: the length guard of commit
    7d33a2c; `fixed`: only an entry that carries an id may start a new call."""

    def __init__(self, *, guard: bool = False, fixed: bool = False) -> None:
        super().__init__()
        self.guard, self.fixed = guard, fixed
        self.call_id = ""
        self.name, self.args, self.id = "", "", ""
        self.out: list[ToolCall] = []

    def _flush(self) -> None:
        if self.name:
            self.out.append(ToolCall.from_text(self.name, self.args, self.id or None))
        self.name, self.args, self.id = "", "", ""

    def entries(self, entries: list[dict[str, Any]]) -> None:
        for entry in entries:
            index = entry["index"] or 0
            boundary = True
            if self.fixed and not entry.get("id"):
                boundary = False
            key = f"{entry.get('id') or ''}/{index}"
            if boundary and key != self.call_id and (not self.guard or len(key) >= len(self.call_id)):
                self._flush()
                self.call_id = key
            if entry.get("name"):
                self.name = entry["name"]
            if entry.get("id"):
                self.id = entry["id"]
            self.args += entry["args"]

    def calls(self) -> list[ToolCall]:
        self._flush()
        return self.out


class CagentAccumulator:
    """Seed 004: docker cagent's Anthropic adapter. Buggy: one `tool_id` slot that every
    `content_block_start` overwrites, deltas appended to the call with that id. Fixed: ids tracked
    per content-block index."""

    def __init__(self, *, per_block: bool) -> None:
        self.per_block = per_block
        self.tool_id = ""
        self.by_block: dict[int, str] = {}
        self.calls: dict[str, dict[str, str]] = {}
        self.text = ""
        self.finish: str | None = None
        self.stopped = False

    def feed(self, event: Event) -> None:
        payload = event.payload if isinstance(event.payload, dict) else {}
        kind = payload.get("type")
        if kind == "content_block_start" and payload["content_block"].get("type") == "tool_use":
            block = payload["content_block"]
            self.tool_id = block["id"]
            self.by_block[payload["index"]] = block["id"]
            self.calls.setdefault(block["id"], {"name": block["name"], "args": ""})
        elif kind == "content_block_delta":
            delta = payload["delta"]
            if delta.get("type") == "text_delta":
                self.text += delta["text"]
            elif delta.get("type") == "input_json_delta":
                target = self.by_block.get(payload["index"], "") if self.per_block else self.tool_id
                if target in self.calls:
                    self.calls[target]["args"] += delta["partial_json"]
        elif kind == "message_delta":
            self.finish = payload["delta"].get("stop_reason") or self.finish
        elif kind == "message_stop":
            self.stopped = True

    def close(self, error: str | None = None) -> Outcome:
        complete = self.stopped and error is None
        calls = tuple(ToolCall.from_text(c["name"], c["args"], i) for i, c in self.calls.items())
        return Outcome(
            tool_calls=calls if complete else (),
            text=self.text,
            finish_reason=self.finish,
            state=State.COMPLETE if complete else State.CUT,
        )


# ---------------------------------------------------------------------------------------------


def test_seed000_index_only_merge_concatenates_parallel_calls() -> None:
    case = build_case("openai-chat/parallel-2::parallel-calls-share-index-0::s0")
    first, second = case.expected.tool_calls[:2]
    problems = diff(case.expected, outcome_of(MergeListsAccumulator(id_aware=False), case))
    assert f"call 1: name {first.name!r} expected, got {first.name + second.name!r}" in problems
    assert diff(case.expected, outcome_of(MergeListsAccumulator(id_aware=True), case)) == []


def test_seed000_on_the_bedrock_shaped_cassette() -> None:
    # The seed's own shape: read_file and search_text, Bedrock ids, both at index 0.
    case = build_case("openai-chat/parallel-2::A1-parallel-same-index::s0")
    problems = diff(case.expected, outcome_of(MergeListsAccumulator(id_aware=False), case))
    assert "tool_calls: 2 expected, got 1" in problems
    assert diff(case.expected, outcome_of(MergeListsAccumulator(id_aware=True), case)) == []


def test_seed001_same_index_fragments_in_one_delta_leave_a_dangling_fragment() -> None:
    case = build_case("openai-chat/single-call::same-index-fragments-in-one-delta::s0")
    buggy = MergeListsAccumulator(id_aware=True, normalize_delta=False, latest=False)
    problems = diff(case.expected, outcome_of(buggy, case))
    assert "tool_calls: 1 expected, got 2" in problems
    # The real call lost its opening brace; the dangling "{" became a blank call.
    assert any(line.startswith("call 1: arguments") and "got invalid" in line for line in problems)
    assert "call 2: unexpected None {" in problems
    fixed = MergeListsAccumulator(id_aware=True, normalize_delta=True, latest=False)
    assert diff(case.expected, outcome_of(fixed, case)) == []


def test_seed002_idless_continuation_flushes_early_and_runs_with_empty_args() -> None:
    case = build_case("openai-chat/single-call::idless-continuation-after-empty-args::s0")
    problems = diff(case.expected, outcome_of(AichatAccumulator(guard=False), case))
    assert any(line.startswith("call 1: arguments") and line.endswith("got {}") for line in problems)
    assert diff(case.expected, outcome_of(AichatAccumulator(guard=True), case)) == []
    assert diff(case.expected, outcome_of(AichatAccumulator(fixed=True), case)) == []


def test_seed002_length_guard_merges_a_later_call_with_a_shorter_id() -> None:
    case = build_case("openai-chat/parallel-2::later-call-has-shorter-id::s0")
    ids = [call.id or "" for call in case.expected.tool_calls]
    assert len(ids[1]) < len(ids[0])
    problems = diff(case.expected, outcome_of(AichatAccumulator(guard=True), case))
    assert "tool_calls: 2 expected, got 1" in problems
    assert diff(case.expected, outcome_of(AichatAccumulator(fixed=True), case)) == []


@pytest.mark.parametrize("cassette", ["anthropic/parallel-calls", "anthropic/seed000-parallel-read-search"])
def test_seed004_single_tool_id_slot_misroutes_interleaved_deltas(cassette: str) -> None:
    case = build_case(f"{cassette}::interleaved-tool-blocks::s0")
    problems = diff(case.expected, outcome_of(CagentAccumulator(per_block=False), case))
    # The first call's arguments went to the last started block: it is left with `{}`.
    assert any(line.startswith("call 1: arguments") and line.endswith("got {}") for line in problems)
    assert any("got invalid" in line for line in problems)
    assert diff(case.expected, outcome_of(CagentAccumulator(per_block=True), case)) == []


def test_buggy_accumulators_pass_the_unmutated_cassettes() -> None:
    # The bugs need the shapes: on a plain stream every version is right.
    for case_id, acc in [
        ("openai-chat/parallel-2::F3-single-read::s0", MergeListsAccumulator(id_aware=False)),
        ("openai-chat/single-call::F3-single-read::s0", AichatAccumulator(guard=True)),
        ("anthropic/parallel-calls::F3-single-read::s0", CagentAccumulator(per_block=False)),
    ]:
        case = build_case(case_id)
        assert diff(case.expected, outcome_of(acc, case)) == [], case_id


def test_payloads_stay_json() -> None:
    case = build_case("openai-chat/parallel-2::parallel-calls-share-index-0::s0")
    assert all(json.loads(e.wire.data) for e in case.events if e.payload not in (None, "[DONE]"))
