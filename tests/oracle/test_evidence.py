"""One builder of a run's evidence (`evidence_of`) from what the replay server heard for a case: the
first follow-up and report win, a printed report only stands in when none was posted, a run that
sent something did not time out, and the first requests are counted."""

from __future__ import annotations

from harness.cassettes.outcome import Outcome, ToolCall
from harness.oracle.evidence import evidence_of
from harness.serve.server import CaseLog
from harness.wire.dialects.requesting import Turn

FIRST = Turn(calls=(ToolCall("read", {"path": "a"}, "c1"),), results=())
SECOND = Turn(calls=(ToolCall("search", {"q": "b"}, "c2"),), results=())
POSTED, PRINTED = Outcome(text="posted"), Outcome(text="printed")


def test_the_first_follow_up_and_report_heard_are_the_evidence() -> None:
    log = CaseLog()
    log.add(attempt=True, followup=FIRST)
    log.add(attempt=True, followup=SECOND, report=POSTED)
    evidence = evidence_of(log, report=PRINTED, exit_code=0, seconds=1.5, stderr="e")
    assert (evidence.followup, evidence.report, evidence.requests) == (FIRST, POSTED, 2)
    assert (evidence.exit_code, evidence.seconds, evidence.stderr) == (0, 1.5, "e")
    assert not evidence.in_process and not evidence.timed_out


def test_a_printed_report_stands_in_only_when_none_was_posted() -> None:
    log = CaseLog()
    log.add(attempt=True)
    evidence = evidence_of(log, report=PRINTED, timed_out=True)
    assert evidence.report == PRINTED and evidence.followup is None and not evidence.timed_out


def test_a_run_that_sent_nothing_in_time_timed_out_and_one_that_sent_did_not() -> None:
    silent = CaseLog()
    assert evidence_of(silent, timed_out=True).timed_out
    assert evidence_of(silent, timed_out=True).requests == 0
    answered = CaseLog()
    answered.add(followup=FIRST)
    assert not evidence_of(answered, timed_out=True).timed_out
