"""JSON text parsed only when it nests no deeper than `MAX_DEPTH`: the one guard for every JSON a
hostile file or stream gives us (event data, cassette bodies, tool-call arguments).

Python's JSON parser recurses once per level, and so do `copy.deepcopy`, `json.dumps`, pickling,
YAML dumping and our own comparisons of what it returns (two or three frames a level). Text
nested 2,000 levels deep is a `RecursionError` somewhere far from the file that held it; here it
is refused before parsing, by a linear scan. `MAX_DEPTH` is generous for real payloads (an event
wraps its tool arguments in about six levels; real arguments rarely nest ten) and keeps every
later recursion well inside the interpreter's limit of 1,000 frames, even below pytest's stack.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any, Final

__all__ = ["MAX_DEPTH", "TooDeep", "depth", "loads"]

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
