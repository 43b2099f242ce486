"""What kind of expectation a case holds: `spec`, `quirk` or `policy`, and why.

- `spec`: the stream follows the documented protocol; the expectation is what the protocol says.
- `quirk`: the stream imitates a documented real deviation (a STREAM-QUIRKS.md class); the
  expectation is what a robust client makes of it.
- `policy`: no protocol fixes the meaning; the expectation is a rule of ours (docs/oracle.md).

A case's class comes from its scenario's steps, the most lenient winning (policy over quirk over
spec): a step is looked up in `STEPS`, one table keyed by mutation name (a row may look at the
step's parameters and the case's dialect); a mutation without a row that declares `imitates` is a
quirk, one that declares nothing is spec. A cut, or an error, that falls after the stream already
said its turn may be over is policy wherever it is, and so is a turn with calls that ends by a
rule of ours (docs/oracle.md `length-with-open-call`, `unknown-finish`, `terminal-with-open-call`,
`finish-without-terminal`, `terminal-without-finish`), a recording's included (`ending_rule`). A
recording whose cassette declares its class (`expected_class`: the bundled ones that are
themselves a documented deviation, and every case written out as a cassette) gives it to every
case made from it, and a stream that breaks its dialect's invariants where no step says why is at
least `quirk` (`protocol_rule`).

A retry case (`scenarios/retry`, served by `toolstream serve`: the first attempt of a request is
cut, the retried one gets the case's stream) is classed by `RETRIES`, by scenario name: the retry
itself is spec, and the case takes the class of what the retried attempt gets (its recording and
its steps, as any case): the recorded stream is `spec`, one imitating a real deviation `quirk`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

from harness.cassettes.corpus import bundled
from harness.cassettes.model import Declared
from harness.check.outcome import State
from harness.errors import HarnessError
from harness.mutate import Mutation
from harness.mutate.scenario import Case, Scenario, load_scenarios
from harness.wire import dialects
from harness.wire.dialects import Finish, Kind, Role

__all__ = [
    "ENDINGS",
    "RETRIES",
    "STEPS",
    "CaseClass",
    "Expectation",
    "Rule",
    "classify",
    "declaration",
    "ending_rule",
    "protocol_rule",
    "rule_for",
    "stream_rules",
]


class CaseClass(StrEnum):
    SPEC = "spec"
    QUIRK = "quirk"
    POLICY = "policy"


# Most lenient last: a case takes the class of its most lenient step.
_ORDER = (CaseClass.SPEC, CaseClass.QUIRK, CaseClass.POLICY)


@dataclass(frozen=True)
class Expectation:
    """A case's class and the reason for it (the steps that decided it)."""

    case_class: CaseClass
    reason: str


@dataclass(frozen=True)
class Rule:
    """One step's class: `quirk` names its STREAM-QUIRKS.md class; `spec_in` lists the dialects
    whose documented protocol has this very shape (there it is spec, elsewhere this rule)."""

    case_class: CaseClass
    reason: str
    quirk: str | None = None
    spec_in: frozenset[str] = frozenset()

    def text(self) -> str:
        return f"{self.quirk} {self.reason}" if self.quirk else self.reason


def _spec(reason: str) -> Rule:
    return Rule(CaseClass.SPEC, reason)


def _quirk(quirk: str | None, reason: str, spec_in: Iterable[str] = ()) -> Rule:
    return Rule(CaseClass.QUIRK, reason, quirk, frozenset(spec_in))


def _policy(reason: str) -> Rule:
    return Rule(CaseClass.POLICY, reason)


_CUT = _spec("a cut before any finish: only calls already final survive (the protocol says when)")
_CUT_AFTER_FINISH = _policy(
    "a cut after the finish but before the terminal event: whether the turn is over, and so which "
    "calls stand and whether it is `cut` or `complete`, is our rule"
)
_CUT_AFTER_WHOLE_CALL = _policy(
    "a cut after a whole call in a dialect with no end marker per call (Gemini, Ollama): no protocol "
    "says whether a call that arrived whole stands before the finish; ours waits for the finish"
)
_ERROR_AFTER_WHOLE_CALL = _policy(
    "an in-band error after a whole call in a dialect with no end marker per call (Gemini, Ollama): "
    "whether that call stands is our rule (docs/oracle.md, error-after-final-call)"
)
_ERROR_AFTER_FINISH = _policy(
    "an in-band error after the finish: whether the finished turn still stands is our rule"
)


def _drop_field(step: Mutation) -> Rule:
    field, on = getattr(step, "field", ""), getattr(step, "on", "")
    if field == "index":
        return _quirk("A3", "index missing (openai-python#2806, langchain#34654)")
    if field == "id" and on == "all":
        return _quirk("A10", "no id on any fragment (Gemini-compatible, GLM)")
    if field == "id":
        return _spec("id on the header only: the documented shape")
    if field == "name":
        return _quirk("E5", "name only in output_item.added (voocel/litellm PR #4)")
    if field == "item_id":
        return _quirk("E6", "items without item id (CLIProxyAPI#5692)")
    return _quirk(None, f"{field} removed")


def _on_every_fragment(step: Mutation) -> Rule:
    if getattr(step, "field", "") == "id":
        return _quirk("A5", "id repeated on every chunk (Fireworks, vLLM)")
    return _quirk("B3", "name or type repeated in full (deer-flow PR #654)")


def _empty_field(step: Mutation) -> Rule:
    if getattr(step, "field", "") == "id":
        return _quirk("A6", 'continuations with "id":"" (DashScope)')
    return _quirk("A7", "continuations with an empty name (LM Studio)")


def _pack_fragments(step: Mutation) -> Rule:
    if getattr(step, "what", "") == "calls":
        return _spec("several calls in one delta: the documented tool_calls array")
    return _quirk("B1", "same-index fragments in one delta (vLLM speculative decoding)")


def _usage_chunks(step: Mutation) -> Rule:
    if getattr(step, "every", False):
        return _quirk("D5", "usage on every chunk (CLIProxyAPI#5419)")
    return _spec("a usage-only final chunk: stream_options.include_usage")


# Every shipped mutation by name (a test keeps it so); a new one declaring `imitates` is a quirk.
STEPS: Mapping[str, Rule | Callable[[Mutation], Rule]] = {
    # Shapes every documented protocol allows: fragmentation, read boundaries, SSE framing, ids.
    "rechunk": _spec("network reads split anywhere"),
    "line-ends": _spec("CRLF or CR line ends: the SSE specification allows them"),
    "sse-comments": _spec("SSE comment lines: the SSE specification allows them"),
    "multiline-data": _spec("multi-line data fields: the SSE specification allows them"),
    "no-space": _spec("no space after the field colon: the SSE specification allows it"),
    "split-args": _spec("arguments in pieces of any size"),
    "coalesce-args": _spec("arguments in fewer, larger pieces"),
    "args-in-header": _spec("the whole arguments in the call's first fragment"),
    "restyle-ids": _spec("ids are opaque strings"),
    "field-only-on-first": _spec("id on the header only: the documented shape"),
    "insert-text": _spec("text before and after the calls"),
    "insert-reasoning": _spec("reasoning before the calls"),
    "extra-choices": _spec("n>1 choices: a documented request parameter"),
    "usage-chunks": _usage_chunks,
    "pack-fragments": _pack_fragments,
    "pings": _quirk("F8", "ping or unknown events (documented for Anthropic)", spec_in={"anthropic"}),
    "interleave": _quirk("C1", "fragments of parallel calls interleaved", spec_in={"openai-chat"}),
    # Real deviations (STREAM-QUIRKS.md), until the mutation declares `imitates` itself.
    "drop-field": _drop_field,
    "null-field": _quirk("A3", "index or id null (SGLang)"),
    "empty-field": _empty_field,
    "field-on-every-fragment": _on_every_fragment,
    "fresh-field-per-fragment": _quirk("A7", "a fresh id on every fragment (LM Studio)"),
    "set-field": _quirk("A1", "parallel calls sharing one index (Bedrock via langchain, LiteLLM)"),
    "shift-field": _quirk("C4", "an index shifted or incremented (bedrock-access-gateway#134, Cerebras)"),
    "move-field-later": _quirk(None, "a name or id that arrives after the header"),
    "split-name": _quirk("B2", "a name split across fragments"),
    "placeholder-args": _quirk("B6", 'a "{}" placeholder before the arguments (OpenRouter, vLLM)'),
    "args-as-object": _quirk("B8", "arguments as a parsed object (Ollama native, proxies)"),
    "empty-args-fragment": _quirk("B7", "an empty-arguments continuation (GLM-5 via OpenRouter)"),
    "repeat-args-at-end": _quirk("B9", "the whole arguments re-sent at the end (vLLM)"),
    "truncate-args": _quirk("B10", "arguments truncated by the server's parser (vLLM)"),
    "split-surrogate-pairs": _quirk("F2", "a surrogate pair split across fragments (openclaw)"),
    "correct-args-at-done": _quirk("E2", "a .done that corrects the deltas"),
    "drop-args-deltas": _quirk("E1", "arguments only in .done (sub2api)"),
    "stray-args-after-end": _quirk("E3", "a delta after .done (pydantic-ai PR #6079)"),
    "duplicate-start": _quirk("D10", "a repeated start event (llama.cpp)"),
    "duplicate-finish": _quirk(None, "a finish event sent twice (a gateway replaying its last chunk)"),
    "duplicate-sentinel": _quirk(None, "a terminal event sent twice (a proxy adding its own [DONE])"),
    "move-finish": _quirk("D2", "the finish before or with the last arguments (vLLM, rust-genai)"),
    "drop-calls": _quirk("D9", "a tool-call finish with no calls (openai-agents-python)"),
    "inject-error": _quirk(
        "D8",
        "an in-band error mid-call (documented for Anthropic, Responses and Bedrock)",
        spec_in={"anthropic", "openai-responses", "bedrock-converse"},
    ),
    # No protocol fixes these meanings: the expectation is our rule (docs/oracle.md).
    "drop-finish": _policy("no finish reason: whether the turn completes and its calls stand is our rule"),
    "change-finish": _policy(
        "a finish reason that contradicts the calls (stop with calls made): whether they stand is our rule"
    ),
    "drop-sentinel": _policy("a finish without the terminal event: whether the turn is over is our rule"),
    "cut": _CUT,
    "cut-at-every-event": _CUT,
    "cut-mid-args": _CUT,
    "cut-bytes": _CUT,
    "cut-at-every-byte": _CUT,
}

# Retry cases by scenario name (`harness.serve.attempts.PLANS` says how each cuts the first
# attempt; a test keeps the two the same). A program that retried a request has itself given up
# the cut attempt: running that attempt's calls, or the retried one's more than once, is wrong
# whatever the protocol says about the cut, so where the first attempt is cut (even after the
# finish, which alone would be policy) does not make the case more lenient.
_RETRY = (
    "a retry: the retried attempt replaces the cut one, whose calls must not run; each of its calls runs once"
)
RETRIES: Mapping[str, Rule] = {
    "retry-cut-mid-call": _spec(f"{_RETRY} (first attempt cut mid-call)"),
    "retry-cut-after-finished-call": _spec(f"{_RETRY} (first attempt cut after a finished call)"),
    "retry-cut-after-finish": _spec(f"{_RETRY} (first attempt cut after the finish, same ids)"),
    "retry-cut-after-finish-new-ids": _spec(f"{_RETRY} (first attempt cut after the finish, other ids)"),
}

_CUTS = frozenset({"cut", "cut-at-every-event", "cut-mid-args", "cut-bytes", "cut-at-every-byte"})
_ENDING = frozenset({Kind.FINISH, Kind.SENTINEL})
_WHOLE = frozenset({Kind.TOOL_CALL, Kind.TOOL_END})  # a call that arrived whole, or its close


def rule_for(step: Mutation, case: Case | None = None) -> Rule:
    """The class one step gives a case (the case decides for cuts and errors: before or after
    the finish)."""
    found = STEPS.get(step.name)
    rule = found(step) if callable(found) else found
    if case is not None and step.name in _CUTS and _seen(case, _ENDING | {Kind.ERROR}):
        return _CUT_AFTER_FINISH
    if (
        case is not None
        and step.name in _CUTS
        and dialects.get(case.dialect).calls_final_at_finish
        and _seen(case, _WHOLE)
    ):
        return _CUT_AFTER_WHOLE_CALL
    if case is not None and step.name == "inject-error" and _seen(case, _ENDING, before=Kind.ERROR):
        return _ERROR_AFTER_FINISH
    if (
        case is not None
        and step.name == "inject-error"
        and dialects.get(case.dialect).calls_final_at_finish
        and _seen(case, _WHOLE, before=Kind.ERROR)
    ):
        return _ERROR_AFTER_WHOLE_CALL
    if rule is not None:
        return rule  # ours, and it knows the step's parameters (a declaration is per class)
    declared = tuple(getattr(type(step), "imitates", ()) or ())
    if declared:
        ids = ", ".join(dict.fromkeys(str(getattr(q, "id", q)) for q in declared))
        return _quirk(ids, f"declared by {step.name}")
    if getattr(type(step), "breaks", ()):
        return _quirk(None, f"{step.name} declares the invariants it breaks")
    return _spec(f"{step.name}: not known to imitate a deviation")


def classify(case: Case, scenario: Scenario | None = None) -> Expectation:
    """The class of `case`, from the steps of `scenario` (default: the shipped scenario of that
    name; a scenario that cannot be found leaves the case `spec`, the strictest)."""
    known: Expectation | None = case.expectation  # read back with the case from the built-case store
    if known is not None and (scenario is None or scenario.name == case.scenario):
        return known
    # Only cuts and injected errors look at the case's events: the rest is the same for every case
    # of a scenario, recording and dialect (a sweep's points, a scenario's seeds), found once. The
    # recording is its request object, which all its cases share, not its name: two runs in one
    # process may give one name to two recordings (a cassette recorded again, another folder).
    request = case.request
    key = (case.scenario if scenario is None else id(scenario), case.cassette, case.dialect, id(request))
    found = _CLASSES.get(key)
    if found is not None and found[0] is scenario and found[1] is request:
        return found[2]
    steps = _steps(case.scenario) if scenario is None else scenario.steps
    expectation = _classify(case, scenario, steps)
    if steps is not None and not any(step.name in _BY_EVENTS for step in steps):
        if len(_CLASSES) >= 65536:
            _CLASSES.clear()
        _CLASSES[key] = (scenario, request, expectation)
    return expectation


_BY_EVENTS = _CUTS | {"inject-error"}  # the steps whose rule asks the case's events (`rule_for`)
# (scenario or its name, recording's name, dialect, id of its request) -> (the scenario and the
# request, kept alive for their ids; the class)
_CLASSES: dict[tuple[object, str, str, int], tuple[Scenario | None, object, Expectation]] = {}


def _classify(case: Case, scenario: Scenario | None, steps: Sequence[Mutation] | None) -> Expectation:
    if steps is None:
        return Expectation(CaseClass.SPEC, f"scenario {case.scenario!r} not found: judged as spec")
    retry = RETRIES.get(case.scenario if scenario is None else scenario.name)
    said = case.declared  # the recording's own class, from its cassette (`expected_class`)
    declared = None if said is None else Rule(CaseClass(said.case_class), said.reason)
    rules = [rule for rule in (retry, declared) if rule is not None]
    for step in steps:
        rule = rule_for(step, case)
        if case.dialect in rule.spec_in:
            rule = _spec(rule.reason)
        rules.append(rule)
    ending = ending_rule(case)
    if ending is not None and all(r.case_class is not CaseClass.POLICY for r in rules):
        rules.append(ending)  # the ending's own rule, when no step already made the case ours
    if all(r.case_class is CaseClass.SPEC for r in rules):
        broken = protocol_rule(case)  # nothing above explains a stream its protocol forbids
        if broken is not None:
            rules.append(broken)
    if not rules:
        return Expectation(CaseClass.SPEC, "the recorded stream")
    worst = max((r.case_class for r in rules), key=_ORDER.index)
    reasons = dict.fromkeys(r.text() for r in rules if r.case_class is worst)
    return Expectation(worst, "; ".join(reasons))


@cache
def _library() -> dict[str, Scenario]:
    """The bundled scenarios, and the retry ones (served by `toolstream serve` only)."""
    found: dict[str, Scenario] = {}
    for paths in (None, [bundled("scenarios") / "retry"]):
        with contextlib.suppress(HarnessError):
            found.update({s.name: s for s in load_scenarios(paths)})
    return found


def _steps(name: str) -> Sequence[Mutation] | None:
    if name == "original":
        return ()
    found = _library().get(name)
    return None if found is None else found.steps


# Endings docs/oracle.md judges by a rule of ours, whatever made the stream end so (a recording, a
# step): a case with calls that ends one of these ways is `policy`.
_LENGTH_WITH_CALLS = _policy(
    "a turn the output limit ended while calls were streamed: that the call it cut is not final is "
    "our rule (length-with-open-call)"
)
_FINISH_WITHOUT_TERMINAL = _policy(
    "a finish, then a clean end without the terminal event: that the turn is over and its calls "
    "stand is our rule (finish-without-terminal)"
)
_TERMINAL_WITHOUT_FINISH = _policy(
    "the terminal event with no finish before it: that the calls stand is our rule "
    "(terminal-without-finish)"
)
_TERMINAL_WITH_OPEN_CALL = _policy(
    "a call still open when the turn ended (no end marker of its own): that it is reported as "
    "assembled is our rule (terminal-with-open-call)"
)
_UNKNOWN_FINISH = _policy(
    "a finish reason outside the dialect's documented values: that it still ends the turn and its "
    "calls stand is our rule (unknown-finish)"
)
# Each ending rule by its docs/oracle.md situation (what `explain` names the case's situation).
ENDINGS: Mapping[str, Rule] = {
    "length-with-open-call": _LENGTH_WITH_CALLS,
    "finish-without-terminal": _FINISH_WITHOUT_TERMINAL,
    "terminal-without-finish": _TERMINAL_WITHOUT_FINISH,
    "terminal-with-open-call": _TERMINAL_WITH_OPEN_CALL,
    "unknown-finish": _UNKNOWN_FINISH,
}
_CALL_KINDS = frozenset({Kind.TOOL_START, Kind.TOOL_ARGS, Kind.TOOL_CALL})


def ending_rule(case: Case) -> Rule | None:
    """The rule of ours a case's ending falls under, if any (with calls in it)."""
    d = dialects.get(case.dialect)
    seen: set[Kind] = set()
    for event in case.events:
        seen |= _kinds(d, event)
    if not seen & _CALL_KINDS:
        return None
    reason = case.expected.finish_reason
    word = d.finish_reasons.get(Finish.LENGTH)
    if word is not None and reason == word:
        return _LENGTH_WITH_CALLS
    if reason is not None and d.finish_vocabulary and not (
        isinstance(reason, str) and reason in d.finish_vocabulary
    ):
        return _UNKNOWN_FINISH
    if case.expected.state is State.COMPLETE and d.call_end_markers and _open_calls(d, case):
        return _TERMINAL_WITH_OPEN_CALL
    terminal = d.build(Kind.SENTINEL)
    if not terminal or any(Kind.FINISH in d.kinds(event) for event in terminal):
        return None  # the finish is the terminal event, or there is none (Gemini): never one alone
    if Kind.FINISH in seen and Kind.SENTINEL not in seen and case.expected.state is State.COMPLETE:
        return _FINISH_WITHOUT_TERMINAL
    if Kind.SENTINEL in seen and Kind.FINISH not in seen:
        return _TERMINAL_WITHOUT_FINISH
    return None


def declaration(case: Case, scenario: Scenario | None = None) -> Declared | None:
    """The class a cassette written from `case` declares (`expected_class`), so that it replays
    judged as the case was (`scenario` as for `classify`); None for a spec case (a stream is
    judged by its protocol unless its cassette says otherwise)."""
    found = classify(case, scenario)
    if found.case_class is CaseClass.SPEC:
        return None
    return Declared(str(found.case_class), found.reason)


def stream_rules(case: Case) -> tuple[Rule | None, bool]:
    """What a case's own stream says of its class, whatever its steps: its ending's rule
    (`ending_rule`) and whether it breaks its protocol (`protocol_rule`). A shrinker keeps both,
    so its reproduction is judged as the case was: one that lost its terminal event, or a block's
    stop, would be a warning, or a stream no provider sends, where the bug was a failure."""
    return ending_rule(case), protocol_rule(case) is not None


def _open_calls(d: dialects.Dialect, case: Case) -> bool:
    """Whether a call of the case was begun and never ended by its own end marker."""
    ended: set[int] = set()
    begun: set[int] = set()
    for fragment in d.fragments(case.events):
        (ended if fragment.role in _CLOSING else begun).add(fragment.call)
    return bool(begun - ended)


_CLOSING = frozenset({Role.END, Role.WHOLE})


def protocol_rule(case: Case) -> Rule | None:
    """`quirk` for a stream that breaks its dialect's invariants (`Dialect.invariants`): no provider
    following the protocol sends it, so what is expected of it is what a robust client makes of
    it. A recording from a gateway that bends the protocol is one; a step that makes such a
    stream says so itself (its own rule, or `imitates` / `breaks`), and then this is not asked."""
    found = dialects.get(case.dialect).invariants(case.events)
    if not found:
        return None
    codes = ", ".join(dict.fromkeys(v.code for v in found))
    return _quirk(None, f"a stream its protocol does not allow ({codes}; docs/dialects.md)")


def _seen(case: Case, kinds: frozenset[Kind], before: Kind | None = None) -> bool:
    """Whether an event of one of `kinds` came before the stream stopped (or before its first
    event of kind `before`): a finish or terminal event says the turn may be over."""
    d = dialects.get(case.dialect)
    for event in case.events:
        found = _kinds(d, event)
        if before is not None and before in found:
            return False
        if kinds & found:
            return True
    return False


# What each recent event carries: a recording's cases share most of their events (a cut keeps a
# prefix), so each event is asked once, not once per case. Keyed by identity, the event kept alive.
_KINDS: dict[tuple[str, int], tuple[object, frozenset[Kind]]] = {}


def _kinds(d: dialects.Dialect, event: dialects.Event) -> frozenset[Kind]:
    found = _KINDS.get((d.name, id(event)))
    if found is not None and found[0] is event:
        return found[1]
    if len(_KINDS) >= 65536:
        _KINDS.clear()
    kinds = _KINDS[(d.name, id(event))] = (event, d.kinds(event))
    return kinds[1]
