"""One verdict whatever the transport (issue 43, point 3): an accumulator run in process and the
same accumulator served over the stdio protocol (`cmd:toolstream serve-accumulator SPEC`) get the
same verdict and the same differences on every case.

The stdio answer carries strings losslessly: a client that joins the two escaped halves of a
surrogate pair (F2) as two lone surrogates reports them so over stdio too; before, the JSON round
trip of the answer joined them into the character and the case passed over stdio only.
"""

from __future__ import annotations

import io
import json
import os
import sys

import pytest

from harness import Report, Result, Selection, run_matrix
from harness.accumulators.stdio import answer_line, case_messages, read_answer
from harness.accumulators.stdio_serve import serve
from harness.matrix.selection import Matrix

# The scenarios where what travels in strings (astral characters, escapes, raw bytes) decides the
# verdict, and the plain recordings, on every dialect.
STRING_SCENARIOS = ("original", "F1-split-utf8-multibyte", "F2-surrogate-pair-split", "B8-args-as-object",
                    "partial-json-one-char-pieces")  # fmt: skip
# The library adapters run their library's client per case: the slow lane.
LIBRARIES = ("openai-sdk", "anthropic-sdk", "langchain-core")
SLOW = [pytest.param(spec, marks=pytest.mark.slow) for spec in LIBRARIES]
ADAPTERS = ("examples.accumulators:IndexOnly", "reference", *SLOW)


def _verdicts(reports: list[Report]) -> list[dict[str, tuple]]:
    """Each case's verdict, differences and error (over stdio the error names the process and the
    case before what the accumulator raised: that prefix is where, not what)."""

    def error(r: Result) -> str | None:
        return None if r.error is None else r.error.partition(f"case {r.id}: ")[2] or r.error

    return [{r.id: (str(r.verdict), r.diff, r.severities, error(r)) for r in rep.results} for rep in reports]


def test_an_answer_keeps_lone_surrogates_apart_from_a_pair() -> None:
    lone = {"text": "a \ud83c\udf27", "tool_calls": [{"arguments": '"\ud83c"'}]}
    paired = {"text": "a \U0001f327"}
    assert read_answer(answer_line(lone)) == lone
    assert read_answer(answer_line(paired)) == paired
    assert read_answer(answer_line(lone)) != read_answer(answer_line(paired))
    # What other languages write stays JSON: escapes of a pair are one character.
    assert read_answer(b'{"text":"a \\ud83c\\udf27"}\n') == paired


def test_serve_writes_the_halves_a_client_joined_as_two_lone_surrogates() -> None:
    selection = Selection(dialects=("openai-chat",), scenarios=("F2-surrogate-pair-split",))
    case = next(iter(Matrix(selection).all()))
    lines = "".join(json.dumps(m) + "\n" for m in case_messages(case, "events"))
    out = io.StringIO()
    assert serve("examples.accumulators:IndexOnly", io.StringIO(lines), out) == 0
    answer = read_answer(out.getvalue().encode("utf-8", "surrogatepass"))
    arguments = json.dumps(answer["tool_calls"][0]["arguments"], ensure_ascii=False)
    assert "\ud83c\udf27" in arguments, arguments  # the halves, not the character
    assert "\U0001f327" not in arguments


@pytest.mark.parametrize("spec", ADAPTERS)
def test_the_same_verdicts_in_process_and_over_stdio(spec: str) -> None:
    pytest.importorskip({"openai-sdk": "openai", "anthropic-sdk": "anthropic"}.get(spec, "json"))
    if spec == "langchain-core":
        pytest.importorskip("langchain_core")
    served = f"cmd:{sys.executable} -m harness serve-accumulator {spec}"
    selection = Selection(scenarios=STRING_SCENARIOS)
    in_process, over_stdio = _verdicts(run_matrix([spec, served], selection))
    assert in_process.keys() == over_stdio.keys()
    differ = {case: (was, over_stdio[case]) for case, was in in_process.items() if was != over_stdio[case]}
    assert not differ, f"{len(differ)} cases differ, e.g. {next(iter(differ.items()))}"


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("TOOLSTREAM_WHOLE_MATRIX"), reason="set TOOLSTREAM_WHOLE_MATRIX=1")
@pytest.mark.parametrize("spec", ("examples.accumulators:IndexOnly", "reference", *LIBRARIES))
def test_the_same_verdicts_over_the_whole_matrix(spec: str) -> None:
    served = f"cmd:{sys.executable} -m harness serve-accumulator {spec}"
    in_process, over_stdio = _verdicts(run_matrix([spec, served], Selection()))
    differ = [case for case in in_process if in_process[case] != over_stdio.get(case)]
    assert not differ, f"{len(differ)} cases differ: {differ[:5]}"
