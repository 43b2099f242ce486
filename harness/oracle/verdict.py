"""The verdict model: what one case through one accumulator came to, and what kind of failure it is.

A verdict is `pass` (the outcome meets the case's expectation, per `harness.cassettes.outcome.diff`),
`fail` (with the diff), `warn` (a difference that fails only under `--strict`), `error` (the
accumulator raised, printed garbage or its process died), `timeout` or `skipped` (the accumulator
says the case is not for it).

Every case has a class (`harness.oracle.expectation`: spec, quirk, policy) and every difference a
severity (`harness.oracle.severity`: unsafe, lost, withheld, cosmetic). The rule, in `verdict_for`:
an unsafe or lost difference in a spec or quirk case fails; a withheld or cosmetic one, or any in
a policy case, warns. Each difference is judged under its own class: a case made lenient by how
its stream ended (`Scope`) is lenient only on what the ending decides (the state, the finish
reason, which calls stand); any other difference has the class of the rest of the case, and a
failure it makes carries that class (docs/oracle.md, "Which class judges a difference").

A failure's `signature` is its diff with call numbers and values abstracted away: equal
signatures mean the same bug, so reports group by it and the shrinker keeps it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from harness.cassettes.outcome import ORDER_DIFFERS, ROTATED, Outcome, State, ToolCall, meets
from harness.errors import HarnessError
from harness.oracle.expectation import CaseClass, Expectation, classify, scope
from harness.oracle.raise_site import RAISED_AT, site_of
from harness.oracle.severity import Severity, weigh, worst
from harness.text.terminal import shorten

if TYPE_CHECKING:
    from harness.mutate.scenario import Case, Scenario

__all__ = [
    "FAILING",
    "Report",
    "Result",
    "Verdict",
    "character",
    "copy_result",
    "describe_error",
    "diff_signature",
    "error_signature",
    "judged",
    "root_cause",
    "signature",
    "unjudged",
    "verdict_for",
]


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"
    ERROR = "error"
    TIMEOUT = "timeout"
    SKIPPED = "skipped"


# Verdicts that make a run fail; a skipped case does not, a warning only under --strict.
FAILING = frozenset({Verdict.FAIL, Verdict.ERROR, Verdict.TIMEOUT})


def verdict_for(case_class: CaseClass, severities: Iterable[Severity]) -> Verdict:
    """The verdict of an outcome with these differences: unsafe or lost ones fail a spec or quirk
    case; withheld and cosmetic ones, and any in a policy case, only warn."""
    found = worst(severities)
    if found is None:
        return Verdict.PASS
    if case_class is CaseClass.POLICY or found in _WARNS:
        return Verdict.WARN
    return Verdict.FAIL


_WARNS = frozenset({Severity.WITHHELD, Severity.COSMETIC})


@dataclass(frozen=True)
class Result:
    """One case through one accumulator."""

    id: str
    cassette: str
    scenario: str
    seed: int
    dialect: str
    accumulator: str
    verdict: Verdict
    expected: Outcome
    actual: Outcome | None = None
    diff: tuple[str, ...] = ()
    error: str | None = None
    seconds: float = 0.0
    case_class: CaseClass = CaseClass.SPEC
    class_reason: str = ""
    severities: tuple[Severity, ...] = ()  # one per `diff` line
    output: str = ""  # what the accumulator printed during the case (bounded: `capture.KEPT`)
    # Before judging: the case and its scenario, whose `Scope` judges each difference (`judged`);
    # dropped once judged (a report keeps no case alive).
    source: Any = field(default=None, compare=False, repr=False)

    @property
    def severity(self) -> Severity | None:
        """The worst difference's severity; None without differences."""
        return worst(self.severities)

    @property
    def failed(self) -> bool:
        return self.verdict in FAILING

    def fails(self, strict: bool = False) -> bool:
        """Whether this result fails the run (`strict`: warnings too)."""
        return self.failed or (strict and self.verdict is Verdict.WARN)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "id": self.id,
            "cassette": self.cassette,
            "scenario": self.scenario,
            "seed": self.seed,
            "dialect": self.dialect,
            "accumulator": self.accumulator,
            "verdict": str(self.verdict),
            "expected": self.expected.to_dict(),
            "actual": None if self.actual is None else self.actual.to_dict(),
            "diff": list(self.diff),
            "severities": [str(s) for s in self.severities],
            "severity": None if self.severity is None else str(self.severity),
            "class": str(self.case_class),
            "class_reason": self.class_reason,
            "error": self.error,
            "seconds": round(self.seconds, 6),
        }
        if self.failed or self.verdict is Verdict.WARN:
            data["root_cause"] = root_cause(self)
        if self.output:
            data["output"] = self.output
        return data

    def to_record(self, shared: dict[int, Any] | None = None) -> tuple[Any, ...]:
        """The fields in order as plain data (outcomes as `Outcome.to_record`): what a worker
        process sends back, read by `from_record`, which trusts it (`from_dict` checks).
        `shared`, kept for one message: an expected outcome that several results hold (the
        cases of a recording often expect the same) becomes one record, which pickling sends
        once and `from_record` reads once; so does an actual outcome equal to it (a pass)."""
        expected = _once(shared, self.expected, Outcome.to_record)
        actual = None if self.actual is None else self.actual.to_record()
        if shared is not None and actual == expected:
            actual = expected
        return (
            self.id,
            self.cassette,
            self.scenario,
            self.seed,
            self.dialect,
            self.accumulator,
            str(self.verdict),
            expected,
            actual,
            self.diff,
            self.error,
            self.seconds,
            str(self.case_class),
            self.class_reason,
            tuple(str(s) for s in self.severities),
            self.output,
        )

    @classmethod
    def from_record(cls, record: Sequence[Any], shared: dict[int, Any] | None = None) -> Result:
        """The result `to_record` wrote; `shared`, kept for one message, reads a record that
        several results hold (`to_record`'s `shared`) once."""
        (id_, cassette, scenario, seed, dialect, accumulator, verdict, expected, actual, diff, error,
         seconds, case_class, class_reason, severities, output) = record  # fmt: skip
        if shared is None:
            expected = Outcome.from_record(expected)
            if actual is not None:
                actual = Outcome.from_record(actual)
        else:  # `_once`, written out: a pool's parent reads one per result
            found = shared.get(id(expected))
            if found is None:
                found = shared[id(expected)] = (expected, Outcome.from_record(expected))
            expected = found[1]
            if actual is not None:
                found = shared.get(id(actual))
                if found is None:
                    found = shared[id(actual)] = (actual, Outcome.from_record(actual))
                actual = found[1]
        made = object.__new__(cls)  # not `Result(...)`: its frozen `__init__` showed, once a case
        made.__dict__.update(
            id=id_,
            cassette=cassette,
            scenario=scenario,
            seed=seed,
            dialect=dialect,
            accumulator=accumulator,
            verdict=_VERDICTS[verdict],
            expected=expected,
            actual=actual,
            diff=tuple(diff),
            error=error,
            seconds=seconds,
            case_class=_CASE_CLASSES[case_class],
            class_reason=class_reason,
            severities=tuple([_SEVERITIES[s] for s in severities]) if severities else (),
            output=output,
        )
        return made

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Result:
        """A result as `to_dict` wrote it; a field of another type (a file of someone else's:
        `toolstream report merge` reads them) is a `TypeError` or `ValueError` naming it."""
        actual = data.get("actual")
        error = data.get("error")
        if error is not None and not isinstance(error, str):
            raise TypeError(f"error: must be text or null, not {type(error).__name__}")
        return cls(
            id=_text(data, "id"),
            cassette=_text(data, "cassette"),
            scenario=_text(data, "scenario"),
            seed=_count(data, "seed"),
            dialect=_text(data, "dialect"),
            accumulator=_text(data, "accumulator"),
            verdict=Verdict(data["verdict"]),
            expected=Outcome.from_dict(data["expected"]),
            actual=None if actual is None else Outcome.from_dict(actual),
            diff=tuple(_texts(data, "diff")),
            error=error,
            seconds=seconds_of(data.get("seconds", 0.0), "seconds"),
            case_class=CaseClass(data.get("class") or CaseClass.SPEC),
            class_reason=_text({"class_reason": data.get("class_reason") or ""}, "class_reason"),
            severities=tuple(Severity(s) for s in _texts(data, "severities")),
            output=str(data.get("output") or ""),
        )


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise TypeError(f"{key}: must be text, not {type(value).__name__}")
    return value


def _texts(data: Mapping[str, Any], key: str) -> list[str]:
    value = data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise TypeError(f"{key}: must be a list of texts")
    return value


def _count(data: Mapping[str, Any], key: str) -> int:
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise ValueError(f"{key}: must be a whole number from 0, not {str(value)[:20]}")
    return value


def seconds_of(value: Any, what: str) -> float:
    """`value` as a finite number of seconds from 0, else a `ValueError` naming `what` (a forged
    400-digit number overflowed `float()`; `NaN` or `Infinity` made the report invalid JSON)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what}: must be a number of seconds, not {type(value).__name__}")
    try:
        seconds = float(value)
    except OverflowError:
        raise ValueError(f"{what}: must be a number of seconds, not one that large") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{what}: must be a finite number of seconds from 0, not {seconds}")
    return seconds


@dataclass
class Report:
    """Every case of a run, in a fixed order, and how long the run took. `strict`: warnings fail."""

    accumulator: str
    results: list[Result] = field(default_factory=list)
    seconds: float = 0.0
    strict: bool = False

    def count(self, verdict: Verdict) -> int:
        return sum(1 for r in self.results if r.verdict is verdict)

    @property
    def ok(self) -> bool:
        """True when no case failed, errored or timed out (nor warned, when strict)."""
        return not any(r.fails(self.strict) for r in self.results)

    @property
    def failures(self) -> list[Result]:
        return [r for r in self.results if r.fails(self.strict)]

    @property
    def warnings(self) -> list[Result]:
        """The warnings that do not fail this run (none when strict: they are failures)."""
        return [r for r in self.results if r.verdict is Verdict.WARN and not self.strict]

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"accumulator": self.accumulator, "total": len(self.results)}
        out.update({str(v): self.count(v) for v in Verdict})
        out["ok"] = self.ok
        out["strict"] = self.strict
        out["seconds"] = round(self.seconds, 3)
        return out


# ---------------------------------------------------------------------------------------------
# Judging one case


def unjudged(case: Case, spec: str, scenario: Scenario | None = None) -> Result:
    """A case's result before its outcome is known: its identity and class, verdict `error`."""
    expectation: Expectation = classify(case, scenario)
    result = object.__new__(Result)  # not `Result(...)`: its frozen `__init__` showed, once a case
    result.__dict__.update(
        _RESULT_DEFAULTS,
        id=case.id,
        cassette=case.cassette,
        scenario=case.scenario,
        seed=case.seed,
        dialect=case.dialect,
        accumulator=spec,
        verdict=Verdict.ERROR,
        expected=case.expected,
        case_class=expectation.case_class,
        class_reason=expectation.reason,
        source=(case, scenario),
    )
    return result


def judged(base: Result, actual: Outcome, **changes: Any) -> Result:
    """`base` with the outcome it got: differences, their severities and the verdict they give,
    each difference judged under its own class (the case's `Scope`)."""
    if meets(base.expected, actual):  # the usual case, paid once per case: nothing to weigh
        return copy_result(
            base, verdict=Verdict.PASS, actual=actual, diff=(), severities=(), source=None, **changes
        )
    case_class, reason = base.case_class, base.class_reason
    rest_class, rest_reason = case_class, reason  # a result read back: its class judges everything
    decides = None
    if base.source is not None:
        found_scope = scope(*base.source)
        case_class, reason = found_scope.ending.case_class, found_scope.ending.reason
        rest_class, rest_reason = found_scope.rest.case_class, found_scope.rest.reason
        expected = len(base.expected.tool_calls)

        def decides(call: ToolCall, at: int) -> bool:
            return found_scope.explains(call, at, expected)

    found = weigh(base.expected, actual, decides)
    verdicts = [verdict_for(case_class if d.ending else rest_class, (d.severity,)) for d in found]
    verdict = next((v for v in (Verdict.FAIL, Verdict.WARN) if v in verdicts), Verdict.PASS)
    if any(v is Verdict.FAIL and not d.ending for v, d in zip(verdicts, found, strict=True)):
        case_class, reason = rest_class, rest_reason  # the class the failure was judged under
    return copy_result(
        base,
        verdict=verdict,
        actual=actual,
        diff=tuple(d.line for d in found),
        severities=tuple(d.severity for d in found),
        case_class=case_class,
        class_reason=reason,
        source=None,
        **changes,
    )


def copy_result(base: Result, **changes: Any) -> Result:
    """`replace(base, **changes)` without re-running `__init__` (paid once per case, it showed)."""
    if not _RESULT_FIELDS.issuperset(changes):
        raise TypeError(f"Result has no field {sorted(changes.keys() - _RESULT_FIELDS)[0]!r}")
    copied = object.__new__(Result)
    state = copied.__dict__
    state.update(base.__dict__)
    state.update(changes)
    return copied


def _once(shared: dict[int, Any] | None, value: Any, make: Callable[[Any], Any]) -> Any:
    """`make(value)`, made once per object while `shared` lives (it keeps `value` alive, so its
    id is not reused meanwhile); every time when `shared` is None."""
    if shared is None:
        return make(value)
    found = shared.get(id(value))
    if found is None:
        found = shared[id(value)] = (value, make(value))
    return found[1]


_RESULT_ORDER = tuple(f.name for f in fields(Result))
# By their text, for `from_record` (an enum's own lookup by value costs more than the rest of a field).
_VERDICTS = {str(v): v for v in Verdict}
_CASE_CLASSES = {str(c): c for c in CaseClass}
_SEVERITIES = {str(s): s for s in Severity}
_RESULT_FIELDS = frozenset(_RESULT_ORDER)
_RESULT_DEFAULTS = {f.name: f.default for f in fields(Result) if f.default is not MISSING}


def describe_error(exc: BaseException) -> str:
    """An exception as one message: ours as they are, others prefixed with their type."""
    text = str(exc).strip()
    if isinstance(exc, HarnessError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# ---------------------------------------------------------------------------------------------
# Signatures

_CALL = re.compile(r"^call \d+: ")
# A line about a part that goes back (`harness.cassettes.outcome.part_differences`).
_PART = re.compile(r"^(?P<kind>reasoning|call part|text) \d+: (?P<rest>.*)$")
# A name line may end in why the name differs (`harness.oracle.evidence.Misnamed`).
_NAME = re.compile(r"^name (?P<want>'[^']*'|None) expected, got (?P<got>'[^']*'|None)(?: \(.*\))?$")
# A gateway's line (`harness.gateway.judging`): `gateway A -> B: RULE[ at event N]: what`; a
# protocol rule is its own signature, a translation rule's difference is signed as any other.
_HOP = re.compile(r"^gateway \S+ -> \S+: (?P<rule>[\w.-]+)(?P<at> at event \d+)?: (?P<rest>.*)$", re.DOTALL)
# A case id (`openai-chat/parallel-2::original::s0`), tried only where a word or quote begins.
_CASE_ID = re.compile(r"(?<![^\s'\"])\S+?::\S+?::s\d+")
_SIGNED = 300
_VALUES = re.compile(
    r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[{\[].*?[}\]](?=,| expected|$)|-?\b\d+(?:\.\d+)?\b"
)


def signature(result: Result | Mapping[str, Any]) -> str:
    """What kind of failure this is, without call numbers or values (equal for equal bugs).

    Takes a result or its `to_dict()` form (the HTML report works from the JSON document)."""
    if isinstance(result, Result):
        verdict, error, lines = result.verdict, result.error, result.diff
    else:
        verdict, error, lines = Verdict(result["verdict"]), result.get("error"), result.get("diff") or ()
    if verdict is Verdict.TIMEOUT:
        return "timeout"
    if verdict is Verdict.ERROR:
        return error_signature(error or "error")
    if verdict not in (Verdict.FAIL, Verdict.WARN):
        return str(verdict)
    return diff_signature(lines) or "fail"


def root_cause(result: Result | Mapping[str, Any]) -> str:
    """What one bug of a library most likely is, a level above its signature: where in the library
    it raised (`raised at FILE:LINE`, the site an error verdict or an outcome in state error
    carries: `raise_site`), else the raise (its type and message, values abstracted) for an error
    or a timeout, else the kind of its first difference about a call (the count line sums up and
    comes first; past a call, its text or state). Failures of one root cause differ in what else a
    scenario makes go wrong after it: one recording mishandled shows many signatures, and one
    first difference or one raise."""
    if isinstance(result, Result):
        verdict, lines, error = result.verdict, result.diff, result.error
        actual_state = result.actual.state if result.actual is not None else None
        raised = result.actual.error if result.actual is not None and actual_state is State.ERROR else None
    else:
        verdict, lines, error = Verdict(result["verdict"]), result.get("diff") or (), result.get("error")
        actual = result.get("actual") or {}
        raised = actual.get("error") if actual.get("state") == str(State.ERROR) else None
    if verdict in (Verdict.ERROR, Verdict.TIMEOUT):
        site = site_of(error)
    else:  # a raise that ended the turn where none should have: an expected error state is no bug
        site = site_of(raised) if any(line.startswith("state:") for line in lines) else None
    if site is not None:
        return f"{RAISED_AT}{site}"
    if verdict in (Verdict.ERROR, Verdict.TIMEOUT) or not lines:
        return signature(result)
    first = next((line for line in lines if line.startswith("call ")), lines[0])
    return _line_signature(first)


def character(result: Result) -> tuple[str, tuple[str, ...], bool]:
    """What a shrink must keep of a failure: its signature (the kinds of difference, or the
    exception's type and site), the severities it reached, and whether the expectation holds a
    call that is invalid (a shrink that cuts the stream inside an expected call's arguments turns
    "a fragment dropped" into "invalid arguments": another bug)."""
    severities = tuple(sorted({str(s) for s in result.severities}))
    return signature(result), severities, any(call.invalid for call in result.expected.tool_calls)


def diff_signature(lines: Iterable[str]) -> str:
    """The kinds of difference in `diff` lines (`... expected, got ...`), sorted, values abstracted."""
    return "; ".join(sorted({_line_signature(line) for line in lines}))


def error_signature(error: str) -> str:
    """An error message's first line with its values (and any case id in it) abstracted: its
    first `_SIGNED` characters, so that no message (an accumulator's 3 MB raise, a line built to
    make a pattern backtrack) costs more than a bounded time."""
    first = error.splitlines()[0][:_SIGNED] if error else "error"
    return "error: " + shorten(_VALUES.sub("…", _CASE_ID.sub("…", first)), 80)


def _line_signature(line: str) -> str:
    hop = _HOP.match(line)
    if hop:
        return hop["rule"] if hop["at"] else f"{hop['rule']}: {_line_signature(hop['rest'])}"
    if line.startswith("parts:"):
        return "parts order differs"
    part = _PART.match(line)
    if part:
        kind, rest = part["kind"], part["rest"]
        if rest.startswith("unexpected "):
            return f"{kind} extra"
        if rest.endswith("expected, missing"):
            return f"{kind} missing"
        field = rest.split(" ", 1)[0]  # signature, payload, id or text
        return f"{kind} {field} missing" if rest.endswith("got None") else f"{kind} {field} differs"
    body = _CALL.sub("", line)
    if line.startswith(ORDER_DIFFERS):
        return "order differs"
    if line.startswith("tool_calls:"):
        return "tool_calls count"
    if line.startswith("state:"):
        # three states only: keeping them says more than hiding them; an error's text, abstracted
        state, _, error = line.replace(":", "", 1).partition(" (")
        return f"{state} ({shorten(_VALUES.sub('…', error.removesuffix(')')), 80)})" if error else state
    if line.startswith(("text:", "finish_reason:")):
        return line.split(":", 1)[0] + " differs"
    name = _NAME.match(body)
    if name:
        want, got = name["want"].strip("'"), name["got"].strip("'")
        if name["got"] == "None":
            return "name missing"
        if want and want != got and want in got:
            return "name concatenated"
        return "name differs"
    if body.startswith("id "):
        if body.endswith(ROTATED):
            return "id rotated"
        return "id missing" if body.endswith("got None") else "id differs"
    if body.startswith("arguments "):
        return "arguments invalid JSON" if " got invalid " in body else "arguments differ"
    if body.startswith("unexpected "):
        return "extra call"
    if body.endswith("expected, missing"):
        return "missing call"
    return _VALUES.sub("…", body)
