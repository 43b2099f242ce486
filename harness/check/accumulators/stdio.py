"""The stdio protocol v2: an accumulator in any language, as a process speaking JSON Lines.

UTF-8, one JSON object per line. The harness starts the command once and, for each case, writes

    {"op":"start","protocol":2,"case":ID,"dialect":D,"feed":"events"|"bytes","request":{...}}
    {"op":"event","event":NAME_OR_NULL,"data":PAYLOAD}     # feed events: one per wire event
    {"op":"bytes","b64":READ}                              # feed bytes: one per network read
    {"op":"end","error":null|TEXT}                         # TEXT: the transport error of a cut

(`request` is optional). PAYLOAD is the decoded JSON, or the raw text when the data is not JSON
(`[DONE]`); the event name is the SSE `event:` field or the eventstream `:event-type`; SSE
comments are not sent. The command answers each `end` with one line naming the case:

    {"case":ID,"tool_calls":[{"id":..,"name":..,"arguments":STRING_OR_OBJECT}],"text":..,
     "finish_reason":..,"error":..,"state":"complete"|"cut"|"error"}

(string arguments are parsed as JSON, text that is not JSON being an invalid call; `"invalid":true`
on a call keeps its arguments as raw text; without `state`, an `error` means cut when the stream
was cut, else error; optional `"notes":[TEXT]` become the outcome's `notes`). Instead of an
outcome it may answer `{"case":ID,"failure":TEXT}` (it raised on this case) or
`{"case":ID,"skip":TEXT}` (it cannot run this case). It serves cases until stdin closes. Before
the first case the harness may send a warm-up case (`"warmup":true`, id `WARMUP_CASE`), answered
like any other; its answer is not judged.

The answer is the first line the process prints after the case is sent; any other line is a
protocol error for the case it arrives in, named with the line: a line before the answer (a
debug print, a line before `end`), an answer naming another case, or a line printed after the
previous answer (reported on the next case, which says so). The process is then replaced, so the
case after starts clean. A v1 answer (no `case`) is accepted while the process has never named a
case, the only time it is unambiguous.

`Stdio` is the harness's side: garbage, a dead process and a hang each fail only their case
(`AccumulatorProtocolError`, `AccumulatorCrashed`, `AccumulatorTimeout`) and the next case gets a
fresh process; on Linux the process runs under `subreaper`, so whatever it starts ends with it.
`serve` is the other side: it turns any accumulator into such a process
(`toolstream serve-accumulator SPEC`).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final, Literal

from harness.cassettes.format import Chunk, Request, Response
from harness.check.accumulators import reference, subreaper
from harness.check.accumulators.event_level import cut_error
from harness.check.outcome import Outcome, State, ToolCall
from harness.errors import (
    AccumulatorCrashed,
    AccumulatorFailure,
    AccumulatorProtocolError,
    AccumulatorTimeout,
    HarnessError,
    NotApplicable,
    OutcomeFormatError,
    UsageError,
)
from harness.wire import dialects
from harness.wire.codecs import CodecError, WireEvent

if TYPE_CHECKING:
    from harness.check.accumulators.base import Accumulator
    from harness.mutate.scenario import Case

__all__ = [
    "PROTOCOL_VERSION",
    "WARMUP_CASE",
    "Stdio",
    "answer_outcome",
    "case_messages",
    "serve",
    "warmup_case",
]

PROTOCOL_VERSION: Final = 2
Feed = Literal["events", "bytes"]
FEEDS: Final = ("events", "bytes")
_STDERR_KEPT = 4096  # bytes of the child's stderr kept for crash messages
_MAX_LINE = 64 * 1024 * 1024
_SUBREAPER: Final = str(Path(subreaper.__file__))
# The subreaper needs Linux's prctl and /proc; elsewhere the process group is what is killed.
_CONTAINED: Final = sys.platform == "linux" and os.path.isdir("/proc/self")
_TREE_END = 10.0  # seconds the subreaper gets to end a tree before its group gets SIGKILL
_UNNAMED: Final = object()
WARMUP_CASE: Final = "toolstream:warm-up"
_REFERENCE: Final = reference.accumulator()
_CONTENT_TYPES: Final = {
    "sse": "text/event-stream",
    "ndjson": "application/x-ndjson",
    "eventstream": "application/vnd.amazon.eventstream",
}


# ---------------------------------------------------------------------------------------------
# Messages


def case_messages(case: Case, feed: Feed, *, warmup: bool = False) -> Iterator[dict[str, Any]]:
    """The protocol messages of one case, `start` to `end`."""
    start: dict[str, Any] = {
        "op": "start",
        "protocol": PROTOCOL_VERSION,
        "case": case.id,
        "dialect": case.dialect,
        "feed": feed,
    }
    if warmup:
        start["warmup"] = True
    if isinstance(case.request, Request):
        start["request"] = {"method": case.request.method, "url": case.request.url, "body": case.request.body}
    yield start
    if feed == "bytes":
        for chunk in case.response.chunks:
            yield {"op": "bytes", "b64": base64.b64encode(chunk.data).decode("ascii")}
    else:
        for event in case.events:
            if not event.wire.is_comment:
                yield {"op": "event", "event": event.name, "data": event.payload}
    yield {"op": "end", "error": cut_error(case)}


def warmup_case() -> Case:
    """The case `Stdio.prepare` sends: an OpenAI chat stream with no events that ended cleanly."""
    from harness.mutate.scenario import Case

    response = Response(status=200, headers={"content-type": "text/event-stream"}, chunks=[], complete=True)
    return Case(WARMUP_CASE, "openai-chat", response, (), Outcome(), "stdio", "warm-up", 0)


def answer_outcome(answer: Any, *, cut: bool) -> Outcome:
    """An answer line's object as an `Outcome`; `AccumulatorProtocolError` when it is not one."""
    if not isinstance(answer, Mapping):
        raise AccumulatorProtocolError("the answer must be a JSON object")
    calls = answer.get("tool_calls", [])
    if not isinstance(calls, list):
        raise AccumulatorProtocolError("tool_calls: must be a list")
    parsed = []
    for i, call in enumerate(calls):
        if not isinstance(call, Mapping):
            raise AccumulatorProtocolError(f"tool_calls[{i}]: must be an object with id, name and arguments")
        name, call_id, arguments = call.get("name"), call.get("id"), call.get("arguments", "")
        if name is not None and not isinstance(name, str):
            raise AccumulatorProtocolError(f"tool_calls[{i}].name: must be a string or null")
        if call_id is not None and not isinstance(call_id, str):
            raise AccumulatorProtocolError(f"tool_calls[{i}].id: must be a string or null")
        if call.get("invalid") is True:
            parsed.append(ToolCall(name=name, arguments=str(arguments), id=call_id, invalid=True))
        elif isinstance(arguments, str):
            parsed.append(ToolCall.from_text(name, arguments, call_id))
        else:
            parsed.append(ToolCall(name=name, arguments=arguments, id=call_id))
    data = {
        key: answer[key]
        for key in ("text", "finish_reason", "state", "error", "usage", "notes")
        if key in answer
    }
    if data.get("text") is None:
        data["text"] = ""
    if "state" not in data and data.get("error") is not None:
        data["state"] = str(State.CUT if cut else State.ERROR)
    try:
        base = Outcome.from_dict(data)
    except OutcomeFormatError as exc:
        raise AccumulatorProtocolError(str(exc)) from None
    return Outcome(
        tool_calls=tuple(parsed),
        text=base.text,
        finish_reason=base.finish_reason,
        state=base.state,
        error=base.error,
        usage=base.usage,
        notes=base.notes,
    )


def _outcome_answer(outcome: Outcome) -> dict[str, Any]:
    calls: list[dict[str, Any]] = []
    for call in outcome.tool_calls:
        if call.invalid:
            calls.append(
                {"id": call.id, "name": call.name, "arguments": str(call.arguments), "invalid": True}
            )
        else:  # a JSON value; a string value goes as JSON text so it is not parsed as arguments text
            arguments = json.dumps(call.arguments) if isinstance(call.arguments, str) else call.arguments
            calls.append({"id": call.id, "name": call.name, "arguments": arguments})
    answer: dict[str, Any] = {
        "tool_calls": calls,
        "text": outcome.text,
        "finish_reason": outcome.finish_reason,
        "error": outcome.error,
        "state": str(outcome.state),
    }
    if outcome.usage is not None:
        answer["usage"] = dict(outcome.usage)
    if outcome.notes:
        answer["notes"] = list(outcome.notes)
    return answer


def _line(message: Mapping[str, Any]) -> bytes:
    # A payload may hold a lone surrogate (F2 on the wire): in a JSON string `\udXXX` is exactly that.
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
    return text.encode("utf-8", "backslashreplace")


# ---------------------------------------------------------------------------------------------
# The harness side


class _Child:
    """One running accumulator process, its stdout lines on a queue, its stderr tail kept.

    On Linux the command runs under `subreaper`, so killing a case's process also ends whatever it
    started, even what left its session, and a harness process that dies takes them all along.
    """

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.contained = _CONTAINED
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", _SUBREAPER, *argv] if self.contained else argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=os.name == "posix",  # so a kill reaches what the command started
            )
        except OSError as exc:
            raise AccumulatorCrashed(f"cannot start {shlex.join(argv)}: {exc.strerror or exc}") from None
        self.lines: queue.Queue[list[bytes] | None] = queue.Queue()  # the lines of each read
        self._ready: deque[bytes] = deque()  # lines of a read taken off the queue, not yet used
        self.stray: list[bytes] = []  # lines printed after the last answer, not read yet
        self.eof = False
        self.answered: str | None = None  # the case the last answer was for
        self.names_cases = False  # has answered with a case id (protocol v2): one is now required
        self.stderr: deque[bytes] = deque()
        self._stderr_size = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    def _read_stdout(self) -> None:
        # The lines of one read go on the queue together, so a line printed with an answer is
        # already known when the answer is taken: an extra line is caught on the next case, always.
        assert self.proc.stdout is not None
        fd, partial = self.proc.stdout.fileno(), b""
        with contextlib.suppress(OSError, ValueError):
            while data := os.read(fd, 1 << 16):
                *whole, partial = (partial + data).split(b"\n")
                batch = [line + b"\n" for line in whole]
                if len(partial) >= _MAX_LINE:
                    batch.append(partial)
                    partial = b""
                if batch:
                    self.lines.put(batch)
        if partial:
            self.lines.put([partial])
        self.lines.put(None)

    def next_line(self, timeout: float | None) -> bytes | None:
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
            if line is not None and line.strip():
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
        """Write in a thread of its own: a child that stops reading must not block the harness."""

        def write() -> None:
            assert self.proc.stdin is not None
            with contextlib.suppress(OSError, ValueError):
                self.proc.stdin.write(data)
                self.proc.stdin.flush()

        threading.Thread(target=write, daemon=True).start()

    def alive(self) -> bool:
        return self.proc.poll() is None and not self.eof

    def kill(self) -> None:
        """End the process and everything it started."""
        if self.proc.poll() is None and self.contained:
            # SIGTERM lets the subreaper end the whole tree; SIGKILL would orphan what left the group.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=_TREE_END)
        if self.proc.poll() is None:
            try:
                if os.name == "posix":
                    os.killpg(self.proc.pid, signal.SIGKILL)
                else:
                    self.proc.kill()
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError, ValueError):
                if pipe is not None:
                    pipe.close()

    def finish(self) -> None:
        """Close stdin (the end of the session) and give the child a moment to exit, then kill it."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2)
        self.kill()


class Stdio:
    """An accumulator process speaking the stdio protocol v2 (`cmd:` / `cmd-bytes:` specs).

    `timeout` (seconds, None for none) bounds each case; a case that fails in any way kills the
    process (and everything it started), and the next case starts a new one: after a protocol
    error nobody can say how many more lines the old process still owes, a new one owes none.
    Cases run one at a time (a lock serialises them).
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
        self._lock = threading.Lock()

    def prepare(self, timeout: float | None = None) -> None:
        """Start the process, unless one is running, and wait for its answer to a warm-up case,
        so that its start-up is not counted in a case's time. Never raises for the process's
        misbehaviour: one that does not answer is killed, and the next case starts it again and
        reports what happens."""
        limit = self.timeout if timeout is None else timeout
        with self._lock:
            if self._child is not None and self._child.alive():
                return
            try:
                self._exchange(self._live_child(), warmup_case(), limit, warmup=True)
            except AccumulatorFailure:
                self._discard()

    def run(self, case: Case, timeout: float | None = None) -> Outcome:
        """Send one case, return the process's answer as an `Outcome` (its notes included)."""
        limit = self.timeout if timeout is None else timeout
        with self._lock:
            try:
                answer = self._exchange(self._live_child(), case, limit)
            except AccumulatorFailure:
                self._discard()
                raise
        if isinstance(answer.get("failure"), str):
            raise AccumulatorCrashed(f"{self.name}: case {case.id}: {answer['failure']}")
        if isinstance(answer.get("skip"), str):
            raise NotApplicable(answer["skip"])
        try:
            return answer_outcome(answer, cut=not case.response.complete)
        except AccumulatorProtocolError as exc:
            raise AccumulatorProtocolError(f"{self.name}: case {case.id}: answer {exc}") from None

    def _live_child(self) -> _Child:
        child = self._child
        if child is not None:
            child.collect_pending()
            # A dead process's stray lines are still reported (by `_exchange`) before it is replaced.
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

    def _exchange(
        self, child: _Child, case: Case, limit: float | None, *, warmup: bool = False
    ) -> dict[str, Any]:
        where = f"{self.name}: case {case.id}"
        stray, child.stray = child.stray, []
        if stray and not warmup:
            after = f"case {child.answered}" if child.answered else "the warm-up case"
            raise AccumulatorProtocolError(
                f"{where}: before this case was sent, the process printed a line after its answer to "
                f"{after}: {_trimmed(stray[0])!r}; process restarted"
            )
        child.send(b"".join(_line(message) for message in case_messages(case, self.feed, warmup=warmup)))
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
                raise AccumulatorCrashed(
                    f"{where}: the process {how} before answering" + (f"; stderr: {tail}" if tail else "")
                )
            if not raw.strip():
                continue
            shown = _trimmed(raw)
            try:
                answer = json.loads(raw.decode("utf-8"))
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
                raise AccumulatorProtocolError(f"{where}: answered case {named!r}, not this one: {shown!r}")
            else:
                child.names_cases = True
            child.answered = None if warmup else case.id
            return answer

    def shutdown(self) -> None:
        """End the session: close the process's stdin, then make sure it and its children are gone."""
        with self._lock:
            if self._child is not None:
                self._child.finish()
                self._child = None

    def __enter__(self) -> Stdio:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def _trimmed(raw: bytes) -> str:
    shown = raw.decode("utf-8", "replace").strip()
    return shown if len(shown) <= 80 else shown[:77] + "..."


# ---------------------------------------------------------------------------------------------
# The accumulator side


class _Pending:
    """One case being received."""

    def __init__(self, start: Mapping[str, Any]) -> None:
        case_id, dialect, feed = start.get("case"), start.get("dialect"), start.get("feed", "events")
        if not isinstance(case_id, str) or not isinstance(dialect, str) or feed not in FEEDS:
            raise UsageError("start: needs case (string), dialect (string) and feed (events or bytes)")
        self.id = case_id
        self.dialect = dialects.get(dialect)
        self.feed = feed
        self.request = _request(start.get("request"))
        self.events: list[dialects.Event] = []
        self.chunks: list[Chunk] = []

    def add(self, message: Mapping[str, Any]) -> None:
        op = message.get("op")
        if op == "event" and self.feed == "events":
            name, data = message.get("event"), message.get("data")
            if name is not None and not isinstance(name, str):
                raise UsageError("event: `event` must be a string or null")
            text = data if isinstance(data, str) else self.dialect.dumps(data)
            event = self.dialect.parse(WireEvent(data=text, name=name))
            self.events.append(event)
            self.chunks.append(Chunk(dialects.body_of([event], self.dialect)))
        elif op == "bytes" and self.feed == "bytes":
            try:
                self.chunks.append(Chunk(base64.b64decode(str(message.get("b64", "")), validate=True)))
            except ValueError:
                raise UsageError("bytes: `b64` is not base64") from None
        else:
            raise UsageError(f"unexpected op {op!r} in a case fed by {self.feed}")

    def case(self, error: str | None) -> Case:
        from harness.mutate.scenario import Case

        response = Response(
            status=200,
            headers={"content-type": _CONTENT_TYPES.get(self.dialect.codec_name, "application/octet-stream")},
            chunks=self.chunks,
            complete=error is None,
            error=error,
        )
        events = self.events if self.feed == "events" else _decode(self.chunks, self.dialect)
        case = Case(
            id=self.id,
            dialect=self.dialect.name,
            response=response,
            events=tuple(events),
            expected=Outcome(),
            cassette="stdio",
            scenario="stdio",
            seed=0,
            request=self.request,
        )
        # What the case is expected to give, so `view()` notes mean the same as in the harness.
        return replace(case, expected=_REFERENCE.run(case))


def _request(data: Any) -> Request | None:
    if not isinstance(data, Mapping) or not isinstance(data.get("url"), str):
        return None
    return Request(method=str(data.get("method") or "POST").upper(), url=data["url"], body=data.get("body"))


def _decode(chunks: list[Chunk], dialect: dialects.Dialect) -> list[dialects.Event]:
    decoder = dialect.codec().decoder()
    wire: list[WireEvent] = []
    for chunk in chunks:
        wire.extend(decoder.feed(chunk.data))
    with contextlib.suppress(CodecError):  # a cut stream may end inside an event
        wire.extend(decoder.close())
    return [dialect.parse(w) for w in wire]


def serve(accumulator: str | Accumulator, stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> int:
    """Serve cases read from `stdin` with `accumulator` (a spec or a resolved one) until stdin closes.

    While the accumulator runs, whatever it prints goes to stderr: stdout carries answers only.
    Returns 0 at the end of input, 2 after a message that breaks the protocol (reported on stderr).
    """
    from harness.check.accumulators import resolve

    acc = resolve(accumulator)
    acc.prepare()  # before the first line is read: the harness's warm-up case waits for it
    source = stdin if stdin is not None else sys.stdin
    out = stdout if stdout is not None else sys.stdout
    pending: _Pending | None = None
    try:
        for number, raw in enumerate(source, start=1):
            if not raw.strip():
                continue
            try:
                message = json.loads(raw)
                if not isinstance(message, dict):
                    raise UsageError("a message must be a JSON object")
                op = message.get("op")
                if op == "start":
                    pending = _Pending(message)
                    continue
                if pending is None:
                    raise UsageError(f"op {op!r} before start")
                if op != "end":
                    pending.add(message)
                    continue
                error = message.get("error")
                case = pending.case(None if error is None else str(error))
                pending = None
            except (ValueError, HarnessError) as exc:
                print(f"toolstream serve-accumulator: line {number}: {exc}", file=sys.stderr)
                return 2
            out.write(json.dumps(_answer(acc, case), ensure_ascii=False, separators=(",", ":")) + "\n")
            out.flush()
    finally:
        acc.shutdown()
    return 0


def _answer(acc: Accumulator, case: Case) -> dict[str, Any]:
    """The answer line for one case, naming the case it answers (protocol v2)."""
    try:
        with contextlib.redirect_stdout(sys.stderr):
            answer = _outcome_answer(acc.run(case))
    except NotApplicable as exc:
        answer = {"skip": str(exc)}
    except Exception as exc:
        answer = {"failure": f"{type(exc).__name__}: {exc}"}
    return {"case": case.id, **answer}
