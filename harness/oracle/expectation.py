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
from harness.cassettes.outcome import Outcome, State, ToolCall, diff
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
    "Scope",
    "announced_calls",
    "announced_rule",
    "classify",
    "declaration",
    "ending_rule",
    "protocol_rule",
    "rule_for",
    "scope",
    "situation",
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
    # A rule about how the stream ended: its leniency covers only the differences the ending
    # decides (the state, the finish reason, which calls stand), not the rest of the case (`Scope`).
    ending: bool = False

    def text(self) -> str:
        return f"{self.quirk} {self.reason}" if self.quirk else self.reason


def _spec(reason: str) -> Rule:
    return Rule(CaseClass.SPEC, reason)


def _quirk(quirk: str | None, reason: str, spec_in: Iterable[str] = ()) -> Rule:
    return Rule(CaseClass.QUIRK, reason, quirk, frozenset(spec_in))


def _ending(reason: str) -> Rule:
    """A policy rule about how the stream ended (`Rule.ending`)."""
    return Rule(CaseClass.POLICY, reason, ending=True)


_CUT = _spec("a cut before any finish: only calls already final survive (the protocol says when)")
_CUT_AFTER_FINISH = _ending(
    "a cut after the finish but before the terminal event: whether the turn is over, and so which "
    "calls stand and whether it is `cut` or `complete`, is our rule"
)
_CUT_AFTER_WHOLE_CALL = _ending(
    "a cut after a whole call in a dialect with no end marker per call (Gemini, Ollama): no protocol "
    "says whether a call that arrived whole stands before the finish; ours waits for the finish"
)
_ERROR_AFTER_WHOLE_CALL = _ending(
    "an in-band error after a whole call in a dialect with no end marker per call (Gemini, Ollama): "
    "whether that call stands is our rule (docs/oracle.md, error-after-final-call)"
)
_ERROR_AFTER_FINISH = _ending(
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


def _bare_done(step: Mutation) -> Rule:
    if getattr(step, "instead", True):
        return _ending("a bare [DONE] instead of the terminal event: whether the turn is over is our rule")
    return _quirk("D6", "[DONE] after the terminal event (CLIProxyAPI#3352)")


# Every shipped mutation by name (a test keeps it so); a new one declaring `imitates` is a quirk.
STEPS: Mapping[str, Rule | Callable[[Mutation], Rule]] = {
    # Shapes every documented protocol allows: fragmentation, read boundaries, SSE framing, ids.
    "rechunk": _spec("network reads split anywhere"),
    "fragment-messages": _spec("WebSocket messages in continuation frames: RFC 6455 allows them"),
    "call-in-one-event": _spec("a call whole in one event, a form the protocol has (an AG-UI chunk)"),
    "line-ends": _spec("CRLF or CR line ends: the SSE specification allows them"),
    "sse-comments": _spec("SSE comment lines: the SSE specification allows them"),
    "multiline-data": _spec("multi-line data fields: the SSE specification allows them"),
    "no-space": _spec("no space after the field colon: the SSE specification allows it"),
    "unterminated-last-event": _spec(
        "an event without its blank line is never dispatched, and discarded at the end (WHATWG SSE 9.2.6)"
    ),
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
    "null-word-field": _quirk("A12", 'the id as the word "null" on continuations (Mistral, zed PR #53605)'),
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
    # G1: the request asked for arguments streamed unbuffered and unvalidated (Anthropic
    # fine-grained / eager input streaming), which the API documents may not be JSON.
    "invalid-streamed-args": _spec("invalid JSON streamed unvalidated, as the request asked (G1)"),
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
    "drop-finish": _ending("no finish reason: whether the turn completes and its calls stand is our rule"),
    "change-finish": _ending(
        "a finish reason that contradicts the calls (stop with calls made): whether they stand is our rule"
    ),
    "drop-sentinel": _ending("a finish without the terminal event: whether the turn is over is our rule"),
    "bare-done": _bare_done,
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
    "retry-429-before-stream": _spec(f"{_RETRY} (first attempt a 429 with Retry-After before any byte)"),
    "retry-503-before-stream": _spec(f"{_RETRY} (first attempt a 503 before any byte)"),
    "retry-200-error-body": _quirk(
        None, f"{_RETRY} (first attempt a 200 whose body is an error object: litellm-rs#170)"
    ),
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
    rest, endings = _rules(case, scenario, steps)
    rules = [*rest, *endings]
    if not rules:
        return Expectation(CaseClass.SPEC, "the recorded stream")
    return _most_lenient(rules)


def _rules(case: Case, scenario: Scenario | None, steps: Sequence[Mutation]) -> tuple[list[Rule], list[Rule]]:
    """The rules that class a case: those about the rest of the case, and those about its ending
    (`Rule.ending`), whose leniency covers only what the ending decides."""
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
    rest = [r for r in rules if not r.ending]
    if all(r.case_class is CaseClass.SPEC for r in rest):
        broken = protocol_rule(case)  # nothing above explains a stream its protocol forbids
        if broken is not None:
            rest.append(broken)
    return rest, [r for r in rules if r.ending]


def _most_lenient(rules: Sequence[Rule]) -> Expectation:
    worst = max((r.case_class for r in rules), key=_ORDER.index)
    reasons = dict.fromkeys(r.text() for r in rules if r.case_class is worst)
    return Expectation(worst, "; ".join(reasons))


@dataclass(frozen=True)
class Scope:
    """How far a case's leniency reaches, for judging each difference on its own (docs/oracle.md,
    "Which class judges a difference"): a difference the stream's ending decides (the state, the
    finish reason, a call that is missing, an extra call the ending decides) has the class of
    `ending`; any other has `rest`, the class of the recording and its steps without the ending's
    rule. `case` is the case's class as `classify` gives it."""

    case: Expectation
    ending: Expectation
    rest: Expectation
    # Calls the ending decides that the reference does not report (`announced_calls`): one
    # reported as the stream sent it is the ending's question, not the rest's.
    announced: tuple[ToolCall, ...] = ()
    trailing: int = 0  # calls after the expected ones the ending decides (the call a length finish cut)

    def explains(self, call: ToolCall, position: int, expected: int) -> bool:
        """Whether an extra reported call, at `position` among the reported ones (`expected`
        calls expected), is one the ending decides."""
        if expected <= position < expected + self.trailing:
            return True
        return any(_same_call(call, known) for known in self.announced)


def scope(case: Case, scenario: Scenario | None = None) -> Scope:
    """The case's class and how far it reaches (`Scope`); `scenario` as for `classify`."""
    whole = classify(case, scenario)
    steps = _steps(case.scenario) if scenario is None else scenario.steps
    if steps is None:
        return Scope(whole, whole, whole)
    rest, endings = _rules(case, scenario, steps)
    announced = announced_calls(case)
    said = announced_rule(case) if announced else None
    if said is not None and all(r.case_class is not CaseClass.POLICY for r in endings):
        endings.append(said)  # a leniency of the ending alone: the case's class does not show it
    if not endings:
        return Scope(whole, whole, whole)
    narrow = _most_lenient(rest) if rest else Expectation(CaseClass.SPEC, "the recorded stream")
    return Scope(whole, _most_lenient([*rest, *endings]), narrow, announced, _trailing(case))


def _same_call(a: ToolCall, b: ToolCall) -> bool:
    return (
        a.name == b.name
        and (b.id is None or a.id == b.id)
        and not diff(
            Outcome(tool_calls=(ToolCall(None, a.arguments, invalid=a.invalid),)),
            Outcome(tool_calls=(ToolCall(None, b.arguments, invalid=b.invalid),)),
        )
    )


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
# step): a case that ends one of these ways is `policy` for what its ending decides.
_LENGTH_WITH_CALLS = _ending(
    "a turn the output limit ended while calls were streamed: that the call it cut is not final is "
    "our rule (length-with-open-call)"
)
_FINISH_WITHOUT_TERMINAL = _ending(
    "a finish, then a clean end without the terminal event: that the turn is over and its calls "
    "stand is our rule (finish-without-terminal)"
)
_TERMINAL_WITHOUT_FINISH = _ending(
    "the terminal event with no finish before it: that the calls stand is our rule (terminal-without-finish)"
)
_TERMINAL_WITH_OPEN_CALL = _ending(
    "a call still open when the turn ended (no end marker of its own): that it is reported as "
    "assembled is our rule (terminal-with-open-call)"
)
_UNKNOWN_FINISH = _ending(
    "a finish reason outside the dialect's documented values: that it still ends the turn and its "
    "calls stand is our rule (unknown-finish)"
)
_ERROR_AFTER_FINAL_CALL = _ending(
    "an in-band error after a call was final: that the call stands is our rule (error-after-final-call)"
)
_CUT_AFTER_FINISH_SITUATION = _ending(
    "a transport cut after the finish, before the terminal event: that the calls stand and the "
    "state is `cut` is our rule (cut-after-finish)"
)
_ERROR_AFTER_TERMINAL = _ending(
    "an in-band error after the terminal event: that the turn stands is our rule (error-after-terminal)"
)
_ERROR_THEN_CUT = _ending(
    "an in-band error, then a transport cut: that the state is `error` with the provider's text is "
    "our rule (error-then-cut)"
)
_ANNOUNCED = _ending(
    "a cut or an in-band error after a call the stream moved past (a later call began) in a dialect "
    "whose calls have no end marker (OpenAI chat): openai-python announces it done; whether it "
    "stands is our rule (docs/oracle.md, signalled endings)"
)
# Each policy situation of docs/oracle.md's table by name (what `explain` names the case's situation).
ENDINGS: Mapping[str, Rule] = {
    "length-with-open-call": _LENGTH_WITH_CALLS,
    "finish-without-terminal": _FINISH_WITHOUT_TERMINAL,
    "terminal-without-finish": _TERMINAL_WITHOUT_FINISH,
    "terminal-with-open-call": _TERMINAL_WITH_OPEN_CALL,
    "unknown-finish": _UNKNOWN_FINISH,
    "error-after-final-call": _ERROR_AFTER_FINAL_CALL,
    "cut-after-finish": _CUT_AFTER_FINISH_SITUATION,
    "error-after-terminal": _ERROR_AFTER_TERMINAL,
    "error-then-cut": _ERROR_THEN_CUT,
}
_CALL_KINDS = frozenset({Kind.TOOL_START, Kind.TOOL_ARGS, Kind.TOOL_CALL})


def ending_rule(case: Case) -> Rule | None:
    """The rule of ours a case's ending falls under, if any: its situation's, when docs/oracle.md
    calls that situation `policy`."""
    return ENDINGS.get(situation(case))


def situation(case: Case) -> str:
    """The docs/oracle.md situation a case's stream is in ("One rule per situation"; `whole-stream`
    for a turn that ended as the protocol ends one), read from its events and its expected outcome."""
    d = dialects.get(case.dialect)
    ends = _terminal_kinds(d)
    finish = terminal = error = after_terminal = False
    seen: set[Kind] = set()
    for event in case.events:
        kinds = _kinds(d, event)
        seen |= kinds
        if terminal and not event.wire.is_comment:
            after_terminal = True
        error |= Kind.ERROR in kinds
        finish |= Kind.FINISH in kinds
        terminal |= bool(kinds & ends) and Kind.ERROR not in kinds
    cut = not case.complete
    state, calls = case.expected.state, len(case.expected.tool_calls)
    if state is State.COMPLETE:
        if terminal and (cut or after_terminal):
            return "error-after-terminal" if error else "cut-after-terminal"
        named = _complete_ending(d, case, seen)
        if named is not None:
            return named
        if terminal and not finish:
            return "terminal-without-finish"
        if finish and not terminal:
            return "finish-without-terminal"
        return "whole-stream"
    if state is State.ERROR:
        if calls:
            return "error-after-final-call"
        return "error-then-cut" if cut else "error-mid-call"
    if finish:
        return "cut-after-finish"
    if not cut:
        return "stream-just-stops"
    return "cut-after-final-call" if calls else "cut-mid-call"


@cache
def _terminal_kinds(d: dialects.Dialect) -> frozenset[Kind]:
    """What an event that ends a response carries: the sentinel, and the finish too where the
    finish is the terminal event or there is no other (Bedrock, Responses, Gemini, Ollama)."""
    if _finish_is_terminal(d):
        return frozenset({Kind.SENTINEL, Kind.FINISH})
    return frozenset({Kind.SENTINEL})


def _finish_is_terminal(d: dialects.Dialect) -> bool:
    terminal = d.build(Kind.SENTINEL)
    return not terminal or any(Kind.FINISH in d.kinds(event) for event in terminal)


def _complete_ending(d: dialects.Dialect, case: Case, seen: set[Kind]) -> str | None:
    """The rule of ours a turn that ended `complete` falls under, if any."""
    reason = case.expected.finish_reason
    word = d.finish_reasons.get(Finish.LENGTH)
    if word is not None and reason == word and seen & _CALL_KINDS:
        return "length-with-open-call"
    if (
        reason is not None
        and d.finish_vocabulary
        and not (isinstance(reason, str) and reason in d.finish_vocabulary)
    ):
        return "unknown-finish"
    if d.call_end_markers and _open_calls(d, case):
        return "terminal-with-open-call"
    if _finish_is_terminal(d):
        return None  # the finish is the terminal event, or there is none (Gemini): never one alone
    if Kind.FINISH in seen and Kind.SENTINEL not in seen:
        return "finish-without-terminal"
    if Kind.SENTINEL in seen and Kind.FINISH not in seen:
        return "terminal-without-finish"
    return None


def announced_rule(case: Case) -> Rule | None:
    """`policy` for a cut or errored stream with a call it announced done (`announced_calls`)."""
    if not announced_calls(case):
        return None
    if not dialects.get(case.dialect).calls_final_at_finish:
        return _ANNOUNCED
    return _CUT_AFTER_WHOLE_CALL if case.expected.state is State.CUT else _ERROR_AFTER_WHOLE_CALL


def announced_calls(case: Case) -> tuple[ToolCall, ...]:
    """The calls a cut or errored stream announced done without the protocol making them final, as
    the stream sent them: in a dialect whose calls have no end marker (OpenAI chat) every call a
    later call or text followed (openai-python emits `arguments.done` for it when the next call
    begins, pydantic-ai a `PartEndEvent` when the next part does); where
    a call arrives whole and waits for the finish (Gemini, Ollama) every whole call. The reference
    reports none of them (docs/oracle.md, signalled endings)."""
    d = dialects.get(case.dialect)
    if case.expected.state is State.COMPLETE or (d.call_end_markers and not d.calls_final_at_finish):
        return ()
    events: list[dialects.Event] = []
    for event in case.events:
        kinds = _kinds(d, event)
        if kinds & {Kind.ERROR, Kind.FINISH, Kind.SENTINEL}:
            if Kind.ERROR not in kinds:
                return ()  # a finish made the calls final, or not: the situation's own rule decides
            break
        events.append(event)
    fragments = d.fragments(events)
    begun = sorted({f.call for f in fragments})
    if d.calls_final_at_finish:
        whole = {f.call for f in fragments if f.role in _CLOSING}
        keep = [n for n, call in enumerate(begun) if call in whole]
    else:
        # Every call but the last begun, and the last too when other content followed it (text:
        # pydantic-ai ends a part when the next begins, as openai-python does for the next call).
        last = max((f.event for f in fragments if f.call == begun[-1]), default=-1) if begun else -1
        moved_on = any(Kind.TEXT in _kinds(d, event) for event in events[last + 1 :])
        keep = list(range(len(begun) if moved_on else len(begun) - 1))
    if not keep:
        return ()
    assembled = _assembled(d, events)
    return tuple(assembled[n] for n in keep if n < len(assembled))


def _assembled(d: dialects.Dialect, events: Sequence[dialects.Event]) -> tuple[ToolCall, ...]:
    """The calls of `events` as the reference assembles them when a finish ends the turn there."""
    word = d.finish_reasons.get(Finish.TOOL_CALLS) or d.finish_reasons.get(Finish.STOP)
    ending = [*d.build(Kind.FINISH, reason=word), *d.build(Kind.SENTINEL)]
    acc = d.accumulator()
    for event in [*events, *ending]:
        acc.feed(event)
    return acc.close(None).tool_calls


def _trailing(case: Case) -> int:
    """How many calls after the expected ones the ending decides: the call a length finish cut."""
    if ending_rule(case) is not _LENGTH_WITH_CALLS:
        return 0
    d = dialects.get(case.dialect)
    begun = len({f.call for f in d.fragments(case.events)})
    return max(begun - len(case.expected.tool_calls), 0)


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
