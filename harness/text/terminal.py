"""How results look on a terminal: aligned tables, shortened cells, a progress bar on stderr.

Output fits the terminal's width only when stdout is one: piped into a file, `grep` or a pager,
no line is cut to a width (each value is still `clip`ped at `LONG_VALUE`)."""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TextIO

from harness.text.escape import terminal as printable

__all__ = [
    "LONG_VALUE",
    "Progress",
    "ProgressBar",
    "case_name",
    "clip",
    "clip_values",
    "output_width",
    "printable",
    "shorten",
    "table",
]

# A value longer than this is cut wherever it is shown (terminal, JSON, HTML), its length said.
LONG_VALUE = 10_000


def clip(text: str, limit: int = LONG_VALUE) -> str:
    """`text` whole when short, else its first `limit` characters and how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [cut: {len(text):,} characters in all]"


def clip_values(data: Any, limit: int = LONG_VALUE) -> Any:
    """Plain data (a JSON report) with every string `clip`ped."""
    if isinstance(data, str):
        return clip(data, limit)
    if isinstance(data, Mapping):
        return {key: clip_values(value, limit) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [clip_values(value, limit) for value in data]
    return data


def output_width(stream: TextIO | None = None) -> int | None:
    """The columns to fit output to: the terminal's when `stream` (default stdout) is one, else
    None (piped output is read by programs and people with a pager: nothing is cut to a width)."""
    stream = stream or sys.stdout
    try:
        if not stream.isatty():
            return None
    except ValueError:  # a closed stream
        return None
    return shutil.get_terminal_size((120, 24)).columns


def shorten(text: str, width: int) -> str:
    """One line, at most `width` characters, with an ellipsis where it was cut."""
    longer = len(text) > width
    text = printable(text[: width + 1].replace("\r", "\\r").replace("\n", "\\n"))
    return text if len(text) <= width and not longer else text[: max(width - 1, 0)] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, max_width: int | None = None) -> str:
    """A plain aligned table; the last column is shortened to fit `max_width` (default: the
    terminal's width when stdout is one; piped, nothing is cut but values past `LONG_VALUE`)."""
    max_width = max_width or output_width()
    # No column wider than the terminal: a 30 MB value in any cell is cut before widths are taken.
    cell_width = max_width or LONG_VALUE
    cells = [[str(h) for h in headers]] + [
        ["" if c is None else shorten(str(c), cell_width) for c in row] for row in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    if max_width is not None:
        fixed = sum(widths[:-1]) + 2 * (len(headers) - 1)
        widths[-1] = max(min(widths[-1], max_width - fixed), 10)
    lines = []
    for n, row in enumerate(cells):
        parts = [shorten(cell, widths[i]).ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append("  ".join(parts).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


_UNIT = re.compile(r"^(?P<path>.+?\.ya?ml) x (?P<rest>.*)$")


def case_name(note: str) -> str:
    """A unit of work as the user names it: `openai-chat/parallel-2 x scenario s0`, not the
    cassette's path (in site-packages for the bundled corpus)."""
    found = _UNIT.match(note)
    if found is None:
        return note
    path = found["path"].replace("\\", "/").split("/")
    name = "/".join(path[-2:]).rsplit(".", 1)[0]
    return f"{name} x {found['rest']}"


class Progress(Protocol):
    """How far a run is, the one design every runner reports to: `start(total)` once the amount
    of work is known, `advance(n, note)` for each piece done (`note` names it), `close()` at the
    end. `ProgressBar` draws it on a terminal; the report card counts its rows into one bar
    (`harness.card.run`)."""

    def start(self, total: int) -> None: ...

    def advance(self, n: int = 1, note: str = "") -> None: ...

    def close(self) -> None: ...


class ProgressBar:
    """A one-line progress bar on a terminal; silent when the stream is not a TTY (CI logs)."""

    def __init__(self, total: int = 0, label: str = "", stream: TextIO | None = None) -> None:
        self.total = max(total, 1)
        self.label = label
        self.stream = stream or sys.stderr
        self.done = 0
        self.enabled = self.stream.isatty() and os.environ.get("TERM") != "dumb"
        self._last = 0.0

    def start(self, total: int) -> None:
        self.total = max(total, 1)

    def advance(self, n: int = 1, note: str = "") -> None:
        self.done += n
        now = time.monotonic()
        if not self.enabled or (now - self._last < 0.1 and self.done < self.total):
            return
        self._last = now
        width = 30
        filled = int(width * self.done / self.total)
        bar = "#" * filled + "." * (width - filled)
        shown = shorten(case_name(note), 60)
        self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total} {shown:<60}")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 120 + "\r")
            self.stream.flush()
