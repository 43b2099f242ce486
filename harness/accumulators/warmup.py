"""What `prepare()` does in-process: run the accumulator once per dialect on a small bundled stream
(`<dialect>/single-call.yaml`), outcome and errors thrown away, so the library's lazy imports,
client construction and first-use caches are paid before any case's clock starts.

The warm-up runs in a daemon thread for at most `timeout` seconds: an accumulator that hangs
there hangs on the cases too, where the runner's timeout reports it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from harness.errors import HarnessError
from harness.wire import dialects

if TYPE_CHECKING:
    from harness.mutate.case import Case

__all__ = ["DEFAULT_TIMEOUT", "warm_up", "warmup_cases"]

DEFAULT_TIMEOUT = 60.0
_CASSETTE = "single-call.yaml"


def warmup_cases(names: Iterable[str]) -> list[Case]:
    """The unmutated `single-call` case of each named dialect that has one in the bundled corpus."""
    from harness.cassettes.corpus import bundled  # pathlib and the corpus: only when warming up
    from harness.mutate.scenario import Case, recorded_streams

    cases: list[Case] = []
    for name in names:
        try:
            path = bundled("cassettes") / name / _CASSETTE
            sources = recorded_streams(path, [path]) if path.is_file() else []
        except HarnessError:
            continue
        for source in sources[:1]:
            response = source.interaction.response
            events = tuple(dialects.events_of(response, source.dialect))
            cases.append(
                Case(
                    f"toolstream:warm-up:{name}",
                    name,
                    response,
                    events,
                    source.expected,
                    source.id,
                    "warm-up",
                    0,
                    request=source.interaction.request,
                )
            )
    return cases


def warm_up(
    run: Callable[[Case], object], names: Iterable[str] | None, timeout: float | None = DEFAULT_TIMEOUT
) -> bool:
    """Run `run` on the warm-up case of each dialect (default: all); True when it finished in time."""
    import threading  # only here: event-level modules import this one for DEFAULT_TIMEOUT

    cases = warmup_cases(dialects.names() if names is None else names)

    def each() -> None:
        for case in cases:
            with contextlib.suppress(Exception):
                run(case)

    thread = threading.Thread(target=each, name="toolstream-warm-up", daemon=True)
    thread.start()
    thread.join(timeout)
    return not thread.is_alive()
