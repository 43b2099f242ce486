"""Every exception of ours, in one tree. Each prints as one line that says what is wrong and where.

    HarnessError                    exit 2 unless said otherwise
    ├── CassetteError               a cassette file that cannot be read (file:line: field: what)
    ├── CodecError                  bytes a wire codec cannot decode
    ├── DialectError                an unknown dialect, or a stream that does not fit it
    ├── MutationError               an unknown mutation or a bad parameter
    ├── ScenarioError               a scenario file or case id that cannot be used
    ├── OutcomeFormatError          an outcome document (stdio, JSON) that is not an Outcome
    ├── NoMatchError                a request no recorded interaction answers (replay only)
    ├── UsageError                  bad arguments or configuration
    ├── NotApplicable               a mutation or an accumulator that has nothing to do with this case
    └── AccumulatorFailure          exit 1: a case the accumulator failed, contained by the harness
        ├── AccumulatorCrashed
        ├── AccumulatorProtocolError
        └── AccumulatorTimeout
    InternalError                   exit 3: a bug of ours a check caught (as any other exception)

`exit_code` is what the `toolstream` command exits with when the error reaches it: 2 for input
the user can fix, 1 for "the accumulator under test failed" (as for a failing check).

Every `toolstream` command exits with one of four codes, each meaning one thing:

    0  EXIT_OK        nothing failed
    1  EXIT_FAILED    a case failed (a verdict: the accumulator or program under test is wrong)
    2  EXIT_USAGE     bad input or usage, printed as one line naming the file and the field
    3  EXIT_INTERNAL  toolstream's own error (a bug of ours): one line naming the exception and
                      `ISSUES_URL`; the traceback with `--debug` or `TOOLSTREAM_DEBUG=1`

and 130 when interrupted (143 on SIGTERM). A crash is never a verdict: only a judged case exits 1.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # what a shell reports for SIGINT
# Where an internal error is reported (also `[project.urls]` of pyproject.toml).
ISSUES_URL = "https://github.com/toolstream/toolstream-harness/issues"


def did_you_mean(given: str, known: Iterable[str]) -> str:
    """`; did you mean 'x'?` for the closest of `known` to a misspelt `given`, else ``."""
    import difflib  # only on an error path: kept out of a `serve-accumulator` child's start-up

    close = difflib.get_close_matches(given, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


class HarnessError(Exception):
    """Base of every error the CLI and the pytest plugin print as a single line."""

    exit_code: ClassVar[int] = EXIT_USAGE


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


@contextlib.contextmanager
def in_cassette(path: str | Path, field: str | None = None) -> Iterator[None]:
    """A recorded stream of the cassette at `path` decoded inside: a `CodecError` or
    `DialectError` it raises becomes a `CassetteError` naming the file and `field` (the
    interaction), so a folder of cassettes says which one is broken."""
    try:
        yield
    except (CodecError, DialectError) as exc:
        raise CassetteError(path, str(exc), field=field) from None


class MutationError(HarnessError):
    """An unknown mutation name or a bad parameter, named with what to do."""


class ScenarioError(HarnessError):
    """A scenario file that cannot be used, or a case id that names nothing; one line."""


class OutcomeFormatError(HarnessError):
    """An outcome document (stdio answer, JSON report) whose `field` is not what `Outcome` holds."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)


class NoMatchError(HarnessError):
    """A request that no recorded interaction matches, in a replay-only mode."""


class UsageError(HarnessError):
    """Bad arguments or configuration (an unknown record mode, a missing API key variable)."""


class AccumulatorFailure(HarnessError):
    """An accumulator that failed one case in a way the harness contained (base of the three below)."""

    exit_code: ClassVar[int] = EXIT_FAILED


class AccumulatorCrashed(AccumulatorFailure):
    """An accumulator process that died (or raised, behind `serve-accumulator`) during a case."""


class AccumulatorProtocolError(AccumulatorFailure):
    """An accumulator that answered something the stdio protocol does not allow."""


class AccumulatorTimeout(AccumulatorFailure):
    """An accumulator that did not answer a case in time; its process was killed."""


class InternalError(Exception):
    """A bug of toolstream that a check of its own caught. Not a `HarnessError` (those are the
    user's to fix, exit 2): the CLI reports it as any other exception of ours, exit 3."""


class NotApplicable(HarnessError):
    """Nothing to do with this case: a mutation with nothing to work on in a stream (no tool calls,
    a codec it cannot touch), or an accumulator that cannot run it (an SDK adapter given another
    provider's stream). Scenarios are skipped for such streams; check gives such cases `skip`."""
