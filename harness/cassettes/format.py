"""Cassette format v1: request/response pairs whose responses keep every network read.

A cassette is plain data (`Cassette` and friends) plus `load` / `save`. Loading reads the file
within bounds (`harness.bounded.read`), parses it as safe YAML within bounds (no aliases, capped
depth and size: `harness.bounded.yaml`), and checks every field, so a bad or hostile file raises
one `CassetteError` naming the file, the line and the field. Saving writes through the one writer
(`harness.files.write`: atomic, never through a link, a device or a FIFO).
See docs/cassettes.md for the format with an example.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from itertools import accumulate
from pathlib import Path
from typing import Any, NoReturn

import yaml

from harness import bounded, files
from harness.bounded import yaml as safe_yaml
from harness.bounded.yaml import STR, VALUE_ERRORS, compose_safe
from harness.bounded.yaml import field as _join
from harness.cassettes.model import (  # the model, re-exported: `format.Cassette` is where users found it
    CASE_CLASSES,
    SOURCE_KINDS,
    VERSION,
    Cassette,
    Chunk,
    Declared,
    Interaction,
    Request,
    Response,
    Source,
)
from harness.cassettes.model import (
    header as header,
)
from harness.cassettes.outcome import Outcome
from harness.collector import collector_paused
from harness.errors import CassetteError, OutcomeFormatError

_Dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


# ---------------------------------------------------------------------------------------------
# Loading


def load(path: str | os.PathLike[str]) -> Cassette:
    """Read and validate a cassette file."""
    path = Path(path)
    cassette = loads(_read_bytes(path), path=path)  # the bytes are loads' alone: freed once composed
    cassette.path = path
    return cassette


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, bounded; UTF-8 is checked by the parser reading them (`compose_safe`)."""
    try:
        return bounded.read(path, safe_yaml.MAX_CHARS)
    except bounded.TooLarge as exc:
        raise CassetteError(path, f"over the {exc.limit:,} bytes a cassette file may have") from None
    except FileNotFoundError:
        raise CassetteError(path, "no such cassette file") from None
    except OSError as exc:
        raise CassetteError(path, f"cannot read: {exc.strerror}") from None


def loads(text: str | bytes, *, path: str | os.PathLike[str] | None = None) -> Cassette:
    """Parse cassette YAML, as text or as the UTF-8 bytes of a file; `path` is only used in error
    messages."""
    where = str(path) if path is not None else "<cassette>"
    node = compose_safe(text, where)
    del text  # a big file's text is not kept beside what is built from it
    if node is None:
        raise CassetteError(where, "empty file: a cassette needs version, name, source and interactions")
    return _Reader(where).cassette(node)


# A header goes on the wire as read (the replay server, FakeProvider): a name that is not a token,
# or a CR or LF in a value, would add headers of the file's own to the response.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # tab is the one a value may hold
# Bodies deeper than this are kept as text.
MAX_BODY_DEPTH = 64
MAX_OFFSET_MS = 86_400_000  # a day: no stream is longer
MAX_OPEN_AFTER = 60.0  # seconds a replayed connection may stay open after its last read


def json_body(text: str) -> Any:
    """A body's text as JSON when it is JSON nesting at most `MAX_BODY_DEPTH` levels, else the text;
    also the text when it escapes a lone surrogate (`"\\ud800"`), which no UTF-8 file can hold parsed."""
    if text.lstrip()[:1] not in ("{", "["):
        return text
    try:
        parsed = bounded.loads(text, MAX_BODY_DEPTH)
    except ValueError:  # not JSON, or nested deeper (never parsed then): kept as text
        return text
    if ("\\ud" in text or "\\uD" in text) and _holds_surrogate(parsed):
        return text
    return parsed


def _holds_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class _Reader:
    """Walks the YAML node tree so every error can name the line and the field."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.constructor = yaml.constructor.SafeConstructor()

    def fail(self, node: yaml.Node, path: str, message: str) -> CassetteError:
        return CassetteError(self.where, message, field=path or None, line=node.start_mark.line + 1)

    def value(self, node: yaml.Node, path: str) -> Any:
        if isinstance(node, yaml.ScalarNode) and node.tag == STR:
            return node.value  # the common case, without the constructor's cost
        try:
            return self.constructor.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:
            raise self.fail(node, path, f"cannot read value: {exc.problem}") from None
        except VALUE_ERRORS as exc:
            raise self.fail(node, path, f"cannot read value: {str(exc)[:200]}") from None

    def mapping(self, node: yaml.Node, path: str) -> dict[str, yaml.Node]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, path, "must be a mapping")
        out: dict[str, yaml.Node] = {}
        for key, value in node.value:
            name = self.value(key, path)
            if not isinstance(name, str):
                raise self.fail(key, path, f"keys must be strings, not {name!r}")
            out[name] = value
        return out

    def require(self, node: yaml.Node, fields: dict[str, yaml.Node], name: str, path: str) -> yaml.Node:
        if name not in fields:
            raise self.fail(node, _join(path, name), "missing")
        return fields[name]

    def scalar(self, node: yaml.Node, path: str, kind: type | tuple[type, ...], what: str) -> Any:
        value = self.value(node, path)
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise self.fail(node, path, f"must be {what}, not {value!r}")
        if not isinstance(value, kind):
            raise self.fail(node, path, f"must be {what}, not {type(value).__name__} {value!r}")
        return value

    def cassette(self, node: yaml.Node) -> Cassette:
        top = self.mapping(node, "")
        version = self.scalar(self.require(node, top, "version", ""), "version", int, "an integer")
        if version != VERSION:
            raise self.fail(
                top["version"], "version", f"unsupported version {version}; this harness reads {VERSION}"
            )
        name = self.scalar(self.require(node, top, "name", ""), "name", str, "a string")
        dialect = None
        if "dialect" in top and self.value(top["dialect"], "dialect") is not None:
            dialect = self.scalar(top["dialect"], "dialect", str, "a string")
        src_node = self.require(node, top, "source", "")
        src = self.mapping(src_node, "source")
        kind = self.scalar(self.require(src_node, src, "kind", "source"), "source.kind", str, "a string")
        if kind not in SOURCE_KINDS:
            raise self.fail(
                src["kind"], "source.kind", f"must be one of {', '.join(SOURCE_KINDS)}, not {kind!r}"
            )
        provenance = self.scalar(
            self.require(src_node, src, "provenance", "source"), "source.provenance", str, "a string"
        )
        items = self.require(node, top, "interactions", "")
        if not isinstance(items, yaml.SequenceNode):
            raise self.fail(items, "interactions", "must be a list")
        interactions = [self.interaction(item, f"interactions[{i}]") for i, item in enumerate(items.value)]
        return Cassette(
            name=name,
            source=Source(kind, provenance),
            interactions=interactions,
            dialect=dialect,
            version=version,
        )

    def interaction(self, node: yaml.Node, path: str) -> Interaction:
        fields = self.mapping(node, path)
        request = self.request(self.require(node, fields, "request", path), _join(path, "request"))
        response = self.response(self.require(node, fields, "response", path), _join(path, "response"))
        expected = None
        if "expected" in fields and self.value(fields["expected"], _join(path, "expected")) is not None:
            where = _join(path, "expected")
            try:
                expected = Outcome.from_dict(self.value(fields["expected"], where))
            except OutcomeFormatError as exc:
                raise self.fail(fields["expected"], _join(where, exc.field), exc.message) from None
        declared = None
        if "expected_class" in fields:
            declared = self.declared(fields["expected_class"], _join(path, "expected_class"))
        return Interaction(request=request, response=response, expected=expected, declared=declared)

    def declared(self, node: yaml.Node, path: str) -> Declared:
        fields = self.mapping(node, path)
        where = _join(path, "class")
        case_class = self.scalar(self.require(node, fields, "class", path), where, str, "a string")
        if case_class not in CASE_CLASSES:
            choices = ", ".join(CASE_CLASSES)
            raise self.fail(fields["class"], where, f"must be one of {choices}, not {case_class!r}")
        where = _join(path, "reason")
        reason = self.scalar(self.require(node, fields, "reason", path), where, str, "a string")
        return Declared(case_class, reason)

    def headers(self, node: yaml.Node, path: str) -> dict[str, str]:
        out = {}
        for key, value in self.mapping(node, path).items():
            if not _HEADER_NAME.fullmatch(key):
                shown = _join(path, ascii(key)[:60])
                raise self.fail(value, shown, "is not a header name (letters, digits and !#$%&'*+-.^_`|~)")
            where = _join(path, key)
            out[key] = text = str(self.scalar(value, where, (str, int, float), "a string"))
            if _HEADER_CONTROL.search(text):
                raise self.fail(value, where, "holds a CR, LF or other control character: refused")
        return out

    def request(self, node: yaml.Node, path: str) -> Request:
        fields = self.mapping(node, path)
        method = self.scalar(
            self.require(node, fields, "method", path), _join(path, "method"), str, "a string"
        )
        url = self.scalar(self.require(node, fields, "url", path), _join(path, "url"), str, "a string")
        headers = self.headers(fields["headers"], _join(path, "headers")) if "headers" in fields else {}
        body = self.value(fields["body"], _join(path, "body")) if "body" in fields else None
        return Request(method=method.upper(), url=url, headers=headers, body=body)

    def response(self, node: yaml.Node, path: str) -> Response:
        fields = self.mapping(node, path)
        status = self.scalar(
            self.require(node, fields, "status", path), _join(path, "status"), int, "an integer"
        )
        if not 100 <= status <= 599:
            raise self.fail(fields["status"], _join(path, "status"), f"must be from 100 to 599, not {status}")
        headers = self.headers(fields["headers"], _join(path, "headers")) if "headers" in fields else {}
        if "body" in fields and "chunks" not in fields:
            chunks = self.joined(fields["body"], _join(path, "body"))
        else:
            chunks_node = self.require(node, fields, "chunks", path)
            if not isinstance(chunks_node, yaml.SequenceNode):
                raise self.fail(chunks_node, _join(path, "chunks"), "must be a list")
            chunks = [self.chunk(item, f"{path}.chunks[{i}]") for i, item in enumerate(chunks_node.value)]
        complete = True
        if "complete" in fields:
            complete = self.scalar(fields["complete"], _join(path, "complete"), bool, "true or false")
        error = error_type = None
        if "error" in fields and self.value(fields["error"], _join(path, "error")) is not None:
            error = self.scalar(fields["error"], _join(path, "error"), str, "a string")
        if "error_type" in fields and self.value(fields["error_type"], _join(path, "error_type")) is not None:
            error_type = self.scalar(fields["error_type"], _join(path, "error_type"), str, "a string")
        open_after = 0.0
        if "open_after" in fields:
            where = _join(path, "open_after")
            open_after = float(self.scalar(fields["open_after"], where, (int, float), "a number of seconds"))
            if not 0 <= open_after <= MAX_OPEN_AFTER:
                raise self.fail(fields["open_after"], where, f"must be from 0 to {MAX_OPEN_AFTER} seconds")
        return Response(
            status=status,
            headers=headers,
            chunks=chunks,
            complete=complete,
            error=error,
            error_type=error_type,
            open_after=open_after,
        )

    def joined(self, node: yaml.Node, path: str) -> list[Chunk]:
        """The reads of a joined body (`text` or `b64`, cut where `reads` says)."""
        fields = self.mapping(node, path)
        if "b64" in fields:
            data = self.base64(fields["b64"], _join(path, "b64"))
        else:
            text_node = self.require(node, fields, "text", path)
            data = self.scalar(text_node, _join(path, "text"), str, "a string").encode("utf-8")
            text_node.value = ""  # the text is now `data`: not kept twice while the reads are cut
        where = _join(path, "reads")
        spec = self.scalar(self.require(node, fields, "reads", path), where, str, "a string")
        chunks = _cut(data, spec)
        if chunks is None:
            self.bad_reads(fields["reads"], where, spec, len(data))
        return chunks

    def bad_reads(self, node: yaml.Node, where: str, spec: str, size: int) -> NoReturn:
        """Why `reads` does not cut the body (the slow walk, only once `_cut` said no)."""
        start = 0
        for number, token in enumerate(spec.split()):
            length, at, offset = token.partition("@")
            try:
                end = start + int(length)
                when = float(offset) if at else 0.0
            except ValueError:
                message = f"{token!r} is not a size in bytes with an optional @offset_ms (`120@0 88@41.5`)"
                raise self.fail(node, f"{where}[{number}]", message) from None
            if end < start or end > size:
                raise self.fail(node, f"{where}[{number}]", f"read {token!r} runs past the body")
            if not 0 <= when <= MAX_OFFSET_MS:
                message = f"offset must be from 0 to {MAX_OFFSET_MS:,} ms, not {when:g}"
                raise self.fail(node, f"{where}[{number}]", message)
            start = end
        raise self.fail(node, where, f"the reads cover {start:,} of the body's {size:,} bytes")

    def base64(self, node: yaml.Node, path: str) -> bytes:
        raw = self.scalar(node, path, str, "base64 text")
        try:
            return base64.b64decode(raw.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            raise self.fail(node, path, "is not valid base64") from None

    def chunk(self, node: yaml.Node, path: str) -> Chunk:
        if isinstance(node, yaml.ScalarNode):
            return Chunk(self.scalar(node, path, str, "a text block or a mapping").encode("utf-8"))
        fields = self.mapping(node, path)
        offset = None
        if "offset_ms" in fields:
            where = _join(path, "offset_ms")
            offset = float(self.scalar(fields["offset_ms"], where, (int, float), "a number"))
            # Replay waits until each offset: an infinite or absurd one would wait for ever.
            if not 0 <= offset <= MAX_OFFSET_MS:
                raise self.fail(
                    fields["offset_ms"], where, f"must be from 0 to {MAX_OFFSET_MS:,} ms, not {offset:g}"
                )
        if "b64" in fields:
            data = self.base64(fields["b64"], _join(path, "b64"))
        elif "text" in fields:
            data = self.scalar(fields["text"], _join(path, "text"), str, "a string").encode("utf-8")
        else:
            raise self.fail(node, path, "a chunk mapping needs `text` or `b64`")
        return Chunk(data, offset)


def _cut(data: bytes, spec: str) -> list[Chunk] | None:
    """`data` cut into reads by `spec` (`SIZE[@OFFSET_MS] ...`), or None when it does not fit.

    In bulk (numbers parsed by one `json.loads`, reads cut by `map` and `accumulate`), with the
    cycle collector paused while 100k chunks are made: it would otherwise walk the young chunks
    over and over, which costs more than making them.
    """
    numbers = _spec_numbers(spec)
    if numbers is None:
        return None
    sizes, offsets = numbers
    if (sizes and min(sizes) < 0) or sum(sizes) != len(data):
        return None
    ends = list(accumulate(sizes))
    starts = [0, *ends[:-1]]
    with collector_paused():
        return list(map(Chunk, map(data.__getitem__, map(slice, starts, ends)), offsets))


def _spec_numbers(spec: str) -> tuple[list[int], list[float | None]] | None:
    """The sizes and offsets `reads` spells, or None when it is not every read `SIZE` or every read
    `SIZE@OFFSET_MS` (in range)."""
    numbers = _json_numbers(spec)
    if numbers is not None:
        return numbers
    # Any spelling `int` and `float` read (`1_000`, two spaces): the general path, token by token
    # as `bad_reads` reads them (`1@2@3` is no read, even where `@` counts happen to pair up).
    tokens = [token.partition("@") for token in spec.split()]
    timed = sum(1 for _, at, _ in tokens if at)
    if timed and timed != len(tokens):
        return None  # a mix: the slow walk says which read is wrong
    try:
        sizes = [int(size) for size, _, _ in tokens]
        offsets: list[float | None] = [float(offset) if at else None for _, at, offset in tokens]
    except ValueError:
        return None
    if timed and not all(0 <= o <= MAX_OFFSET_MS for o in offsets):  # type: ignore[operator]
        return None
    return sizes, offsets


# What a number in `reads` may hold besides digits: left out, `SIZE@MS SIZE@MS` is `@ @`.
_NUMBER_BYTES = b"0123456789.eE+-"


def _json_numbers(spec: str) -> tuple[list[int], list[float | None]] | None:
    """`_spec_numbers` for the spelling `save` writes (one space between reads, each `SIZE@MS` or
    each `SIZE`), in C: what is left of it without the numbers' characters must be exactly
    `@ @ ... @` (or spaces alone), and the numbers are one JSON array."""
    try:
        skeleton = spec.encode("ascii").translate(None, _NUMBER_BYTES)
    except UnicodeEncodeError:
        return None
    gaps = skeleton.count(b" ")
    timed = skeleton == b"@ " * gaps + b"@"
    if not timed and skeleton != b" " * gaps:
        return None
    try:
        flat = json.loads(f"[{spec.replace('@', ',').replace(' ', ',')}]")
    except ValueError:
        return None
    sizes = flat[0::2] if timed else flat
    if sizes and set(map(type, sizes)) != {int}:
        return None  # `1.5` or `1e3` as a size: the general path says no
    if not timed:
        return sizes, [None] * len(sizes)
    offsets = list(map(float, flat[1::2]))
    if len(offsets) != len(sizes) or (offsets and not (min(offsets) >= 0 and max(offsets) <= MAX_OFFSET_MS)):
        return None
    return sizes, offsets  # type: ignore[return-value]


# Saving


class _LiteralStr(str):
    """A string the dumper writes as a `|` block when YAML allows it (falls back to quoted)."""


def _literal(dumper: yaml.SafeDumper, value: _LiteralStr) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style=style)


class _CassetteDumper(_Dumper):  # type: ignore[valid-type,misc]
    pass


_CassetteDumper.add_representer(_LiteralStr, _literal)


# A response with more reads than this is saved as one joined body and its read boundaries
# (`body: {text, reads}`) rather than a mapping per read: loading 100k reads one by one costs
# about 20x what one block of text does. Both forms load the same `Response`.
JOINED_ABOVE = 10_000


def to_data(cassette: Cassette, *, joined_above: int | None = JOINED_ABOVE) -> dict[str, Any]:
    """The cassette as plain YAML-ready data; responses over `joined_above` reads (None: never)
    as a joined body with its read boundaries."""
    out: dict[str, Any] = {"version": cassette.version, "name": cassette.name}
    if cassette.dialect is not None:
        out["dialect"] = cassette.dialect
    out["source"] = {"kind": cassette.source.kind, "provenance": cassette.source.provenance}
    out["interactions"] = [_interaction_data(item, joined_above) for item in cassette.interactions]
    return out


def _interaction_data(item: Interaction, joined_above: int | None = JOINED_ABOVE) -> dict[str, Any]:
    req, resp = item.request, item.response
    request: dict[str, Any] = {"method": req.method, "url": req.url, "headers": dict(req.headers)}
    if req.body is not None:
        request["body"] = req.body
    response: dict[str, Any] = {"status": resp.status, "headers": dict(resp.headers)}
    response["complete"] = resp.complete
    if resp.error is not None:
        response["error"] = resp.error
    if resp.error_type is not None:
        response["error_type"] = resp.error_type
    if resp.open_after:
        response["open_after"] = resp.open_after
    if joined_above is not None and len(resp.chunks) > joined_above:
        response["body"] = _joined_data(resp.chunks)
    else:
        response["chunks"] = [_chunk_data(chunk) for chunk in resp.chunks]
    out: dict[str, Any] = {"request": request, "response": response}
    if item.expected is not None:
        out["expected"] = item.expected.to_dict()
    if item.declared is not None:
        out["expected_class"] = {"class": item.declared.case_class, "reason": item.declared.reason}
    return out


def _chunk_data(chunk: Chunk) -> Any:
    try:
        # Valid UTF-8 stays text: a `|` block when YAML allows, else a quoted string with escapes.
        text: str | None = chunk.data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text:
        if chunk.offset_ms is None:
            return _LiteralStr(text)
        return {"text": _LiteralStr(text), "offset_ms": _ms(chunk.offset_ms)}
    encoded = base64.b64encode(chunk.data).decode("ascii")
    return (
        {"b64": encoded} if chunk.offset_ms is None else {"b64": encoded, "offset_ms": _ms(chunk.offset_ms)}
    )


def _joined_data(chunks: list[Chunk]) -> dict[str, Any]:
    """Every read joined, as text (or base64), and `reads`: each read's size, `@offset_ms` if known."""
    data = b"".join(chunk.data for chunk in chunks)
    reads = " ".join(
        str(len(chunk.data)) if chunk.offset_ms is None else f"{len(chunk.data)}@{_ms(chunk.offset_ms)}"
        for chunk in chunks
    )
    try:
        return {"text": _LiteralStr(data.decode("utf-8")), "reads": reads}
    except UnicodeDecodeError:
        return {"b64": base64.b64encode(data).decode("ascii"), "reads": reads}


def _ms(value: float) -> float | int:
    rounded = round(value, 3)
    return int(rounded) if rounded == int(rounded) else rounded


def dumps(cassette: Cassette, *, joined_above: int | None = JOINED_ABOVE) -> str:
    """The cassette as YAML text (see `to_data` for `joined_above`). Text YAML cannot hold (a lone
    UTF-16 surrogate in an expected outcome: UTF-8 has no such character) is a `CassetteError`."""
    try:
        return yaml.dump(
            to_data(cassette, joined_above=joined_above),
            Dumper=_CassetteDumper,
            sort_keys=False,
            allow_unicode=True,
            width=100_000,
            default_flow_style=False,
        )
    except UnicodeEncodeError as exc:
        found = ascii(exc.object[exc.start : exc.end])
        message = f"cannot be written as YAML: it holds {found}, a lone surrogate no UTF-8 text can hold"
        raise CassetteError(cassette.path or cassette.name, message) from None


def save(
    cassette: Cassette, path: str | os.PathLike[str], *, joined_above: int | None = JOINED_ABOVE
) -> Path:
    """Write atomically: an interrupted save leaves the previous file whole.

    A response over `joined_above` reads is saved as one joined body and its read boundaries
    (None: always a mapping per read); `load` reads both forms the same.
    """
    path = Path(path)
    files.write(path, dumps(cassette, joined_above=joined_above).encode("utf-8"))
    cassette.path = path
    return path
