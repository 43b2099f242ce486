"""What an accumulator prints while it runs one case: file descriptors 1 and 2, captured and bounded.

Redirecting the descriptors, not only `sys.stdout`, catches C extensions and child processes too.
One pipe and one reader thread per process serve every case (a thread per case would cost more
than a fast accumulator's whole case): the thread drains the pipe as it fills, the case reads the
rest when it ends, and the first and last `KEPT // 2` bytes are kept with a count of the rest, so
a flood costs neither memory nor a blocked writer. A child that outlives its case and writes on
is dropped (or, while a later case runs, read as part of it).
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
from collections import deque
from collections.abc import Iterator
from typing import Any, TextIO

__all__ = ["KEPT", "Captured", "captured_output"]

KEPT = 8 * 1024


class Captured:
    """The bytes a case wrote to stdout and stderr (interleaved as written), head and tail kept."""

    def __init__(self, kept: int = KEPT) -> None:
        self.half = kept // 2
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail.append(data)
            self.tail_size += len(data)
            while self.tail_size - len(self.tail[0]) >= self.half:
                self.tail_size -= len(self.tail.popleft())

    @property
    def text(self) -> str:
        """What was written, decoded; a line says how many bytes were dropped from the middle."""
        tail = b"".join(self.tail)[-self.half :] if self.tail else b""
        dropped = self.total - len(self.head) - len(tail)
        middle = f"\n[... {dropped:,} bytes of output dropped ...]\n" if dropped else ""
        return self.head.decode("utf-8", "replace") + middle + tail.decode("utf-8", "replace")


@contextlib.contextmanager
def captured_output(kept: int = KEPT) -> Iterator[Captured]:
    """Everything written to file descriptors 1 and 2 inside the block goes to the `Captured`.

    Not nested: an inner block (or one in another thread) yields an empty `Captured` and leaves
    the output to the outer one."""
    captured = Captured(kept)
    reader = _reader()
    if reader is None or not reader.claim(captured):
        yield captured
        return
    _flush()
    streams = sys.stdout, sys.stderr
    try:
        saved = (os.dup(1), os.dup(2))
    except OSError:  # no stdout or stderr to redirect (a daemon): nothing can reach a terminal
        reader.release()
        yield captured
        return
    try:
        os.dup2(reader.write_end, 1)
        os.dup2(reader.write_end, 2)
        # `sys.stdout` need not be descriptor 1 (pytest's capture, a notebook): print goes there too.
        sys.stdout, sys.stderr = _text_on(1, streams[0]), _text_on(2, streams[1])
        yield captured
    finally:
        _flush()
        sys.stdout, sys.stderr = streams
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
        reader.release()


class _Reader:
    """The process's capture pipe and the thread that drains it into the current `Captured`.

    Whoever reads the pipe holds `lock`: the thread while the case runs (so a writer never blocks
    on a full pipe), the case itself at its end (so what it wrote is all read, with no handoff)."""

    def __init__(self) -> None:
        self.read_end, self.write_end = os.pipe()
        os.set_blocking(self.read_end, False)
        self.lock = threading.Lock()
        self.current: Captured | None = None
        threading.Thread(target=self._drain, name="toolstream-capture", daemon=True).start()

    def claim(self, captured: Captured) -> bool:
        with self.lock:
            if self.current is not None:
                return False
            self._read(limit=_STRAY_READS)  # a stray child's writes since the last case
            self.current = captured
            return True

    def release(self) -> None:
        """Read everything the case wrote (it is in the pipe once the descriptors are back)."""
        with self.lock:
            self._read(limit=_STRAY_READS)
            self.current = None

    def _drain(self) -> None:
        while True:
            select.select([self.read_end], [], [])
            with self.lock:
                self._read(limit=1)

    def _read(self, limit: int) -> None:
        # Bounded: a child that outlived its case may write for ever.
        for _ in range(limit):
            try:
                data = os.read(self.read_end, 65536)
            except (BlockingIOError, InterruptedError):
                return
            if not data:
                return
            if self.current is not None:
                self.current.add(data)


_STRAY_READS = 64  # reads of 64 KiB taken at the end of a case, beyond what the thread took


_READERS: dict[int, _Reader] = {}


def _reader() -> _Reader | None:
    """This process's reader (a forked child makes its own); None when no pipe can be made."""
    pid = os.getpid()
    if pid not in _READERS:
        try:
            reader = _Reader()
        except (OSError, RuntimeError):
            return None
        _READERS.clear()
        _READERS[pid] = reader
    return _READERS[pid]


def _text_on(fd: int, like: Any) -> TextIO:
    """A line-buffered text stream on `fd` that never closes it: one an accumulator keeps past
    its case writes wherever the descriptor points then."""
    encoding = getattr(like, "encoding", None) or "utf-8"
    return open(fd, "w", buffering=1, encoding=encoding, errors="backslashreplace", closefd=False)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
