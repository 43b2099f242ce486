"""What strictness costs: the strict accumulators' failures outside `spec` cases, as
docs/strictness.md lists them (per dialect: class, scenario, severity, signature, count).

    python -m tests.strict.costs        # rewrite the page's blocks from a fresh run
    python -m tests.strict.costs --check  # exit 1 when the page differs from a fresh run

`tests/oracle/test_strict_accumulators.py` runs the same check per dialect.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

from harness import Report, Selection, run_matrix
from harness.cassettes.corpus import bundled, cassette_paths
from harness.mutate.scenario import recorded_streams
from harness.oracle.verdict import signature
from tests.strict import STRICT

PAGE = Path(__file__).resolve().parents[2] / "docs" / "strictness.md"


def run(dialect: str) -> Report:
    """The strict accumulator of `dialect` over the full bundled matrix of that dialect."""
    return run_matrix(STRICT[dialect], Selection(dialects=[dialect]))


def _declared() -> set[str]:
    """The bundled recordings whose cassette declares their class (those themselves a quirk)."""
    root = bundled("cassettes")
    paths = cassette_paths(None)
    return {s.id for path in paths for s in recorded_streams(path, [root]) if s.interaction.declared}


def block(dialect: str, report: Report) -> str:
    """The page's block for one dialect: a summary line and one row per kind of failure."""
    classes = Counter(str(r.case_class) for r in report.results)
    declared = _declared()
    rows: Counter[tuple[str, str, str, str]] = Counter()
    for r in report.results:
        if r.severity is None and str(r.verdict) == "pass":
            continue
        # A recording that is itself a quirk fails under most scenarios alike: one row for it.
        where = f"any, on `{r.cassette}`" if r.cassette in declared else f"`{r.scenario}`"
        rows[(str(r.case_class), where, str(r.severity or r.verdict), signature(r))] += 1
    failing = Counter(key[0] for key in rows.elements())
    lines = [
        f"**{dialect}**: {len(report.results)} cases ("
        + ", ".join(f"{classes[c]} {c}" for c in ("spec", "quirk", "policy"))
        + "); failing: "
        + ", ".join(f"{failing[c]} {c}" for c in ("spec", "quirk", "policy"))
        + ".",
        "",
        "| class | scenario | severity | signature | cases |",
        "| --- | --- | --- | --- | --- |",
    ]
    order = {"spec": 0, "quirk": 1, "policy": 2}
    for (klass, scenario, severity, sig), n in sorted(rows.items(), key=lambda kv: (order[kv[0][0]], kv[0])):
        lines.append(f"| {klass} | {scenario} | {severity} | {sig.replace('|', '/')} | {n} |")
    return "\n".join(lines)


def _pattern(dialect: str) -> re.Pattern[str]:
    name = re.escape(dialect)
    return re.compile(rf"(<!-- strict-costs:{name} -->\n)(.*?)(\n<!-- /strict-costs:{name} -->)", re.DOTALL)


def listed(dialect: str, text: str | None = None) -> str | None:
    """The block the page holds for `dialect` (None when it has none)."""
    found = _pattern(dialect).search(PAGE.read_text(encoding="utf-8") if text is None else text)
    return None if found is None else found.group(2)


def main(argv: list[str]) -> int:
    text = PAGE.read_text(encoding="utf-8")
    stale = []
    for dialect in STRICT:
        fresh = block(dialect, run(dialect))
        if listed(dialect, text) != fresh:
            stale.append(dialect)
            text = _pattern(dialect).sub(lambda m, fresh=fresh: m.group(1) + fresh + m.group(3), text)
    if "--check" in argv:
        print("stale:", ", ".join(stale) if stale else "none")
        return 1 if stale else 0
    PAGE.write_text(text, encoding="utf-8")
    print("rewritten:", ", ".join(stale) if stale else "none")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
