"""The answering side of the stdio protocol v2 (`harness.accumulators.stdio`): any accumulator as
a process that reads cases on stdin and answers each on stdout (`toolstream serve-accumulator
SPEC`). It loads no process machinery (that is the harness's side, `stdio_process`)."""

from __future__ import annotations

import base64
import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import IO, TYPE_CHECKING, Any, Final, cast

from harness import bounded
from harness.accumulators import prepare, reference, resolve
from harness.accumulators.base import not_for
from harness.accumulators.stdio import FEEDS, answer_line, outcome_answer
from harness.cassettes.model import Chunk, Request, Response
from harness.cassettes.outcome import Outcome
from harness.errors import (
    HarnessError,
    NotApplicable,
    UsageError,
)
from harness.oracle.raise_site import with_site
from harness.wire import dialects
from harness.wire.codecs import CodecError, WireEvent
from harness.wire.dialects import Event

if TYPE_CHECKING:
    from harness.accumulators.base import Accumulator
    from harness.mutate.case import Case

__all__ = ["serve"]

_REFERENCE: Final = reference.accumulator()
_CONTENT_TYPES: Final = {
    "sse": "text/event-stream",
    "ndjson": "application/x-ndjson",
    "eventstream": "application/vnd.amazon.eventstream",
}


class _Pending:
    """One case being received."""

    def __init__(self, start: Mapping[str, Any], *, lean: bool = False) -> None:
        """`lean`: for an accumulator that reads payloads only (the reference), whose events need
        no wire text, nor cases an expected outcome (it reports nothing early)."""
        case_id, dialect, feed = start.get("case"), start.get("dialect"), start.get("feed", "events")
        if not isinstance(case_id, str) or not isinstance(dialect, str) or feed not in FEEDS:
            raise UsageError("start: needs case (string), dialect (string) and feed (events or bytes)")
        self.id = case_id
        self.dialect = dialects.get(dialect)
        self.feed = feed
        self.request = _request(start.get("request"))
        self.events: list[dialects.Event] = []
        self.chunks: list[Chunk] = []
        self.lean = lean

    def add(self, message: Mapping[str, Any]) -> None:
        op = message.get("op")
        if op == "event" and self.feed == "events":
            name, data = message.get("event"), message.get("data")
            if name is not None and not isinstance(name, str):
                raise UsageError("event: `event` must be a string or null")
            if isinstance(data, str):  # text that is not JSON (`[DONE]`), parsed as the wire's would be
                self.events.append(self.dialect.parse(WireEvent(data=data, name=name)))
            elif self.lean:  # its wire text is made from the payload if it is ever rendered
                self.events.append(Event(WireEvent(name=name), data, True))
            else:  # decoded already: its wire text is how this provider writes it, not parsed again
                self.events.append(Event(WireEvent(data=self.dialect.dumps(data), name=name), data))
        elif op == "bytes" and self.feed == "bytes":
            try:
                self.chunks.append(Chunk(base64.b64decode(str(message.get("b64", "")), validate=True)))
            except ValueError:
                raise UsageError("bytes: `b64` is not base64") from None
        else:
            raise UsageError(f"unexpected op {op!r} in a case fed by {self.feed}")

    def case(self, error: str | None) -> Case:
        """The case received."""
        from harness.mutate.case import Case, DeferredResponse

        def response() -> Response:
            # Fed events: the body is rendered from them only when read (a client-level accumulator).
            chunks = self.chunks
            if self.feed == "events":
                chunks = [Chunk(dialects.body_of([event], self.dialect)) for event in self.events]
            kind = _CONTENT_TYPES.get(self.dialect.codec_name, "application/octet-stream")
            return Response(
                status=200,
                headers={"content-type": kind},
                chunks=chunks,
                complete=error is None,
                error=error,
            )

        events = self.events if self.feed == "events" else _decode(self.chunks, self.dialect)
        case = Case(
            id=self.id,
            dialect=self.dialect.name,
            # Rendered when first read (`Case.response` takes a deferred one: `DeferredResponse`).
            response=cast(Response, DeferredResponse(error is None, error, response)),
            events=tuple(events),
            expected=Outcome(),
            cassette="stdio",
            scenario="stdio",
            seed=0,
            request=self.request,
        )
        if self.lean:
            return case
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
    acc = resolve(accumulator)
    if stdout is not None:
        return _serve(acc, accumulator, stdin, stdout)
    with _answers_only() as out:
        return _serve(acc, accumulator, stdin, out)


def _serve(acc: Accumulator, accumulator: str | Accumulator, stdin: IO[str] | None, out: IO[str]) -> int:
    # The reference reads payloads only and reports nothing early (no `view`).
    lean = isinstance(acc, type(_REFERENCE)) and acc.factory is _REFERENCE.factory
    # Before the first line is read: the harness's warm-up case waits for it. Not the reference's,
    # which is loading every dialect: here each dialect is loaded when its first case arrives.
    if not isinstance(acc, type(_REFERENCE)):
        prepare(acc, accumulator if isinstance(accumulator, str) else acc.name, quiet=False)
    source = stdin if stdin is not None else sys.stdin
    pending: _Pending | None = None
    number = 0
    try:
        for lines in _reads(source):
            for raw in lines:
                number += 1
                if not raw.strip():
                    continue
                try:
                    message = bounded.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
                    if not isinstance(message, dict):
                        raise UsageError("a message must be a JSON object")
                    op = message.get("op")
                    if op == "start":
                        pending = _Pending(message, lean=lean)
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
                _write(out, answer_line(_answer(acc, case)))
            out.flush()  # once per read: cases written ahead are answered together
    finally:
        with contextlib.suppress(OSError, ValueError):
            out.flush()
        acc.shutdown()
    return 0


@contextlib.contextmanager
def _answers_only() -> Iterator[IO[str]]:
    """The process's stdout, for answers alone: meanwhile file descriptor 1 points at stderr, so
    what a library writes to a `sys.stdout` it kept (agno's logging handler, made at import, holds
    it: `redirect_stdout` cannot reach it) goes to stderr too, never between two answers."""
    sys.stdout.flush()
    # Only the process's own stdout is moved: a caller that gave `sys.stdout` another home (an
    # embedding, a test's StringIO) gets its answers there, as before.
    saved = _moved_stdout() if _is_descriptor_1(sys.stdout) else None
    if saved is None:  # no descriptor 1 or 2 to move (a daemon): answers go where stdout goes
        yield sys.stdout
        return
    out = os.fdopen(os.dup(saved), "w", encoding="utf-8")
    try:
        yield out
    finally:
        with contextlib.suppress(OSError, ValueError):
            out.close()
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _is_descriptor_1(stream: IO[str]) -> bool:
    try:
        return stream.fileno() == 1
    except (AttributeError, OSError, ValueError):  # not a file (io.UnsupportedOperation is both)
        return False


def _moved_stdout() -> int | None:
    """A copy of descriptor 1, which then points at stderr; None where either cannot be done."""
    try:
        saved = os.dup(1)
    except OSError:
        return None
    try:
        os.dup2(2, 1)
    except OSError:
        os.close(saved)
        return None
    return saved


def _write(out: IO[str], line: bytes) -> None:
    """`line` on `out`: as bytes where it has them, so a lone surrogate keeps its own bytes."""
    buffer = getattr(out, "buffer", None)
    if buffer is not None:
        out.flush()  # text written before (none today) stays in order
        buffer.write(line)
    else:  # a test's StringIO
        out.write(line.decode("utf-8", "surrogatepass"))


def _reads(source: IO[str]) -> Iterator[list[str] | list[bytes]]:
    """The lines of `source`, a list per read as they arrive (from its file descriptor when it
    has one: a harness that writes cases ahead has them read, and answered, together)."""
    try:
        fd = source.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's StringIO)
        yield from ([line] for line in source)
        return
    partial = bytearray()  # a line's start, extended by each read (linear in a long line)
    while data := os.read(fd, 1 << 16):
        end = data.rfind(b"\n")
        if end < 0:
            partial += data
            continue
        partial += data[:end]
        yield bytes(partial).split(b"\n")
        partial[:] = data[end + 1 :]
    if partial:
        yield [bytes(partial)]


def _answer(acc: Accumulator, case: Case) -> dict[str, Any]:
    """The answer line for one case, naming the case it answers (protocol v2); a skip for a case
    of a dialect the accumulator declares it does not read, as `judge` gives in process."""
    why = not_for(acc, acc.name, case.dialect)
    if why is not None:
        return {"case": case.id, "skip": why}
    try:
        with contextlib.redirect_stdout(sys.stderr):
            answer = outcome_answer(acc.run(case))
    except NotApplicable as exc:
        answer = {"skip": str(exc)}
    except Exception as exc:
        answer = {"failure": with_site(f"{type(exc).__name__}: {exc}", exc)}  # its site, as in process
    return {"case": case.id, **answer}
