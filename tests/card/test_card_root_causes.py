"""Root causes on the card (issue 43, point 4): each row's failures a level above their signatures,
grouped by the site in the library where they raised, else by the same raise or first difference,
with their scenarios, in the JSON, the Markdown (both pages) and the HTML. Plain data: no
environment is built."""

from __future__ import annotations

from typing import Any

from harness.card import grading, render

SITE = "anthropic/lib/streaming/_messages.py:496"


def _case(
    case_id: str, diff: list[str], *, error: str | None = None, verdict: str = "fail"
) -> dict[str, Any]:
    cassette, scenario, _ = case_id.split("::")
    state = "error" if error else "complete"
    return {"id": case_id, "cassette": cassette, "scenario": scenario, "verdict": verdict, "diff": diff,
            "severities": ["unsafe"] * len(diff), "severity": "unsafe", "class": "spec",
            "accumulator": "anthropic-sdk", "error": None,
            "actual": {"tool_calls": [], "text": "", "finish_reason": None, "state": state,
                       "error": error}}  # fmt: skip


def _cases() -> list[dict[str, Any]]:
    raise_ = "state: complete expected, got error (IndexError: list index out of range)"
    error = f"IndexError: list index out of range\nraised at {SITE}"
    merged = "call 0: arguments '{}' expected, got '{\"a\":1}'"
    return [
        # One raise site under three signatures (what else went wrong differs per scenario).
        _case("anthropic/parallel-calls::C4-reasoning-shifts-index::s0",
              ["call 1: expected, missing", raise_], error=error),
        _case("anthropic/parallel-calls::interleaved-tool-blocks::s0",
              ["tool_calls: 2 expected, got 1", raise_], error=error),
        _case("anthropic/no-arguments::C4-reasoning-shifts-index::s1", [raise_], error=error),
        # One first difference under two signatures.
        _case("anthropic/parallel-calls::A1-parallel-same-index::s0", [merged]),
        _case("anthropic/parallel-calls::D10-duplicate-start-events::s0",
              ["call 0: arguments '{}' expected, got '{\"a\":1}'", "tool_calls: 1 expected, got 2"]),
        _case("anthropic/parallel-calls::original::s0", []) | {"verdict": "pass"},
    ]  # fmt: skip


def _row() -> dict[str, Any]:
    graded = grading.Graded("anthropic", "2.14.0", "anthropic-sdk", report={"cases": _cases()})
    return grading.row(graded, known=lambda *_: None, repros={})


def test_a_row_groups_its_failures_by_raise_site_then_first_difference() -> None:
    row = _row()
    assert len(row["signatures"]) == 5
    causes = {c["root_cause"]: c for c in row["root_causes"]}
    assert list(causes) == [f"raised at {SITE}", "arguments differ"]  # the largest first
    raised = causes[f"raised at {SITE}"]
    assert raised["cases"] == 3 and len(raised["signatures"]) == 3 and raised["recordings"] == 2
    assert raised["scenarios"] == {"C4-reasoning-shifts-index": 2, "interleaved-tool-blocks": 1}
    merged = causes["arguments differ"]
    assert merged["cases"] == 2 and merged["scenarios"] == {
        "A1-parallel-same-index": 1,
        "D10-duplicate-start-events": 1,
    }
    assert sum(c["cases"] for c in row["root_causes"]) == sum(s["cases"] for s in row["signatures"])


def test_an_error_verdict_over_stdio_is_grouped_by_its_site_without_the_runners_prefix() -> None:
    prefix = "anthropic-sdk: case anthropic/web-search::original::s0: "
    case = _case("anthropic/web-search::original::s0", []) | {
        "verdict": "error", "severity": None,
        "error": f"{prefix}KeyError: 'parameters'\nraised at lib/tools.py:9",
    }  # fmt: skip
    other = case | {
        "id": "anthropic/web-search::A1-x::s0",
        "scenario": "A1-x",
        "error": "KeyError: 'parameters'\nraised at lib/tools.py:9",
    }
    graded = grading.Graded("anthropic", "2.0.0", "anthropic-sdk", report={"cases": [case, other]})
    (cause,) = grading.row(graded, known=lambda *_: None, repros={})["root_causes"]
    assert cause["root_cause"] == "raised at lib/tools.py:9" and cause["cases"] == 2


def test_every_rendering_shows_the_root_causes_with_their_scenarios() -> None:
    card = {"version": 1, "date": "2026-11-28", "selection": {}, "rows": [_row()], "changes": []}
    markdown = render.markdown(card)
    assert "Root causes (2 for 5 signatures" in markdown
    assert f"`raised at {SITE}`" in markdown
    assert "2: C4-reasoning-shifts-index 2, interleaved-tool-blocks 1" in markdown
    assert f"`raised at {SITE}`" in render.adapters_block(card)
    html = render.page(card)
    assert f"<code>raised at {SITE}</code>" in html and "C4-reasoning-shifts-index 2" in html
