"""The fast paths of loading a cassette give exactly what the plain ones give.

`load` hands libyaml the file's bytes (no decode to text and encode back): every cassette loads the
same from bytes as from text, and every bad file fails with the very message it failed with as
text. A joined body's `reads` are parsed by one `json.loads` when spelled as `save` writes them;
any other spelling goes the general way (`int` / `float` per token), and both agree on every input.
"""

from __future__ import annotations

import gc
import math
from itertools import accumulate
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cassettes import format as cassettes
from harness.cassettes.format import MAX_OFFSET_MS, Cassette, Chunk, Interaction, Request, Response, Source
from harness.errors import CassetteError


def make(chunks: list[Chunk]) -> Cassette:
    request = Request("POST", "https://api.example/v1/chat", {"content-type": "application/json"}, {"a": 1})
    response = Response(200, {"content-type": "text/event-stream"}, chunks)
    return Cassette("demo", Source("synthesized", "test"), [Interaction(request, response)], "openai-chat")


def error_of(text: str | bytes) -> str:
    with pytest.raises(CassetteError) as info:
        cassettes.loads(text, path="c.yaml")
    return str(info.value)


GOOD = cassettes.dumps(make([Chunk("data: é\n\n".encode(), 0), Chunk(b"\xff\xfe", 2.5)]), joined_above=None)
JOINED = cassettes.dumps(make([Chunk(b"data: 1\n\n", 0), Chunk(b"data: 22\n\n", 5)]), joined_above=0)


@pytest.mark.parametrize("text", [GOOD, JOINED, "\ufeff" + GOOD, GOOD.replace("\n", "\r\n")])
def test_bytes_load_as_their_text_does(text: str, tmp_path: Path) -> None:
    expected = cassettes.loads(text)
    assert cassettes.loads(text.encode("utf-8")) == expected
    path = tmp_path / "c.yaml"
    path.write_bytes(text.encode("utf-8"))
    assert cassettes.load(path) == expected


BAD_TEXTS = [
    "",
    "version: 1\nname: [unclosed\n",
    GOOD.replace("name: demo", "name: &a demo"),
    GOOD.replace("name: demo", "name: !!python/object:os.system demo"),
    GOOD.replace("name: demo", "name: demo\x01"),  # a control character libyaml refuses
    GOOD.replace("name: demo", "name: 'demo\x85'"),
    "version: 1\n---\nversion: 1\n",
    "[" * 200,
    JOINED.replace("reads: 9@0 10@5", "reads: 9@0 x@5"),
    GOOD.replace("version: 1", "version: 2"),
]


@pytest.mark.parametrize("text", BAD_TEXTS)
def test_a_bad_file_fails_the_same_as_bytes_and_as_text(text: str) -> None:
    try:
        as_text = error_of(text)
    except pytest.fail.Exception:  # loads as text: then as bytes too, to the same cassette
        assert cassettes.loads(text.encode("utf-8")) == cassettes.loads(text)
        return
    assert error_of(text.encode("utf-8")) == as_text


@pytest.mark.parametrize(
    "data",
    [
        GOOD.encode() + b"\xff",  # an invalid leading byte, at the end
        b"\xc3" + GOOD.encode(),  # a truncated sequence, first
        GOOD.encode().replace(b"demo", b"d\xed\xa0\x80mo"),  # an encoded surrogate
        GOOD.encode().replace(b"demo", b"d\xc0\xafmo"),  # an overlong encoding
        b"\xff\xfe" + GOOD.encode("utf-16-le"),  # UTF-16 that libyaml alone would read
        b"\xfe\xff" + GOOD.encode("utf-16-be"),
        b"version: [1\n\xff",  # broken YAML before the bad byte: still not UTF-8 first
    ],
)
def test_bytes_that_are_not_utf8_are_said_so(data: bytes, tmp_path: Path) -> None:
    assert error_of(data) == "c.yaml: not a UTF-8 text file"
    path = tmp_path / "c.yaml"
    path.write_bytes(data)
    with pytest.raises(CassetteError, match=r"c\.yaml: not a UTF-8 text file$"):
        cassettes.load(path)


# --- a joined body's reads -----------------------------------------------------------------------


def general_cut(data: bytes, spec: str) -> list[Chunk] | None:
    """The reads a spec gives, token by token with `int` and `float` (the format's definition)."""
    tokens = spec.split()
    timed = [token.partition("@") for token in tokens]
    if any(at for _, at, _ in timed) and not all(at for _, at, _ in timed):
        return None
    try:
        sizes = [int(size) for size, _, _ in timed]
        offsets = [float(offset) if at else None for _, at, offset in timed]
    except ValueError:
        return None
    if any(offset is not None and not 0 <= offset <= MAX_OFFSET_MS for offset in offsets):
        return None
    if any(size < 0 for size in sizes) or sum(sizes) != len(data):
        return None
    ends = list(accumulate(sizes))
    return [
        Chunk(data[end - size : end], offset) for size, end, offset in zip(sizes, ends, offsets, strict=True)
    ]


sizes = st.lists(st.integers(0, 40), max_size=12)
offset_spellings = st.one_of(
    st.floats(0, 1e6, allow_nan=False).map(lambda x: str(cassettes._ms(x))),
    st.sampled_from(["0", "-0", "0.0", "1e3", "1E-2", "-1", "1e99", "nan", "NaN", "inf", "Infinity",
                     "1_000", "+5", "007", "1.", ".5", "0x10", "٣", "", "1@2", "86400000", "86400000.5"]),
)  # fmt: skip
size_spellings = st.one_of(
    st.just(None), st.sampled_from(["1e1", "1.0", "+3", "-0", "0_3", "03", "x", "٣", "-1", ""])
)
separators = st.sampled_from([" ", " ", " ", "  ", "\t", " \n "])


@settings(max_examples=400, deadline=None)
@given(sizes, st.booleans(), st.data())
def test_the_json_path_and_the_general_path_agree_on_any_spelling(
    lengths: list[int], timed: bool, data: st.DataObject
) -> None:
    body = bytes(range(256)) * 2
    body = body[: sum(lengths)] if sum(lengths) <= len(body) else bytes(sum(lengths))
    tokens = []
    for length in lengths:
        size = data.draw(size_spellings) if data.draw(st.integers(0, 9)) == 0 else None
        token = str(length) if size is None else size
        if timed or data.draw(st.integers(0, 19)) == 0:
            token += "@" + data.draw(offset_spellings)
        tokens.append(token)
    spec = "".join(token + data.draw(separators) for token in tokens).rstrip(" ") if tokens else ""
    spec = spec.strip() if data.draw(st.booleans()) else spec
    assert cassettes._cut(body, spec) == general_cut(body, spec), spec


def test_save_spelling_takes_the_json_path_and_leaves_the_collector_as_it_was() -> None:
    chunks = [Chunk(b"x" * (n % 7), n * 41.5) for n in range(1000)]
    spec = " ".join(f"{len(c.data)}@{cassettes._ms(c.offset_ms or 0)}" for c in chunks)
    data = b"".join(c.data for c in chunks)
    assert cassettes._json_numbers(spec) is not None
    assert gc.isenabled()
    assert cassettes._cut(data, spec) == chunks
    assert gc.isenabled()
    gc.disable()
    try:
        assert cassettes._cut(data, spec) == chunks
        assert not gc.isenabled()  # not turned on by a load that found it off
    finally:
        gc.enable()


def test_offsets_in_the_joined_form_keep_their_values() -> None:
    reads = [Chunk(b"ab", 0.0), Chunk(b"c", 0.001), Chunk(b"", 86_400_000), Chunk(b"d", 1234.5)]
    loaded = cassettes.loads(cassettes.dumps(make(reads), joined_above=0).encode())
    got = loaded.interactions[0].response.chunks
    assert got == reads and all(isinstance(c.offset_ms, float) for c in got)
    assert not any(math.copysign(1, c.offset_ms or 0) < 0 for c in got)


@pytest.mark.parametrize("spec", ["5@1@2 2", "5@1@2 2@4", "1@2@3 4"])
def test_a_token_with_two_offsets_is_no_read_even_where_the_counts_pair_up(spec: str) -> None:
    # The general path once split on every `@` and read `5@1@2 2` as reads of 5 and 2 bytes.
    assert cassettes._cut(b"x" * 7, spec) is None
    assert cassettes._cut(b"x" * 5, spec) is None
