"""`harness.serve.produce`: a producer program behind the replay server, its answer kept read by
read; the real AI SDK producer of examples/producers (skipped without its node_modules)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from harness.cassettes.outcome import diff
from harness.errors import UsageError
from harness.matrix.selection import build_case
from harness.serve.produce import produce, read_produced
from harness.wire import dialects

ROOT = Path(__file__).resolve().parents[2]
# A producer of our own: it asks the case's OpenAI endpoint for a stream and answers with its
# lines turned upper case, one read per upstream line.
UPPER = """
import json, os, urllib.request
out = lambda item: print(json.dumps(item), flush=True)
out({"request": {"method": "POST", "url": "http://app/upper", "body": {"q": 1}}})
body = json.dumps({"model": "m", "stream": True, "messages": []}).encode()
request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body,
                                 {"content-type": "application/json"})
out({"response": {"status": 200, "headers": {"Content-Type": "text/plain"}}})
with urllib.request.urlopen(request) as answer:
    for line in answer:
        if line.strip():
            out({"read": line.decode().upper()})
out({"end": True})
"""


def test_a_producer_reads_the_case_and_its_answer_is_kept_read_by_read(tmp_path: Path) -> None:
    script = tmp_path / "upper.py"
    script.write_text(UPPER)
    case = build_case("openai-chat/single-call::original::s0")
    made = produce(case, [sys.executable, str(script)])
    assert made.request.url == "http://app/upper" and made.request.body == {"q": 1}
    assert made.response.headers == {"content-type": "text/plain"}
    assert made.response.chunks[-1].data == b"DATA: [DONE]\n"
    assert len(made.response.chunks) == case.response.body.count(b"data:")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json\n", "line 1 is not JSON"),
        ('{"read": "x"}\n', "unexpected 'read'"),
        ('{"request": {}}\n', "names no request or no response"),
        ('{"request": {}, "response": {}}\n', "an object with one key"),
    ],
)
def test_a_producer_that_speaks_otherwise_is_one_line(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        read_produced(text)


def test_a_broken_off_answer_is_an_incomplete_response() -> None:
    made = read_produced(
        '{"request": {"url": "u"}}\n{"response": {"status": 200}}\n{"read": "a"}\n{"error": "reset"}\n'
    )
    assert not made.response.complete and made.response.error == "reset"


def test_a_producer_that_fails_names_its_exit_code(tmp_path: Path) -> None:
    script = tmp_path / "fail.py"
    script.write_text("import sys; print('no upstream', file=sys.stderr); sys.exit(4)")
    with pytest.raises(UsageError, match=r"exited 4 .*no upstream"):
        produce(build_case("openai-chat/single-call::original::s0"), [sys.executable, str(script)])


AI_SDK = ROOT / "examples" / "producers" / "ai-sdk-ui"


@pytest.mark.skipif(
    not (AI_SDK / "node_modules").is_dir() or shutil.which("node") is None,
    reason="needs npm ci --prefix examples/producers/ai-sdk-ui",
)
def test_the_ai_sdk_produces_what_its_committed_cassette_expects() -> None:
    case = build_case("openai-chat/parallel-2::original::s0")
    env = {
        "TOOLSTREAM_PROVIDER": "openai",
        "TOOLSTREAM_MODEL": case.request.body["model"],
        "TOOLSTREAM_TOOLS": json.dumps(["get_weather", "get_time"]),
    }
    made = produce(case, ["node", str(AI_SDK / "produce.mjs")], env=env)
    assert made.response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    from harness import load_cassette

    committed = load_cassette(ROOT / "cassettes" / "ai-sdk-ui" / "from-openai-chat-parallel-2.yaml")
    expected = committed.interactions[0].expected
    assert expected is not None
    assert not diff(expected, dialects.reference_outcome(made.response, "ai-sdk-ui"))
