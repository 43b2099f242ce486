"""One case through one accumulator, judged: the unit every run is made of (`run_matrix`, the
pool's workers, `compare`, `explore`). The verdict model it fills in is `harness.oracle.verdict`."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from harness.accumulators.base import not_for
from harness.cassettes.outcome import Outcome
from harness.errors import AccumulatorTimeout, NotApplicable
from harness.oracle.raise_site import with_site
from harness.oracle.verdict import Result, Verdict, copy_result, describe_error, judged, unjudged
from harness.processes.capture import captured_output

if TYPE_CHECKING:
    from harness.accumulators import Accumulator
    from harness.mutate.scenario import Case, Scenario

__all__ = ["judge"]


def judge(accumulator: Accumulator, spec: str, case: Case, scenario: Scenario | None = None) -> Result:
    """Run one case and give it a verdict; whatever the accumulator raises becomes the verdict,
    whatever it prints (file descriptors 1 and 2) its `output`. `scenario` is the one that made
    the case (its steps give the class; default: by name). An accumulator whose
    `prints_nothing(case)` is true (the built-in reference) runs without the capture. A case of a
    dialect the accumulator declares it does not read (its `dialects`) is skipped without running,
    as the pytest plugin skips its item."""
    why = not_for(accumulator, spec, case.dialect)
    if why is not None:
        return copy_result(unjudged(case, spec, scenario), verdict=Verdict.SKIPPED, error=why)
    quiet = getattr(accumulator, "prints_nothing", None)
    if quiet is not None and quiet(case):
        return _judge(accumulator, spec, case, scenario)  # a capture costs about as much as its case
    with captured_output() as output:
        result = _judge(accumulator, spec, case, scenario)
    return replace(result, output=output.text) if output.total else result


def _judge(accumulator: Accumulator, spec: str, case: Case, scenario: Scenario | None) -> Result:
    base = unjudged(case, spec, scenario)
    judging, base = base, copy_result(base, source=None)  # an error keeps no case alive
    start = time.perf_counter()
    try:
        actual = accumulator.run(case)
    except NotApplicable as exc:
        return replace(
            base, verdict=Verdict.SKIPPED, error=str(exc) or None, seconds=time.perf_counter() - start
        )
    except (AccumulatorTimeout, TimeoutError) as exc:
        return replace(
            base, verdict=Verdict.TIMEOUT, error=describe_error(exc), seconds=time.perf_counter() - start
        )
    except (Exception, SystemExit) as exc:  # containment: any failure of theirs is this case's verdict
        seconds = time.perf_counter() - start
        error = with_site(describe_error(exc), exc)  # where in the library, as the stdio side says it
        return replace(base, verdict=Verdict.ERROR, error=error, seconds=seconds)
    seconds = time.perf_counter() - start
    if not isinstance(actual, Outcome):
        error = f"returned {type(actual).__name__}, not an Outcome"
        return replace(base, verdict=Verdict.ERROR, error=error)
    return judged(judging, actual, seconds=seconds)
