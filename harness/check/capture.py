"""What an accumulator prints while it runs one case: file descriptors 1 and 2, captured and bounded.

Redirecting the descriptors rather than `sys.stdout` catches C extensions and child processes
too. A reader thread drains the pipe as it fills and keeps the first and the last `KEPT // 2`
bytes, counting the rest, so a flood costs neither memory nor a blocked writer; when the case
ends, what is readable is drained and the pipe closed (a child still writing gets EPIPE).
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
    """Everything written to file descriptors 1 and 2 inside the block goes to the `Captured`."""
    captured = Captured(kept)
    _flush()
    try:
        saved = (os.dup(1), os.dup(2))
    except OSError:  # no stdout or stderr to redirect (a daemon): nothing can reach a terminal
        yield captured
        return
    read_end, write_end = os.pipe()
    wake_read, wake_write = os.pipe()
    reader = threading.Thread(target=_drain, args=(read_end, wake_read, captured), daemon=True)
    reader.start()
    streams = sys.stdout, sys.stderr
    try:
        os.dup2(write_end, 1)
        os.dup2(write_end, 2)
        os.close(write_end)
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
        os.write(wake_write, b"x")
        reader.join()
        os.close(wake_write)
        for fd in (read_end, wake_read):
            os.close(fd)


def _drain(fd: int, wake: int, captured: Captured) -> None:
    while True:
        ready, _, _ = select.select([fd, wake], [], [])
        if wake in ready:
            break
        data = os.read(fd, 65536)
        if not data:
            return
        captured.add(data)
    # The case is over: take what is already in the pipe, a bounded amount (a child that outlives
    # its case may write on), without waiting for writers that remain.
    os.set_blocking(fd, False)
    for _ in range(64):
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        if not data:
            return
        captured.add(data)


def _text_on(fd: int, like: Any) -> TextIO:
    """A line-buffered text stream on `fd` that never closes it: one an accumulator keeps past
    its case writes wherever the descriptor points then."""
    encoding = getattr(like, "encoding", None) or "utf-8"
    return open(fd, "w", buffering=1, encoding=encoding, errors="backslashreplace", closefd=False)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
