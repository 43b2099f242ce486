"""Hostile YAML: every cassette, vcrpy import and scenario file loads within bounds or is refused
in one line. Files that used to hang, crash or overflow run in a subprocess, so a regression fails
the test instead of taking the test run down with it."""

from __future__ import annotations

import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.bounded import yaml as safe_yaml
from harness.cassettes import format as cassettes
from harness.cassettes.format import Cassette, Chunk, Interaction, Request, Response, Source
from harness.errors import HarnessError
from harness.mutate.scenario import load_scenario
from tests._fuzz import examples

ROOT = Path(__file__).resolve().parents[2]
HEADER = "version: 1\nname: n\nsource: {kind: recorded, provenance: p}\ninteractions: []\n"
GOOD = cassettes.dumps(
    Cassette(
        "demo",
        Source("recorded", "test"),
        [
            Interaction(
                Request("POST", "https://api.example/v1/chat/completions", {"a": "b"}, {"stream": True}),
                Response(200, {"content-type": "text/event-stream"}, [Chunk(b"data: {}\n\n", 1.0)]),
            )
        ],
    )
)


def _laughs(levels: int) -> str:
    lines = ['l0: &l0 "lol"']
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, levels + 1)]
    return "\n".join(lines) + "\n" + HEADER


HOSTILE = {
    "self alias": "x: &a [*a]\n" + HEADER,
    "alias bomb": _laughs(9),
    "100k nested [": "[" * 100_000,
    "100k nested {": "{a: " * 100_000,
    "request body 5000 deep": GOOD.replace(
        "body:\n      stream: true\n", f"body: {'[' * 5000}{']' * 5000}\n"
    ),
}


def _vcr(body: str) -> str:
    """A one-interaction vcrpy cassette streaming an OpenAI chat answer, the request body given."""
    sse = 'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n'
    request = {
        "method": "POST",
        "uri": "https://api.openai.com/v1/chat/completions",
        "body": body,
        "headers": {},
    }
    response = {
        "status": {"code": 200},
        "headers": {"content-type": ["text/event-stream"]},
        "body": {"string": sse},
    }
    return yaml.safe_dump({"interactions": [{"request": request, "response": response}], "version": 1})


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], capture_output=True, text=True, timeout=60, check=False
    )


def _one_line(result: subprocess.CompletedProcess[str], path: Path) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr[-500:])
    assert result.stderr.count("\n") == 1 and str(path) in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_cassette_is_refused_in_one_line(case: str, tmp_path: Path) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_text(HOSTILE[case])
    started = time.monotonic()
    _one_line(_run("show", str(path)), path)
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("case", ["self alias", "alias bomb", "100k nested ["])
def test_hostile_vcr_import_is_refused_in_one_line(case: str, tmp_path: Path) -> None:
    path = tmp_path / "vcr.yaml"
    path.write_text(HOSTILE[case].replace(HEADER, "interactions: []\nversion: 1\n"))
    _one_line(_run("import", str(path), "-o", str(tmp_path / "out.yaml")), path)


def test_vcr_request_body_nested_5000_deep_is_kept_as_text(tmp_path: Path) -> None:
    path = tmp_path / "vcr.yaml"
    path.write_text(_vcr("[" * 5000 + "]" * 5000))
    out = tmp_path / "out.yaml"
    result = _run("import", str(path), "--dialect", "openai-chat", "-o", str(out))
    assert result.returncode == 0, result.stderr[-500:]
    assert cassettes.load(out).interactions[0].request.body == "[" * 5000 + "]" * 5000


def test_aliases_and_anchors_are_refused_with_line_and_field() -> None:
    with pytest.raises(HarnessError, match=r"<cassette>:2: name: YAML anchors and aliases"):
        cassettes.loads("version: 1\nname: &n demo\n")


def test_depth_cap_names_the_line() -> None:
    deep = "a:\n  b: " + "[" * (safe_yaml.MAX_DEPTH + 5)
    with pytest.raises(HarnessError, match=rf"<cassette>:2: nested deeper than {safe_yaml.MAX_DEPTH} levels"):
        cassettes.loads(deep)


def test_oversized_text_is_refused_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safe_yaml, "MAX_CHARS", 100)
    with pytest.raises(HarnessError, match="over the 100 a YAML file may have"):
        cassettes.loads(GOOD)


def test_a_file_is_read_within_its_size_and_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(GOOD)
    tracemalloc.start()
    try:
        assert cassettes.load(path).interactions
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024  # not the limit's 256 MB asked for at once, for any file
    monkeypatch.setattr(safe_yaml, "MAX_CHARS", 100)
    with pytest.raises(HarnessError, match=rf"{path}: over the 100 bytes a cassette file may have"):
        cassettes.load(path)
    with pytest.raises(HarnessError, match="/dev/zero: cannot read: a device, not a file"):  # never ends
        cassettes.load("/dev/zero")


def test_json_body_deeper_than_the_cap_stays_text() -> None:
    deep = "[" * 5000 + "]" * 5000
    assert cassettes.json_body(deep) == deep
    capped = "[" * (cassettes.MAX_BODY_DEPTH + 1) + "]" * (cassettes.MAX_BODY_DEPTH + 1)
    assert cassettes.json_body(capped) == capped
    assert cassettes.json_body('{"a": [1]}') == {"a": [1]}


def test_scenario_file_with_an_alias_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: &n s\nmutations: [*n]\n")
    with pytest.raises(HarnessError, match=rf"{path}:1: name: YAML anchors and aliases"):
        load_scenario(path)


# Pieces that stress the parser and composer; spliced into a valid cassette at random places.
_TOKENS = [
    "[",
    "]",
    "{",
    "}",
    "&a ",
    "*a",
    "!!str ",
    "!!python/name:x ",
    ": ",
    "- ",
    "\n",
    "  ",
    "'",
    '"',
    "---\n",
    "? ",
    "|",
    ">",
    "#",
    ",",
    "\\",
    "0x1",
    ".inf",
    "~",
    "null",
    "true",
    "\t",
    "%YAML 1.1\n",
]


@settings(max_examples=examples(100, 300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(
        st.tuples(
            st.integers(0, len(GOOD)),
            st.integers(0, 20),
            st.lists(
                st.sampled_from(_TOKENS) | st.text(st.characters(exclude_categories=("Cs",)), max_size=5),
                max_size=6,
            ),
        ),
        max_size=6,
    ),
    repeat=st.integers(1, 300),
)
def test_any_cassette_text_loads_or_is_one_clean_error(
    edits: list[tuple[int, int, list[str]]], repeat: int
) -> None:
    text = GOOD
    for at, cut, pieces in edits:
        insert = "".join(pieces)
        text = text[:at] + insert * (repeat if len(insert) <= 2 else 1) + text[at + cut :]
    started = time.monotonic()
    try:
        cassettes.loads(text)
    except HarnessError as exc:
        assert "\n" not in str(exc).strip()
    assert time.monotonic() - started < 5


# ---------------------------------------------------------------------------------------------
# JSON nested deep (issue 29): refused before parsing, in one line


def test_json_deeper_than_the_limit_is_refused_before_parsing() -> None:
    from harness import bounded

    assert bounded.loads("[" * bounded.MAX_DEPTH + "]" * bounded.MAX_DEPTH) is not None
    with pytest.raises(bounded.TooDeep, match="5000 levels deep"):
        bounded.loads("[" * 5000 + "]" * 5000)
    # Brackets inside strings, escaped quotes included, are no nesting.
    inside = '{"a": "' + '[\\"' * 5000 + '"}'
    assert bounded.loads(inside) == {"a": '["' * 5000}


def test_deep_tool_arguments_are_invalid_not_a_crash() -> None:
    from harness.cassettes.outcome import ToolCall

    call = ToolCall.from_text("f", '{"a":' + "[" * 3000 + "]" * 3000 + "}")
    assert call.invalid


DEEP_EVENT = '"input":{}}}', '"input":' + "[" * 3000 + "]" * 3000 + "}}"


@pytest.mark.parametrize(
    "command",
    [
        ["show"],
        ["check", "--accumulator", "reference", "--scenarios", "original", "--cassettes"],
        ["compare", "reference", "reference", "--scenarios", "original", "--cassettes"],
        ["mutate", "--scenario", "F3-single-read", "-o", "out.yaml"],
    ],
    ids=lambda command: command[0],
)
def test_event_data_nested_thousands_deep_is_one_line(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main

    monkeypatch.chdir(tmp_path)
    text = (ROOT / "cassettes/anthropic/single-call.yaml").read_text(encoding="utf-8")
    path = tmp_path / "deep.yaml"
    path.write_text(text.replace(*DEEP_EVENT, 1), encoding="utf-8")
    assert main([*command, str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err[:2000]
    assert f"{path}" in err and "event 1: data: JSON nested 3002 levels deep, over the 100 allowed" in err


def test_importing_a_body_nested_thousands_deep_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main

    body = tmp_path / "deep.sse"
    body.write_text('data: {"choices":' + "[" * 3000 + "]" * 3000 + "}\n\n", encoding="utf-8")
    code = main(["import", str(body), "--dialect", "openai-chat", "-o", str(tmp_path / "out.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err[:2000]
    assert "nested 3001 levels deep" in err


def test_a_case_with_arguments_as_deep_as_allowed_reads_back(tmp_path: Path) -> None:
    from harness import bounded
    from harness.cassettes.outcome import Outcome, ToolCall

    deep: object = 1
    for _ in range(bounded.MAX_DEPTH - 1):
        deep = [deep]
    cassette = cassettes.load(ROOT / "cassettes/openai-chat/single-call.yaml")
    cassette.interactions[0].expected = Outcome(tool_calls=(ToolCall("f", {"a": deep}),))
    cassettes.save(cassette, tmp_path / "deep.yaml")
    read = cassettes.load(tmp_path / "deep.yaml")
    assert read.interactions[0].expected == cassette.interactions[0].expected


@pytest.mark.parametrize(
    "edit",
    [DEEP_EVENT, ('"stop_reason":"tool_use"', '"stop_reason":[1]')],
    ids=["deep", "wrong-type"],
)
def test_a_hostile_cassette_in_the_pytest_matrix_is_no_internal_error(
    edit: tuple[str, str], pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests._pytester_support import plugin_args, prepare

    prepare(pytester, monkeypatch)
    text = (ROOT / "cassettes/anthropic/single-call.yaml").read_text(encoding="utf-8")
    bad = pytester.path / "corpus" / "bad.yaml"
    bad.parent.mkdir()
    bad.write_text(text.replace(*edit, 1), encoding="utf-8")
    options = ["--toolstream-accumulator", "reference", "--toolstream-scenarios", "original"]
    result = pytester.runpytest(*plugin_args(), "--toolstream-cassette-dir", "corpus", *options)
    out = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-3000:]
    assert str(bad) in out and "event" in out
    assert result.ret == pytest.ExitCode.USAGE_ERROR
