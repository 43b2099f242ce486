"""Cassette v1: lossless round trips, readable chunks, and one clear error per bad file."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cassettes import format as cassettes
from harness.cassettes.format import Cassette, Chunk, Interaction, Request, Response, Source
from harness.cassettes.model import Declared
from harness.cassettes.outcome import Outcome, State, ToolCall
from harness.cli import main
from harness.errors import CassetteError


def make(chunks: list[Chunk], **response: object) -> Cassette:
    return Cassette(
        name="demo",
        dialect="openai-chat",
        source=Source("synthesized", "test"),
        interactions=[
            Interaction(
                Request(
                    "POST",
                    "https://api.example/v1/chat/completions",
                    {"content-type": "application/json"},
                    {"model": "m", "stream": True},
                ),
                Response(200, {"content-type": "text/event-stream"}, chunks, **response),  # type: ignore[arg-type]
                Outcome((ToolCall("f", {"a": [1, 2.5, None]}, "call_1"),), finish_reason="tool_calls"),
            )
        ],
    )


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    original = make(
        [Chunk(b'data: {"x":1}\n\n', 0), Chunk(b"\xe2\x82", 1.5), Chunk(b"\xac\n\n", 20)],
        complete=False,
        error="peer closed connection",
        error_type="RemoteProtocolError",
        open_after=0.25,
    )
    path = cassettes.save(original, tmp_path / "c.yaml")
    assert cassettes.load(path) == original


def test_a_declared_class_round_trips(tmp_path: Path) -> None:
    original = make([Chunk(b"data: x\n\n")])
    original.interactions[0].declared = Declared("policy", "a finish without [DONE] (D6)")
    path = cassettes.save(original, tmp_path / "c.yaml")
    assert "expected_class:" in path.read_text() and cassettes.load(path) == original


def test_utf8_chunks_are_literal_blocks_and_others_base64(tmp_path: Path) -> None:
    text = cassettes.dumps(make([Chunk(b'data: {"city":"Z\xc3\xbcrich"}\n\n'), Chunk(b"\xff\x00")]))
    assert '- |\n      data: {"city":"Zürich"}' in text or '- |+\n      data: {"city":"Zürich"}' in text
    assert "b64: /wA=" in text


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.binary(max_size=40), st.none() | st.floats(0, 1e6, allow_nan=False)), max_size=8)
)
def test_any_chunks_round_trip(chunks: list[tuple[bytes, float | None]]) -> None:
    original = make([Chunk(data, None if off is None else round(off, 3)) for data, off in chunks])
    assert cassettes.loads(cassettes.dumps(original)) == original


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=6))
def test_any_text_chunks_round_trip(texts: list[str]) -> None:
    encodable = [t for t in texts if not any(0xD800 <= ord(c) <= 0xDFFF for c in t)]
    original = make([Chunk(t.encode("utf-8")) for t in encodable])
    assert cassettes.loads(cassettes.dumps(original)) == original


GOOD = cassettes.dumps(make([Chunk(b"data: x\n\n")]))

BAD = {
    "broken yaml": ("interactions: [\n", "broken YAML"),
    "missing field": (GOOD.replace("name: demo\n", ""), "name: missing"),
    "wrong type": (
        GOOD.replace("status: 200", "status: ok"),
        "interactions[0].response.status: must be an integer",
    ),
    "bad base64": (
        GOOD.replace("- |", "- b64: '!!notbase64'\n    - |", 1),
        "chunks[0].b64: is not valid base64",
    ),
    "unknown version": (GOOD.replace("version: 1", "version: 7"), "version: unsupported version 7"),
    "python tag": (
        GOOD.replace("name: demo", "name: !!python/object/apply:os.system [echo hi]"),
        "is refused",
    ),
    "bad outcome": (GOOD.replace("state: complete", "state: finished"), "expected.state: must be one of"),
    "bad source": (GOOD.replace("kind: synthesized", "kind: invented"), "source.kind: must be one of"),
    "bad declared class": (
        GOOD.replace("  expected:\n", "  expected_class: {class: lenient, reason: x}\n  expected:\n"),
        "interactions[0].expected_class.class: must be one of spec, quirk, policy, not 'lenient'",
    ),
    "connection held open too long": (
        GOOD.replace("complete: true", "complete: true\n    open_after: 3600"),
        "interactions[0].response.open_after: must be from 0 to 60.0 seconds",
    ),
    "connection held open for a word": (
        GOOD.replace("complete: true", "complete: true\n    open_after: soon"),
        "interactions[0].response.open_after: must be a number of seconds",
    ),
    "declared class without a reason": (
        GOOD.replace("  expected:\n", "  expected_class: {class: quirk}\n  expected:\n"),
        "interactions[0].expected_class.reason: missing",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_cassette_is_one_clear_error(case: str, tmp_path: Path) -> None:
    text, message = BAD[case]
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(CassetteError) as info:
        cassettes.load(path)
    rendered = str(info.value)
    assert rendered.startswith(f"{path}:"), rendered
    assert message in rendered
    assert "\n" not in rendered


@pytest.mark.parametrize("case", sorted(BAD))
def test_cli_prints_one_line_and_exits_2(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD[case][0])
    assert main(["show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and "Traceback" not in err


def test_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(GOOD.replace("status: 200", "status: ok"))
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "status: ok" in text)
    with pytest.raises(CassetteError, match=rf"bad.yaml:{line}: "):
        cassettes.load(path)


def test_save_replaces_atomically_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    cassettes.save(make([Chunk(b"old\n")]), path)
    cassettes.save(make([Chunk(b"new\n")]), path)
    assert cassettes.load(path).interactions[0].response.chunks == [Chunk(b"new\n")]
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]


def test_failed_save_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    cassettes.save(make([Chunk(b"old\n")]), path)
    broken = make([Chunk(b"new\n")])
    broken.interactions[0].request.body = {"not serialisable": object()}
    with pytest.raises(Exception):  # noqa: B017 - whatever the dumper raises, the old file must survive
        cassettes.save(broken, path)
    assert cassettes.load(path).interactions[0].response.chunks == [Chunk(b"old\n")]
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]


def test_missing_file_is_a_cassette_error(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="no such cassette file"):
        cassettes.load(tmp_path / "nope.yaml")


def test_state_enum_round_trips() -> None:
    outcome = Outcome(state=State.CUT, error="boom")
    assert Outcome.from_dict(outcome.to_dict()) == outcome


# A response over `JOINED_ABOVE` reads is saved as one body plus each read's size and offset.


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.binary(max_size=40), st.none() | st.floats(0, 1e6, allow_nan=False)), max_size=8),
    st.booleans(),
)
def test_any_chunks_round_trip_as_a_joined_body(
    chunks: list[tuple[bytes, float | None]], timed: bool
) -> None:
    # The joined form keeps offsets all or none (a recording has them on every read or on none).
    original = make([Chunk(data, round(off or 0.0, 3) if timed else None) for data, off in chunks])
    text = cassettes.dumps(original, joined_above=0)
    assert not chunks or ("chunks:" not in text and "reads:" in text)
    assert cassettes.loads(text) == original


def test_over_joined_above_reads_is_saved_joined(tmp_path: Path) -> None:
    count = cassettes.JOINED_ABOVE + 1
    reads = [Chunk(f'data: {{"n":{n}}}\n\n'.encode(), n * 2.5) for n in range(count)]
    joined = cassettes.save(make(reads), tmp_path / "joined.yaml")
    assert "reads: 15@0 15@2.5 " in joined.read_text() and "chunks:" not in joined.read_text()
    assert cassettes.load(joined) == make(reads)
    assert "chunks:" in cassettes.dumps(make(reads[:-1]))  # at the threshold: a mapping per read


def test_show_reads_a_joined_body_as_the_same_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reads = [Chunk(f'data: {{"n":{n}}}\n\n'.encode(), n * 2.5) for n in range(5)]
    joined = cassettes.save(make(reads), tmp_path / "joined.yaml", joined_above=0)
    per_read = cassettes.save(make(reads), tmp_path / "per-read.yaml", joined_above=None)
    assert "reads:" in joined.read_text() and "chunks:" in per_read.read_text()
    shown = []
    for path in (joined, per_read):
        assert main(["show", str(path)]) == 0
        shown.append(capsys.readouterr().out.replace(path.name, "X"))
    assert shown[0] == shown[1]


JOINED = cassettes.dumps(make([Chunk(b"data: 1\n\n", 0), Chunk(b"data: 22\n\n", 5)]), joined_above=0)


@pytest.mark.parametrize(
    ("reads", "message"),
    [
        ("9@0 10@5 1@6", "reads[2]: read '1@6' runs past the body"),
        ("9@0 9@5", "reads: the reads cover 18 of the body's 19 bytes"),
        ("9@0 x@5", "reads[1]: 'x@5' is not a size in bytes"),
        ("9@0 10@1e99", "reads[1]: offset must be from 0"),
        ("9@0 10@nan", "reads[1]: offset must be from 0"),
        ("9@0 -1@5", "reads[1]: read '-1@5' runs past the body"),
    ],
)
def test_bad_reads_of_a_joined_body_are_one_line_naming_the_field(
    reads: str, message: str, tmp_path: Path
) -> None:
    assert "reads: 9@0 10@5\n" in JOINED
    path = tmp_path / "bad.yaml"
    path.write_text(JOINED.replace("reads: 9@0 10@5\n", f"reads: {reads}\n"))
    with pytest.raises(CassetteError) as info:
        cassettes.load(path)
    rendered = str(info.value)
    assert rendered.startswith(f"{path}:") and "interactions[0].response.body." in rendered, rendered
    assert message in rendered and "\n" not in rendered, rendered
