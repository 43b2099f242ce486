"""`ReplayServer`: an asyncio HTTP/1.1 server on 127.0.0.1 that speaks each provider's API and
serves a selection of cases, one prefix per case (see `harness.serve.routes`).

A first request to a case gets its mutated stream read by read as one HTTP chunk each (paced as
recorded with `pace=True`); a cut case ends with the connection closed mid-body, no terminating
chunk, the way the cut happened; an error case as recorded. A non-streaming request gets the case's
outcome as one body (cut: half of it, then the connection closes; in-band error: an error status).
A follow-up request (it carries tool results) is read by the oracle, kept in the case's `CaseLog`
and answered: when the case comes from a recorded conversation, with the turns recorded after its
stream, the first follow-up with the next turn and so on (matched leniently: by their order, not
their bodies, since a correct program's follow-up after a mutated stream is not the recorded one;
the same follow-up sent again gets the same turn); past them, or for any other case, with a
short final answer in the same dialect. Connections are kept alive between requests, and any
number of clients may talk to it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import socket
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from harness.cassettes.format import Interaction, Response
from harness.cassettes.outcome import Outcome, State
from harness.errors import OutcomeFormatError, UsageError
from harness.mutate.case import Case
from harness.mutate.retarget import Retarget, offered_tools, retarget
from harness.oracle.evidence import evidence_of, judge_client
from harness.serve import answers, routes
from harness.serve.attempts import first_attempt
from harness.serve.followup import Turn, read_followup
from harness.serve.http1 import (
    BODY_BUDGET,
    MAX_BODY,
    BadRequest,
    BodyBudget,
    Request,
    Reservation,
    header_block,
    json_of,
    read_request,
    status_line,
)
from harness.serve.upstream import Recorder, UpstreamError
from harness.serve.upstream_websocket import record_session
from harness.serve.websocket import is_upgrade, serve_session
from harness.text.escape import html_text
from harness.wire import dialects
from harness.wire.dialects.base import tool_names
from harness.wire.dialects.retargeting import OfferedTool

__all__ = ["CaseLog", "ReplayServer"]

# Framing is ours to do; recorded framing headers would contradict it.
_FRAMING = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding"})
_IDLE_S = 30.0  # an idle keep-alive connection is closed after this
_LINGER_S = 2.0  # after refusing a request, what the client still sends is read and dropped this long
MAX_CONNECTIONS = 512  # each holds up to ~128 KiB of unread input besides its body
_UNKNOWN_KEPT = 64  # case ids of unknown requests counted (a client probing paths costs no memory)


class CaseLog:
    """What clients sent one case: how many first requests, the follow-ups read, the reports.

    It also holds the case it serves (`case`: the recording's, or the recording retargeted onto
    the tools the first request offered, `retarget`), that case's cut first attempt when it is a
    retry case, and, for a test's own log (served under a token), whether the test has ended
    (`closed`) and what came after it did (`late`), and the dialects of requests that reached it
    in another dialect than the case's (`spoken`)."""

    def __init__(
        self, case: Case | None = None, *, retarget: bool = False, mapping: dict[str, str] | None = None
    ) -> None:
        self._changed = threading.Condition()
        self.attempts = 0
        self.followups: list[Turn] = []
        self.reports: list[Outcome] = []
        self.seen: dict[str, int] = {}  # first requests by path and body hash: which attempt each is
        self.answered: dict[str, int] = {}  # follow-ups by path and body hash: which one each is
        self.recorded = case
        self.retargeting = retarget
        self.mapping = dict(mapping or {})
        self.closed = False
        self.late: list[str] = []
        self.spoken: list[str] = []
        # The tool names the run's first request offered (None: none seen, or it lists no tools):
        # a served call to any other tool is a stream no provider sends for that request.
        self.tools_offered: frozenset[str] | None = None
        self._serve(case)

    def _serve(self, case: Case | None, retarget: Retarget | None = None) -> None:
        self.case = case
        self.retarget = retarget
        self.first = first_attempt(case) if case is not None else None

    def serve(self, case: Case) -> None:
        """Serve `case` (as recorded) from the next request on."""
        with self._changed:
            self.recorded = case
            self._serve(case)

    def offered(self, tools: list[OfferedTool]) -> None:
        """The first request offered `tools`: the case is retargeted onto them, once."""
        with self._changed:
            if not self.retargeting or self.retarget is not None or self.recorded is None:
                return
            moved = retarget(self.recorded, tools, self.mapping)
            self._serve(moved.case, moved)

    def clear(self) -> None:
        with self._changed:
            self.attempts, self.followups, self.reports, self.seen, self.answered = 0, [], [], {}, {}
            self.late, self.spoken = [], []
            self.tools_offered = None
            if self.retarget is not None:
                self._serve(self.recorded)

    def requested(self, offered: frozenset[str] | None) -> None:
        """A first request offering `offered` (`tool_names`): the run's first one is kept."""
        with self._changed:
            if self.tools_offered is None:
                self.tools_offered = offered

    def attempt(self, request_key: str) -> int:
        """Count a first request; which attempt of this same request (path and body) it is, from 1."""
        with self._changed:
            self.attempts += 1
            self.seen[request_key] = number = self.seen.get(request_key, 0) + 1
            self._changed.notify_all()
            return number

    def followup(self, turn: Turn, request_key: str) -> int:
        """Keep a follow-up; which one it is, from 0 (the same request sent again is the one it repeats)."""
        with self._changed:
            self.followups.append(turn)
            number = self.answered.setdefault(request_key, len(self.answered))
            self._changed.notify_all()
            return number

    def add(
        self, *, attempt: bool = False, followup: Turn | None = None, report: Outcome | None = None
    ) -> None:
        with self._changed:
            self.attempts += attempt
            if followup is not None:
                self.followups.append(followup)
            if report is not None:
                self.reports.append(report)
            self._changed.notify_all()

    def wait(self, seconds: float) -> None:
        """Until something is added or `seconds` pass."""
        with self._changed:
            self._changed.wait(seconds)


@dataclass
class _Answer:
    """A response to write: whole (`body`), or streamed read by read (`chunks`), maybe cut."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    chunks: Sequence[tuple[bytes, float | None]] | None = None
    cut_at: int | None = None  # whole bodies: close after this many bytes
    complete: bool = True  # streams: False ends without the terminating chunk
    extra: dict[str, Any] = field(default_factory=dict)
    open_after: float = 0.0  # streams: seconds the connection stays open, silent, after the last chunk


def _json_answer(status: int, payload: Any) -> _Answer:
    return _Answer(status, [("content-type", "application/json")], json.dumps(payload).encode())


class ReplayServer:
    """Serves `cases` on `host:port` (port 0: a free one). Use `async with` inside a loop, or
    `with server.running():` to run it on a thread of its own."""

    def __init__(
        self,
        cases: Iterable[Case],
        *,
        pace: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
        recorder: Recorder | None = None,
        max_body: int = MAX_BODY,
        body_budget: int = BODY_BUDGET,
        max_connections: int = MAX_CONNECTIONS,
        retarget: bool = False,
    ) -> None:
        self.cases = {case.id: case for case in cases}
        self.retarget = retarget  # each case moved onto the tools its first request offers
        self.recorder = recorder  # set: every request goes upstream and is recorded (no cases served)
        self.pace = pace
        self.host = host
        self.port = port
        self.logs = {case.id: CaseLog(case, retarget=retarget) for case in self.cases.values()}
        self.runs: dict[str, CaseLog] = {}  # a test's own log by its token (`add(..., token=)`)
        # Requests naming a case this server does not serve, by the id they name (a warm start's
        # placeholder case among them: a run that used the zygote's environment; a few ids kept).
        self.unknown: dict[str, int] = {}
        # Memory: one body at most `max_body`, all bodies being read at once at most `body_budget`.
        self.max_body = max_body
        self.budget = BodyBudget(body_budget)
        self.max_connections = max_connections
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def log(self, case_id: str) -> CaseLog:
        return self.logs[case_id]

    def _note_unknown(self, target: str) -> None:
        path = target.split("?", 1)[0]
        if not path.startswith(routes.PREFIX):
            return
        case_id = unquote(path[len(routes.PREFIX) :].partition("/")[0])
        if case_id in self.unknown or len(self.unknown) < _UNKNOWN_KEPT:
            self.unknown[case_id] = self.unknown.get(case_id, 0) + 1

    def add(
        self,
        case: Case,
        *,
        token: str | None = None,
        retarget: bool | None = None,
        mapping: dict[str, str] | None = None,
    ) -> CaseLog:
        """Serve `case` from its next request on (a running server looks cases up by id on each
        request), its retry cut included; its log, kept when the id was served before. With a
        `token`, a log of its own, reached under `/run/<token>` (`routes.base_urls`): what a
        request there sends is never another's. `retarget` (default: the server's) and `mapping`:
        whether, and how, the case moves onto the tools its first request offers."""
        self.cases[case.id] = case
        on = self.retarget if retarget is None else retarget
        if token is not None:
            self.runs[token] = CaseLog(case, retarget=on, mapping=mapping)
            return self.runs[token]
        known = self.logs.get(case.id)
        if known is None:
            self.logs[case.id] = CaseLog(case, retarget=on, mapping=mapping)
            return self.logs[case.id]
        known.retargeting, known.mapping = on, dict(mapping or {})
        known.serve(case)
        return known

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        try:
            self._server = await asyncio.start_server(self._connection, self.host, self.port)
        except OSError as exc:
            raise UsageError(f"cannot listen on {self.host}:{self.port}: {exc.strerror}") from None
        self.port = self._server.sockets[0].getsockname()[1]
        self._loop = asyncio.get_running_loop()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def __aenter__(self) -> ReplayServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @contextlib.contextmanager
    def running(self) -> Iterator[ReplayServer]:
        """Run the server on a thread of its own for the duration of the block."""
        loop = asyncio.new_event_loop()
        started = threading.Event()
        failure: list[BaseException] = []

        def main() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:  # reported to the caller below
                failure.append(exc)
                started.set()
                return
            started.set()
            loop.run_forever()

        thread = threading.Thread(target=main, name="toolstream-serve", daemon=True)
        thread.start()
        started.wait()
        if failure:
            thread.join()
            loop.close()
            raise failure[0]
        try:
            yield self
        finally:
            asyncio.run_coroutine_threadsafe(self.close(), loop).result(5)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(5)
            loop.close()

    # -- connections ---------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._writers) >= self.max_connections:
            message = f"the server has {len(self._writers)} connections open, its limit: try again shortly"
            with contextlib.suppress(Exception):
                await _refuse(writer, BadRequest(503, message, retry_after=1))
                await _linger(reader, writer, seconds=0.5)  # briefly: this connection is over the cap
            writer.close()
            return
        self._writers.add(writer)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(
                    socket.IPPROTO_TCP, socket.TCP_NODELAY, 1
                )  # each read leaves as it is written
        reservation = Reservation(self.budget)
        try:
            while True:
                try:
                    request = await asyncio.wait_for(
                        read_request(reader, writer, reservation, max_body=self.max_body), _IDLE_S
                    )
                except BadRequest as exc:
                    reservation.release()  # what was read of the body is dropped
                    await _refuse(writer, exc)
                    await _linger(reader, writer)
                    return
                if request is None:
                    return
                if is_upgrade(request):
                    reservation.release()
                    if self.recorder is not None:
                        await _record_session(self.recorder, request, reader, writer)
                    else:
                        await serve_session(self.cases, self.logs, request, reader, writer, pace=self.pace)
                    return
                if self.recorder is not None:
                    if not await _forward(self.recorder, request, writer):
                        return
                    reservation.release()
                    continue
                try:
                    answer = self._answer(request)
                except BadRequest as exc:
                    answer = _json_answer(exc.status, {"error": {"message": str(exc)}})
                except Exception as exc:  # the harness's own bug: the client gets a 500, not a closed socket
                    line = f"toolstream serve: {request.method} {request.target}: {_one_line(exc)}"
                    print(line, file=sys.stderr)
                    answer = _json_answer(500, {"error": {"message": line}})
                keep_alive = request.keep_alive
                del request
                reservation.release()  # the body is read and dropped; the answer may take its time
                keep = await _write(writer, answer, keep_alive=keep_alive, pace=self.pace)
                if not keep:
                    return
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            return
        except Exception as exc:  # never a traceback and a silent close: one line
            print(f"toolstream serve: connection dropped: {_one_line(exc)}", file=sys.stderr)
        finally:
            reservation.release()
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _answer(self, request: Request) -> _Answer:
        route = routes.parse(request.target, self.cases)
        if route is None:
            self._note_unknown(request.target)
            path = request.target.split("?", 1)[0]
            if request.method == "GET" and path in ("/", "/index.html"):
                return _Answer(200, [("content-type", "text/html; charset=utf-8")], self.index().encode())
            if request.method == "GET" and path == "/cases.json":
                return _json_answer(200, [self.describe(case_id) for case_id in self.cases])
            return _json_answer(404, {"error": f"no case or endpoint at {path}; the index is at {self.url}/"})
        if route.token is not None:
            log = self.runs.get(route.token)
            if log is None or log.case is None or log.case.id != route.case_id:
                return _json_answer(404, {"error": {"message": f"no test is served at {route.token}"}})
        else:
            log = self.logs[route.case_id]
        case = log.case if log.case is not None else self.cases[route.case_id]
        if log.closed:  # the test it was served to has ended: said on that test, answered as ever
            log.late.append(f"{request.method} {request.target.split('?', 1)[0]}")
        if route.kind == "info":
            return _json_answer(200, self.describe(case.id, log))
        if request.method != "POST":
            return _json_answer(405, {"error": f"{request.method} {route.kind}: use POST"})
        body = json_of(request.body)
        if route.kind == "report":
            try:
                outcome = Outcome.from_dict(body)
            except OutcomeFormatError as exc:
                return _json_answer(400, {"error": f"report: {exc}"})
            log.add(report=outcome)
            return _json_answer(200, {"ok": True})
        assert route.dialect is not None
        if route.dialect != case.dialect:
            log.spoken.append(route.dialect)
            url = routes.base_urls(self.url, case.id, route.token)[case.dialect]
            message = f"case {case.id} speaks {case.dialect}, not {route.dialect}; its base URL is {url}"
            return _json_answer(404, {"error": {"message": message}})
        if not isinstance(body, dict):
            return _json_answer(400, {"error": {"message": "the request body must be a JSON object"}})
        stream = route.stream if route.stream is not None else routes.streams(case.dialect, body)
        digest = hashlib.sha256(request.target.encode() + b"\0")
        digest.update(request.body)  # not concatenated: a body of tens of MiB is not copied for its hash
        key = digest.hexdigest()
        turn = read_followup(case.dialect, body)
        if turn is None:
            paths = dialects.get(case.dialect).tool_paths
            log.requested(tool_names(body, paths) if paths else None)
        if turn is None and log.retargeting and log.retarget is None:
            log.offered(offered_tools(case.dialect, body))
            case = log.case if log.case is not None else case
        if turn is not None:
            number = log.followup(turn, key)
            talk = case.conversation
            if talk is not None and number < len(talk.after):
                return _recorded_turn(case, talk.after[number], stream=stream)
            media, data = answers.final_answer(case.dialect, stream=stream)
            if stream:
                return _Answer(200, [("content-type", media)], chunks=[(data, None)])
            return _Answer(200, [("content-type", media)], data)
        number = log.attempt(key)
        first = log.first
        if first is not None and number == 1:
            if first.fault or stream:  # a fault before the stream is the same body either way
                return _stream_answer(case, first.response)
            return _whole_answer(case, first.expected)
        return _stream_answer(case) if stream else _whole_answer(case)

    # -- pages ---------------------------------------------------------------------------------

    def describe(self, case_id: str, log: CaseLog | None = None) -> dict[str, Any]:
        """A case as JSON: where its SDK points, what it expects, what clients sent it so far and,
        once a follow-up or report came, the verdict on it."""
        log = self.logs[case_id] if log is None else log
        case = log.case if log.case is not None else self.cases[case_id]
        out: dict[str, Any] = {
            "id": case.id,
            "dialect": case.dialect,
            "base_url": routes.base_urls(self.url, case.id)[case.dialect],
            "expected": case.expected.to_dict(),
            "received": {
                "requests": log.attempts,
                "retried": sum(n - 1 for n in log.seen.values()),
                "followups": len(log.followups),
                "reports": len(log.reports),
            },
        }
        if case.conversation is not None:
            talk = case.conversation
            out["conversation"] = {"turn": talk.turn, "recorded_turns_after": len(talk.after)}
        if log.retarget is not None:
            out["retarget"] = {"mapping": log.retarget.mapping, "said": log.retarget.describe()}
        first = log.first
        if first is not None:
            out["first_attempt"] = {
                "cut": not first.fault,
                "status": first.response.status,
                "expected": first.expected.to_dict(),
            }
        if log.followups or log.reports:
            out["verdict"] = judge_client(case, "client", evidence_of(log)).to_dict()
        return out

    def index(self) -> str:
        """An HTML page listing every case with the base URL its provider's SDK takes."""
        rows = []
        for case in self.cases.values():
            url = routes.base_urls(self.url, case.id)[case.dialect]
            calls = len(case.expected.tool_calls)
            rows.append(
                f"<tr><td>{html_text(case.dialect)}</td><td>{html_text(case.id)}</td>"
                f"<td>{case.expected.state}</td><td>{calls}</td><td><code>{html_text(url)}</code></td></tr>"
            )
        return (
            "<!doctype html><meta charset=utf-8><title>toolstream serve</title>"
            "<style>body{font:14px system-ui;margin:2em}td,th{padding:2px 8px;text-align:left}</style>"
            f"<h1>toolstream serve: {len(self.cases)} cases</h1>"
            "<p>Point a provider SDK's base URL at a case; its follow-up request"
            " (the one carrying tool results) is judged.</p>"
            "<table><tr><th>dialect</th><th>case</th><th>ends</th><th>calls</th><th>base URL</th></tr>"
            + "".join(rows)
            + "</table>"
        )


# ---------------------------------------------------------------------------------------------
# What a case answers


def _headers_of(response: Response, case: Case) -> list[tuple[str, str]]:
    out = [(k, v) for k, v in response.headers.items() if k.lower() not in _FRAMING]
    if not any(k.lower() == "content-type" for k, _ in out):
        out.append(("content-type", answers.media_type(case.dialect)))
    return [*out, ("x-toolstream-case", routes.quoted(case.id))]


def _stream_answer(case: Case, response: Response | None = None) -> _Answer:
    response = case.response if response is None else response
    chunks = [(chunk.data, chunk.offset_ms) for chunk in response.chunks]
    return _Answer(
        response.status,
        _headers_of(response, case),
        chunks=chunks,
        complete=response.complete,
        open_after=response.open_after,
    )


def _recorded_turn(case: Case, turn: Interaction, *, stream: bool) -> _Answer:
    """A conversation's recorded turn as the answer to a follow-up: as recorded to a streaming
    request (and when it was recorded whole, or as an error status), else its outcome as one body."""
    response = turn.response
    whole = (response.content_type or "").split(";")[0].strip().lower() == answers.JSON
    if whole or response.status >= 400:
        return _Answer(response.status, _headers_of(response, case), response.body)
    if stream:
        return _stream_answer(case, response)
    return _whole_answer(case, turn.expected or dialects.reference_outcome(response, case.dialect))


def _whole_answer(case: Case, expected: Outcome | None = None) -> _Answer:
    expected = case.expected if expected is None else expected
    headers = [("content-type", answers.JSON), ("x-toolstream-case", routes.quoted(case.id))]
    if expected.state is State.ERROR:
        status, media, body = answers.error_response(
            case.dialect, expected.error or "the stream ended in an error"
        )
        return _Answer(status, [("content-type", media), headers[1]], body)
    body = answers.whole_response(case.dialect, expected)
    if expected.state is State.CUT:
        return _Answer(200, headers, body, cut_at=len(body) // 2)
    return _Answer(200, headers, body)


# ---------------------------------------------------------------------------------------------
# Writing answers


async def _refuse(writer: asyncio.StreamWriter, refusal: BadRequest) -> None:
    """Answer a refused request with its status and one line saying why; the connection closes."""
    answer = _json_answer(refusal.status, {"error": {"message": str(refusal)}})
    if refusal.retry_after is not None:
        answer.headers.append(("retry-after", str(refusal.retry_after)))
    await _write(writer, answer, keep_alive=False, pace=False)


async def _linger(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, seconds: float = _LINGER_S
) -> None:
    """After a refusal, read and drop what the client still sends (a while at most): closing with
    unread input would reset the connection, and the client might never read why it was refused."""
    with contextlib.suppress(Exception):
        if writer.can_write_eof():
            writer.write_eof()
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if not await asyncio.wait_for(reader.read(65536), left):
                return


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def _write(writer: asyncio.StreamWriter, answer: _Answer, *, keep_alive: bool, pace: bool) -> bool:
    """Write an answer; whether the connection can take another request."""
    keep = keep_alive and answer.complete and answer.cut_at is None
    head = [*answer.headers, ("connection", "keep-alive" if keep else "close")]
    if answer.chunks is None:
        head.append(("content-length", str(len(answer.body))))
        writer.write(status_line(answer.status) + header_block(head))
        writer.write(answer.body if answer.cut_at is None else answer.body[: answer.cut_at])
        await writer.drain()
        return keep
    head.append(("transfer-encoding", "chunked"))
    writer.write(status_line(answer.status) + header_block(head))
    await writer.drain()
    start = time.monotonic()
    for data, offset_ms in answer.chunks:
        if pace and offset_ms is not None:
            delay = start + offset_ms / 1000 - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        if data:
            writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            await writer.drain()
    if answer.open_after > 0:
        # Held open, paced or not: what a client does before the end comes is what is judged.
        await asyncio.sleep(answer.open_after)
    if answer.complete:
        writer.write(b"0\r\n\r\n")
        await writer.drain()
    return keep


async def _record_session(
    recorder: Recorder, request: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Forward a WebSocket session upstream and record it (`harness.serve.upstream_websocket`)."""
    try:
        await record_session(recorder, request, reader, writer)
    except BadRequest as exc:
        await _refuse(writer, exc)
    except UpstreamError as exc:
        await _write(
            writer, _json_answer(502, {"error": {"message": str(exc)}}), keep_alive=False, pace=False
        )


async def _forward(recorder: Recorder, request: Request, writer: asyncio.StreamWriter) -> bool:
    """Forward a request upstream and stream its response back read by read, as one HTTP chunk
    each; an upstream that breaks mid-body breaks the client's response the same way (no
    terminating chunk, connection closed). Whether the connection can take another request."""
    try:
        forwarded = await recorder.forward(request.method, request.target, request.headers, request.body)
    except BadRequest as exc:
        await _refuse(writer, exc)
        return False
    except UpstreamError as exc:
        await _write(
            writer, _json_answer(502, {"error": {"message": str(exc)}}), keep_alive=False, pace=False
        )
        return False
    head = [*forwarded.headers, ("transfer-encoding", "chunked")]
    head.append(("connection", "keep-alive" if request.keep_alive else "close"))
    complete = False
    try:
        writer.write(status_line(forwarded.status) + header_block(head))
        await writer.drain()
        try:
            async for data in forwarded.reads:
                if data:
                    writer.write(b"%x\r\n%s\r\n" % (len(data), data))
                    await writer.drain()
        except Exception:  # the upstream broke mid-body (recorded as cut): so does the client's response
            return False
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        complete = True
    finally:
        await forwarded.close()
    return complete and request.keep_alive
