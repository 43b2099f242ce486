"""The built-case store: the cases of each unit of work, built once and read back from disk.

A case is a pure function of the code that builds it, the cassette file's bytes and name in case
ids, the dialect filter, and the scenario's steps and seed: the keys `harness.matrix.catalog` gives
case ids by (`file_key`, `scenario_key`). The store keeps one file per cassette file key, holding
the cases of every unit (scenario x seed) built from it so far, as plain data in `marshal` form
(which builds no objects but plain ones and runs no code on load). What comes back is what the
pipeline made: id, dialect, events, expectation, request, cassette, scenario, seed, point, and
the recorded turns around the stream when its cassette is a conversation. The wire bytes are
kept when the run that built the case rendered them (a byte-level accumulator read them);
otherwise the case's `response` is rebuilt through the pipeline when first read, so an
event-level run neither pays for rendering bytes nor stores them.

Where: `cases/` in the harness's cache folder (`harness.cache`: `$TOOLSTREAM_CACHE`, else
`$XDG_CACHE_HOME/toolstream`, else `~/.cache/toolstream`); `TOOLSTREAM_NO_CASE_CACHE` set to
anything but empty turns the store off (what `--no-case-cache` and `--toolstream-no-case-cache` do,
in the environment, so worker processes agree).

Safety: a file is a magic line, a SHA-256 of its body, and the body; a damaged, truncated or
foreign file (or one whose data is not shaped as ours) reads as missing and is rebuilt and
rewritten. Writes go to a temporary file renamed over the old one, so two processes writing the
same key leave one whole file (the other's units are rebuilt next time). Bounded: besides the
current code digest's folder, only the `FOLDERS_KEPT - 1` most recently used others are kept (two
harness versions sharing one cache, as two projects' environments do, do not rebuild each other's
cases on every run), and at most `MAX_BYTES` in all of them (the least recently written files go
first, the current code's last).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import inspect
import marshal
import os
import shutil
import sys
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, Final, Literal

from harness import bounded, files
from harness.cassettes.model import Chunk, Declared, Interaction, Request, Response
from harness.cassettes.outcome import Outcome
from harness.collector import collector_paused
from harness.errors import HarnessError
from harness.mutate.scenario import (
    MAX_SCENARIO_BYTES,
    Case,
    Conversation,
    DeferredResponse,
    Scenario,
    load_scenario,
    scenario_from_data,
)
from harness.oracle import expectation
from harness.oracle.expectation import CaseClass, Expectation, classify
from harness.wire.codecs.base import WireEvent
from harness.wire.dialects.base import Event

__all__ = [
    "MAX_BYTES",
    "OFF",
    "CaseStore",
    "Decoder",
    "Encoder",
    "ScenarioFiles",
    "StoredUnits",
    "cache_dir",
    "default_store",
    "turn_off",
]

OFF: Final = "TOOLSTREAM_NO_CASE_CACHE"
MAX_BYTES: Final = 512 * 1024 * 1024  # the whole bundled matrix takes a few MB
FOLDERS_KEPT: Final = 3  # code digests' folders: the current one and the most recently used others
_MAGIC: Final = b"toolstream-cases 1\n"
_DIGEST: Final = 32
Stamp = tuple[int, int, int] | None  # a file's modification time (ns), size and inode; None: no file
_FOLDER: Final = "cases"  # below the cache dir: one folder per code digest


def cache_dir() -> Path | None:
    """The cache folder the store keeps its `cases/` folder in; None when the store is off."""
    from harness import cache

    return None if os.environ.get(OFF, "").strip() else cache.home()


def turn_off() -> None:
    """No store for this process and the processes it starts (sets `TOOLSTREAM_NO_CASE_CACHE`)."""
    os.environ[OFF] = "1"


def default_store() -> CaseStore | None:
    """The store at `cache_dir()`, or None when it is off."""
    root = cache_dir()
    return None if root is None else CaseStore(root)


class CaseStore:
    """Files of built cases under `root`, one per cassette file key, in the current code's folder."""

    def __init__(self, root: str | Path, max_bytes: int = MAX_BYTES) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.hits = 0  # units read back (for tests and benchmarks)
        self.misses = 0  # units built

    def folder(self) -> Path | None:
        """The current code's folder (marked used, once a process: the least recently used of
        the others are removed when writing); None when the code cannot be told apart (a dialect
        plugin whose source is not found)."""
        digest = _code_digest()
        if digest is None:
            return None
        folder = self.root / _FOLDER / digest[:24]
        if folder not in _USED:
            _USED.add(folder)
            with contextlib.suppress(OSError):
                os.utime(folder)
        return folder

    def read(self, key: str) -> dict[str, Any]:
        """The stored units of one file key (unit key -> plain case records); empty when missing
        or unreadable."""
        folder = self.folder()
        if folder is None:
            return {}
        try:
            data = bounded.read(folder / f"{key}.bin", self.max_bytes)
        except (OSError, ValueError):  # missing, unreadable, over the store's size, not a file
            return {}
        return _unpacked(data)

    def stamp(self, key: str) -> Stamp:
        """What tells one version of a file key's file from another (None: there is none)."""
        folder = self.folder()
        if folder is None:
            return None
        try:
            status = (folder / f"{key}.bin").stat()
        except OSError:
            return None
        return (status.st_mtime_ns, status.st_size, status.st_ino)

    def write(
        self,
        key: str,
        units: dict[str, Any],
        *,
        merge: bool = True,
        unchanged: Stamp | Literal[False] = False,
    ) -> Stamp:
        """Store the units of one file key, merged with what is stored (another process may have
        added some meanwhile; `merge` False: replaced; not read again when the file is still the
        `unchanged` version, which `units` holds all of); any failure leaves the store as it was
        (a cache never fails a run). The stamp of the file written (None: not written)."""
        folder = self.folder()
        if folder is None:
            return None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _drop_unused_digests(folder)
            changed = merge and (unchanged is False or self.stamp(key) != unchanged)
            merged = {**self.read(key), **units} if changed else units
            body = marshal.dumps(merged, 4)
            files.write(folder / f"{key}.bin", (_MAGIC, hashlib.sha256(body).digest(), body))  # not joined
            _bound(folder, self.max_bytes, keep=folder / f"{key}.bin")
            return self.stamp(key)
        except (OSError, ValueError, HarnessError):  # no room, no permission, what marshal cannot hold
            return None


@functools.cache
def _code_digest() -> str | None:
    """The case-id code's digest (`keys.code_digest`) with this module's bytes (the record
    format) and the source of every dialect registered from outside this package: a case of a
    plugin's dialect is stored under that plugin's code."""
    from harness.matrix.keys import code_digest
    from harness.wire import dialects

    own = Path(__file__).read_bytes() + Path(expectation.__file__).read_bytes()  # format, classes
    digest = hashlib.sha256(code_digest().encode() + b"\0" + own)
    try:
        for name in dialects.names():
            cls = type(dialects.get(name))
            if not cls.__module__.startswith("harness."):
                digest.update(name.encode() + b"\0" + Path(inspect.getfile(cls)).read_bytes())
    except Exception:  # a registration that does not load, a source not to be found: no store
        return None
    return digest.hexdigest()


_SCENARIOS: Final = "scenarios"  # the file of parsed scenario files, by their bytes


class ScenarioFiles:
    """Scenario files read through the store: parsed once (YAML is most of their cost), kept as
    `Scenario.to_data()` under a digest of the file's bytes, checked again when read back."""

    def __init__(self, store: CaseStore) -> None:
        self.store = store
        self.known = store.read(_SCENARIOS)
        self.new: dict[str, Any] = {}

    def __call__(self, path: Path) -> Scenario:
        try:
            key = hashlib.sha256(bounded.read(path, MAX_SCENARIO_BYTES)).hexdigest()[:32]
        except (OSError, ValueError):
            return load_scenario(path)  # its own error
        found = self.known.get(key)
        if found is not None:
            with contextlib.suppress(Exception):  # not ours after all: read from the file
                return scenario_from_data(found[0], where=str(path), path=path)
        scenario = load_scenario(path)
        self.new[key] = (scenario.to_data(),)
        return scenario

    def save(self) -> None:
        if self.new:
            self.store.write(_SCENARIOS, self.new)
            self.new = {}


def _unpacked(data: bytes) -> dict[str, Any]:
    head = len(_MAGIC)
    if not data.startswith(_MAGIC) or len(data) < head + _DIGEST:
        return {}
    body = memoryview(data)[head + _DIGEST :]  # not a copy: a long recording's file is large
    if hashlib.sha256(body).digest() != data[head : head + _DIGEST]:
        return {}
    try:
        with collector_paused():
            units = marshal.loads(body)
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(units, dict) or not all(
        isinstance(k, str) and isinstance(v, tuple) for k, v in units.items()
    ):
        return {}
    return units


_USED: set[Path] = set()  # the code folders this process has marked used


def _drop_unused_digests(folder: Path) -> None:
    """Remove other code digests' folders but the `FOLDERS_KEPT - 1` most recently used."""
    others = []
    for other in folder.parent.iterdir():
        if other != folder and other.is_dir():
            with contextlib.suppress(OSError):
                others.append((other.stat().st_mtime, other))
    for _, other in sorted(others, reverse=True)[FOLDERS_KEPT - 1 :]:
        shutil.rmtree(other, ignore_errors=True)


def _bound(folder: Path, max_bytes: int, keep: Path) -> None:
    """Remove files of the code folders beside `folder` and then of `folder` (not `keep`), the
    least recently written first, until they hold at most `max_bytes` in all."""
    found = []
    for code in folder.parent.iterdir():
        for path in code.iterdir() if code.is_dir() else ():
            with contextlib.suppress(OSError):
                stat = path.stat()
                found.append((code == folder, stat.st_mtime, stat.st_size, path))
    total = sum(size for _, _, size, _ in found)
    for _, _, size, path in sorted(found):
        if total <= max_bytes:
            break
        if path != keep:
            with contextlib.suppress(OSError):
                path.unlink()
            total -= size


# ---------------------------------------------------------------------------------------------
# Cases as plain data: tuples, lists, dicts, strings, numbers, bytes. Objects shared between
# cases (events, expectations, the request) become one tuple each, which marshal writes once and
# reads back as one object, which is decoded into one object again. Dict keys and short strings
# are interned when written, so marshal writes each once per file and reads back one string.

_SHORT: Final = 40  # strings up to this long are interned (names, roles, types, ids)


# `sys.getrefcount` of an object only the memo holds, read as `found[0]`: the memo's pair and the
# call's own argument.
_MEMO_ONLY: Final = 2


class Encoder:
    """Cases to plain records; one encoder per file written, so shared objects are written once."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Any, Any]] = {}  # id -> (the object, kept alive; its record)
        self._same: dict[bytes, Any] = {}  # digest of a record's bytes -> the first record of those

    def release(self) -> None:
        """Let go of the objects encoded so far that nothing else holds (their records stay, shared
        with later ones). What something else holds (a recording's own events, which every unit
        shares) keeps its record at hand: encoding it again for each batch cost more than the
        rest of a batch. Without reference counts (not CPython), all of them."""
        counts = getattr(sys, "getrefcount", None)
        if counts is None:
            self._memo.clear()
            return
        while True:  # an object may be held only by another one let go in this pass: again
            kept = {key: found for key, found in self._memo.items() if counts(found[0]) > _MEMO_ONLY}
            if len(kept) == len(self._memo):
                return
            self._memo = kept

    def _once(self, obj: Any, make: Callable[[Any], Any]) -> Any:
        found = self._memo.get(id(obj))
        if found is None:
            found = self._memo[id(obj)] = (obj, make(obj))
        return found[1]

    def case(self, case: Case, expectation: Expectation) -> tuple[Any, ...]:
        """A case's record, with its class (`classify`), which a run reads back instead."""
        value = case.__dict__["_response"]
        response = self._once(value, _response_record) if isinstance(value, Response) else None
        return (
            case.id,
            _intern(case.dialect),
            _intern(case.cassette),
            _intern(case.scenario),
            case.seed,
            case.point,
            self._once(case.events, self._events),
            self._once(case.expected, self._outcome),
            None if case.request is None else self._once(case.request, _request_record),
            case.complete,
            case.error,
            response,
            self._shared((str(expectation.case_class), expectation.reason)),
            None if case.declared is None else self._shared((case.declared.case_class, case.declared.reason)),
            None if case.conversation is None else self._once(case.conversation, self._conversation),
        )

    def _events(self, events: tuple[Event, ...]) -> tuple[Any, ...]:
        return self._shared(tuple(self._once(event, self._event) for event in events))

    def _event(self, event: Event) -> tuple[Any, ...]:
        # The payload copied here is dropped when an equal record is kept already: what the memo
        # keeps is the shared record (mutations copy payloads that end up equal; each copy kept
        # took most of a big recording's memory while its file was written).
        wire = self._once(event.wire, self._wire)
        return self._shared((wire, _plain(event.payload), event.edited))

    def _wire(self, wire: WireEvent) -> tuple[Any, ...]:
        return self._shared(tuple(map(_plain, wire)))

    def _shared(self, record: tuple[Any, ...]) -> tuple[Any, ...]:
        """One record for equal ones (mutations copy events that end up equal): marshal's bytes
        are equal only for values that read back equal, types and key order included. Kept by a
        digest of those bytes (a whole stream's record is as long as the stream)."""
        digest = hashlib.blake2b(marshal.dumps(record, 4), digest_size=16).digest()
        return self._same.setdefault(digest, record)

    def _outcome(self, outcome: Outcome) -> tuple[Any, ...]:
        plain: tuple[Any, ...] = _plain(outcome.to_record())
        return plain

    def _conversation(self, conversation: Conversation) -> tuple[Any, ...]:
        def turns(items: tuple[Interaction, ...]) -> tuple[Any, ...]:
            return tuple(
                (
                    _request_record(item.request),
                    _response_record(item.response),
                    None if item.expected is None else self._outcome(item.expected),
                )
                for item in items
            )

        return (conversation.turn, turns(conversation.before), turns(conversation.after))


def _intern(text: Any) -> Any:
    return sys.intern(text) if type(text) is str and len(text) <= _SHORT else text


def _plain(value: Any) -> Any:
    """Decoded JSON with its keys and short strings interned; anything else as it is (marshal
    refuses what it cannot hold, and the unit is then not stored)."""
    kind = type(value)
    if kind is dict:
        return {_intern(k): _plain(v) for k, v in value.items()}
    if kind is list:
        return [_plain(v) for v in value]
    if kind is tuple:
        return tuple(_plain(v) for v in value)
    if kind is str:
        return _intern(value)
    return value


def _request_record(request: Request) -> tuple[Any, ...]:
    return (request.method, request.url, dict(request.headers), request.body)


def _response_record(response: Response) -> tuple[Any, ...]:
    chunks = tuple((c.data, c.offset_ms) for c in response.chunks)
    return (
        response.status,
        dict(response.headers),
        chunks,
        response.complete,
        response.error,
        response.error_type,
        response.open_after,
    )


# Slots set directly: `Event(...)` and `Outcome(...)` are frozen dataclasses, whose `__init__` goes
# through `object.__setattr__` once a field (most of a warm run's decoding, it showed). A
# `WireEvent` is a named tuple: `tuple.__new__` fills it from its record in one call.
_EVENT_SET: Final = tuple(Event.__dict__[name].__set__ for name in ("wire", "payload", "edited"))


class Decoder:
    """Plain records back to cases; one per file read, so what was shared is shared again."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Any, Any]] = {}

    def cases(self, records: Iterable[Any], rebuild: Callable[[str], Response]) -> list[Case]:
        """The cases of records; `rebuild(case_id)` gives a response that was not stored."""
        return [self.case(r, rebuild) for r in records]

    def case(self, record: tuple[Any, ...], rebuild: Callable[[str], Response]) -> Case:
        (case_id, dialect, cassette, scenario, seed, point, events, expected, request, complete, error,
         response, judged, declared, conversation) = record  # fmt: skip
        memo = self._memo
        expectation = memo.get(id(judged))
        if expectation is None:
            expectation = memo[id(judged)] = (judged, Expectation(CaseClass(judged[0]), judged[1]))
        found = memo.get(id(events))
        if found is None:
            found = memo[id(events)] = (events, self._events(events))
        outcome = memo.get(id(expected))
        if outcome is None:
            outcome = memo[id(expected)] = (expected, Outcome.from_record(expected))
        if request is not None:
            asked = memo.get(id(request))
            if asked is None:
                asked = memo[id(request)] = (request, Request(*request))
            request = asked[1]
        if declared is not None:  # its cassette's `expected_class`: kept for cases made from it again
            said = memo.get(id(declared))
            if said is None:
                said = memo[id(declared)] = (declared, Declared(*declared))
            declared = said[1]
        if conversation is not None:  # shared by the cases of one recorded stream
            talk = memo.get(id(conversation))
            if talk is None:
                talk = memo[id(conversation)] = (conversation, _conversation(conversation))
            conversation = talk[1]
        if response is None:
            response = DeferredResponse(complete, error, partial(rebuild, case_id))
        else:
            response = _response(response)  # mutable: one per case, as built
        case = object.__new__(Case)  # not `Case(...)`: its checks were made when it was built
        case.__dict__.update(
            id=case_id,
            dialect=dialect,
            cassette=cassette,
            scenario=scenario,
            seed=seed,
            point=point,
            events=found[1],
            expected=outcome[1],
            request=request,
            declared=declared,
            conversation=conversation,
            _response=response,
            expectation=expectation[1],
        )
        return case

    def _events(self, records: tuple[Any, ...]) -> tuple[Event, ...]:
        memo = self._memo
        out = []
        new, new_tuple = object.__new__, tuple.__new__
        set_wire, set_payload, set_edited = _EVENT_SET
        for record in records:
            found = memo.get(id(record))
            if found is None:
                wire, payload, edited = record
                known = memo.get(id(wire))
                if known is None:
                    made = new_tuple(WireEvent, wire)
                    known = memo[id(wire)] = (wire, made)
                event = new(Event)
                set_wire(event, known[1])
                set_payload(event, payload)
                set_edited(event, edited)
                found = memo[id(record)] = (record, event)
            out.append(found[1])
        return tuple(out)


def _response(record: tuple[Any, ...]) -> Response:
    status, headers, chunks, complete, error, error_type, open_after = record
    reads = [Chunk(*c) for c in chunks]
    return Response(status, dict(headers), reads, complete, error, error_type, open_after)


def _conversation(record: tuple[Any, ...]) -> Conversation:
    turn, before, after = record

    def turns(items: tuple[Any, ...]) -> tuple[Interaction, ...]:
        out = []
        for asked, answer, said in items:
            expected = None if said is None else Outcome.from_record(said)
            out.append(Interaction(Request(*asked), _response(answer), expected))
        return tuple(out)

    return Conversation(turn, turns(before), turns(after))


# ---------------------------------------------------------------------------------------------
# A matrix's files

_FILES_KEPT: Final = 2  # cassette files whose stored cases one matrix holds in memory at once
# Events the built cases waiting may hold before they are made records (a long recording's first
# run otherwise keeps every unit's cases, as objects, until its file is written).
_PENDING_EVENTS: Final = 250_000


class _File:
    """One file key's stored records by unit key (what was read, and what this run made, whether
    it is written yet), the decoder of those, the built cases not yet made records (with the events
    they hold), the encoder of this run's records and the stamp of the file's version they extend."""

    __slots__ = ("decoder", "encoder", "held", "pending", "stamp", "stored", "unsaved")

    def __init__(self, stored: dict[str, Any], stamp: Stamp) -> None:
        self.stored = stored
        self.unsaved = False
        self.decoder = Decoder()
        self.pending: dict[str, list[Case]] = {}
        self.held = 0
        self.encoder = Encoder()
        self.stamp = stamp


class StoredUnits:
    """The store's files one matrix reads and writes, a few at a time: read when first asked
    for, written (with the units built since) when left for another or flushed; the built cases
    waiting are made plain records before then when they hold too many events. Holds nothing of
    the matrix (a finalizer flushes it when the matrix goes): `scenarios` by name classify the
    cases written."""

    def __init__(self, store: CaseStore | None, scenarios: Mapping[str, Scenario]) -> None:
        self.store = store
        self.scenarios = scenarios
        self.files: OrderedDict[str, _File] = OrderedDict()
        self.foreign: set[str] = set()  # file keys whose stored file is not ours

    def _file(self, key: str) -> _File:
        found = self.files.get(key)
        if found is None:
            assert self.store is not None
            stamp = self.store.stamp(key)  # before reading: a write in between is merged, not lost
            found = self.files[key] = _File(self.store.read(key), stamp)
            while len(self.files) > _FILES_KEPT:
                old, entry = self.files.popitem(last=False)
                self._write(old, entry)
        else:
            self.files.move_to_end(key)
        return found

    def get(
        self, file_key: str, unit_key: str, rebuild: Callable[[Any, str], Response], unit: Any
    ) -> list[Case] | None:
        """The cases of a unit, read back (`rebuild(unit, case_id)`: the response of one that has
        no bytes stored) or built since; None when neither."""
        entry = self._file(file_key)
        built = entry.pending.get(unit_key)
        if built is not None:
            return list(built)
        stored = entry.stored
        records = stored.get(unit_key)
        assert self.store is not None
        if records is None:
            self.store.misses += 1
            return None
        self.store.hits += 1
        if not records:  # the scenario does not apply to this file's recordings
            return []
        collecting = gc.isenabled()  # not `collector_paused`: paid per unit, a context manager showed
        gc.disable()
        try:
            return entry.decoder.cases(records, partial(rebuild, unit))
        except Exception:  # not shaped as ours (a foreign file that passed its checksum): rebuilt
            stored.clear()  # none of it is trusted, and it is replaced, not merged, when written
            self.foreign.add(file_key)
            self.store.hits -= 1
            self.store.misses += 1
            return None
        finally:
            if collecting:
                gc.enable()

    def put(self, file_key: str, unit_key: str, cases: list[Case]) -> None:
        entry = self._file(file_key)
        held = sum(len(c.events) for c in cases)
        if entry.pending and entry.held + held > _PENDING_EVENTS:
            # The units waiting were judged (each unit's cases are, before the next is asked
            # for): kept as records from now on, with the bytes a byte-level accumulator rendered.
            self._encode(entry)
        entry.pending[unit_key] = list(cases)
        entry.held += held

    def flush(self) -> None:
        for key, entry in self.files.items():
            self._write(key, entry)

    def _encode(self, entry: _File) -> None:
        """The built cases waiting, as records beside the stored ones (plain data, shared with
        each other), the objects let go: what the file gets when it is written."""
        if not entry.pending:
            return
        encoder = entry.encoder
        try:
            records = {
                unit_key: tuple(encoder.case(c, classify(c, self.scenarios[c.scenario])) for c in cases)
                for unit_key, cases in entry.pending.items()
            }
        except Exception:  # something a case holds that the store does not: not stored
            records = {}
        entry.pending.clear()
        entry.held = 0
        encoder.release()
        entry.stored.update(records)
        entry.unsaved = entry.unsaved or bool(records)

    def _write(self, key: str, entry: _File) -> None:
        if self.store is None:
            return
        self._encode(entry)
        if not entry.unsaved:
            return
        entry.unsaved = False
        merge = key not in self.foreign
        entry.stamp = self.store.write(key, entry.stored, merge=merge, unchanged=entry.stamp)
        self.foreign.discard(key)
