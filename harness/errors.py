"""Errors a user can cause. Each prints as one line that says what is wrong and where."""

from __future__ import annotations

from pathlib import Path


class HarnessError(Exception):
    """Base of every error the CLI and the pytest plugin print as a single line."""


class CassetteError(HarnessError):
    """A cassette file that cannot be read, names the file, the line (when YAML can tell) and the field."""

    def __init__(
        self,
        path: str | Path | None,
        message: str,
        *,
        field: str | None = None,
        line: int | None = None,
    ) -> None:
        self.path = str(path) if path is not None else "<cassette>"
        self.message = message
        self.field = field
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        what = f"{self.field}: " if self.field else ""
        return f"{where}: {what}{self.message}"


class CodecError(HarnessError):
    """Bytes that a wire codec cannot decode (bad frame, bad CRC, not JSON lines)."""


class DialectError(HarnessError):
    """An unknown dialect name, or a stream that does not fit the dialect it was given."""


class NoMatchError(HarnessError):
    """A request that no recorded interaction matches, in a replay-only mode."""


class UsageError(HarnessError):
    """Bad arguments or configuration (an unknown record mode, a missing API key variable)."""


class AccumulatorFailure(HarnessError):
    """An accumulator that failed one case in a way the harness contained (base of the three below)."""


class AccumulatorCrashed(AccumulatorFailure):
    """An accumulator process that died (or raised, behind `serve-accumulator`) during a case."""


class AccumulatorProtocolError(AccumulatorFailure):
    """An accumulator that answered something the stdio protocol does not allow."""


class AccumulatorTimeout(AccumulatorFailure):
    """An accumulator that did not answer a case in time; its process was killed."""


class NotApplicable(HarnessError):
    """An accumulator that cannot run this case (an SDK adapter given another provider's stream)."""
