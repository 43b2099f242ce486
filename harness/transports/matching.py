"""Which recorded interaction answers a request: method, URL parts and JSON body, compared as values.

`match_on` names what is compared: `method`, `scheme`, `host`, `port`, `path`, `query`, `url`
(all five URL parts), `body`, or `body.<path>` (only that field of a JSON body). The query
compares as a multiset (order-free). A JSON body compares as a JSON value (key order and spacing
never matter). `ignore_fields` takes the names a miss message prints: `url.port`, `url.host`,
`url.query.<name>`, `body.<path>` (a bare dotted path such as `metadata.user_id` is a body path).
A recorded `REDACTED` matches any value, so a live secret matches its redacted recording. When
nothing matches, `explain` names the closest recorded interaction and what differs.
"""

from __future__ import annotations

import difflib
from collections.abc import Container, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import parse_qsl, urlsplit

from harness import bounded
from harness.cassettes.format import Interaction, Request
from harness.errors import NoMatchError, UsageError
from harness.transports.modes import MATCH_FIELDS, MATCH_NAMES, URL_PARTS
from harness.transports.redaction import DROP, REDACTED, JsonPath, parse_path, rewrite_path
from harness.transports.volatile import LOOPBACK_HOSTS

_DEFAULT_PORTS: Final = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_SHOWN_DIFFERENCES = 3
ANY_PORT: Final = -1  # a loopback URL written without a port (see transports.volatile): any port matches


class _Absent:
    def __repr__(self) -> str:
        return "absent"


ABSENT: Final = _Absent()


@dataclass(frozen=True, slots=True)
class FieldMismatch:
    """One way a sent request differs from a recorded one, e.g. `body.model`."""

    where: str
    recorded: Any
    sent: Any

    def __str__(self) -> str:
        return f"{self.where}: {_show(self.recorded)} recorded, {_show(self.sent)} sent"


@dataclass(frozen=True, slots=True)
class Normalized:
    """A request reduced to what matching compares; build with `Matcher.normalize`."""

    method: str | None
    url: _Url | None
    body: Any


@dataclass(frozen=True, slots=True)
class _Url:
    """The URL parts a matcher compares; a part not compared is None."""

    scheme: str | None
    host: str | None
    port: int | None
    path: str | None
    query: dict[str, list[str]] | None


@dataclass(frozen=True, slots=True)
class Matcher:
    """Compares requests on `match_on` (see the module doc), ignoring `ignore_fields`.

    An unknown name in either raises `UsageError` naming it; `check_ignored` checks body paths
    against recorded requests (a path no recorded body has ignores nothing: a typo).
    """

    match_on: tuple[str, ...] = MATCH_FIELDS
    ignore_fields: tuple[str, ...] = ()
    _parts: frozenset[str] = field(init=False, repr=False, compare=False)
    _body_fields: tuple[JsonPath, ...] = field(init=False, repr=False, compare=False)
    _ignored: tuple[JsonPath, ...] = field(init=False, repr=False, compare=False)
    _ignored_url: frozenset[str] = field(init=False, repr=False, compare=False)
    _ignored_query: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.match_on, str):
            object.__setattr__(self, "match_on", (self.match_on,))
        if isinstance(self.ignore_fields, str):
            object.__setattr__(self, "ignore_fields", (self.ignore_fields,))
        parts: set[str] = set()
        body_fields: list[JsonPath] = []
        for name in self.match_on:
            if name == "url":
                parts.update(URL_PARTS)
            elif name in MATCH_NAMES:
                parts.add(name)
            elif name.startswith("body.") or name.startswith("body["):
                body_fields.append(_body_path(name, "match_on"))
            else:
                raise UsageError(
                    f"match_on: cannot match on {name!r}{_suggest(name, MATCH_NAMES)}; "
                    f"choose from {', '.join(MATCH_NAMES)} or body.<field>"
                )
        if body_fields and "body" in parts:
            body_fields = []  # the whole body is compared anyway
        ignored: list[JsonPath] = []
        ignored_url: set[str] = set()
        ignored_query: set[str] = set()
        for name in self.ignore_fields:
            if name.startswith("url."):
                part = name[4:]
                if part.startswith("query."):
                    ignored_query.add(part[6:])
                elif part in URL_PARTS:
                    ignored_url.add(part)
                else:
                    known = [f"url.{p}" for p in URL_PARTS] + ["url.query.<name>"]
                    raise UsageError(
                        f"ignore_fields: no such field {name!r}{_suggest(name, known)}; "
                        f"choose from {', '.join(known)}, body.<field>"
                    )
            elif name in MATCH_NAMES:
                raise UsageError(
                    f"ignore_fields: {name!r} is a whole part of the request; "
                    "leave it out of match_on instead"
                )
            else:
                ignored.append(_body_path(name, "ignore_fields"))
        object.__setattr__(self, "match_on", tuple(self.match_on))
        object.__setattr__(self, "ignore_fields", tuple(self.ignore_fields))
        object.__setattr__(self, "_parts", frozenset(parts))
        object.__setattr__(self, "_body_fields", tuple(body_fields))
        object.__setattr__(self, "_ignored", tuple(ignored))
        object.__setattr__(self, "_ignored_url", frozenset(ignored_url))
        object.__setattr__(self, "_ignored_query", frozenset(ignored_query))

    def check_ignored(self, recorded: Sequence[Request], where: str) -> None:
        """Raise `UsageError` for an ignored body field that no recorded request body has."""
        if not recorded:
            return  # nothing recorded yet: nothing to check against
        bodies = [_body_value(request.body) for request in recorded]
        for name, path in zip(
            [n for n in self.ignore_fields if not n.startswith("url.")], self._ignored, strict=True
        ):
            if not any(_has_path(body, path) for body in bodies):
                names = sorted({f"body.{key}" for body in bodies if isinstance(body, dict) for key in body})
                raise UsageError(
                    f"ignore_fields: {name!r} is in no recorded request body of {where}"
                    f"{_suggest(name if name.startswith('body') else f'body.{name}', names)}"
                )

    def normalize(self, request: Request) -> Normalized:
        """The parts of `request` this matcher compares, ready for `same` and `differences`."""
        method = request.method.upper() if "method" in self._parts else None
        url = None
        if self._parts & set(URL_PARTS):
            whole = _split_url(request.url)
            keep = self._parts - self._ignored_url
            query = None
            if "query" in keep and whole.query is not None:
                query = {k: v for k, v in whole.query.items() if k not in self._ignored_query}
            url = _Url(
                scheme=whole.scheme if "scheme" in keep else None,
                host=whole.host if "host" in keep else None,
                port=whole.port if "port" in keep else None,
                path=whole.path if "path" in keep else None,
                query=query,
            )
        body = None
        if "body" in self._parts or self._body_fields:
            body = _body_value(request.body)
            for path in self._ignored:
                body = rewrite_path(body, path, lambda _: DROP)
            if self._body_fields:
                body = {_show_path(p): _get_path(body, p) for p in self._body_fields}
        return Normalized(method, url, body)

    def same(self, recorded: Normalized, sent: Normalized) -> bool:
        """Whether a recorded request answers a sent one."""
        if recorded.method != sent.method:
            return False
        if recorded.url != sent.url and not (
            recorded.url is not None and sent.url is not None and not _url_differences(recorded.url, sent.url)
        ):
            return False
        return _same(recorded.body, sent.body)

    def differences(self, recorded: Normalized, sent: Normalized) -> list[FieldMismatch]:
        """Every way `sent` differs from `recorded` (empty when they match)."""
        out: list[FieldMismatch] = []
        if recorded.method != sent.method:
            out.append(FieldMismatch("method", recorded.method, sent.method))
        if recorded.url is not None and sent.url is not None:
            out.extend(_url_differences(recorded.url, sent.url))
        _body_differences(recorded.body, sent.body, "body", out)
        return out

    def explain(
        self,
        sent: Request,
        interactions: Sequence[Interaction],
        played: Container[int],
        where: str,
        normalized: Sequence[Normalized] | None = None,
    ) -> NoMatchError:
        """The error for an unanswered request: the closest recorded interaction and how it differs.

        `normalized` may hold the interactions' requests already normalized (same order).
        """
        head = f"no recorded interaction for {sent.method} {sent.url} in {where}"
        if not interactions:
            return NoMatchError(f"{head}; the cassette has no interactions")
        mine = self.normalize(sent)
        recorded = normalized or [self.normalize(item.request) for item in interactions]
        scored = [
            (len(diffs), i, diffs) for i, diffs in enumerate(self.differences(r, mine) for r in recorded)
        ]
        _, best, diffs = min(scored, key=lambda item: (item[0], item[1] in played, item[1]))
        request = interactions[best].request
        closest = f"closest is #{best + 1} {request.method} {_path_of(request.url)}"
        if not diffs:
            return NoMatchError(f"{head}; {closest}, which matches but was already played (each plays once)")
        shown = "; ".join(str(diff) for diff in diffs[:_SHOWN_DIFFERENCES])
        more = f"; and {len(diffs) - _SHOWN_DIFFERENCES} more" if len(diffs) > _SHOWN_DIFFERENCES else ""
        return NoMatchError(f"{head}; {closest}, which differs in {shown}{more}")


# ---------------------------------------------------------------------------------------------
# URL


def _split_url(url: str) -> _Url:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # a malformed port compares as absent rather than crashing the match
        port = None
    query: dict[str, list[str]] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        query.setdefault(name, []).append(value)
    for values in query.values():
        values.sort()
    host = (parts.hostname or "").lower()
    if port is None:
        port = ANY_PORT if host in LOOPBACK_HOSTS else _DEFAULT_PORTS.get(scheme)
    return _Url(
        scheme=scheme,
        host=host,
        port=port,
        path=parts.path or "/",
        query=query,
    )


def _url_differences(recorded: _Url, sent: _Url) -> list[FieldMismatch]:
    out = [
        FieldMismatch(f"url.{name}", getattr(recorded, name), getattr(sent, name))
        for name in ("scheme", "host", "port", "path")
        if getattr(recorded, name) != getattr(sent, name)
        and not (
            name == "port" and (_default_ports(recorded, sent) or ANY_PORT in (recorded.port, sent.port))
        )
    ]
    if recorded.query is None or sent.query is None:
        return out
    for name in [*recorded.query, *(key for key in sent.query if key not in recorded.query)]:
        mine, theirs = recorded.query.get(name, []), sent.query.get(name, [])
        if not _same_values(mine, theirs):
            out.append(FieldMismatch(f"url.query.{name}", _one_or_all(mine), _one_or_all(theirs)))
    return out


def _default_ports(recorded: _Url, sent: _Url) -> bool:
    """Both ports are their scheme's default: only the scheme is worth naming."""
    if recorded.scheme is None or sent.scheme is None:
        return False
    return recorded.port == _DEFAULT_PORTS.get(recorded.scheme) and sent.port == _DEFAULT_PORTS.get(
        sent.scheme
    )


def _same_values(recorded: list[str], sent: list[str]) -> bool:
    """Multiset equality where each recorded `REDACTED` stands for any one value."""
    if recorded == sent:
        return True
    if len(recorded) != len(sent):
        return False
    rest = list(sent)
    wildcards = 0
    for value in recorded:
        if value == REDACTED:
            wildcards += 1
        elif value in rest:
            rest.remove(value)
        else:
            return False
    return len(rest) == wildcards


def _one_or_all(values: list[str]) -> Any:
    if not values:
        return ABSENT
    return values[0] if len(values) == 1 else values


def _path_of(url: str) -> str:
    return urlsplit(url).path or "/"


# ---------------------------------------------------------------------------------------------
# Body


def _body_value(body: Any) -> Any:
    """JSON text in a `str` body compares as JSON too; empty bodies compare as None."""
    if body == "" or body == b"":
        return None
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    if isinstance(body, str) and body.lstrip()[:1] in ("{", "["):
        try:
            return bounded.loads(body)
        except ValueError:  # not JSON, or nested too deep to parse: compared as text
            return body
    return body


def _same(recorded: Any, sent: Any) -> bool:
    if recorded in (sent, REDACTED):
        return True
    if isinstance(recorded, dict) and isinstance(sent, dict):
        return recorded.keys() == sent.keys() and all(_same(recorded[key], sent[key]) for key in recorded)
    if isinstance(recorded, list) and isinstance(sent, list):
        return len(recorded) == len(sent) and all(_same(a, b) for a, b in zip(recorded, sent, strict=True))
    return False


def _body_differences(recorded: Any, sent: Any, where: str, out: list[FieldMismatch]) -> None:
    if _same(recorded, sent):
        return
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in [*recorded, *(key for key in sent if key not in recorded)]:
            _body_differences(recorded.get(key, ABSENT), sent.get(key, ABSENT), f"{where}.{key}", out)
    elif isinstance(recorded, list) and isinstance(sent, list):
        for i in range(max(len(recorded), len(sent))):
            mine = recorded[i] if i < len(recorded) else ABSENT
            theirs = sent[i] if i < len(sent) else ABSENT
            _body_differences(mine, theirs, f"{where}[{i}]", out)
    else:
        out.append(FieldMismatch(where, recorded, sent))


def _body_path(name: str, option: str) -> JsonPath:
    """`body.a.b` or a bare `a.b` as a JSON path into the body."""
    text = name[5:] if name.startswith("body.") else name[4:] if name.startswith("body[") else name
    try:
        return parse_path(text)
    except UsageError as exc:
        raise UsageError(f"{option}: {exc}") from None


def _show_path(path: JsonPath) -> str:
    return ".".join(str(step) for step in path)


def _get_path(value: Any, path: JsonPath) -> Any:
    for step in path:
        here = isinstance(step, str) and isinstance(value, dict) and step in value
        if here or (isinstance(step, int) and isinstance(value, list) and -len(value) <= step < len(value)):
            value = value[step]
        elif not isinstance(step, str | int) and isinstance(value, list):  # `[*]`: every element
            rest = path[path.index(step) + 1 :]
            return [_get_path(item, rest) for item in value]
        else:
            return ABSENT
    return value


def _has_path(value: Any, path: JsonPath) -> bool:
    found = _get_path(value, path)
    if isinstance(found, list) and path and not isinstance(path[-1], str | int):
        return bool(found)
    return found is not ABSENT


def _suggest(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
