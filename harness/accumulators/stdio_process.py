"""The harness's side of the stdio protocol v2 (`harness.accumulators.stdio`): `Stdio`
starts the accumulator's process, sends it each case and reads its answer.

Garbage, a dead process and a hang each fail only their case (`AccumulatorProtocolError`,
`AccumulatorCrashed`, `AccumulatorTimeout`) and the next case gets a fresh process; on Linux the
process runs under `subreaper`, so whatever it starts ends with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shlex
import shutil
import subprocess
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple, cast

from harness.accumulators.stdio import (
    FEEDS,
    Feed,
    answer_outcome,
    case_parts,
    fed_message,
    read_answer,
    warmup_case,
)
from harness.errors import (
    AccumulatorCrashed,
    AccumulatorFailure,
    AccumulatorProtocolError,
    AccumulatorTimeout,
    InternalError,
    NotApplicable,
    UsageError,
)
from harness.processes import subreaper

if TYPE_CHECKING:
    from harness.cassettes.outcome import Outcome
    from harness.mutate.case import Case
    from harness.wire.dialects import Event

__all__ = ["Stdio"]

_STDERR_KEPT = 4096  # bytes of the child's stderr kept for crash messages
# The longest answer line read: one longer is a protocol error (its bytes are skipped, not held).
MAX_LINE = 64 * 1024 * 1024
_UNNAMED: Final = object()
# Cases written ahead of their turn to a process that names its cases, and the bytes past which
# no more are written (the last may be bigger): enough to keep the process busy while the harness
# judges an answer, few enough that a process replaced mid-window costs little to refill.
_WINDOW: Final = 8
_WINDOW_BYTES: Final = 4 << 20
# Fresh processes, one after the other, that may exit before answering the warm-up case before
# the accumulator counts as one that cannot start: its cases then fail at once, none starting a
# process (a bad import or a typo in the command would otherwise cost a process per case).
_START_TRIES: Final = 2
# The time a process is given to answer its warm-up case when no limit is asked of `prepare`:
# the per-case timeout is what a case costs, not what a start-up does, so a start-up gets
# `STARTUP_FACTOR` case timeouts, up to `STARTUP_LIMIT` (never less than one case timeout): a
# heavy library's imports fit a 30 s case limit (litellm's took 36 s on a loaded machine), and a
# program that never answers still costs about one short timeout, not minutes.
STARTUP_FACTOR: Final = 10.0
STARTUP_LIMIT: Final = 120.0


_NOT_STARTED: Final = (
    "not run: {tries} processes in a row exited before answering the warm-up case (the last "
    "{exited}); none is started for the cases"
)
# A process that never answered the warm-up in time: each case would pay its start-up again
# (a case that times out is a new process), so none is started for the cases.
_NOT_READY: Final = (
    "not run: the process did not answer the warm-up case within {limit:g} s; none is started "
    "for the cases (one that takes longer to start needs a longer timeout)"
)
# The same words read back (`start_failure`), made from them so the two cannot drift apart.
_READ_NOT_STARTED: Final = re.compile(
    re.escape(_NOT_STARTED)
    .replace(re.escape("{tries}"), r"\d+")
    .replace(re.escape("{exited}"), "(?P<exited>.*)")
    + "$"
)


def start_failure(error: str | None) -> str | None:
    """How the last process exited (with its stderr) when `error`, a case's error, says the stdio
    accumulator could not start (`Stdio.prepare`); None for any other error."""
    found = _READ_NOT_STARTED.search(error or "")
    return found["exited"] if found else None


class _TooLong:
    """What the reader queues in place of a line longer than `MAX_LINE` (its bytes skipped)."""

    def __init__(self, size: int) -> None:
        self.size = size


class _Exited(AccumulatorCrashed):
    """The process ended (or closed its stdout) before answering; `detail` says how."""

    def __init__(self, where: str, detail: str) -> None:
        super().__init__(f"{where}: the process {detail}")
        self.where, self.detail = where, detail

    def __reduce__(self) -> tuple[type[_Exited], tuple[str, str]]:
        return type(self), (self.where, self.detail)  # pickled whole (its args are the message)


_ENCODE: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _line(message: Mapping[str, Any]) -> bytes:
    # A payload may hold a lone surrogate (F2 on the wire): in a JSON string `\udXXX` is exactly that.
    return (_ENCODE(message) + "\n").encode("utf-8", "backslashreplace")


# Each fed event's line, by identity: the cases of a run share their events (a cassette's
# scenarios and cut points reuse them: the openai-chat matrix feeds 26,015 events that are 2,747
# objects), so each is encoded once. Bounded in count, and only lines up to `_FED_LINE_KEPT`
# bytes are kept; each keeps its event, so its id is not reused while the line is kept. Reads
# (feed bytes) are made afresh with each case's response: never kept.
_FED_LINES: dict[int, tuple[Event, bytes]] = {}
_FED_LINES_KEPT: Final = 8192
_FED_LINE_KEPT: Final = 64 * 1024


def case_bytes(case: Case, feed: Feed, *, warmup: bool = False) -> bytes:
    """The lines of one case (`case_messages`), as written to the process."""
    start, fed, end = case_parts(case, feed, warmup=warmup)
    lines = [_line(start)]
    if feed == "bytes":
        lines += [_line(fed_message(chunk)) for chunk in fed]
    else:
        for event in fed:
            found = _FED_LINES.get(id(event))
            if found is None or found[0] is not event:
                line = _line(fed_message(event))
                if len(line) > _FED_LINE_KEPT:
                    lines.append(line)
                    continue
                if len(_FED_LINES) >= _FED_LINES_KEPT:
                    _FED_LINES.clear()
                found = _FED_LINES[id(event)] = (cast("Event", event), line)
            lines.append(found[1])
    lines.append(_line(end))
    return b"".join(lines)


class _Child:
    """One running accumulator process, its stdout lines on a queue, its stderr tail kept.

    On Linux the command runs under `subreaper`, so killing a case's process also ends whatever it
    started, even what left its session, and a harness process that dies takes them all along.
    """

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.contained = subreaper.CONTAINED
        if subreaper.stopping():
            raise AccumulatorCrashed(f"not started: the harness is being stopped: {shlex.join(argv)}")
        try:
            self.proc = subprocess.Popen(
                subreaper.contained(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=os.name == "posix",  # so a kill reaches what the command started
            )
        except OSError as exc:
            raise AccumulatorCrashed(f"cannot start {shlex.join(argv)}: {exc.strerror or exc}") from None
        # The lines of each read (a line too long stands as `_TooLong`)
        self.lines: queue.Queue[list[bytes | _TooLong] | None] = queue.Queue()
        self._ready: deque[bytes | _TooLong] = deque()  # lines of a read taken off the queue, not yet used
        self.stray: list[bytes] = []  # lines printed after the last answer, not read yet
        self.eof = False
        self.answered: str | None = None  # the case the last answer was for
        self.names_cases = False  # has answered with a case id (protocol v2): one is now required
        self.stderr: deque[bytes] = deque()
        self._stderr_size = 0
        self._lock = threading.Lock()
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._closing = False
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._write_stdin, daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    def _read_stdout(self) -> None:
        # The lines of one read go on the queue together, so a line printed with an answer is
        # already known when the answer is taken: an extra line is caught on the next case, always.
        # Linear in what is read: a line's start waits in a bytearray that each read extends
        # (bytes concatenation would copy the whole line again on every read).
        assert self.proc.stdout is not None
        fd, partial = self.proc.stdout.fileno(), bytearray()
        skipping = False  # in a line too long, reported already: its bytes up to its end go
        with contextlib.suppress(OSError, ValueError):
            while data := os.read(fd, 1 << 16):
                batch: list[bytes | _TooLong] = []
                start = 0
                while (end := data.find(b"\n", start)) >= 0:
                    if not skipping:
                        partial += data[start : end + 1]
                        batch.append(bytes(partial) if len(partial) <= MAX_LINE else _TooLong(len(partial)))
                    partial.clear()
                    skipping = False
                    start = end + 1
                if not skipping:
                    partial += data[start:]
                    if len(partial) > MAX_LINE:  # said now: its end may never come
                        batch.append(_TooLong(len(partial)))
                        skipping = True
                        partial.clear()
                if batch:
                    self.lines.put(batch)
        if partial:
            self.lines.put([bytes(partial)])
        self.lines.put(None)

    def next_line(self, timeout: float | None) -> bytes | _TooLong | None:
        """The next line the process printed (None: its stdout closed); `queue.Empty` on timeout."""
        if not self._ready:
            batch = self.lines.get(timeout=timeout)
            if batch is None:
                self.eof = True
                return None
            self._ready.extend(batch)
        return self._ready.popleft()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        with contextlib.suppress(OSError, ValueError):
            while data := os.read(self.proc.stderr.fileno(), 4096):
                with self._lock:
                    self.stderr.append(data)
                    self._stderr_size += len(data)
                    while self._stderr_size > _STDERR_KEPT and len(self.stderr) > 1:
                        self._stderr_size -= len(self.stderr.popleft())

    def collect_pending(self) -> None:
        """Move what the process printed since its last answer into `stray`, noting end of file."""
        while not self.eof:
            try:
                line = self.next_line(timeout=0)
            except queue.Empty:
                return
            if isinstance(line, _TooLong):
                self.stray.append(b"(a line of %d bytes)" % line.size)
            elif line is not None and line.strip():
                self.stray.append(line)

    def stderr_tail(self, *, drain: float = 0.0) -> str:
        """The last lines of the child's stderr; `drain` waits that long for a dead child's
        last words to be read (its reader ends at EOF), so a crash message is not missing them."""
        if drain:
            self._stderr_reader.join(timeout=drain)
        with self._lock:
            text = b"".join(self.stderr)[-_STDERR_KEPT:].decode("utf-8", "replace").strip()
        return " | ".join(text.splitlines()[-5:])

    def send(self, data: bytes) -> None:
        """Queue bytes for the child's stdin. One writer thread per child writes them in order: a
        child that stops reading blocks that thread, never the harness, and while a big case is
        being written the reader keeps taking the child's answers (neither pipe can fill both ways)."""
        self._outbox.put(data)

    def _write_stdin(self) -> None:
        assert self.proc.stdin is not None
        fd = self.proc.stdin.fileno()
        try:
            while (data := self._outbox.get()) is not None:
                if self._closing:
                    continue  # the session is ending: what is left is not sent
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
        except OSError:
            pass  # the child is gone (or closed its stdin): nothing more reaches it
        finally:
            # Only this thread closes stdin, so its descriptor is never reused under a write.
            with contextlib.suppress(OSError, ValueError):
                self.proc.stdin.close()

    def alive(self) -> bool:
        return self.proc.poll() is None and not self.eof

    def kill(self) -> None:
        """End the process and everything it started."""
        # SIGTERM lets the subreaper end the whole tree; SIGKILL would orphan what left the group.
        subreaper.stop(self.proc, wrapped=self.contained)
        self._closing = True
        self._outbox.put(None)  # the writer closes stdin (a write under way fails: the child is gone)
        for pipe in (self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError, ValueError):
                if pipe is not None:
                    pipe.close()

    def finish(self) -> None:
        """Close stdin (the end of the session) and give the child a moment to exit, then kill it."""
        self._closing = True
        self._outbox.put(None)  # the writer closes stdin: a write of its own may still be under way
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2)
        self.kill()


class Stdio:
    """An accumulator process speaking the stdio protocol v2 (`cmd:` / `cmd-bytes:` specs).

    `timeout` (seconds, None for none) bounds each case; a case that fails in any way kills the
    process (and everything it started), and the next case starts a new one: after a protocol
    error nobody can say how many more lines the old process still owes, a new one owes none.
    Cases run one at a time (a lock serialises them).

    Pipelined: the cases a runner announces (`upcoming`) are written ahead of their turn, up to
    `_WINDOW` of them, so the process has the next case in its stdin while the harness judges
    the last answer. Only to a process that has named a case in an answer (protocol v2): answers
    are then matched by id, and a stray line cannot shift them. A case's clock starts when it is
    run (its answer is next), not when it was written. A case written ahead to a process that
    then exits before answering it goes again to a fresh process, as it would have without
    pipelining (a process that ends itself every few cases loses none), so the verdicts never
    depend on the window; after any other failure the cases written ahead are written again to
    the next process.
    """

    def __init__(
        self,
        command: str | list[str],
        feed: Feed = "events",
        *,
        name: str | None = None,
        timeout: float | None = 60.0,
    ) -> None:
        if feed not in FEEDS:
            raise UsageError(f"stdio feed must be one of {', '.join(FEEDS)}, not {feed!r}")
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise UsageError("stdio accumulator: empty command")
        self.command = shlex.join(self.argv)
        self.feed: Feed = feed
        self.name = name or ("cmd-bytes:" if feed == "bytes" else "cmd:") + self.command
        self.timeout = timeout
        self.started = 0  # processes started so far, for tests and reports
        self._child: _Child | None = None
        self._unstartable: str | None = None  # set by `prepare`: why no case starts a process
        self._not_ready: str | None = None  # set by `prepare`: the warm-up got no answer in time
        self._lock = threading.Lock()
        self._told: deque[Case] = deque()  # announced by `upcoming`, not written yet
        self._in_flight: deque[_Sent] = deque()  # written to `_child`, answers not read yet, in order

    def prepare(self, timeout: float | None = None) -> None:
        """Start the process, unless one is running, and wait for its answer to a warm-up case,
        so that its start-up is not counted in a case's time. Never raises for the process's
        misbehaviour: one that does not answer is killed, and the next case starts it again and
        reports what happens. Except one that cannot start: when `_START_TRIES` processes in a
        row exit before answering the warm-up, every case fails at once saying so; and one that
        never answers: when the warm-up gets no answer within the limit, every case times out at
        once (each would start a process again and wait as long: `--timeout` is what a case costs).
        Without `timeout`, the start-up gets `STARTUP_FACTOR` case timeouts, up to `STARTUP_LIMIT`:
        a heavy library's imports on a loaded machine are no case's cost (litellm's took 36 s of a
        30 s case limit)."""
        if timeout is not None:
            limit: float | None = timeout
        elif self.timeout is None:
            limit = None
        else:
            limit = max(self.timeout, min(STARTUP_LIMIT, STARTUP_FACTOR * self.timeout))
        with self._lock:
            if self._child is not None and self._child.alive():
                return
            self._restart()  # what a dead process was owing goes to the next one
            exited = ""
            for _ in range(_START_TRIES):
                try:
                    self._warm_up(self._live_child(), limit)
                    return
                except _Exited as exc:
                    self._discard()
                    exited = exc.detail
                except AccumulatorTimeout:
                    self._discard()
                    self._not_ready = _NOT_READY.format(limit=limit or 0.0)  # it had a limit
                    return
                except AccumulatorFailure:
                    self._discard()
                    return
            self._unstartable = _NOT_STARTED.format(tries=_START_TRIES, exited=exited)

    def upcoming(self, cases: Iterable[Case]) -> None:
        """The cases `run` is given next, in this order, after those announced before: a process
        that names its cases gets them written ahead of their turn. A case announced and then
        not run costs its process (the answers it owes are not waited for): announce only cases
        that will run."""
        with self._lock:
            self._told.extend(cases)

    def prints_nothing(self, case: Case) -> bool:
        """A case run here writes nothing to this process's stdout or stderr (the process's own
        output comes through pipes), so the runner needs no capture around it."""
        return True

    def run(self, case: Case, timeout: float | None = None) -> Outcome:
        """Send one case, return the process's answer as an `Outcome` (its notes included)."""
        limit = self.timeout if timeout is None else timeout
        with self._lock:  # a `prepare` still running decides first whether a process is started
            self._take(case)
            if self._unstartable is not None or self._not_ready is not None:
                self._told.popleft()  # no process runs: nothing is in flight
                if self._unstartable is not None:
                    raise AccumulatorCrashed(f"{self.name}: case {case.id}: {self._unstartable}")
                raise AccumulatorTimeout(f"{self.name}: case {case.id}: {self._not_ready}")
            answer = self._pipelined(case, limit)
        if isinstance(answer.get("failure"), str):
            raise AccumulatorCrashed(f"{self.name}: case {case.id}: {answer['failure']}")
        if isinstance(answer.get("skip"), str):
            raise NotApplicable(answer["skip"])
        try:
            return answer_outcome(answer, cut=not case.complete)  # read without rendering the response
        except AccumulatorProtocolError as exc:
            raise AccumulatorProtocolError(f"{self.name}: case {case.id}: answer {exc}") from None

    def _take(self, case: Case) -> None:
        """Make `case` the next one owed (`_in_flight[0]`, else `_told[0]`). The cases announced
        before it will not run: they are forgotten, and when one was written already the process
        goes (it owes answers nobody will read); a case never announced goes before the others."""
        if self._in_flight and self._in_flight[0].case is case:
            return
        self._restart()
        for k, told in enumerate(self._told):
            if told is case:
                for _ in range(k):
                    self._told.popleft()
                return
        self._told.appendleft(case)

    def _restart(self) -> None:
        """Drop the process when answers are owed by it; the cases written to it go back to be
        written again (ahead of the rest)."""
        if self._in_flight:
            self._discard()
            self._told.extendleft(reversed([sent.case for sent in self._in_flight]))
            self._in_flight.clear()

    def _pipelined(self, case: Case, limit: float | None) -> dict[str, Any]:
        """The answer to `case`, `_told[0]` or `_in_flight[0]`, the window topped up first."""
        for _ in range(2):  # a second time only for a case written ahead to a process that then exited
            try:
                if not self._in_flight:
                    fresh = self._live_child()
                    self._stray_before(fresh, case)
                    self._write(fresh, ahead=False)
                child = self._child
                assert child is not None
                self._top_up(child)
            except AccumulatorFailure:
                self._told.popleft()
                self._discard()
                raise
            except BaseException:
                self._told.popleft()  # it could not be encoded: the next case goes on
                raise
            sent = self._in_flight[0]
            try:
                answer = self._answer(child, case, limit)
            except _Exited:
                if sent.ahead:  # it may never have been read: it goes to a fresh process
                    self._restart()
                    continue
                self._fail()
                raise
            except AccumulatorFailure:
                self._fail()
                raise
            self._in_flight.popleft()
            return answer
        raise InternalError("a case written ahead was not answered twice")  # pragma: no cover

    def _fail(self) -> None:
        """The case owed first failed: the process goes, the cases written after it are written again."""
        self._in_flight.popleft()
        self._restart()
        self._discard()

    def _write(self, child: _Child, *, ahead: bool) -> None:
        case = self._told[0]
        data = case_bytes(case, self.feed)
        self._told.popleft()
        child.send(data)
        self._in_flight.append(_Sent(case, ahead, len(data)))

    def _top_up(self, child: _Child) -> None:
        """Write announced cases while the window has room, to a process that names its cases."""
        if not child.names_cases:
            return  # v1: order is all that matches answers to cases, a stray line would shift them
        size = sum(sent.size for sent in self._in_flight)
        while self._told and len(self._in_flight) < _WINDOW and size < _WINDOW_BYTES:
            try:
                self._write(child, ahead=True)
            except Exception:
                return  # it fails on its own turn, as the case owed first
            size += self._in_flight[-1].size

    def _live_child(self) -> _Child:
        child = self._child
        if child is not None:
            child.collect_pending()
            # A dead process's stray lines are still reported (by `_stray_before`) before it is replaced.
            if child.alive() or child.stray:
                return child
        self._discard()
        if shutil.which(self.argv[0]) is None:
            raise AccumulatorCrashed(f"cannot start {self.command}: no such program")
        self._child = _Child(self.argv)
        self.started += 1
        return self._child

    def _discard(self) -> None:
        if self._child is not None:
            self._child.kill()
            self._child = None

    def _stray_before(self, child: _Child, case: Case) -> None:
        """A line printed after the last answer, known before `case` is written, fails `case`."""
        stray, child.stray = child.stray, []
        if stray:
            after = f"case {child.answered}" if child.answered else "the warm-up case"
            raise AccumulatorProtocolError(
                f"{self.name}: case {case.id}: before this case was sent, the process printed a line "
                f"after its answer to {after}: {_trimmed(stray[0])!r}; process restarted"
            )

    def _warm_up(self, child: _Child, limit: float | None) -> None:
        """Write the warm-up case and read its answer (a line printed before it is not its fault)."""
        case = warmup_case()
        child.stray = []
        child.send(case_bytes(case, self.feed, warmup=True))
        self._answer(child, case, limit, warmup=True)

    def _answer(
        self, child: _Child, case: Case, limit: float | None, *, warmup: bool = False
    ) -> dict[str, Any]:
        """The next answer line, which must be `case`'s, read within `limit` seconds from now."""
        where = f"{self.name}: case {case.id}"
        deadline = None if limit is None else time.monotonic() + limit
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                raw = child.next_line(wait)
            except queue.Empty:
                raise AccumulatorTimeout(f"{where}: no answer within {limit:g} s; process killed") from None
            if raw is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.proc.wait(timeout=1)
                code = child.proc.poll()
                how = f"exited with status {code}" if code is not None else "closed its stdout"
                tail = child.stderr_tail(drain=1.0)
                raise _Exited(where, f"{how} before answering" + (f"; stderr: {tail}" if tail else ""))
            if isinstance(raw, _TooLong):
                raise AccumulatorProtocolError(
                    f"{where}: answered a line of more than {MAX_LINE} bytes (at least {raw.size}), "
                    "the most a line may hold; process restarted"
                )
            if not raw.strip():
                continue
            shown = _trimmed(raw)
            try:
                answer = read_answer(raw)
            except (UnicodeDecodeError, ValueError):
                raise AccumulatorProtocolError(
                    f"{where}: answered a line that is not JSON: {shown!r}"
                ) from None
            if not isinstance(answer, dict):
                raise AccumulatorProtocolError(f"{where}: the answer must be a JSON object: {shown!r}")
            named = answer.get("case", _UNNAMED)
            if named is _UNNAMED:
                # A v1 answer: it can only be this case's while the process has never named one.
                if child.names_cases:
                    raise AccumulatorProtocolError(f"{where}: answered a line without its case id: {shown!r}")
            elif named != case.id:
                if named is not None and named == child.answered:  # one too many, read as the next
                    raise AccumulatorProtocolError(
                        f"{where}: the process printed a line after its answer to case {named}: "
                        f"{shown!r}; process restarted"
                    )
                raise AccumulatorProtocolError(f"{where}: answered case {named!r}, not this one: {shown!r}")
            else:
                child.names_cases = True
            child.answered = None if warmup else case.id
            return answer

    def shutdown(self) -> None:
        """End the session: close the process's stdin, then make sure it and its children are gone."""
        with self._lock:
            self._told.clear()
            self._in_flight.clear()
            if self._child is not None:
                self._child.finish()
                self._child = None

    def __enter__(self) -> Stdio:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


class _Sent(NamedTuple):
    """A case written to the process: `ahead` when an earlier case's answer was still owed."""

    case: Case
    ahead: bool
    size: int


def _trimmed(raw: bytes) -> str:
    shown = raw.decode("utf-8", "replace").strip()
    return shown if len(shown) <= 80 else shown[:77] + "..."
