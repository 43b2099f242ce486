"""What strangers give us, read within bounds: every file we read (`read`, and `read_input` /
`read_json` for a command's inputs, their failures one `UsageError`), and JSON text parsed only
when it nests no deeper than `MAX_DEPTH` (`loads`): the one guard for every JSON a hostile file
or stream gives us (event data, cassette bodies, tool-call arguments, reports). YAML within
bounds is `harness.bounded.yaml`, imported only where YAML is read.

Python's JSON parser recurses once per level, and so do `copy.deepcopy`, `json.dumps`, pickling,
YAML dumping and our own comparisons of what it returns (two or three frames a level). Text
nested 2,000 levels deep is a `RecursionError` somewhere far from the file that held it; here it
is refused before parsing, by a linear scan. `MAX_DEPTH` is generous for real payloads (an event
wraps its tool arguments in about six levels; real arguments rarely nest ten) and keeps every
later recursion well inside the interpreter's limit of 1,000 frames, even below pytest's stack.
"""

from __future__ import annotations

import errno
import json
import os
import re
import select
import stat
from itertools import accumulate
from typing import Any, Final, NoReturn

from harness.errors import UsageError

__all__ = ["MAX_DEPTH", "WAIT", "TooDeep", "TooLarge", "depth", "loads", "read", "read_input", "read_json"]

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


def loads(text: str | bytes, limit: int = MAX_DEPTH, *, finite: bool = False) -> Any:
    """`json.loads(text)` for text nested at most `limit` levels, else `TooDeep` (a `ValueError`).
    `finite`: `NaN` and `Infinity`, which Python reads but JSON does not have, are a `ValueError`
    too (a file of ours never holds them, so one that does was not written by us)."""
    found = depth(text, limit)
    if found > limit:
        raise TooDeep(found, limit)
    if finite:
        return json.loads(text, parse_constant=_not_json)
    return json.loads(text)


def _not_json(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON value")


class TooLarge(ValueError):
    """A file over the size its reader allows: refused after reading one byte over, never whole."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"over the {limit:,} bytes allowed")


# How long a pipe (a FIFO, `<(...)`, a socket) may keep its reader waiting for its next bytes, or
# for a writer to open it at all: then it is refused as one that never delivers.
WAIT = 10.0
_CHUNK: Final = 1 << 20


def read(path: str | os.PathLike[str], limit: int, *, wait: float | None = None) -> bytes:
    """The file's bytes, `TooLarge` past `limit`: the one reader of every file we read.

    A regular file is read within its size and the limit (not `read(limit)`: that asks for the
    whole limit at once, 256 MB a cassette). A pipe is read as it delivers, each read within `wait`
    seconds (`WAIT` by default; a FIFO with no writer is not waited on for ever). A device
    (`/dev/zero`, a terminal) is refused: it says no size and may never end. A missing or
    unreadable file, a folder, a symlink loop or a file the kernel will not read (`/proc/self/mem`)
    raises its `OSError`, whose `strerror` says why in a few words.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO opens without its writer
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "a folder, not a file", os.fspath(path))
        if stat.S_ISREG(mode):
            os.set_blocking(fd, True)
            data = _regular(fd, limit)
        elif stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            data = _pipe(fd, limit, WAIT if wait is None else wait, path)
        else:
            raise OSError(errno.ENODEV, "a device, not a file", os.fspath(path))
    finally:
        os.close(fd)
    if len(data) > limit:
        raise TooLarge(limit)
    return data


def _regular(fd: int, limit: int) -> bytes:
    size = os.fstat(fd).st_size
    with open(fd, "rb", closefd=False) as handle:
        if size > limit:
            return handle.read(limit + 1)
        data = handle.read(size + 1)  # the one byte over: a file that grew (or `/proc`, size 0)
        if len(data) > size:
            data += handle.read(limit + 1 - len(data))
        return data


def _pipe(fd: int, limit: int, wait: float, path: str | os.PathLike[str]) -> bytes:
    parts: list[bytes] = []
    got = 0
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while got <= limit:
        # Linux reports no hang-up for a FIFO no writer has opened yet: the wait covers that too.
        if not poller.poll(wait * 1000):
            message = f"nothing to read for {wait:g} s (a pipe with no writer?)"
            raise OSError(errno.ETIMEDOUT, message, os.fspath(path))
        try:
            part = os.read(fd, min(_CHUNK, limit + 1 - got))
        except BlockingIOError:
            continue
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def read_input(path: str | os.PathLike[str], limit: int, what: str = "a file") -> bytes:
    """`read` for a command's input: every failure is one `UsageError` naming the path."""
    where = os.fspath(path)
    try:
        return read(path, limit)
    except TooLarge:
        raise UsageError(f"{where}: over the {limit:,} bytes {what} may have") from None
    except FileNotFoundError:
        raise UsageError(f"{where}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{where}: cannot read: {exc.strerror or exc}") from None


def read_json(path: str | os.PathLike[str], limit: int, what: str = "a JSON file") -> Any:
    """A JSON file as data (`read_input`, then `loads` with `finite`): a file that is not JSON,
    is not UTF-8 or nests too deep is one `UsageError` naming it."""
    data = read_input(path, limit, what)
    try:
        return loads(data, finite=True)
    except (ValueError, RecursionError) as exc:
        reason = " ".join(str(exc).split())[:200]
        raise UsageError(f"{os.fspath(path)}: not {what} ({reason})") from None
