"""Redaction at record time: secrets in headers, query parameters, URL userinfo and bodies become `REDACTED`.

`Redaction.DEFAULT` covers the credentials every provider SDK sends (API keys, bearer and proxy
tokens, cookies, AWS SigV4 headers and presigned-URL parameters, `key=`, `api_key=`,
`access_token=`, ...) and any `user:password@` in a URL. Add your own with `plus`:

    Redaction.DEFAULT.plus(headers=("x-tenant-token",), body_paths=("messages[*].content",))

Body paths are dotted (`metadata.user_id`), with `[*]` for every list item or `[2]` for one; for a
form or multipart body a path is a field name. Once a value is redacted, any other copy of it
(raw, JSON-escaped or URL-encoded) is hunted everywhere the interaction is saved: the URL, headers,
the response body joined across reads, error messages and the derived `expected` outcome
(`scrub_interaction`, `scrub_cassette`), so a secret never reaches a cassette.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Final
from urllib.parse import parse_qsl, quote, quote_plus, unquote, unquote_plus, urlencode, urlsplit, urlunsplit

from harness.cassettes.format import Cassette, Chunk, Interaction, Request, header
from harness.check.outcome import Outcome
from harness.errors import UsageError

REDACTED: Final = "REDACTED"

DEFAULT_HEADERS: Final = (
    "authorization",  # also carries AWS SigV4 signatures: `AWS4-HMAC-SHA256 Credential=...`
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "x-auth-token",
    "x-goog-api-key",
    "openai-organization",
    "openai-project",
    "cookie",
    "set-cookie",
    "x-amz-security-token",
    "x-amz-date",
    "x-amz-content-sha256",
)
DEFAULT_QUERY_PARAMS: Final = (
    "key",
    "api_key",
    "apikey",
    "access_token",
    "refresh_token",
    "client_secret",
    "password",
    "token",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
)

_SHORTEST_ECHO = 8  # shorter redacted values are not hunted elsewhere: too likely to hit innocent text


@dataclass(frozen=True, slots=True)
class Redaction:
    """What to replace with `REDACTED` before an interaction is saved. Names are case-insensitive.

    Each field replaces its default list; use `Redaction.DEFAULT.plus(...)` to add to the defaults
    and `Redaction.OFF` to redact nothing. URL userinfo is redacted unless `userinfo=False`.
    """

    headers: tuple[str, ...] = DEFAULT_HEADERS
    query_params: tuple[str, ...] = DEFAULT_QUERY_PARAMS
    body_paths: tuple[str, ...] = ()
    userinfo: bool = True
    _parsed_paths: tuple[JsonPath, ...] = field(init=False, repr=False, compare=False)

    DEFAULT: ClassVar[Redaction]
    OFF: ClassVar[Redaction]

    def __post_init__(self) -> None:
        object.__setattr__(self, "headers", tuple(name.lower() for name in self.headers))
        object.__setattr__(self, "query_params", tuple(name.lower() for name in self.query_params))
        object.__setattr__(self, "body_paths", tuple(self.body_paths))
        object.__setattr__(self, "_parsed_paths", tuple(parse_path(path) for path in self.body_paths))

    def plus(
        self, *, headers: Iterable[str] = (), query_params: Iterable[str] = (), body_paths: Iterable[str] = ()
    ) -> Redaction:
        """This redaction with more headers, query parameters and body paths."""
        return Redaction(
            headers=(*self.headers, *headers),
            query_params=(*self.query_params, *query_params),
            body_paths=(*self.body_paths, *body_paths),
            userinfo=self.userinfo,
        )

    def request(self, request: Request) -> tuple[Request, list[str]]:
        """The request with secrets replaced, and the secret values found (to hunt echoes of)."""
        secrets: list[str] = []
        headers = self._headers(request.headers, secrets)
        url = self._url(request.url, secrets)
        body = self._body(request.body, header(request.headers, "content-type") or "", secrets)
        request = replace(request, url=url, headers=headers, body=body)
        return scrub_request(request, secrets), secrets

    def response_headers(self, headers: Mapping[str, str], secrets: list[str]) -> dict[str, str]:
        """Response headers with secrets replaced (`set-cookie`, echoed request secrets)."""
        out = self._headers(headers, secrets)
        echoes = echo_forms(secrets)
        return {key: _scrub_text(value, echoes) for key, value in out.items()} if echoes else out

    def chunk(self, chunk: Chunk, secrets: list[str]) -> Chunk:
        """One response chunk with any echoed secret replaced. A secret split across reads needs
        the whole response: prefer `scrub_chunks`."""
        return scrub_chunks([chunk], secrets)[0]

    def url(self, url: str) -> str:
        """The URL with secret query parameters (and userinfo) replaced."""
        return self._url(url, [])

    def _headers(self, headers: Mapping[str, str], secrets: list[str]) -> dict[str, str]:
        out = {}
        for key, value in headers.items():
            out[key] = _take_secret(value, secrets) if key.lower() in self.headers else value
        return out

    def _url(self, url: str, secrets: list[str]) -> str:
        parts = urlsplit(url)
        if self.userinfo and "@" in parts.netloc:
            userinfo, _, host = parts.netloc.rpartition("@")
            user, colon, password = userinfo.partition(":")
            hidden = [_take_secret(unquote(user), secrets)]
            if colon:
                hidden.append(_take_secret(unquote(password), secrets))
            parts = parts._replace(netloc=f"{':'.join(hidden)}@{host}")
            url = urlunsplit(parts)
        if not parts.query or not self.query_params:
            return url
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        if not any(name.lower() in self.query_params for name, _ in pairs):
            return url  # untouched URLs keep their exact spelling
        redacted = [
            (name, _take_secret(value, secrets) if name.lower() in self.query_params else value)
            for name, value in pairs
        ]
        return urlunsplit(parts._replace(query=urlencode(redacted, safe="*-._~/:")))

    def _body(self, body: Any, content_type: str, secrets: list[str]) -> Any:
        if not self._parsed_paths:
            return body
        if isinstance(body, dict | list):
            for path in self._parsed_paths:
                body = rewrite_path(body, path, lambda value: _take_secret(value, secrets))
            return body
        if not isinstance(body, str):
            return body
        names = {p[0].lower() for p in self._parsed_paths if len(p) == 1 and isinstance(p[0], str)}
        media = content_type.split(";")[0].strip().lower()
        if media == "application/x-www-form-urlencoded":
            return _form_fields(body, names, secrets)
        boundary = re.search(r'boundary="?([^";]+)"?', content_type)
        if media == "multipart/form-data" and boundary:
            return _multipart_fields(body, boundary.group(1), names, secrets)
        return body


Redaction.DEFAULT = Redaction()
Redaction.OFF = Redaction(headers=(), query_params=(), body_paths=(), userinfo=False)


def _take_secret(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str) and value != REDACTED:
        secrets.append(value)
    elif value is not None and not isinstance(value, str):
        secrets.append(str(value))
    return REDACTED


def _form_fields(body: str, names: set[str], secrets: list[str]) -> str:
    """`a=1&password=x` with the named fields' values redacted, everything else spelled as it was."""
    out = []
    for piece in body.split("&"):
        name, equals, value = piece.partition("=")
        if equals and unquote_plus(name).lower() in names:
            piece = f"{name}={_take_secret(unquote_plus(value), secrets)}"
        out.append(piece)
    return "&".join(out)


_PART_NAME = re.compile(r'content-disposition:[^\r\n]*\bname="([^"]*)"', re.IGNORECASE)


def _multipart_fields(body: str, boundary: str, names: set[str], secrets: list[str]) -> str:
    """A multipart body with the content of each part named in `names` redacted."""
    delimiter = f"--{boundary}"
    parts = body.split(delimiter)
    for i, part in enumerate(parts[1:], start=1):
        head, sep, content = part.partition("\r\n\r\n")
        if not sep:
            head, sep, content = part.partition("\n\n")
        found = _PART_NAME.search(head)
        if sep and found and found.group(1).lower() in names:
            # The part's content ends before the CRLF that precedes the next delimiter.
            value, newline, tail = (
                (content[:-2], "\r\n", "") if content.endswith("\r\n") else (content, "", "")
            )
            parts[i] = f"{head}{sep}{_take_secret(value, secrets)}{newline}{tail}"
    return delimiter.join(parts)


# ---------------------------------------------------------------------------------------------
# Echoes: every other copy of a redacted value, wherever it is saved


def echo_forms(secrets: Iterable[str]) -> list[str]:
    """The strings to hunt for: each secret raw, JSON-escaped and URL-encoded, the token of
    `Bearer <token>` forms and the user and password of `Basic <base64>`; longest first."""
    values: set[str] = set()
    for secret in secrets:
        values.add(secret)
        parts = secret.split()
        if len(parts) == 2:
            values.add(parts[1])
            if parts[0].lower() == "basic":
                values.update(_basic_credentials(parts[1]))
    forms: set[str] = set()
    for value in values:
        escaped = json.dumps(value)[1:-1]
        forms.update(
            (
                value,
                escaped,
                escaped.replace("/", "\\/"),
                json.dumps(value, ensure_ascii=False)[1:-1],
                quote(value, safe=""),
                quote(value),
                quote_plus(value, safe=""),
            )
        )
    return sorted((form for form in forms if len(form) >= _SHORTEST_ECHO), key=len, reverse=True)


def _basic_credentials(token: str) -> list[str]:
    try:
        decoded = base64.b64decode(token, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return []
    user, _, password = decoded.partition(":")
    return [decoded, user, password]


def _scrub_text(text: str, echoes: list[str]) -> str:
    for echo in echoes:
        if echo in text:
            text = text.replace(echo, REDACTED)
    return text


def _scrub_value(value: Any, echoes: list[str]) -> Any:
    """A copy of plain data with every echo replaced, in keys too (iterative: any depth)."""
    if not isinstance(value, dict | list):
        return _scrub_text(value, echoes) if isinstance(value, str) else value
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]  # (source, target container, slot)
    while stack:
        item, target, slot = stack.pop()
        if isinstance(item, dict):
            copy: Any = {}
            for key, child in item.items():
                new_key = _scrub_text(key, echoes) if isinstance(key, str) else key
                copy[new_key] = None
                stack.append((child, copy, new_key))
        elif isinstance(item, list):
            copy = [None] * len(item)
            stack += [(child, copy, i) for i, child in enumerate(item)]
        else:
            copy = _scrub_text(item, echoes) if isinstance(item, str) else item
        target[slot] = copy
    return root[0]


def scrub_request(request: Request, secrets: Iterable[str]) -> Request:
    """The request with every echo of `secrets` replaced in its URL, headers and body."""
    echoes = echo_forms(secrets)
    if not echoes:
        return request
    return replace(
        request,
        url=_scrub_text(request.url, echoes),
        headers={key: _scrub_text(value, echoes) for key, value in request.headers.items()},
        body=_scrub_value(request.body, echoes),
    )


def scrub_chunks(chunks: list[Chunk], secrets: Iterable[str]) -> list[Chunk]:
    """Chunks with every echo replaced in their JOINED bytes, cut again at the original read
    boundaries: a secret split across two reads is caught. `REDACTED` lands in the read where the
    echo began; a read left empty by that is dropped."""
    echoes = echo_forms(secrets)
    if not echoes or not chunks:
        return chunks
    joined = b"".join(chunk.data for chunk in chunks)
    pattern = re.compile(b"|".join(re.escape(echo.encode("utf-8")) for echo in echoes))
    matches = [(found.start(), found.end()) for found in pattern.finditer(joined)]
    if not matches:
        return chunks
    out: list[Chunk] = []
    start = first = 0
    for chunk in chunks:
        end = start + len(chunk.data)
        while first < len(matches) and matches[first][1] <= start:
            first += 1  # echoes wholly before this read
        pieces, pos = [], start
        for begin, stop in matches[first:]:
            if begin >= end:
                break
            if begin >= start:
                pieces += [joined[pos:begin], REDACTED.encode("ascii")]
            pos = min(stop, end)  # an echo begun in an earlier read is dropped from this one
        pieces.append(joined[pos:end])
        data = b"".join(pieces)
        if data or not chunk.data:
            out.append(chunk if data == chunk.data else Chunk(data, chunk.offset_ms))
        start = end
    return out


def scrub_interaction(interaction: Interaction, secrets: Iterable[str]) -> Interaction:
    """Every saved field of `interaction` with echoes of `secrets` replaced, in place: request,
    response headers, body (joined across reads), error, and the derived `expected` outcome."""
    secrets = list(secrets)
    echoes = echo_forms(secrets)
    if not echoes:
        return interaction
    interaction.request = scrub_request(interaction.request, secrets)
    response = interaction.response
    response.headers = {key: _scrub_text(value, echoes) for key, value in response.headers.items()}
    response.chunks = scrub_chunks(response.chunks, secrets)
    if response.error is not None:
        response.error = _scrub_text(response.error, echoes)
    if response.error_type is not None:
        response.error_type = _scrub_text(response.error_type, echoes)
    if interaction.expected is not None:
        interaction.expected = Outcome.from_dict(_scrub_value(interaction.expected.to_dict(), echoes))
    return interaction


def scrub_cassette(cassette: Cassette, secrets: Iterable[str]) -> Cassette:
    """`scrub_interaction` over every interaction, and the name and provenance; in place."""
    secrets = list(secrets)
    echoes = echo_forms(secrets)
    if not echoes:
        return cassette
    for interaction in cassette.interactions:
        scrub_interaction(interaction, secrets)
    cassette.name = _scrub_text(cassette.name, echoes)
    cassette.source.provenance = _scrub_text(cassette.source.provenance, echoes)
    return cassette


# ---------------------------------------------------------------------------------------------
# Dotted paths into JSON values (shared with matching's ignored fields)


class _Every:
    """The `[*]` step: every item of a list."""

    def __repr__(self) -> str:
        return "[*]"


EVERY: Final = _Every()
JsonPath = tuple[str | int | _Every, ...]

_STEP = re.compile(r"([^.\[\]]+)|\[(\*|\d+)\]|(\.)")


def parse_path(text: str) -> JsonPath:
    """`a.b[*].c[0]` -> ("a", "b", EVERY, "c", 0); a malformed path raises `UsageError`."""
    steps: list[str | int | _Every] = []
    pos = 0
    expect_name = True
    while pos < len(text):
        found = _STEP.match(text, pos)
        if found is None:
            raise UsageError(f"bad JSON path {text!r} at character {pos + 1}: use a.b, a[*].b or a[0].b")
        name, index, dot = found.groups()
        if dot is not None:
            if expect_name:
                raise UsageError(f"bad JSON path {text!r}: empty name at character {pos + 1}")
            expect_name = True
        elif name is not None:
            if not expect_name:
                raise UsageError(f"bad JSON path {text!r}: missing '.' before {name!r}")
            steps.append(name)
            expect_name = False
        else:
            steps.append(EVERY if index == "*" else int(index))
            expect_name = False
        pos = found.end()
    if expect_name:  # empty, or ending in "."
        raise UsageError(f"bad JSON path {text!r}: use a.b, a[*].b or a[0].b")
    return tuple(steps)


DROP: Final = object()  # a `rewrite_path` result that removes the field instead of replacing it


def rewrite_path(value: Any, path: JsonPath, change: Callable[[Any], Any]) -> Any:
    """A copy of `value` with whatever `path` reaches passed through `change` (absent paths: unchanged).

    Only the containers along the path are copied. `change` may return `DROP` to remove the field.
    """
    if not path:
        return change(value)
    step, rest = path[0], path[1:]
    if isinstance(step, str):
        if not isinstance(value, dict) or step not in value:
            return value
        out = dict(value)
        new = rewrite_path(value[step], rest, change)
        if new is DROP:
            del out[step]
        else:
            out[step] = new
        return out
    if not isinstance(value, list):
        return value
    indexes = range(len(value)) if isinstance(step, _Every) else [step] if step < len(value) else []
    items = list(value)
    dropped = set()
    for i in indexes:
        new = rewrite_path(value[i], rest, change)
        if new is DROP:
            dropped.add(i)
        else:
            items[i] = new
    return [item for i, item in enumerate(items) if i not in dropped] if dropped else items
