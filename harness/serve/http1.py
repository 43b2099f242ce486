"""HTTP/1.1 requests read off an asyncio stream, every byte written by a stranger.

What a request may be, and what else gets (one line saying why, then the connection closes):

- The request line is `METHOD /origin-form-path[?query] HTTP/1.x`; a target that is not a path
  (`http://host/...`, `//host/...`, `@host/...`, `host:443` for CONNECT, `*`) is a 400: the
  server serves its own paths and, recording, talks to its upstream and nowhere else.
- Header lines are `token: value` with no control character but tab; 64 KiB of head at most
  (431). One `Content-Length` of digits, or `Transfer-Encoding: chunked` (not both).
- Chunk sizes are 1 to 15 hex digits on a line of at most `MAX_CHUNK_LINE` bytes; each chunk
  ends with CRLF; trailers count toward the head's limit.
- A body is at most `max_body` bytes (413), and every body being read, across all connections,
  draws from one `BodyBudget`: past it, a 503 with `Retry-After` (the server's memory is capped in
  total, not only per connection). A `Content-Length` body draws its whole size before it is read,
  so a body admitted always finishes (concurrent uploads cannot all starve each other halfway);
  a chunked one draws chunk by chunk.
- A JSON body nesting deeper than `MAX_JSON_DEPTH` is a 400 (`json_of`), checked without
  recursion, so no body can overflow the stack; one of more than `MAX_JSON_VALUES` values a 413,
  before it is parsed, so no body can grow forty-fold in memory.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

__all__ = [
    "BODY_BUDGET",
    "MAX_BODY",
    "MAX_CHUNK_LINE",
    "MAX_HEAD",
    "MAX_JSON_DEPTH",
    "MAX_JSON_VALUES",
    "BadRequest",
    "BodyBudget",
    "Request",
    "header_block",
    "json_of",
    "origin_form",
    "read_request",
    "safe_header",
    "status_line",
]

MAX_BODY = 64 * 1024 * 1024  # one request's body
BODY_BUDGET = 256 * 1024 * 1024  # every body being read at once, across connections
MAX_HEAD = 64 * 1024  # request line and headers (asyncio's stream limit), and trailers
MAX_CHUNK_LINE = 4096  # a chunk-size line, extensions included
MAX_JSON_DEPTH = 64  # a provider request nests ~10 levels; tool schemas a few more
# Parsed JSON takes ~40x its text in small values (`[[],[],...]`: 60 MiB of text, 2.7 GB parsed);
# commas and brackets bound the values, so a body with more is refused before it is parsed.
MAX_JSON_VALUES = 1_000_000
_READ = 64 * 1024  # a body is read in pieces of at most this

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_REQUEST_LINE = re.compile(rf"({_TOKEN}) (\S+) HTTP/1\.([01])")
_HEADER_NAME = re.compile(_TOKEN)
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # tab is the one control character a value may hold
_TARGET = re.compile(r"/(?!/)[\x21-\x7e]*")  # a path (not `//host`), visible ASCII only
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,15}")
_DIGITS = re.compile(r"[0-9]{1,19}")


class BadRequest(Exception):
    """A request the server refuses: the status to answer and one line saying why."""

    def __init__(self, status: int, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes = b""
    keep_alive: bool = True


class BodyBudget:
    """Bytes of request bodies held at once across every connection of a server (one event loop,
    so no lock). A connection draws from it before its body arrives and gives it all back once the
    request is handled; `peak` is the most ever drawn at once."""

    def __init__(self, limit: int = BODY_BUDGET) -> None:
        self.limit = limit
        self.held = 0
        self.peak = 0

    def take(self, size: int) -> None:
        """Draw `size` bytes; BadRequest (503, Retry-After) when they do not fit."""
        if self.held + size > self.limit:
            raise BadRequest(
                503,
                f"the server is holding {self.held:,} bytes of request bodies, its limit is"
                f" {self.limit:,}: try again shortly",
                retry_after=1,
            )
        self.held += size
        self.peak = max(self.peak, self.held)

    def give(self, size: int) -> None:
        self.held -= size


@dataclass
class Reservation:
    """What one connection's current request drew from the budget."""

    budget: BodyBudget
    size: int = field(default=0)

    def take(self, size: int) -> None:
        self.budget.take(size)
        self.size += size

    def release(self) -> None:
        self.budget.give(self.size)
        self.size = 0


def origin_form(target: str) -> str:
    """`target` when it is a path with an optional query; else BadRequest naming why."""
    if _TARGET.fullmatch(target):
        if "#" in target:
            raise BadRequest(400, "request target holds a fragment (#)")
        return target
    shown = target[:80].encode("ascii", "backslashreplace").decode()
    if target.startswith("//"):
        why = "starts with // (an authority, another host): give a path"
    elif target.startswith("/"):
        why = "holds a space, a control or a non-ASCII character"
    else:
        why = "is not a path starting with / (an absolute URL, an authority or CONNECT's host:port)"
    raise BadRequest(400, f"request target {shown!r} {why}")


async def read_request(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    reservation: Reservation,
    *,
    max_body: int = MAX_BODY,
) -> Request | None:
    """The next request on a connection, its body drawn from `reservation`; None when the client
    closed the connection between requests. Raises BadRequest for anything else."""
    # Line by line, each judged as it arrives: a request line that is not HTTP/1.x (HTTP/0.9's
    # `GET /`) or a line ended by a bare LF is a 400 at once, not a wait for a blank line that
    # never comes (until the idle timeout).
    lines: list[str] = []
    size = 0
    try:
        while True:
            raw = await reader.readuntil(b"\n")
            size += len(raw)
            if size > MAX_HEAD:
                raise BadRequest(431, f"request line and headers longer than {MAX_HEAD:,} bytes")
            if not raw.endswith(b"\r\n"):
                raise BadRequest(400, "a line of the request ends in a bare LF: end each line with CRLF")
            if raw == b"\r\n":
                if lines:
                    break
                continue  # empty lines before a request line are ignored (RFC 9112 2.2)
            lines.append(raw[:-2].decode("latin-1"))
            if len(lines) == 1 and _REQUEST_LINE.fullmatch(lines[0]) is None:
                shown = lines[0][:80].encode("ascii", "backslashreplace").decode()
                raise BadRequest(400, f"malformed request line {shown!r}: want METHOD /path HTTP/1.1")
    except asyncio.IncompleteReadError:
        return None
    except asyncio.LimitOverrunError:
        raise BadRequest(431, f"request line and headers longer than {MAX_HEAD:,} bytes") from None
    matched = _REQUEST_LINE.fullmatch(lines[0])
    assert matched is not None  # checked as it arrived
    method, target, minor = matched.groups()
    if method.upper() == "CONNECT":
        raise BadRequest(400, "CONNECT: this server is no proxy to other hosts")
    origin_form(target)
    headers = _headers(lines[1:])
    connection = headers.get("connection", "").lower()
    keep_alive = "close" not in connection and (minor == "1" or "keep-alive" in connection)
    chunked = _framing(headers)
    length = 0 if chunked else int(headers.get("content-length", "0"))
    if length > max_body:
        raise BadRequest(413, f"request body of {length:,} bytes: the limit is {max_body:,}")
    reservation.take(length)  # the whole declared size, before the client sends it: admitted bodies finish
    if headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
    if chunked:
        body = await _read_chunked(reader, reservation, max_body)
    else:
        body = await _read_exactly(reader, length)
    return Request(method.upper(), target, headers, body, keep_alive)


def _headers(lines: Iterable[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon or not _HEADER_NAME.fullmatch(name):
            shown = line[:80].encode("ascii", "backslashreplace").decode()
            raise BadRequest(400, f"malformed header line {shown!r}: want Name: value")
        value = value.strip(" \t")
        if _CONTROL.search(value):
            raise BadRequest(400, f"header {name}: its value holds a control character")
        key = name.lower()
        if key in headers and key in ("content-length", "transfer-encoding") and headers[key] != value:
            raise BadRequest(400, f"two {name} headers that differ")
        headers[key] = value
    return headers


def _framing(headers: dict[str, str]) -> bool:
    """Whether the body is chunked (else Content-Length, maybe absent, says its size)."""
    encoding = headers.get("transfer-encoding")
    if encoding is not None:
        if "content-length" in headers:
            raise BadRequest(400, "both Transfer-Encoding and Content-Length: send one")
        if encoding.lower() != "chunked":
            raise BadRequest(400, f"Transfer-Encoding {encoding[:40]!r}: only chunked is read")
        return True
    length = headers.get("content-length", "0")
    if not _DIGITS.fullmatch(length):
        raise BadRequest(400, f"Content-Length {length[:40]!r} is not a size in bytes")
    return False


async def _read_exactly(reader: asyncio.StreamReader, size: int) -> bytes:
    parts = []
    left = size
    while left:
        data = await reader.read(min(left, _READ))
        if not data:
            raise asyncio.IncompleteReadError(b"", left)
        parts.append(data)
        left -= len(data)
    return b"".join(parts)


async def _read_chunked(reader: asyncio.StreamReader, reservation: Reservation, max_body: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        line = await _line(reader, MAX_CHUNK_LINE, "chunk-size line", 400)
        size_text = line.split(b";", 1)[0].strip(b" \t")
        if not _CHUNK_SIZE.fullmatch(size_text):
            shown = size_text[:40].decode("latin-1").encode("ascii", "backslashreplace").decode()
            raise BadRequest(400, f"chunk size {shown!r} is not a hexadecimal size")
        size = int(size_text, 16)
        if size == 0:
            break
        total += size
        if total > max_body:
            raise BadRequest(413, f"chunked request body over {max_body:,} bytes, the limit")
        reservation.take(size)  # each chunk's size before it is read (the total is not known)
        parts.append(await _read_exactly(reader, size))
        if await reader.readexactly(2) != b"\r\n":
            raise BadRequest(400, f"a chunk of {size} bytes is not followed by CRLF")
    trailers = 0
    while (line := await _line(reader, MAX_HEAD, "trailer line", 431)) != b"":
        trailers += len(line) + 2
        if trailers > MAX_HEAD:
            raise BadRequest(431, f"trailers longer than {MAX_HEAD:,} bytes")
    return b"".join(parts)


async def _line(reader: asyncio.StreamReader, limit: int, what: str, status: int) -> bytes:
    """A CRLF-ended line without its CRLF, of at most `limit` bytes."""
    try:
        line = await reader.readuntil(b"\r\n")
    except asyncio.LimitOverrunError:
        line = None
    if line is None or len(line) - 2 > limit:
        raise BadRequest(status, f"{what} longer than {limit:,} bytes")
    return line[:-2]


def json_of(body: bytes) -> Any:
    """A request body as JSON: None when it is not JSON; BadRequest when it nests deeper than
    `MAX_JSON_DEPTH` (the parser's recursion is caught, and the parsed value measured without it)
    or holds more than `MAX_JSON_VALUES` values (commas and brackets, strings' own counted too)."""
    values = body.count(b",") + body.count(b"[") + body.count(b"{")
    if values > MAX_JSON_VALUES:
        raise BadRequest(413, f"JSON body of more than {MAX_JSON_VALUES:,} values (commas and brackets)")
    try:
        value = json.loads(body)
    except RecursionError:
        value = _TOO_DEEP
    except ValueError:
        return None
    if value is _TOO_DEEP or not _depth_ok(value, MAX_JSON_DEPTH):
        raise BadRequest(400, f"JSON body nested deeper than {MAX_JSON_DEPTH} levels")
    return value


_TOO_DEEP = object()


def _depth_ok(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return False
            stack += [(child, depth + 1) for child in (item.values() if isinstance(item, dict) else item)]
    return True


def status_line(status: int) -> bytes:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Unknown"
    return f"HTTP/1.1 {status} {phrase}\r\n".encode()


def safe_header(name: str, value: str) -> bool:
    """Whether a header can go on the wire as it is: a token name, a value with no control
    character but tab (a CR or LF would end it early and start headers of its own)."""
    return _HEADER_NAME.fullmatch(name) is not None and _CONTROL.search(value) is None


def header_block(headers: Iterable[tuple[str, str]]) -> bytes:
    """Header lines and the blank line ending them. A header that is not `safe_header` is left
    out: cassettes are refused at load for such headers, and a response built in code gets no
    way to inject lines of its own either."""
    lines = "".join(f"{k}: {v}\r\n" for k, v in headers if safe_header(k, v))
    return (lines + "\r\n").encode("latin-1", "replace")
