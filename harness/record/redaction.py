"""Redaction at record time: secrets in headers, query parameters and JSON bodies become `REDACTED`.

`Redaction.DEFAULT` covers the credentials every provider SDK sends (API keys, bearer tokens,
cookies, AWS SigV4 headers and presigned-URL parameters, `key=`). Add your own with `plus`:

    Redaction.DEFAULT.plus(headers=("x-tenant-token",), body_paths=("messages[*].content",))

Body paths are dotted (`metadata.user_id`), with `[*]` for every list item or `[2]` for one.
Once a value is redacted, any other copy of it in the same interaction (a token echoed in a URL,
a response header or a chunk) is replaced too, so a secret never reaches a cassette.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from harness.cassettes.format import Chunk, Request
from harness.errors import UsageError

REDACTED: Final = "REDACTED"

DEFAULT_HEADERS: Final = (
    "authorization",  # also carries AWS SigV4 signatures: `AWS4-HMAC-SHA256 Credential=...`
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "openai-organization",
    "openai-project",
    "cookie",
    "set-cookie",
    "x-amz-security-token",
    "x-amz-date",
    "x-amz-content-sha256",
)
DEFAULT_QUERY_PARAMS: Final = ("key", "x-amz-signature", "x-amz-credential", "x-amz-security-token")

_SHORTEST_ECHO = 8  # shorter redacted values are not hunted elsewhere: too likely to hit innocent text


@dataclass(frozen=True, slots=True)
class Redaction:
    """What to replace with `REDACTED` before an interaction is saved. Names are case-insensitive.

    Each field replaces its default list; use `Redaction.DEFAULT.plus(...)` to add to the defaults
    and `Redaction.OFF` to redact nothing.
    """

    headers: tuple[str, ...] = DEFAULT_HEADERS
    query_params: tuple[str, ...] = DEFAULT_QUERY_PARAMS
    body_paths: tuple[str, ...] = ()
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
        )

    def request(self, request: Request) -> tuple[Request, list[str]]:
        """The request with secrets replaced, and the secret values found (to hunt echoes of)."""
        secrets: list[str] = []
        headers = self._headers(request.headers, secrets)
        url = self._url(request.url, secrets)
        body = request.body
        if self._parsed_paths and isinstance(body, dict | list):
            for path in self._parsed_paths:
                body = rewrite_path(body, path, lambda value: _take_secret(value, secrets))
        echoes = _echo_forms(secrets)
        if echoes:
            url = _scrub_text(url, echoes)
            headers = {key: _scrub_text(value, echoes) for key, value in headers.items()}
            body = _scrub_value(body, echoes)
        return replace(request, url=url, headers=headers, body=body), secrets

    def response_headers(self, headers: Mapping[str, str], secrets: list[str]) -> dict[str, str]:
        """Response headers with secrets replaced (`set-cookie`, echoed request secrets)."""
        out = self._headers(headers, secrets)
        echoes = _echo_forms(secrets)
        return {key: _scrub_text(value, echoes) for key, value in out.items()} if echoes else out

    def chunk(self, chunk: Chunk, secrets: list[str]) -> Chunk:
        """A response chunk with any echoed secret replaced (rare; changes the chunk's bytes)."""
        data = chunk.data
        for echo in _echo_forms(secrets):
            data = data.replace(echo.encode("utf-8"), REDACTED.encode("ascii"))
        return chunk if data == chunk.data else Chunk(data, chunk.offset_ms)

    def url(self, url: str) -> str:
        """The URL with secret query parameters replaced."""
        return self._url(url, [])

    def _headers(self, headers: Mapping[str, str], secrets: list[str]) -> dict[str, str]:
        out = {}
        for key, value in headers.items():
            out[key] = _take_secret(value, secrets) if key.lower() in self.headers else value
        return out

    def _url(self, url: str, secrets: list[str]) -> str:
        parts = urlsplit(url)
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


Redaction.DEFAULT = Redaction()
Redaction.OFF = Redaction(headers=(), query_params=(), body_paths=())


def _take_secret(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str) and value != REDACTED:
        secrets.append(value)
    elif value is not None and not isinstance(value, str):
        secrets.append(str(value))
    return REDACTED


def _echo_forms(secrets: list[str]) -> list[str]:
    """The strings to hunt for elsewhere: each secret, and the token of `Bearer <token>` forms."""
    forms: set[str] = set()
    for secret in secrets:
        forms.add(secret)
        parts = secret.split()
        if len(parts) == 2:
            forms.add(parts[1])
    return sorted((form for form in forms if len(form) >= _SHORTEST_ECHO), key=len, reverse=True)


def _scrub_text(text: str, echoes: list[str]) -> str:
    for echo in echoes:
        if echo in text:
            text = text.replace(echo, REDACTED)
    return text


def _scrub_value(value: Any, echoes: list[str]) -> Any:
    if isinstance(value, str):
        return _scrub_text(value, echoes)
    if isinstance(value, dict):
        return {key: _scrub_value(item, echoes) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub_value(item, echoes) for item in value]
    return value


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
