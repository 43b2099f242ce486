"""Redaction at record and import time: a secret never reaches a cassette.

The rules (docs/redaction.md lists them with examples) find secrets by where they travel:

- headers by name: `DEFAULT_HEADERS` (provider and gateway keys) and any name ending like a
  credential (`SECRET_SUFFIXES`: `...api-key`, `...token`, `...secret`, `...auth`, ...);
- query parameters by name: `DEFAULT_QUERY_PARAMS` (`key`, `sig`, `code`, ...) and the suffixes;
- body fields by name at any depth, in JSON (parsed or as text), form and multipart bodies:
  `DEFAULT_BODY_FIELDS` and the suffixes; plus dotted `body_paths` of your own;
- URL userinfo, and URL path segments that look like keys (`looks_like_key`);
- in JSON bodies, a string that is a key by its shape (`key_shaped`: a known key prefix, a JWT),
  whatever its name, and the `value` of an object under a secret-named field (a Realtime
  `client_secret: {"value": "ek_..."}`);
- in JSON response bodies (not event streams), secret-named fields by the body-field rules: an
  OAuth token response's `access_token`, `refresh_token` and `id_token` (`response_secrets`);
- values you name (`values=`): removed wherever they occur.

Names compare case- and separator-insensitively (`api_key` = `apiKey` = `API-Key`). Each value
removed is then hunted as an echo in everything saved, request and response alike, raw,
JSON-escaped, fully `\\u`-escaped, URL-encoded and base64-encoded (`echo_forms`), in the
response body joined across reads (`scrub_chunks`), error messages and the derived `expected`
outcome (`scrub_interaction`, `scrub_cassette`). Add your own with `plus`:

    Redaction.DEFAULT.plus(names=("x-tenant",), body_paths=("messages[*].content",), values=(key,))
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Final
from urllib.parse import quote, quote_plus, unquote, unquote_plus

from harness import bounded
from harness.cassettes.format import Cassette, Chunk, Interaction, Request, header
from harness.cassettes.outcome import Outcome
from harness.errors import UsageError
from harness.wire.codecs import STREAM_CONTENT_TYPES
from harness.wire.codecs.websocket import reframe, split_frames

REDACTED: Final = "REDACTED"

DEFAULT_HEADERS: Final = (
    "authorization",  # also carries AWS SigV4 signatures: `AWS4-HMAC-SHA256 Credential=...`
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "x-auth-token",
    "x-api-token",
    "x-goog-api-key",
    "openai-organization",
    "openai-project",
    "cookie",
    "set-cookie",
    "x-amz-security-token",
    "x-amz-date",
    "x-amz-content-sha256",
    # LLM gateways and proxies
    "ocp-apim-subscription-key",  # Azure API Management
    "helicone-auth",
    "x-portkey-api-key",
    "cf-aig-authorization",  # Cloudflare AI Gateway
    "x-litellm-api-key",
)
DEFAULT_QUERY_PARAMS: Final = (
    "key",
    "api_key",
    "x-goog-api-key",
    "sig",  # Azure SAS
    "signature",
    "code",  # OAuth authorization code
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "client_secret",
    "password",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "x-goog-signature",
    "x-goog-credential",
)
DEFAULT_BODY_FIELDS: Final = (
    "api_key",
    "password",
    "passwd",
    "secret",
    "token",
    "client_secret",
    "access_token",
    "refresh_token",
    "id_token",
    "session_token",
    "private_key",
    "secret_key",
    "secret_access_key",
    "subscription_key",
    "authorization",
)
# A name ending in one of these (after `normal_name`) is a secret's too: `x-tenant-api-key`,
# `githubToken`, `db_password`. Body fields leave out `signature` (Anthropic's thinking blocks
# carry one back in every follow-up request) and `auth` (often an object, whose leaves are checked).
SECRET_SUFFIXES: Final = (
    "apikey", "token", "secret", "password", "privatekey", "secretkey", "subscriptionkey",
    "assertion", "jwt",  # OAuth's `client_assertion` and `?assertion=`: a signed JWT
)  # fmt: skip
HEADER_SUFFIXES: Final = (*SECRET_SUFFIXES, "auth", "authorization", "signature", "credential")
QUERY_SUFFIXES: Final = (*SECRET_SUFFIXES, "signature", "credential")

# Path segments: a known key prefix followed by 16+ key characters with a digit...
KEY_PREFIXES: Final = (
    "sk-", "sk_", "rk_", "AIza", "xai-", "gsk_", "hf_", "ghp_", "gho_", "github_pat_", "r8_",
    "pplx-", "nvapi-", "csk-", "fw_", "ya29.", "ek_",  # `ek_`: an OpenAI Realtime ephemeral key
)  # fmt: skip
_KEY_REST = re.compile(r"[A-Za-z0-9_.\-]{16,}")
# ...or a JWT, or a run of 32+ letters and digits, upper and lower case and digits all present.
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")
_LONG_RUN = re.compile(r"[A-Za-z0-9]{32,}")

_SHORTEST_ECHO = 8  # a shorter value a rule found is not hunted elsewhere: too likely in innocent text
_SEPARATORS = re.compile(r"[-_.\s]")


def normal_name(name: str) -> str:
    """A name as the rules compare it: lower case, without `-`, `_`, `.` or spaces (`API-Key` -> `apikey`)."""
    return _SEPARATORS.sub("", name).lower()


def looks_like_key(segment: str) -> bool:
    """Whether a URL path segment looks like a credential rather than a model name or an id.

    A known key prefix (`KEY_PREFIXES`: `sk-`, `AIza`, `hf_`, ...) followed by 16 or more key
    characters with a digit among them; a JWT (`eyJ...`); or a run of 32 or more letters and digits
    holding upper case, lower case and a digit. Model names are words joined by `-`, `.`, `:` or
    `/`, and ids are short runs or lower-case hex (`resp_<hex>`, UUIDs): neither matches.
    """
    for prefix in KEY_PREFIXES:
        if segment.startswith(prefix):
            rest = segment[len(prefix) :]
            if _KEY_REST.fullmatch(rest) and any(c.isdigit() for c in rest):
                return True
    if _JWT.fullmatch(segment):
        return True
    for run in _LONG_RUN.findall(segment):
        if any(c.isupper() for c in run) and any(c.islower() for c in run) and any(c.isdigit() for c in run):
            return True
    return False


def key_shaped(value: str) -> bool:
    """Whether a whole value is a credential by its shape alone: a known key prefix followed by
    16 or more key characters with a digit, or a JWT. (Not `looks_like_key`'s long mixed run,
    which ids and base64 data in a body can be.)"""
    if _JWT.fullmatch(value):
        return True
    for prefix in KEY_PREFIXES:
        if value.startswith(prefix):
            rest = value[len(prefix) :]
            return bool(_KEY_REST.fullmatch(rest)) and any(c.isdigit() for c in rest)
    return False


class NamedSecret(str):
    """A value the user named (`Redaction(values=...)`): hunted at any length."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Redaction:
    """What to replace with `REDACTED` before an interaction is saved (docs/redaction.md).

    Names compare case- and separator-insensitively. Each field replaces its default; use
    `Redaction.DEFAULT.plus(...)` to add to the defaults and `Redaction.OFF` to redact nothing.
    `suffixes` also takes any header, parameter or field named like a credential (`..._token`),
    `path_keys` URL path segments that look like keys and JSON strings that are keys by their
    shape (`key_shaped`), `userinfo` a URL's `user:password@`.
    `values` are secrets removed wherever they appear, whatever carried them.
    """

    headers: tuple[str, ...] = DEFAULT_HEADERS
    query_params: tuple[str, ...] = DEFAULT_QUERY_PARAMS
    body_fields: tuple[str, ...] = DEFAULT_BODY_FIELDS
    body_paths: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    suffixes: bool = True
    path_keys: bool = True
    userinfo: bool = True
    _parsed_paths: tuple[JsonPath, ...] = field(init=False, repr=False, compare=False)
    _header_names: frozenset[str] = field(init=False, repr=False, compare=False)
    _param_names: frozenset[str] = field(init=False, repr=False, compare=False)
    _field_names: frozenset[str] = field(init=False, repr=False, compare=False)

    DEFAULT: ClassVar[Redaction]
    OFF: ClassVar[Redaction]

    def __post_init__(self) -> None:
        for name in ("headers", "query_params", "body_fields", "body_paths", "values"):
            items = getattr(self, name)
            if isinstance(items, str) or not all(isinstance(item, str) for item in items):
                raise UsageError(f"Redaction({name}=...) takes a list of strings, not {items!r}")
        if any(not value for value in self.values):
            raise UsageError("Redaction(values=...): a value to redact cannot be empty")
        set_ = object.__setattr__
        set_(self, "headers", tuple(name.lower() for name in self.headers))
        set_(self, "query_params", tuple(name.lower() for name in self.query_params))
        set_(self, "body_fields", tuple(self.body_fields))
        set_(self, "body_paths", tuple(self.body_paths))
        set_(self, "values", tuple(NamedSecret(value) for value in self.values))
        set_(self, "_parsed_paths", tuple(parse_path(path) for path in self.body_paths))
        set_(self, "_header_names", frozenset(normal_name(name) for name in self.headers))
        set_(self, "_param_names", frozenset(normal_name(name) for name in self.query_params))
        # A body path's last name counts as a field name where a body is not parsed (form, text).
        last = [p[-1] for p in self._parsed_paths if isinstance(p[-1], str)]
        set_(self, "_field_names", frozenset(normal_name(name) for name in (*self.body_fields, *last)))

    def plus(
        self,
        *,
        headers: Iterable[str] = (),
        query_params: Iterable[str] = (),
        body_fields: Iterable[str] = (),
        body_paths: Iterable[str] = (),
        values: Iterable[str] = (),
        names: Iterable[str] = (),
    ) -> Redaction:
        """This redaction with more of each; `names` are added as headers, parameters and body fields."""
        names = tuple(names)
        return replace(
            self,
            headers=(*self.headers, *headers, *names),
            query_params=(*self.query_params, *query_params, *names),
            body_fields=(*self.body_fields, *body_fields, *names),
            body_paths=(*self.body_paths, *body_paths),
            values=(*self.values, *values),
        )

    def request(self, request: Request) -> tuple[Request, list[str]]:
        """The request with secrets replaced, and the secret values found (to hunt echoes of)."""
        secrets: list[str] = list(self.values)
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
        """The URL with secret query parameters, key-like path segments and userinfo replaced."""
        return self._url(url, [])

    def response_secrets(self, headers: Mapping[str, str], chunks: Iterable[Chunk]) -> list[str]:
        """The secrets a JSON response body carries (an OAuth token response's `access_token`,
        a Realtime `client_secret`), by the body-field rules, to be replaced as echoes
        (`scrub_interaction`, over the joined reads). Event streams are left to the echo hunt:
        a secret-named field there is a tool call's argument, split across reads."""
        media = (header(headers, "content-type") or "").split(";")[0].strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            return []
        try:
            body = bounded.loads(b"".join(chunk.data for chunk in chunks), MAX_JSON_DEPTH)
        except (ValueError, RecursionError):
            return []
        found: list[str] = []
        self._json_fields(body, found)
        return found

    def is_secret_header(self, name: str) -> bool:
        """Whether a header of this name carries a secret."""
        key = normal_name(name)
        return key in self._header_names or (self.suffixes and key.endswith(HEADER_SUFFIXES))

    def is_secret_param(self, name: str) -> bool:
        """Whether a query parameter of this name carries a secret."""
        key = normal_name(name)
        return key in self._param_names or (self.suffixes and key.endswith(QUERY_SUFFIXES))

    def is_secret_field(self, name: str) -> bool:
        """Whether a body field (JSON at any depth, form, multipart) of this name carries a secret."""
        key = normal_name(name)
        return key in self._field_names or (self.suffixes and key.endswith(SECRET_SUFFIXES))

    def _headers(self, headers: Mapping[str, str], secrets: list[str]) -> dict[str, str]:
        out = {
            key: _take_secret(value, secrets) if value and self.is_secret_header(key) else value
            for key, value in headers.items()
        }
        for key, value in out.items():
            if key.lower() == "sec-websocket-protocol" and value != REDACTED:
                out[key] = _subprotocols(value, secrets)
        return out

    def _url(self, url: str, secrets: list[str]) -> str:
        """Each part redacted in place, the rest spelled as it was; parsed by hand, so no URL,
        however malformed (`http://[::1/x`), makes this raise."""
        scheme = url.find("://")
        start = scheme + 3 if scheme >= 0 and "/" not in url[:scheme] else 0
        found = _AFTER_NETLOC.search(url, start)
        end = found.start() if found else len(url)
        if start == 0:
            end = 0  # no `scheme://`: all of it is path
        netloc = url[start:end]
        rest, hash_, fragment = url[end:].partition("#")
        path, question, query = rest.partition("?")
        if self.userinfo and "@" in netloc:
            userinfo, _, host = netloc.rpartition("@")
            user, colon, password = userinfo.partition(":")
            hidden = [_take_secret(unquote(user), secrets)]
            if colon:
                hidden.append(_take_secret(unquote(password), secrets))
            netloc = f"{':'.join(hidden)}@{host}"
        if self.path_keys:
            path = "/".join(self._path_segment(segment, secrets) for segment in path.split("/"))
        if question:
            query = "&".join(self._query_piece(piece, secrets) for piece in query.split("&"))
        return f"{url[:start]}{netloc}{path}{question}{query}{hash_}{fragment}"

    def _path_segment(self, segment: str, secrets: list[str]) -> str:
        parts = segment.split(":")  # `/models/<name>:streamGenerateContent`
        for i, part in enumerate(parts):
            if looks_like_key(unquote(part)):
                parts[i] = _take_secret(unquote(part), secrets)
        return ":".join(parts)

    def _query_piece(self, piece: str, secrets: list[str]) -> str:
        name, equals, value = piece.partition("=")
        if equals and value and self.is_secret_param(unquote_plus(name)):
            return f"{name}={_take_secret(unquote_plus(value), secrets)}"
        return piece

    def _body(self, body: Any, content_type: str, secrets: list[str]) -> Any:
        if isinstance(body, dict | list):
            for path in self._parsed_paths:
                body = rewrite_path(body, path, lambda value: _take_secret(value, secrets))
            return self._json_fields(body, secrets)
        if not isinstance(body, str):
            return body
        media = content_type.split(";")[0].strip().lower()
        if media == "application/x-www-form-urlencoded":
            return "&".join(self._form_piece(piece, secrets) for piece in body.split("&"))
        boundary = re.search(r'boundary="?([^";]+)"?', content_type)
        if media == "multipart/form-data" and boundary:
            return self._multipart(body, boundary.group(1), secrets)
        if body.lstrip()[:1] in ("{", "["):
            return self._json_text(body, secrets)  # JSON kept as text: too deep, or a lone surrogate
        return body

    def _json_fields(self, value: Any, secrets: list[str]) -> Any:
        """A copy of parsed JSON with every secret-named scalar replaced (containers copied only
        where something changed). Parsed bodies nest at most `MAX_BODY_DEPTH` levels."""
        if isinstance(value, str):
            return _take_secret(value, secrets) if self.path_keys and key_shaped(value) else value
        if isinstance(value, dict):
            out: dict[Any, Any] | None = None
            for key, child in value.items():
                secret_named = isinstance(key, str) and self.is_secret_field(key)
                if secret_named and _is_secret_scalar(child):
                    new = _take_secret(child, secrets)
                elif secret_named and isinstance(child, dict) and _is_secret_scalar(child.get("value")):
                    new = {**child, "value": _take_secret(child["value"], secrets)}  # `client_secret`
                else:
                    new = self._json_fields(child, secrets)
                if new is not child:
                    out = dict(value) if out is None else out
                    out[key] = new
            return value if out is None else out
        if isinstance(value, list):
            items: list[Any] | None = None
            for i, child in enumerate(value):
                new = self._json_fields(child, secrets)
                if new is not child:
                    items = list(value) if items is None else items
                    items[i] = new
            return value if items is None else items
        return value

    def _json_text(self, text: str, secrets: list[str]) -> str:
        """JSON text with every secret-named member's string or number value replaced, the rest
        spelled as it was; one linear pass over its string tokens."""
        cuts: list[tuple[int, int]] = []
        for token in _JSON_STRING.finditer(text):
            if not token.group(2) or (cuts and token.start() < cuts[-1][1]):
                continue  # an unterminated string, or the value just replaced
            colon = _JSON_COLON.match(text, token.end())
            if colon is None or not self.is_secret_field(_json_string(token.group(1))):
                continue
            value = _JSON_STRING.match(text, colon.end()) or _JSON_NUMBER.match(text, colon.end())
            if value is None:
                continue
            raw = value.group(0)
            secret = _json_string(value.group(1)) if raw.startswith('"') else raw
            if secret and secret != REDACTED:
                secrets.append(secret)
                cuts.append((value.start(), value.end()))
        if not cuts:
            return text
        pieces, pos = [], 0
        for begin, stop in cuts:
            pieces += [text[pos:begin], f'"{REDACTED}"']
            pos = stop
        pieces.append(text[pos:])
        return "".join(pieces)

    def _form_piece(self, piece: str, secrets: list[str]) -> str:
        name, equals, value = piece.partition("=")
        if equals and value and self.is_secret_field(unquote_plus(name)):
            return f"{name}={_take_secret(unquote_plus(value), secrets)}"
        return piece

    def _multipart(self, body: str, boundary: str, secrets: list[str]) -> str:
        """A multipart body with the content of each secret-named part redacted."""
        delimiter = f"--{boundary}"
        parts = body.split(delimiter)
        for i, part in enumerate(parts[1:], start=1):
            head, sep, content = part.partition("\r\n\r\n")
            if not sep:
                head, sep, content = part.partition("\n\n")
            found = _PART_NAME.search(head)
            if sep and found and self.is_secret_field(found.group(1)):
                # The part's content ends before the CRLF that precedes the next delimiter.
                value, newline = (content[:-2], "\r\n") if content.endswith("\r\n") else (content, "")
                parts[i] = f"{head}{sep}{_take_secret(value, secrets)}{newline}"
        return delimiter.join(parts)


Redaction.DEFAULT = Redaction()
Redaction.OFF = Redaction(
    headers=(), query_params=(), body_fields=(), suffixes=False, path_keys=False, userinfo=False
)

MAX_JSON_DEPTH: Final = 64  # what a cassette keeps parsed (`format.MAX_BODY_DEPTH`)
_AFTER_NETLOC = re.compile(r"[/?#]")
_PART_NAME = re.compile(r'content-disposition:[^\r\n]*\bname="([^"]*)"', re.IGNORECASE)
# A JSON string token; the closing quote is optional so an unterminated one ends the scan in one go.
_JSON_STRING = re.compile(r'"((?:[^"\\]|\\.)*)("?)', re.DOTALL)
_JSON_COLON = re.compile(r"\s*:\s*")
_JSON_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def _json_string(inner: str) -> str:
    """The text of a JSON string token's inside, escapes decoded (as written when they are bad)."""
    if "\\" not in inner:
        return inner
    try:
        decoded = json.loads(f'"{inner}"')
    except ValueError:
        return inner
    return decoded if isinstance(decoded, str) else inner


def _is_secret_scalar(value: Any) -> bool:
    """A value a secret-named field may hold: text or a number (not an object, null or a flag)."""
    if isinstance(value, str):
        return bool(value) and value != REDACTED
    return isinstance(value, int | float) and not isinstance(value, bool)


def _subprotocols(value: str, secrets: list[str]) -> str:
    """A WebSocket handshake's subprotocols with the keys some carry replaced: a browser cannot set
    `Authorization`, so the Realtime API takes `openai-insecure-api-key.<key>` (and an ephemeral
    `ek_` key) as a subprotocol."""
    out = []
    for token in value.split(","):
        name, dot, rest = token.strip().partition(".")
        if dot and key_shaped(rest):
            secrets.append(rest)
            out.append(f"{name}.{REDACTED}")
        elif key_shaped(token.strip()):
            out.append(_take_secret(token.strip(), secrets))
        else:
            out.append(token.strip())
    return ", ".join(out)


def _take_secret(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str) and value != REDACTED:
        secrets.append(value)
    elif value is not None and not isinstance(value, str):
        secrets.append(str(value))
    return REDACTED


# ---------------------------------------------------------------------------------------------
# Echoes: every other copy of a redacted value, wherever it is saved


def echo_forms(secrets: Iterable[str]) -> list[str]:
    """The strings to hunt for, longest first: each secret (8 characters or more, or named by
    the user) raw, JSON-escaped, fully `\\u`-escaped, URL-encoded and base64-encoded (`_encodings`);
    the token of `Bearer <token>` forms and the user and password of `Basic <base64>` too."""
    values: dict[str, bool] = {}  # value -> named by the user
    for secret in secrets:
        named = isinstance(secret, NamedSecret)
        candidates = [str(secret), *_credential_parts(secret)]
        for value in candidates:
            values[value] = values.get(value, False) or named
    forms: set[str] = set()
    for value, named in values.items():
        if value and (named or len(value) >= _SHORTEST_ECHO):
            forms |= _encodings(value)
    forms.discard("")
    return sorted(forms, key=len, reverse=True)


def _encodings(value: str) -> set[str]:
    """Every spelling of `value` the rules hunt."""
    escaped = json.dumps(value)[1:-1]
    forms = {
        value,
        escaped,
        escaped.replace("/", "\\/"),
        json.dumps(value, ensure_ascii=False)[1:-1],
        quote(value, safe=""),
        quote(value),
        quote_plus(value, safe=""),
    }
    forms |= {_PERCENT.sub(lambda m: m.group(0).lower(), form) for form in forms if "%" in form}
    units = value.encode("utf-16-be", "surrogatepass")
    codes = [int.from_bytes(units[i : i + 2], "big") for i in range(0, len(units), 2)]
    forms.add("".join(f"\\u{code:04x}" for code in codes))
    forms.add("".join(f"\\u{code:04X}" for code in codes))
    forms |= _base64_forms(value.encode("utf-8", "surrogatepass"))
    return forms


_PERCENT = re.compile(r"%[0-9A-F]{2}")


def _base64_forms(raw: bytes) -> set[str]:
    """`raw` base64-encoded, standard and URL-safe, padded and not; and the characters that encode
    only `raw`'s bits at each of the three alignments, which catch it inside a longer encoded text
    (`base64("user:" + key)`)."""
    out: set[str] = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        whole = encode(raw).decode("ascii")
        out |= {whole, whole.rstrip("=")}
        for shift in (0, 1, 2):
            text = encode(b"\0" * shift + raw).decode("ascii")
            core = text[-(-8 * shift // 6) : 8 * (shift + len(raw)) // 6]
            if len(core) >= _SHORTEST_ECHO:
                out.add(core)
    return out


def _credential_parts(secret: str) -> list[str]:
    """What an `Authorization` value's parts are echoed as without its scheme word: the token of
    `Bearer <token>`, the user and password of `Basic <base64>`, and of a SigV4
    `AWS4-HMAC-SHA256 Credential=AKIA.../..., SignedHeaders=..., Signature=...` everything after
    the scheme word, each `name=value` and value, and the access key id."""
    scheme, _, rest = secret.strip().partition(" ")
    rest = rest.strip()
    if not rest:
        return []
    if scheme.lower() == "basic":
        return [rest, *_basic_credentials(rest)]
    parts = [rest]
    for piece in rest.split(","):
        name, equals, value = piece.strip().partition("=")
        if equals and value and name.lower() != "signedheaders":
            parts += [piece.strip(), value, value.split("/")[0]]
    return parts


def _basic_credentials(token: str) -> list[str]:
    try:
        decoded = base64.b64decode(token, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
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
    # A substring test per form runs at memory speed; the (slower) regex sees only forms present.
    present = [form for form in (e.encode("utf-8", "surrogatepass") for e in echoes) if form in joined]
    if not present:
        return chunks
    pattern = re.compile(b"|".join(re.escape(form) for form in present))
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


def scrub_frames(chunks: list[Chunk], secrets: Iterable[str]) -> list[Chunk]:
    """A WebSocket session's frames (`application/x-websocket-frames`) with every echo replaced
    in each frame's payload, each frame written again with its new length (replacing bytes in the
    joined reads would break the framing); each read then holds the frames it completed, a frame
    cut off at the end stays as it came."""
    echoes = echo_forms(secrets)
    joined = b"".join(chunk.data for chunk in chunks)
    forms = [form for form in (e.encode("utf-8", "surrogatepass") for e in echoes) if form in joined]
    if not forms:
        return chunks
    pattern = re.compile(b"|".join(re.escape(form) for form in forms))
    frames, tail = split_frames(joined)
    out: list[Chunk] = []
    at = read_end = 0
    reads = iter(chunks)
    current: Chunk | None = None
    pieces: list[bytes] = []
    for end, data in frames:
        while read_end < end:  # the read this frame is completed in
            if current is not None and pieces:
                out.append(Chunk(b"".join(pieces), current.offset_ms))
                pieces = []
            current = next(reads)
            read_end += len(current.data)
        pieces.append(reframe(data, lambda payload: pattern.sub(REDACTED.encode("ascii"), payload)))
        at = end
    rest = joined[at:]
    if tail and rest:
        pieces.append(rest)  # a frame cut off: its bytes as they came, but for any echo in them
        pieces[-1] = pattern.sub(REDACTED.encode("ascii"), pieces[-1])
    last = current or (chunks[-1] if chunks else None)
    if pieces and last is not None:
        out.append(Chunk(b"".join(pieces), last.offset_ms))
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
    framed = (response.content_type or "").split(";")[0].strip().lower() == STREAM_CONTENT_TYPES["websocket"]
    response.chunks = (scrub_frames if framed else scrub_chunks)(response.chunks, secrets)
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
