"""What a difference between the expected and the actual outcome costs an agent.

- `unsafe`: the agent would execute the wrong thing: a call the stream never finished, calls
  merged or split, a wrong name, arguments that parse but differ, a result routed to another call.
- `lost`: a call the stream finished is missing or unusable: absent, no name, unparseable
  arguments, an id the result cannot be sent back under.
- `withheld`: a call the stream finished is missing from a client that said the stream ended
  badly (its state `cut` or `error`, a raise included) where it did (docs/oracle.md, signalled
  endings): its user was told the turn failed, so nothing is lost silently; retrying is safe.
- `cosmetic`: the state label (but a turn called complete where the stream was cut or errored:
  unsafe with calls or text the user would take as the answer, lost without; and a complete
  stream a client ended as cut or error, a raise, while calls differ: what those calls cost, the
  raise being why they are lost), the finish reason, the text (usage is not compared), the order
  of text and calls, a reasoning summary: what the API accepts back as it is.

A part of the response that goes back on the next turn (`Outcome.parts`) is `lost` when the
provider checks it there: a signature or opaque payload dropped, changed, merged or moved, a signed
thinking text changed, reasoning moved across a call (`harness.cassettes.outcome.part_differences`).

Severities come from the outcomes, not from the diff text: calls that ids pair one to one in
another order are each judged beside the call of their id, the order itself cosmetic (a result goes
back under its id). Otherwise calls are first aligned on equality
(so a missing first call reads as one lost call, not as every later call renamed), the rest are
paired in order between the aligned ones. Each line of `harness.cassettes.outcome.diff` then gets the
severity of what it is about: the name, id or arguments of a call paired at its position, else the
worst severity of the calls at its position (a line that only shows calls shifted by one elsewhere
gets the worst severity of all calls).

`weigh` also says of each line whether the stream's ending decides it (the state, the finish
reason, a call that is missing, an extra call the ending decides): a lenient ending rule covers
only those (`harness.oracle.verdict`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from harness.cassettes.outcome import (
    COMPARED,
    FINISH_NOT_SURFACED,
    ORDER_DIFFERS,
    STATE_TAKEN,
    Outcome,
    State,
    ToolCall,
    diff,
    meets,
    paired_by_id,
    part_differences,
)
from harness.wire.dialects import finish_words, tool_call_finishes

__all__ = [
    "WORST_FIRST",
    "Difference",
    "Severity",
    "call_severities",
    "differences",
    "signalled",
    "weigh",
    "worst",
]


class Severity(StrEnum):
    UNSAFE = "unsafe"
    LOST = "lost"
    WITHHELD = "withheld"
    COSMETIC = "cosmetic"

    @property
    def rank(self) -> int:
        """0 for the worst."""
        return _RANK.index(self)


_RANK = (Severity.UNSAFE, Severity.LOST, Severity.WITHHELD, Severity.COSMETIC)
WORST_FIRST: tuple[str, ...] = tuple(str(s) for s in _RANK)  # the severities' names, worst first
_SIGNALLED = frozenset({State.CUT, State.ERROR})
# An extra reported call (the call, its position among the reported ones) the ending decides.
Decides = Callable[[ToolCall, int], bool]


@dataclass(frozen=True, slots=True)
class Difference:
    """One line of `diff`, what it costs, and whether the stream's ending decides it."""

    line: str
    severity: Severity
    ending: bool


def signalled(expected: Outcome, actual: Outcome) -> bool:
    """Whether the stream ended badly and the client said so (its state `cut` or `error`, and
    its own word: not a state taken as expected, `STATE_TAKEN`)."""
    return (
        expected.state in _SIGNALLED
        and actual.state in _SIGNALLED
        and not any(STATE_TAKEN in note for note in actual.notes)
    )


_CALL_LINE = re.compile(r"^call (\d+): (\w*)")


def worst(severities: Iterable[Severity]) -> Severity | None:
    """The worst of some severities; None for none."""
    return min(severities, key=lambda s: s.rank, default=None)


def _ended_badly(expected: Outcome, actual: Outcome) -> bool:
    """A complete stream the client ended as cut or error (a raise)."""
    return expected.state is State.COMPLETE and actual.state is not State.COMPLETE


def differences(expected: Outcome, actual: Outcome) -> list[tuple[str, Severity]]:
    """`diff(expected, actual)`, line for line, each with its severity."""
    return [(d.line, d.severity) for d in weigh(expected, actual)]


def weigh(expected: Outcome, actual: Outcome, decides: Decides | None = None) -> list[Difference]:
    """`diff(expected, actual)`, line for line, each with its severity and whether the ending
    decides it: the state and finish reason lines, a call missing, an extra call `decides`
    accepts (none by default), and a line about calls only when all it is about are."""
    if meets(expected, actual):
        return []  # the usual case: nothing to weigh
    found = _analysis(expected.tool_calls, actual.tool_calls, signalled(expected, actual), decides)
    by_expected, by_actual, by_field, ending_e, ending_a = found
    calls_worst = worst([*by_expected.values(), *by_actual.values()]) or Severity.COSMETIC
    calls_ending = all(ending_e.values()) and all(ending_a.values())
    calls_differ = bool(diff(expected, actual, fields=("tool_calls",)))
    out: list[Difference] = []
    for field in COMPARED:
        if field == "parts":  # what goes back on the next turn: lost where the provider checks it
            for line, binding in part_differences(expected, actual):
                out.append(Difference(line, Severity.LOST if binding else Severity.COSMETIC, False))
            continue
        for line in diff(expected, actual, fields=(field,)):
            if field == "finish_reason" and _skips_calls(expected, actual):
                out.append(Difference(line, Severity.LOST, True))
                continue
            if field == "state":
                # A raise or cut where the stream was complete is what lost the calls: as they are.
                raised = _ended_badly(expected, actual) and calls_differ
                severity = calls_worst if raised else _state_severity(expected, actual)
                out.append(Difference(line, severity, True))
                continue
            if field != "tool_calls":
                out.append(Difference(line, Severity.COSMETIC, field == "finish_reason"))
                continue
            if line.startswith(ORDER_DIFFERS):  # results go back by id: the order alone costs nothing
                out.append(Difference(line, Severity.COSMETIC, False))
                continue
            at = _CALL_LINE.match(line)
            if at is None:  # the count line sums up the calls
                out.append(Difference(line, calls_worst, calls_ending))
                continue
            n = int(at[1]) - 1
            if (n, at[2]) in by_field:
                out.append(Difference(line, by_field[(n, at[2])], False))
                continue
            here = [s for s in (by_expected.get(n), by_actual.get(n)) if s is not None]
            decided = [e for e in (ending_e.get(n), ending_a.get(n)) if e is not None]
            # A line with no finding at its position only shows calls shifted by one elsewhere.
            ending = all(decided) if decided else calls_ending
            out.append(Difference(line, worst(here) or calls_worst, ending))
    return out


def call_severities(
    expected: Sequence[ToolCall], actual: Sequence[ToolCall], signalled: bool = False
) -> tuple[dict[int, Severity], dict[int, Severity]]:
    """Severities of the calls that differ, by position in `expected` and in `actual`
    (`signalled`: the client said the stream ended badly, as it did)."""
    by_expected, by_actual, *_ = _analysis(expected, actual, signalled)
    return by_expected, by_actual


_ByField = dict[tuple[int, str], Severity]


def _analysis(
    expected: Sequence[ToolCall],
    actual: Sequence[ToolCall],
    signalled: bool = False,
    decides: Decides | None = None,
) -> tuple[dict[int, Severity], dict[int, Severity], _ByField, dict[int, bool], dict[int, bool]]:
    """`call_severities`, (position, `name` / `id` / `arguments`) -> severity for the calls
    paired at the same position in both, and whether the ending decides each call that differs
    (by position in `expected` and in `actual`): a missing one, an extra one `decides` accepts."""
    by_expected: dict[int, Severity] = {}
    by_actual: dict[int, Severity] = {}
    by_field: dict[tuple[int, str], Severity] = {}
    ending_e: dict[int, bool] = {}
    ending_a: dict[int, bool] = {}
    other_ids: set[str] = {call.id for call in expected if call.id}
    order = paired_by_id(expected, actual)
    if order is not None:  # matched by id before position: each call beside its own
        for e, a in enumerate(order):
            fields = _changed(expected[e], actual[a], other_ids - {expected[e].id})
            if fields:
                by_expected[e] = by_actual[a] = worst(fields.values()) or Severity.COSMETIC
                ending_e[e] = ending_a[a] = False
                by_field.update({(e, field): severity for field, severity in fields.items()})
        return by_expected, by_actual, by_field, ending_e, ending_a
    anchors = _aligned(expected, actual)
    missing = Severity.WITHHELD if signalled else Severity.LOST
    previous = (-1, -1)
    for i, j in [*anchors, (len(expected), len(actual))]:
        gone = range(previous[0] + 1, i)
        came = range(previous[1] + 1, j)
        for e, a in zip(gone, came, strict=False):
            fields = _changed(expected[e], actual[a], other_ids - {expected[e].id})
            by_expected[e] = by_actual[a] = worst(fields.values()) or Severity.COSMETIC
            ending_e[e] = ending_a[a] = False  # what the call holds: no ending decides that
            if e == a:
                by_field.update({(e, field): severity for field, severity in fields.items()})
        for e in gone[len(came) :]:
            by_expected[e] = missing  # a finished call the accumulator does not report
            ending_e[e] = True
        for a in came[len(gone) :]:
            by_actual[a] = Severity.UNSAFE  # a call the stream never finished, or one split in two
            ending_a[a] = decides is not None and decides(actual[a], a)
        previous = (i, j)
    return by_expected, by_actual, by_field, ending_e, ending_a


def _state_severity(expected: Outcome, actual: Outcome) -> Severity:
    """A turn called complete where the stream was cut or errored: unsafe when it carries what the
    user would act on (calls, or text taken as the answer), lost otherwise (the user was not told
    the turn failed, so nothing retries it). Any other state label that differs is cosmetic."""
    if expected.state not in _SIGNALLED or actual.state is not State.COMPLETE:
        return Severity.COSMETIC
    return Severity.UNSAFE if actual.tool_calls or actual.text else Severity.LOST


def _skips_calls(expected: Outcome, actual: Outcome) -> bool:
    """Whether an agent that runs its calls on the provider's "run the tools" finish (`tool_use`,
    `tool_calls` ...) would skip the calls it was given: the stream said so, and the client gives no
    finish (anthropic's stop_reason reset to None by a later usage-only event, upstream #1940) or a
    provider's word that means something else (`end_turn`, `stop`). A word of the library's own
    (pydantic-ai's `tool_call`) is its wording, and cosmetic."""
    got = actual.finish_reason
    if FINISH_NOT_SURFACED in actual.notes:
        return False
    return (
        bool(expected.tool_calls)
        and bool(actual.tool_calls)
        and expected.finish_reason in tool_call_finishes()
        and (got is None or (got in finish_words() and got not in tool_call_finishes()))
    )


def _changed(want: ToolCall, got: ToolCall, other_ids: set[str]) -> dict[str, Severity]:
    """What differs between a call and the one reported for it, field by field."""
    found: dict[str, Severity] = {}
    if want.name != got.name:
        # No name: nothing to run. Another name (merged, split, wrong): the wrong tool runs.
        found["name"] = Severity.LOST if not got.name else Severity.UNSAFE
    if not _same(_arguments_of(want), _arguments_of(got)):
        if got.invalid and not want.invalid:
            found["arguments"] = Severity.LOST
        elif got.invalid:
            found["arguments"] = Severity.COSMETIC  # unparseable either way: only the raw text differs
        else:
            found["arguments"] = Severity.UNSAFE  # arguments that parse but say something else
    if want.kind != got.kind:
        # A freeform input read as JSON, or a call answered as another kind: the provider rejects
        # the answer, or the tool runs on input the model did not write.
        found["kind"] = Severity.LOST
    if want.id is not None and want.id != got.id:
        # Another call's id routes this result there; any other id cannot be answered, but one
        # the stream also sent for this call (A7, rotated ids) can.
        if got.id in want.aliases:
            found["id"] = Severity.COSMETIC
        else:
            found["id"] = Severity.UNSAFE if got.id in other_ids else Severity.LOST
    return found


def _arguments_of(call: ToolCall) -> ToolCall:
    # The arguments alone: the name and id are judged on their own.
    return ToolCall(name=None, arguments=call.arguments, invalid=call.invalid)


def _same(want: ToolCall, got: ToolCall) -> bool:
    return not diff(Outcome(tool_calls=(want,)), Outcome(tool_calls=(got,)))


def _aligned(expected: Sequence[ToolCall], actual: Sequence[ToolCall]) -> list[tuple[int, int]]:
    """The longest order-keeping pairing of equal calls (positions in expected and actual)."""
    n, m = len(expected), len(actual)
    longest = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            if _same(expected[i], actual[j]):
                longest[i][j] = longest[i + 1][j + 1] + 1
            else:
                longest[i][j] = max(longest[i + 1][j], longest[i][j + 1])
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if _same(expected[i], actual[j]) and longest[i][j] == longest[i + 1][j + 1] + 1:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif longest[i + 1][j] >= longest[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs
