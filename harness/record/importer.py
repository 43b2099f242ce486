"""Bring your own recordings: raw stream bodies, vcrpy cassettes and chunk logs become cassettes.

Formats (`FORMATS`), guessed from the file name and content when not given:

- `sse`: a raw `text/event-stream` body (`.sse`, `.txt`);
- `ndjson`: a raw NDJSON body, Ollama's (`.ndjson`, `.jsonl`);
- `eventstream`: raw AWS eventstream bytes, Bedrock's (`.bin`);
- `vcr`: a vcrpy / pytest-recording YAML cassette; each streamed interaction is imported;
- `chunks`: JSON lines, one event payload per line (an OpenAI chunk object, or
  `{"event": name, "data": payload}`), re-encoded in the dialect's wire format.

The original network reads are unknown in all of these, so a body is cut into one chunk per
event (`split="events"`) or kept as one chunk (`split="whole"`); the provenance says which.
vcr YAML is read with a safe loader that accepts `!!binary` and plain data only. Secrets are
removed by the same rules as at record time (`redact`, default `Redaction.DEFAULT`;
docs/redaction.md), their echoes too, in every interaction and in what is derived from it.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harness import bounded
from harness.bounded.yaml import PLAIN_TAGS, plain_data
from harness.cassettes.format import (
    Cassette,
    CassetteError,
    Chunk,
    Interaction,
    Request,
    Response,
    Source,
    json_body,
)
from harness.errors import CodecError, DialectError, HarnessError, UsageError
from harness.transports.redaction import Redaction, scrub_cassette, scrub_chunks, scrub_interaction
from harness.transports.volatile import stable_headers, stable_url
from harness.wire import dialects
from harness.wire.codecs import STREAM_CONTENT_TYPES, WireEvent, codec_for_media_type, decode_all, get_codec
from harness.wire.dialects.bedrock_converse import EVENT_TYPES as BEDROCK_EVENT_TYPES

__all__ = [
    "FORMATS",
    "SPLITS",
    "default_output",
    "guess_dialect",
    "guess_format",
    "import_file",
    "recognise_foreign",
    "split_events",
]

FORMATS = ("sse", "ndjson", "eventstream", "vcr", "chunks")
SPLITS = ("events", "whole")
MAX_IMPORT_BYTES = 256 * 1024 * 1024  # what a cassette may hold

_EXTENSIONS = {
    ".sse": "sse",
    ".txt": "sse",
    ".ndjson": "ndjson",
    ".jsonl": "ndjson",  # or `chunks`: the content decides
    ".bin": "eventstream",
    ".eventstream": "eventstream",
    ".yaml": "vcr",
    ".yml": "vcr",
}


@dataclass(slots=True)
class _Body:
    """A streamed response body found in the input, with what is known of its request."""

    data: bytes
    request: Request | None = None
    status: int = 200
    headers: dict[str, str] | None = None
    secrets: list[str] = field(default_factory=list)  # redacted from its request: hunted in all we derive


# ---------------------------------------------------------------------------------------------
# The entry point


def import_file(
    path: str | Path,
    *,
    fmt: str | None = None,
    dialect: str | None = None,
    split: str = "events",
    redact: Redaction | None = None,
) -> Cassette:
    """Read `path` in format `fmt` (guessed when None) into a cassette with secrets redacted
    (`redact`, default `Redaction.DEFAULT`); raises `HarnessError`s."""
    path = Path(path)
    redaction = redact if redact is not None else Redaction.DEFAULT
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if split not in SPLITS:
        raise UsageError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    if dialect is not None:
        dialects.get(dialect)  # an unknown name fails here, before any work
    data = bounded.read_input(path, MAX_IMPORT_BYTES, "an imported file")
    if not data.strip():
        raise UsageError(f"{path}: empty file")
    fmt = fmt or guess_format(path, data)
    if fmt == "vcr":
        bodies = _vcr_bodies(data, path, redaction)
    elif fmt == "chunks":
        bodies = [_chunks_body(data, path, dialect)]
    else:
        bodies = [_Body(data)]
    for body in bodies:
        body.secrets += redaction.values  # a value the user named is hunted in raw bodies too

    interactions: list[Interaction] = []
    from_url: list[bool] = []
    names: list[str] = []
    for n, body in enumerate(bodies, start=1):
        where = path.name if len(bodies) == 1 else f"{path.name}: interaction {n}"
        codec_hint = fmt if fmt in ("sse", "ndjson", "eventstream") else None
        item, name, by_url = _interaction(body, where, codec_hint, dialect, split)
        interactions.append(item)
        names.append(name)
        from_url.append(by_url)
    chosen: str | None = names[0]
    if len(set(names)) > 1:
        if not all(from_url):
            raise UsageError(
                f"{path.name}: interactions speak several dialects ({', '.join(sorted(set(names)))}); "
                "import them one file at a time"
            )
        chosen = None  # each request's URL tells its dialect
    how = "one chunk per event" if split == "events" else "one chunk per body"
    provenance = f"imported from {path.name} ({fmt}); {how}, the original network reads are unknown"
    cassette = Cassette(
        name=path.stem, source=Source("recorded", provenance), interactions=interactions, dialect=chosen
    )
    # A secret of one request echoed in another interaction, or in the file's name.
    return scrub_cassette(cassette, [secret for body in bodies for secret in body.secrets])


def recognise_foreign(path: str | Path) -> str | None:
    """`"vcr"` when `path` is a vcrpy / pytest-recording cassette (an `interactions` list and a
    `version`, no toolstream `name` or `source`), else None; never raises."""
    try:
        doc = load_vcr(bounded.read(path, MAX_IMPORT_BYTES).decode("utf-8"), path)
    except (HarnessError, OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("interactions"), list) or "version" not in doc:
        return None
    return None if "name" in doc or "source" in doc else "vcr"


def default_output(path: str | Path) -> Path:
    """The input's name with a `.yaml` suffix, next to it; `<stem>.toolstream.yaml` for a YAML input."""
    path = Path(path)
    out = path.with_suffix(".yaml")
    if out == path or path.suffix in (".yaml", ".yml"):
        out = path.with_name(f"{path.stem}.toolstream.yaml")
    return out


# ---------------------------------------------------------------------------------------------
# Guessing


def guess_format(path: Path, data: bytes) -> str:
    """The format of a file from its extension, checked against (or else guessed from) its content."""
    by_name = _EXTENSIONS.get(path.suffix.lower())
    head = data.lstrip()[:4096]
    if by_name == "eventstream" or (by_name is None and _looks_like_eventstream(data)):
        return "eventstream"
    if by_name == "vcr" or (by_name is None and head.startswith((b"interactions:", b"version:", b"---"))):
        return "vcr"
    if by_name == "sse":
        return "sse"
    if head.startswith(b"{") or head.startswith(b"["):
        lines = _json_lines(data, path)
        # Ollama's stream is itself NDJSON; any other payload log is a chunk file to re-encode.
        return "ndjson" if guess_dialect(WireEvent(data=line) for line in lines) == "ollama" else "chunks"
    if by_name is not None:
        return by_name
    if any(head.startswith(p) for p in (b"data:", b"event:", b":", b"id:")):
        return "sse"
    raise UsageError(f"{path.name}: cannot tell the format; give --from with one of {', '.join(FORMATS)}")


def _looks_like_eventstream(data: bytes) -> bool:
    return len(data) >= 16 and zlib.crc32(data[:8]) == int.from_bytes(data[8:12], "big")


def guess_dialect(events: Iterable[WireEvent]) -> str | None:
    """The dialect a stream's events look like (each dialect says which events it claims)."""
    return dialects.guess(events)


# ---------------------------------------------------------------------------------------------
# One streamed body -> one interaction


def _interaction(
    body: _Body, where: str, codec_hint: str | None, dialect: str | None, split: str
) -> tuple[Interaction, str, bool]:
    """The interaction, its dialect, and whether that dialect came from the request URL."""
    by_url = False
    name = dialect
    if name is None and body.request is not None:
        name = dialects.detect(body.request)
        by_url = name is not None
    media_codec = codec_for_media_type((body.headers or {}).get("content-type"))
    codec_name = dialects.get(name).codec_name if name else (codec_hint or media_codec or "sse")
    wire = _decode(body.data, codec_name, where)
    if name is None:
        name = guess_dialect(wire)
        if name is None:
            raise UsageError(
                f"{where}: cannot tell the dialect from the payloads; give --dialect "
                f"({', '.join(dialects.names())})"
            )
        if dialects.get(name).codec_name != codec_name:
            codec_name = dialects.get(name).codec_name
            wire = _decode(body.data, codec_name, where)
    pieces = split_events(body.data, codec_name) if split == "events" else [body.data]
    headers = dict(body.headers or {})
    headers.setdefault("content-type", STREAM_CONTENT_TYPES[codec_name])
    response = Response(status=body.status, headers=headers, chunks=[Chunk(piece) for piece in pieces])
    request = body.request or Request(
        "POST",
        dialects.get(name).default_url,
        {"content-type": "application/json", "accept": STREAM_CONTENT_TYPES[codec_name].split(";")[0]},
    )
    item = Interaction(request, response)
    if response.status < 400:
        try:
            item.expected = dialects.stored_outcome(response, name)
        except (DialectError, CodecError) as exc:
            raise UsageError(f"{where}: not a {name} stream ({exc}); check --dialect and --from") from None
    return scrub_interaction(item, body.secrets), name, by_url


def _decode(data: bytes, codec_name: str, where: str) -> list[WireEvent]:
    try:
        wire = decode_all(get_codec(codec_name), [data])
    except CodecError as exc:
        raise CodecError(f"{where}: undecodable {codec_name} body: {exc}") from None
    if not any(not event.is_comment for event in wire):
        raise CodecError(f"{where}: no {codec_name} events in the body (is it {codec_name}? see --from)")
    return wire


def split_events(body: bytes, codec_name: str) -> list[bytes]:
    """The body cut after each event, byte for byte (the pieces join back to `body`)."""
    if codec_name == "eventstream":
        cuts, pos = [], 0
        while pos + 12 <= len(body):
            total = int.from_bytes(body[pos : pos + 4], "big")
            if total <= 0:
                break
            pos = min(pos + total, len(body))
            cuts.append(pos)
    elif codec_name == "ndjson":
        cuts = [i + 1 for i, byte in enumerate(body) if byte == 0x0A]
    else:
        cuts = _sse_cuts(body)
    out, start = [], 0
    for cut in cuts:
        if cut > start:
            out.append(body[start:cut])
            start = cut
    if start < len(body):
        if out and not body[start:].strip():
            out[-1] += body[start:]  # trailing blank lines stay with the last event
        else:
            out.append(body[start:])
    return out


def _sse_cuts(body: bytes) -> list[int]:
    """Offsets just after each blank line that ends an event (LF, CRLF or CR line ends)."""
    cuts, pos, line_start, has_content = [], 0, 0, False
    size = len(body)
    while pos < size:
        byte = body[pos]
        if byte in (0x0A, 0x0D):
            end = pos + 2 if byte == 0x0D and body[pos + 1 : pos + 2] == b"\n" else pos + 1
            if pos == line_start:
                if has_content:
                    cuts.append(end)
                    has_content = False
            else:
                has_content = True
            pos = line_start = end
        else:
            pos += 1
    return cuts


# ---------------------------------------------------------------------------------------------
# JSON-lines chunk files


def _json_lines(data: bytes, path: Path) -> list[str]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CodecError(f"{path.name}: not UTF-8 text (byte {exc.start})") from None
    return [line.strip() for line in text.splitlines() if line.strip()]


def _chunks_body(data: bytes, path: Path, dialect: str | None) -> _Body:
    items: list[tuple[str | None, Any]] = []
    for n, line in enumerate(_json_lines(data, path), start=1):
        try:
            value = bounded.loads(line)
        except ValueError as exc:  # not JSON, or nested deeper than `bounded.MAX_DEPTH`
            raise CodecError(f"{path.name}:{n}: not a JSON line ({exc})") from None
        items.append(_chunk_item(value))
    name = dialect or guess_dialect(
        WireEvent(data=p if isinstance(p, str) else json.dumps(p), name=e) for e, p in items
    )
    if name is None:
        raise UsageError(
            f"{path.name}: cannot tell the dialect from the payloads; give --dialect "
            f"({', '.join(dialects.names())})"
        )
    d = dialects.get(name)
    wire = []
    for event, payload in items:
        if event is None:
            event = d.event_name(payload)
        wire.append(WireEvent(data=payload if isinstance(payload, str) else d.dumps(payload), name=event))
    try:
        encoded = d.codec().encode(wire)
    except CodecError as exc:
        raise CodecError(f"{path.name}: cannot encode the payloads as {d.codec_name}: {exc}") from None
    return _Body(encoded, request=None, headers={"content-type": STREAM_CONTENT_TYPES[d.codec_name]})


def _chunk_item(value: Any) -> tuple[str | None, Any]:
    if isinstance(value, dict) and "data" in value and set(value) <= {"event", "data", "id"}:
        event = value.get("event")
        return (event if isinstance(event, str) else None), value["data"]
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in BEDROCK_EVENT_TYPES:
        ((event, payload),) = value.items()
        return event, payload
    return None, value


# ---------------------------------------------------------------------------------------------
# vcrpy / pytest-recording cassettes

_VCR_TAGS = PLAIN_TAGS | {"tag:yaml.org,2002:binary"}


def load_vcr(text: str, where: str | Path) -> Any:
    """Parse vcrpy YAML: plain data and `!!binary` only; any other tag (`!!python/...`), an alias
    or deep nesting is refused (see `compose_safe`)."""
    doc = plain_data(text, where, tags=_VCR_TAGS, why="only plain data and !!binary are read")
    if doc is None:
        raise CassetteError(where, "empty YAML document")
    return doc


def _vcr_bodies(data: bytes, path: Path, redaction: Redaction) -> list[_Body]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CassetteError(path, f"not UTF-8 text (byte {exc.start})") from None
    doc = load_vcr(text, path)
    if not isinstance(doc, dict) or not isinstance(doc.get("interactions"), list):
        raise CassetteError(path, "not a vcrpy cassette: no `interactions` list")
    bodies: list[_Body] = []
    skipped = 0
    for n, raw in enumerate(doc["interactions"]):
        where = f"interactions[{n}]"
        if (
            not isinstance(raw, dict)
            or not isinstance(raw.get("request"), dict)
            or not isinstance(raw.get("response"), dict)
        ):
            raise CassetteError(path, "needs a request and a response mapping", field=where)
        request = _vcr_request(raw["request"], path, where)
        status, headers, body = _vcr_response(raw["response"], path, where)
        if not _is_streamed(request, headers):
            skipped += 1
            continue
        request, secrets = redaction.request(request)
        headers = redaction.response_headers(headers, secrets)
        secrets += redaction.response_secrets(headers, [Chunk(body)])
        body = scrub_chunks([Chunk(body)], secrets)[0].data
        bodies.append(_Body(body, request=request, status=status, headers=headers, secrets=secrets))
    if not bodies:
        raise UsageError(f"{path.name}: no streamed interaction among its {skipped} interactions")
    return bodies


def _vcr_request(raw: Mapping[str, Any], path: Path, where: str) -> Request:
    method, uri = raw.get("method"), raw.get("uri") or raw.get("url")
    if not isinstance(method, str) or not isinstance(uri, str):
        raise CassetteError(path, "needs `method` and `uri` strings", field=f"{where}.request")
    _check_text(method, path, f"{where}.request.method")
    _check_text(uri, path, f"{where}.request.uri")
    try:
        urlsplit(uri).port  # noqa: B018 -- parsing the port is the check
    except ValueError as exc:
        raise CassetteError(
            path, f"not a valid URL ({exc}): {uri[:200]!r}", field=f"{where}.request.uri"
        ) from None
    body: Any = _vcr_body_bytes(raw.get("body"), path, f"{where}.request.body")
    if body is not None:
        parsed = json_body(body.decode("utf-8", "replace"))
        body = parsed if isinstance(parsed, dict | list) else (parsed or None)
    headers = stable_headers(_vcr_headers(raw.get("headers"), path, f"{where}.request.headers"))
    return Request(method.upper(), stable_url(uri), headers, body)  # a loopback port changes every run


def _vcr_response(raw: Mapping[str, Any], path: Path, where: str) -> tuple[int, dict[str, str], bytes]:
    status = raw.get("status")
    code = status.get("code") if isinstance(status, dict) else status
    if not isinstance(code, int):
        raise CassetteError(path, "needs `status: {code: N}`", field=f"{where}.response.status")
    headers = _vcr_headers(raw.get("headers"), path, f"{where}.response.headers")
    body = raw.get("body", raw.get("content"))
    data = _vcr_body_bytes(body, path, f"{where}.response.body") or b""
    encoding = (_header(headers, "content-encoding") or "").strip().lower()
    if encoding and encoding != "identity":
        data = _decompress(data, encoding, path, where)
        headers = {
            k: v for k, v in headers.items() if k.lower() not in ("content-encoding", "content-length")
        }
    return code, headers, data


def _vcr_body_bytes(body: Any, path: Path, where: str) -> bytes | None:
    if isinstance(body, dict):
        body = body.get("string", body.get("content"))
    if body is None:
        return None
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        try:
            return body.encode("utf-8", "surrogateescape")  # undecodable bytes YAML read as \udcXX
        except UnicodeEncodeError as exc:
            code = ord(body[exc.start])
            raise CassetteError(
                path, f"holds a lone surrogate (U+{code:04X}), which is not text; use !!binary", field=where
            ) from None
    raise CassetteError(path, f"a body must be text or !!binary, not {type(body).__name__}", field=where)


def _vcr_headers(raw: Any, path: Path, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise CassetteError(path, "must be a mapping", field=where)
    out = {}
    for key, value in raw.items():
        values = value if isinstance(value, list) else [value]
        name, text = str(key), ", ".join(str(v) for v in values)
        _check_text(name, path, where)
        _check_text(text, path, f"{where}.{name}")
        out[name] = text
    return out


def _check_text(text: str, path: Path, where: str) -> None:
    """Raise `CassetteError` for text no UTF-8 file can hold (a lone surrogate, from a `\\ud800` escape)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CassetteError(
            path, f"holds a lone surrogate (U+{ord(text[exc.start]):04X}), which is not text", field=where
        ) from None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    return next((v for k, v in headers.items() if k.lower() == name), None)


def _decompress(data: bytes, encoding: str, path: Path, where: str) -> bytes:
    try:
        if encoding in ("gzip", "x-gzip"):
            return gzip.decompress(data)
        if encoding == "deflate":
            try:
                return zlib.decompress(data)
            except zlib.error:
                return zlib.decompress(data, -zlib.MAX_WBITS)  # raw deflate, as some servers send
    except (OSError, zlib.error, EOFError) as exc:
        raise CodecError(
            f"{path.name}: {where}: body says {encoding} but does not decompress: {exc}"
        ) from None
    raise UsageError(
        f"{path.name}: {where}: {encoding}-compressed body; "
        "re-record with vcrpy's decode_compressed_response=True"
    )


def _is_streamed(request: Request, headers: Mapping[str, str]) -> bool:
    if codec_for_media_type(_header(headers, "content-type")) is not None:
        return True
    if isinstance(request.body, dict) and request.body.get("stream") is True:
        return True
    return any(mark in request.url for mark in ("streamGenerateContent", "converse-stream", "alt=sse"))
