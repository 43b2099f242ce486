"""`toolstream report merge` over a whole pytest session's shards: two served-case tests and two
accumulators in one session, split by pytest-shard, merged per test and per accumulator, each
checked against its own matrix (pytester; real loopback HTTP)."""

from __future__ import annotations

import json

import openai
import pytest

from harness.cli import main
from tests._pytester_support import FIRST_CALL_ONLY, copy_cassettes, plugin_args, prepare

pytest_plugins = ["pytester"]
assert openai

TESTS = """
import openai
import pytest

pytestmark = pytest.mark.toolstream_matrix(dialects=["openai-chat"], scenarios=["original"])


def answer(case):
    client = openai.OpenAI(base_url=case.base_url, api_key="k", max_retries=0)
    calls = {}
    for chunk in client.chat.completions.create(model="m", messages=[], stream=True):
        for part in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            call = calls.setdefault(part.index, {"id": None, "name": "", "arguments": ""})
            call["id"] = part.id or call["id"]
            call["name"] += part.function.name or ""
            call["arguments"] += part.function.arguments or ""
    turn = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls.values()]
    results = [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls.values()]
    client.chat.completions.create(
        model="m", messages=[{"role": "assistant", "content": None, "tool_calls": turn}, *results]
    )


def test_one(toolstream_served_case):
    answer(toolstream_served_case)


def test_two(toolstream_served_case):
    answer(toolstream_served_case)
"""


def test_a_sessions_shards_merge_per_test_and_accumulator(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    prepare(pytester, monkeypatch)
    copy_cassettes(
        pytester, "openai-chat/parallel-2", "openai-chat/single-call", "openai-chat/text-then-call"
    )
    pytester.makepyfile(test_served=TESTS, accs=FIRST_CALL_ONLY)
    common = [
        *plugin_args(), "--toolstream-cassette-dir=corpus", "--toolstream-seeds", "1", "-p", "no:randomly",
        "--toolstream-scenarios", "original", "--toolstream-dialect", "openai-chat",
        "--toolstream-accumulator", "reference", "--toolstream-accumulator", "accs:FirstCallOnly",
    ]  # fmt: skip
    for shard in (0, 1):
        pytester.runpytest(
            *common, "--shard-id", str(shard), "--num-shards", "2", f"--toolstream-json=s{shard}.json"
        )
    documents = [json.loads((pytester.path / f"s{n}.json").read_text()) for n in (0, 1)]
    assert all(len(doc["reports"]) >= 2 for doc in documents)
    capsys.readouterr()
    code = main(["report", "merge", str(pytester.path / "s0.json"), str(pytester.path / "s1.json"),
                 "--json", str(pytester.path / "all.json")])  # fmt: skip
    assert code == 1  # FirstCallOnly fails parallel-2
    merged = json.loads((pytester.path / "all.json").read_text())
    names = {report["summary"]["accumulator"]: len(report["cases"]) for report in merged["reports"]}
    assert names == {
        "test_served.py::test_one": 3, "test_served.py::test_two": 3, "reference": 3, "accs:FirstCallOnly": 3,
    }  # fmt: skip
    # One shard alone: each test's and accumulator's missing cases are named from its own matrix.
    capsys.readouterr()
    assert main(["report", "merge", str(pytester.path / "s0.json")]) == 2
    assert "cases of the matrix are in no report" in capsys.readouterr().err
