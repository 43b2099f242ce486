"""JSON text parsed only when it nests no deeper than `MAX_DEPTH`: the one guard for every JSON a
hostile file or stream gives us (event data, cassette bodies, tool-call arguments); and a file
read only up to a size (`read`), whatever it is (a device or a pipe never ends).

Python's JSON parser recurses once per level, and so do `copy.deepcopy`, `json.dumps`, pickling,
YAML dumping and our own comparisons of what it returns (two or three frames a level). Text
nested 2,000 levels deep is a `RecursionError` somewhere far from the file that held it; here it
is refused before parsing, by a linear scan. `MAX_DEPTH` is generous for real payloads (an event
wraps its tool arguments in about six levels; real arguments rarely nest ten) and keeps every
later recursion well inside the interpreter's limit of 1,000 frames, even below pytest's stack.
"""

from __future__ import annotations

import json
import os
import re
import stat
from itertools import accumulate
from pathlib import Path
from typing import Any, Final

__all__ = ["MAX_DEPTH", "TooDeep", "TooLarge", "depth", "loads", "read"]

MAX_DEPTH: Final = 100

# A JSON string, escapes included (unrolled: no backtracking); what is left holds no quote.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class TooDeep(ValueError):
    """JSON text nested deeper than the limit: refused, not parsed. A `ValueError`, so a caller
    that treats text that does not parse as "not JSON" treats this text so too."""

    def __init__(self, found: int, limit: int) -> None:
        self.found = found
        self.limit = limit
        super().__init__(f"JSON nested {found} levels deep, over the {limit} allowed")


def depth(text: str | bytes, limit: int = MAX_DEPTH) -> int:
    """How deep the brackets of `text` nest outside strings (an upper bound of what a parser
    would build, for text that is not JSON too). Linear, in C: most text has fewer brackets than
    `limit` in all and is not scanned at all (the answer is then at most that count)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    opened = text.count("[") + text.count("{")
    if opened <= limit:
        return opened
    steps = map(_STEP.__getitem__, _BRACKETS.findall(_STRING.sub("", text)))
    return max(accumulate(steps, initial=0))


def loads(text: str | bytes, limit: int = MAX_DEPTH) -> Any:
    """`json.loads(text)` for text nested at most `limit` levels, else `TooDeep` (a `ValueError`)."""
    found = depth(text, limit)
    if found > limit:
        raise TooDeep(found, limit)
    return json.loads(text)


class TooLarge(ValueError):
    """A file over the size its reader allows: refused after reading one byte over, never whole."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"over the {limit:,} bytes allowed")


def read(path: str | os.PathLike[str], limit: int) -> bytes:
    """The file's bytes, `TooLarge` past `limit`; a missing or unreadable file raises its `OSError`.
    Not `read(limit)` alone: that asks for the whole limit at once (256 MB a cassette)."""
    with open(Path(path), "rb") as handle:
        status = os.fstat(handle.fileno())
        if stat.S_ISREG(status.st_mode) and status.st_size <= limit:
            data = handle.read(status.st_size + 1)  # the one byte over: a file that grew
            if len(data) > status.st_size:
                data += handle.read(limit + 1 - len(data))
        else:  # a device or a pipe (`/dev/zero`) says no size: at most one byte over the limit
            data = handle.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(limit)
    return data
