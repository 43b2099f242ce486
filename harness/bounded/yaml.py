"""YAML from strangers read within bounds: `compose_safe` (nodes, nothing built yet) and
`plain_data` (`yaml.safe_load` with the same refusals), the one YAML reader of every file we read
(cassettes, scenarios, VCR imports).

Bounded before anything is built: text over `MAX_CHARS`, an alias or anchor, a tag outside the
plain ones (`!!python/...` never), or nesting deeper than `MAX_DEPTH` is refused as one
`CassetteError` naming the file, the line and the field, so no file can hang, exhaust memory or
overflow the stack. Imported only where a YAML file is read: a `serve-accumulator` child never
pays for `yaml`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import yaml

from harness.bounded import MAX_DEPTH as JSON_DEPTH
from harness.errors import CassetteError, HarnessError

__all__ = [
    "MAX_CHARS",
    "MAX_DEPTH",
    "PLAIN_TAGS",
    "STR",
    "VALUE_ERRORS",
    "compose_safe",
    "field",
    "plain_data",
]

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_CHARS: Final = 256 * 1024 * 1024
# A cassette is ~10 levels deep; an expected outcome's arguments may nest `bounded.MAX_DEPTH` more
# (what a stream's arguments may), so a case written as a cassette reads back.
MAX_DEPTH: Final = JSON_DEPTH + 28
STR: Final = "tag:yaml.org,2002:str"
PLAIN_TAGS: Final = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp")
)
# What yaml's constructor raises besides ConstructorError for a tagged value it cannot build
# (`!!int x`: ValueError; `!!timestamp x`: AttributeError).
VALUE_ERRORS: Final = (ValueError, TypeError, AttributeError, ArithmeticError)
_NON_SPECIFIC = (None, "!")


def compose_safe(
    text: str | bytes, where: str | Path, *, tags: frozenset[str] | None = None, why: str | None = None
) -> yaml.Node | None:
    """YAML as nodes, nothing constructed yet: broken YAML, or a tag outside `tags` (plain data by
    default; `!!python/...` never), is one `CassetteError` naming the line and the field.

    Bounded before anything is built: text over `MAX_CHARS`, an alias or anchor, or nesting
    deeper than `MAX_DEPTH` is refused, so no file can hang, exhaust memory or overflow the stack.
    Bytes that are not UTF-8 are "not a UTF-8 text file".
    """
    if isinstance(text, bytes):
        # libyaml reads UTF-8 bytes itself: no decode to str for it to encode back (a quarter of
        # loading a big cassette). Its UTF-16 (by BOM) is not ours, and any failure is said
        # exactly as for the decoded text, below: failures are rare, parsing twice is cheap then.
        if len(text) <= MAX_CHARS and text[:2] not in _UTF16_BOMS:
            with contextlib.suppress(CassetteError, UnicodeDecodeError):
                return _compose(text, where, tags, why)
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise CassetteError(where, "not a UTF-8 text file") from None
    return _compose(text, where, tags, why)


_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _compose(
    text: str | bytes, where: str | Path, tags: frozenset[str] | None, why: str | None
) -> yaml.Node | None:
    if len(text) > MAX_CHARS:
        limit = f"{len(text):,} characters is over the {MAX_CHARS:,} a YAML file may have"
        raise CassetteError(where, limit)
    composer = _Composer(where, PLAIN_TAGS if tags is None else tags, why)
    try:
        return composer.compose(yaml.parse(text, Loader=_Loader))
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise CassetteError(where, f"broken YAML: {exc.problem}", line=line) from None
    except yaml.YAMLError as exc:
        raise CassetteError(where, f"broken YAML: {' '.join(str(exc).split())}") from None


def plain_data(
    text: str | bytes,
    where: str | Path,
    *,
    tags: frozenset[str] | None = None,
    why: str | None = None,
    error: Callable[[str], HarnessError] | None = None,
) -> Any:
    """`yaml.safe_load` with `compose_safe`'s bounds and refusals (None for an empty document).

    Failures are `CassetteError`s, or `error(message)` when given (a scenario file's own error).
    """
    try:
        node = compose_safe(text, where, tags=tags, why=why)
        if node is None:
            return None
        try:
            return yaml.constructor.SafeConstructor().construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:
            line = exc.problem_mark.line + 1 if exc.problem_mark else None
            raise CassetteError(where, f"cannot read value: {exc.problem}", line=line) from None
        except VALUE_ERRORS as exc:
            raise CassetteError(where, f"cannot read value: {str(exc)[:200]}") from None
    except CassetteError as exc:
        if error is None:
            raise
        raise error(str(exc)) from None


class _Composer:
    """yaml's composer without recursion, aliases or anchors, checking tags as nodes are made.

    Built from the parser's events with an explicit stack, so depth is capped as it is read
    (libyaml itself slows quadratically and its composer overflows the C stack on deep input).
    """

    def __init__(self, where: str | Path, tags: frozenset[str], why: str | None) -> None:
        self.where = where
        self.tags = tags
        self.why = why or "cassettes are plain data (safe YAML)"
        self.resolver = yaml.resolver.Resolver()
        self.plain: dict[str, str] = {}

    def fail(self, event: yaml.Event, path: str, message: str) -> CassetteError:
        line = event.start_mark.line + 1 if event.start_mark else None
        return CassetteError(self.where, message, field=path or None, line=line)

    def compose(self, events: Iterator[yaml.Event]) -> yaml.Node | None:
        # Each frame: the open container and (mappings) the key awaiting its value.
        stack: list[list[Any]] = []
        root: yaml.Node | None = None
        documents = 0
        for event in events:
            kind = type(event)
            if kind is yaml.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise self.fail(event, "", "more than one YAML document: a file holds exactly one")
                continue
            if kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                stack.pop()[0].end_mark = event.end_mark
                continue
            if kind not in _NODE_KINDS and kind is not yaml.AliasEvent:
                continue  # stream and document ends
            if kind is yaml.AliasEvent or event.anchor is not None:  # type: ignore[attr-defined]
                raise self.fail(
                    event,
                    _path(stack),
                    "YAML anchors and aliases (&name, *name) are refused: "
                    "this file never needs them, and an alias can expand without end",
                )
            node = self._node(event, stack)
            if stack:
                _attach(stack[-1], node)
            else:
                root = node
            if isinstance(node, yaml.CollectionNode):
                if len(stack) >= MAX_DEPTH:
                    message = f"nested deeper than {MAX_DEPTH} levels: refused (no cassette needs that)"
                    raise self.fail(event, "", message)
                stack.append([node, None])
        return root

    def _node(self, event: Any, stack: list[list[Any]]) -> yaml.Node:
        kind = _NODE_KINDS[type(event)]
        tag = event.tag
        if tag in _NON_SPECIFIC:
            if kind is yaml.ScalarNode and not event.implicit[0]:
                tag = STR  # quoted or a block: a string, whatever it reads like (the resolver's rule)
            elif kind is yaml.ScalarNode and len(event.value) <= _CACHED_PLAIN:
                # Plain scalars repeat (keys, small numbers): resolve each spelling once per file.
                tag = self.plain.get(event.value)
                if tag is None:
                    tag = self.plain[event.value] = self.resolver.resolve(kind, event.value, event.implicit)
            else:
                tag = self.resolver.resolve(kind, getattr(event, "value", None), event.implicit)
        if tag not in self.tags:
            raise self.fail(event, _path(stack), f"tag {tag!r} is refused: {self.why}")
        if kind is yaml.ScalarNode:
            return yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
        if kind is yaml.SequenceNode:
            return yaml.SequenceNode(tag, [], event.start_mark, None, flow_style=event.flow_style)
        return yaml.MappingNode(tag, [], event.start_mark, None, flow_style=event.flow_style)


_NODE_KINDS: dict[type, type[yaml.Node]] = {
    yaml.ScalarEvent: yaml.ScalarNode,
    yaml.SequenceStartEvent: yaml.SequenceNode,
    yaml.MappingStartEvent: yaml.MappingNode,
}
_CACHED_PLAIN = 32  # longer plain scalars rarely repeat


def _path(stack: list[list[Any]]) -> str:
    """The field path of the node about to be added under the innermost open container."""
    path = ""
    for depth, (node, key) in enumerate(stack):
        last = depth == len(stack) - 1
        if isinstance(node, yaml.SequenceNode):
            path = f"{path}[{len(node.value) - (0 if last else 1)}]"
        elif last and key is not None:
            path = field(path, str(getattr(key, "value", "")))
        elif not last and key is None:  # the container below is the value of the last key
            path = field(path, str(getattr(node.value[-1][0], "value", "")))
    return path


def _attach(frame: list[Any], node: yaml.Node) -> None:
    parent = frame[0]
    if isinstance(parent, yaml.SequenceNode):
        parent.value.append(node)
    elif frame[1] is None:
        frame[1] = node
    else:
        parent.value.append((frame[1], node))
        frame[1] = None


def field(path: str, name: str) -> str:
    """The field path `name` under `path` (`a.b`), as errors name it."""
    if not path:
        return name
    return f"{path}.{name}" if name else path
