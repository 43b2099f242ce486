"""SSE codec: the WHATWG parsing rules, incremental in any chunking, and canonical encoding."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import CodecError
from harness.wire.codecs import SSECodec, WireEvent, decode_all, get_codec, sniff_newline
from harness.wire.codecs.sse import SSEDecoder

CHUNK_SIZES = [None, 1, 2, 3, 7]


def chunked(body: bytes, size: int | None) -> list[bytes]:
    if size is None:
        return [body]
    return [body[i : i + size] for i in range(0, len(body), size)]


def decode(body: bytes, size: int | None = None) -> list[WireEvent]:
    return decode_all(SSECodec(), chunked(body, size))


def decode_every_split(body: bytes) -> list[WireEvent]:
    """Decode whole, in 1-byte reads and split at every offset; all must agree."""
    whole = decode(body)
    assert decode(body, 1) == whole
    for cut in range(1, len(body)):
        assert decode_all(SSECodec(), [body[:cut], body[cut:]]) == whole, f"split at {cut}"
    return whole


def data(*values: str) -> list[WireEvent]:
    return [WireEvent(data=value) for value in values]


def dispatched(events: list[WireEvent]) -> list[WireEvent]:
    """Without the blocks that carried no data: what a WHATWG client dispatches, and comments."""
    return [event for event in events if event.block is None]


# --- line ends ---------------------------------------------------------------------------------


@pytest.mark.parametrize("nl", [b"\n", b"\r\n", b"\r"])
def test_every_line_end_style_gives_the_same_events(nl: bytes) -> None:
    body = b"event: a" + nl + b"data: 1" + nl + b"data: 2" + nl + nl + b"data: 3" + nl + nl
    assert decode_every_split(body) == [WireEvent(data="1\n2", name="a"), WireEvent(data="3")]


def test_mixed_line_ends_in_one_stream() -> None:
    assert decode_every_split(b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r") == data("a\nb\nc", "d")


def test_cr_ending_one_read_and_lf_starting_the_next_are_one_line_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    # Were the LF a second line end, it would be a blank line dispatching "a" alone.
    assert decoder.feed(b"\ndata: b\r") == []
    assert decoder.feed(b"\n\r\n") == data("a\nb")
    assert decoder.close() == []


def test_a_cr_line_end_is_handled_at_once_not_held_for_the_next_read() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r\r") == data("a")
    assert decoder.feed(b"\ndata: b\r\r") == data("b")  # the LF is the tail of the last CR only


def test_cr_then_other_byte_in_the_next_read() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"data: b") == []
    assert decoder.feed(b"\r\r") == data("a\nb")


def test_lone_lf_after_a_cr_split_pair_is_still_a_blank_line() -> None:
    # CR | LF is one line end; the LF after that is a blank line that dispatches.
    assert decode_all(SSECodec(), [b"data: a\r", b"\n", b"\n"]) == data("a")


def test_events_come_out_of_the_feed_that_completes_them() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n") == []
    assert decoder.feed(b"\ndata: b\n\ndata: c\n\n") == data("a", "b", "c")
    assert decoder.close() == []


# --- fields ------------------------------------------------------------------------------------


def test_comment_lines_become_comment_events() -> None:
    events = decode_every_split(b": ping\n\n:\n\n:x: y\n\n")
    assert events == [WireEvent(comment=" ping"), WireEvent(comment=""), WireEvent(comment="x: y")]
    assert all(event.is_comment for event in events)


def test_a_comment_inside_an_event_does_not_split_it() -> None:
    assert decode_every_split(b"data: a\n: note\ndata: b\n\n") == [WireEvent(comment=" note"), *data("a\nb")]


def test_multi_line_data_joins_with_lf() -> None:
    assert decode_every_split(b"data: {\ndata:   \"a\": 1\ndata: }\n\n") == data('{\n  "a": 1\n}')


@pytest.mark.parametrize(
    ("line", "value"),
    [
        (b"data:x", "x"),
        (b"data: x", "x"),
        (b"data:  x", " x"),
        (b"data: x ", "x "),
        (b"data:", ""),
        (b"data", ""),
        (b"data: a:b", "a:b"),
    ],
)
def test_one_optional_space_after_the_colon(line: bytes, value: str) -> None:
    assert decode_every_split(line + b"\n\n") == data(value)


def test_empty_data_still_dispatches_but_no_data_line_does_not() -> None:
    assert decode(b"data:\n\n") == data("")
    assert decode(b"data\ndata\n\n") == data("\n")
    # Blocks without data are no events; they come out only as their lines, to re-encode in place.
    blocks = decode(b"event: x\n\nid: 1\n\nretry: 5\n\n")
    assert blocks == [WireEvent(block="event: x"), WireEvent(block="id: 1"), WireEvent(block="retry: 5")]
    assert all(block.is_comment for block in blocks)


def test_event_names_the_event_and_resets_after_it() -> None:
    body = b"event: first\ndata: 1\n\ndata: 2\n\nevent: ignored\n\ndata: 3\n\nevent:\ndata: 4\n\n"
    assert dispatched(decode_every_split(body)) == [
        WireEvent(data="1", name="first"),
        WireEvent(data="2"),
        WireEvent(data="3"),
        WireEvent(data="4", name=""),
    ]


def test_id_belongs_to_its_event_and_is_ignored_with_nul() -> None:
    body = b"id: 7\ndata: a\n\ndata: b\n\nid: x\0y\ndata: c\n\nid\ndata: d\n\n"
    assert decode_every_split(body) == [
        WireEvent(data="a", id="7"),
        WireEvent(data="b"),
        WireEvent(data="c"),
        WireEvent(data="d", id=""),
    ]


@pytest.mark.parametrize(
    ("value", "retry"),
    [(b"3000", 3000), (b"0", 0), (b"10a", None), (b"-1", None), (b"", None), (b" 5", None),
     (b"1.5", None), ("\u0663".encode(), None)],
)
def test_retry_only_when_all_ascii_digits(value: bytes, retry: int | None) -> None:
    assert decode(b"retry: " + value + b"\ndata: x\n\n") == [WireEvent(data="x", retry=retry)]


def test_unknown_fields_are_ignored() -> None:
    assert decode_every_split(b"foo: bar\nDATA: no\ndata: yes\nEvent: no\n\n") == data("yes")


def test_last_field_value_wins() -> None:
    assert decode(b"event: a\nevent: b\nid: 1\nid: 2\nretry: 1\nretry: 2\ndata: x\n\n") == [
        WireEvent(data="x", name="b", id="2", retry=2)
    ]


# --- text --------------------------------------------------------------------------------------


@pytest.mark.parametrize("char", ["é", "€", "𝄞", "中"])
def test_a_utf8_character_split_across_reads(char: str) -> None:
    body = f"data: a{char}b\n\n".encode()
    assert decode_every_split(body) == data(f"a{char}b")


def test_bytes_that_are_not_utf8_become_replacement_characters() -> None:
    assert decode_every_split(b"data: a\xffb\xc3\n\n") == data("a\ufffdb\ufffd")


def test_a_leading_bom_is_dropped_even_split_across_reads() -> None:
    body = b"\xef\xbb\xbfdata: a\n\n"
    assert decode_every_split(body) == data("a")


def test_only_one_leading_bom_is_dropped() -> None:
    # The second BOM is part of the field name, which is then unknown: a block without data.
    body = b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n"
    assert decode(body) == [WireEvent(block="\ufeffdata: a"), *data("b")]
    assert decode(b"data: a\n\n\xef\xbb\xbfdata: b\n\n") == [*data("a"), WireEvent(block="\ufeffdata: b")]


def test_a_bom_alone_or_partial_is_harmless() -> None:
    assert decode(b"\xef\xbb\xbf") == []
    assert decode(b"\xef\xbb\xbf", 1) == []
    # Not a BOM: the field name is then unknown, and the block has no data.
    assert decode(b"\xef\xbbdata: x\n\n") == [WireEvent(block="\ufffddata: x")]


# --- end of input -------------------------------------------------------------------------------


def test_close_drops_an_unterminated_last_event_as_a_browser_does() -> None:
    assert decode_every_split(b"data: a\n\ndata: b\ndata: c") == data("a")
    assert decode(b"data: a\n\ndata: b\n") == data("a")
    assert decode(b"event: x\ndata: cut\r") == []


def test_close_can_dispatch_an_unterminated_last_event() -> None:
    decoder = SSEDecoder(dispatch_unterminated=True)
    assert decoder.feed(b"data: a\n\ndata: b\ndata: c") == data("a")
    assert decoder.close() == data("b\nc")
    lenient = SSEDecoder(dispatch_unterminated=True)
    assert lenient.feed(b"event: x\ndata: cut\r") == []
    assert lenient.close() == [WireEvent(data="cut", name="x")]


def test_close_emits_a_trailing_comment_without_a_line_end() -> None:
    assert decode(b"data: a\n\n: bye") == [*data("a"), WireEvent(comment=" bye")]


def test_close_on_nothing_and_reuse_after_close() -> None:
    decoder = SSEDecoder(dispatch_unterminated=True)
    assert decoder.close() == []
    assert decoder.feed(b"\xef\xbb\xbfdata: a\r") == []
    assert decoder.close() == data("a")
    # A fresh stream: its BOM is dropped again, and no CR is pending from the last one.
    assert decoder.feed(b"\xef\xbb\xbf\ndata: b\n\n") == data("b")
    assert decoder.close() == []


def test_empty_reads_change_nothing() -> None:
    assert decode_all(SSECodec(), [b"", b"data: a", b"", b"\n", b"", b"\n", b""]) == data("a")


# --- against httpx-sse ---------------------------------------------------------------------------


def test_agrees_with_httpx_sse_on_a_provider_stream() -> None:
    from httpx_sse._decoders import SSEDecoder as RefDecoder
    from httpx_sse._decoders import SSELineDecoder

    body = (
        b"event: message_start\r\ndata: {\"type\":\"message_start\"}\r\n\r\n"
        b"event: ping\r\ndata: {\"type\": \"ping\"}\r\n\r\n"
        b"data: {\"choices\":[{\"delta\":{\"content\":\"h\xc3\xa9\"}}]}\n\n"
        b"data: [DONE]\n\n"
        # Last: httpx-sse carries an id over to later events, as a browser's lastEventId does.
        b"id: 42\nretry: 100\ndata: line1\ndata: line2\n\n"
    )
    lines, ref = SSELineDecoder(), RefDecoder()
    expected = []
    for line in [*lines.decode(body.decode()), *lines.flush()]:
        event = ref.decode(line)
        if event is not None:
            expected.append((event.data, event.event, event.id, event.retry))
    ours = [(e.data, e.name or "message", e.id or "", e.retry) for e in decode(body, 5)]
    assert ours == expected


def test_blocks_without_data_what_httpx_sse_hands_on_and_what_we_keep() -> None:
    from httpx_sse._decoders import SSEDecoder as RefDecoder
    from httpx_sse._decoders import SSELineDecoder

    body = b"event: ping\n\nretry: 10000\n\ndata: {}\n\n"
    lines, ref = SSELineDecoder(), RefDecoder()
    handed_on = [event for line in lines.decode(body.decode()) if (event := ref.decode(line)) is not None]
    # httpx-sse (like the OpenAI and Anthropic SDKs' decoders) dispatches both blocks, with data "".
    events = [(e.event, e.data, e.retry) for e in handed_on]
    assert events == [("ping", "", None), ("message", "", 10000), ("message", "{}", None)]
    # We dispatch by WHATWG (only the data block is an event) and keep the others' bytes in place.
    ours = decode_every_split(body)
    assert ours == [WireEvent(block="event: ping"), WireEvent(block="retry: 10000"), *data("{}")]
    assert [e.data for e in ours if not e.is_comment] == ["{}"]


# --- encoding ----------------------------------------------------------------------------------


def test_encode_writes_the_canonical_form() -> None:
    events = [
        WireEvent(comment=" ping"),
        WireEvent(data="a\nb", name="delta", id="3", retry=100),
        WireEvent(data=""),
        WireEvent(data=" padded"),
    ]
    assert SSECodec().encode(events) == (
        b": ping\n\nevent: delta\nid: 3\nretry: 100\ndata: a\ndata: b\n\ndata: \n\ndata:  padded\n\n"
    )
    assert SSECodec(newline="\r\n", space=False).encode(events[1:]) == (
        b"event:delta\r\nid:3\r\nretry:100\r\ndata:a\r\ndata:b\r\n\r\ndata:\r\n\r\ndata:  padded\r\n\r\n"
    )


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("space", [True, False])
def test_encode_then_decode_gives_the_events_back(newline: str, space: bool) -> None:
    events = [
        WireEvent(comment=""),
        WireEvent(data="x", name="", id="", retry=0),
        WireEvent(data=" lead\n\ntrail ", name=" n"),
        WireEvent(data="é𝄞"),
        WireEvent(comment=":odd"),
        WireEvent(block="event: ping"),
        WireEvent(block="retry:10000\nid: 7\nx"),
    ]
    body = SSECodec(newline=newline, space=space).encode(events)
    assert decode_every_split(body) == events


def test_a_block_without_data_is_written_as_it_was_sent() -> None:
    body = b"event: ping\r\n\r\nretry:10000\r\nx-field: 1\r\n\r\ndata: {}\r\n\r\n"
    assert SSECodec(newline="\r\n").encode(decode_every_split(body)) == body


@pytest.mark.parametrize(
    "event",
    [
        WireEvent(data="a\rb"),
        WireEvent(data="x", name="a\nb"),
        WireEvent(data="x", id="a\rb"),
        WireEvent(data="x", id="a\0b"),
        WireEvent(data="x", retry=-1),
        WireEvent(comment="a\nb"),
        WireEvent(block=""),
        WireEvent(block="event: a\r"),
        WireEvent(block="event: a\n\nid: 1"),
        WireEvent(block="event: a\ndata: x"),
        WireEvent(block="data"),
        WireEvent(block=": comment"),
    ],
)
def test_encode_refuses_what_sse_cannot_carry(event: WireEvent) -> None:
    with pytest.raises(CodecError):
        SSECodec().encode([event])


def test_a_bad_newline_option_is_refused() -> None:
    with pytest.raises(CodecError, match="newline"):
        SSECodec(newline="\n\n")


def test_sniff_newline_and_registry() -> None:
    assert sniff_newline(b"data: a\n\n") == "\n"
    assert sniff_newline(b"data: a\r\n\r\n") == "\r\n"
    assert sniff_newline(b"data: a\r\r") == "\r"
    assert get_codec("sse").name == "sse"
    assert isinstance(get_codec("sse").decoder(), SSEDecoder)


# --- against a line-by-line reference ---------------------------------------------------------------
# The decoder frames whole events at once where a read holds many; this reference interprets one
# line at a time over the whole body, the way the WHATWG algorithm is written, and must agree with
# it on any bytes in any reads.


def reference_decode(body: bytes, *, dispatch_unterminated: bool = False) -> list[WireEvent]:
    """The codec's documented rules, spelled out one line at a time over the whole body."""
    if body.startswith(b"\xef\xbb\xbf"):
        body = body[3:]
    lines = re.split(r"\r\n|\r|\n", body.decode("utf-8", "replace"))
    unterminated = lines.pop()  # after the last line end: a line the stream was cut inside, or ""
    if unterminated:
        lines.append(unterminated)
    out: list[WireEvent] = []
    data: list[str] = []
    others: list[str] = []  # the block's lines that are neither data nor comments
    name = id_ = None
    retry = None
    for line in lines:
        if not line:
            if data:
                out.append(WireEvent(data="\n".join(data), name=name, id=id_, retry=retry))
            elif others:
                out.append(WireEvent(block="\n".join(others)))
            data, others, name, id_, retry = [], [], None, None, None
            continue
        if line.startswith(":"):
            out.append(WireEvent(comment=line[1:]))
            continue
        others.append(line)
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
        elif field == "id" and "\0" not in value:
            id_ = value
        elif field == "retry" and re.fullmatch("[0-9]+", value):
            retry = int(value)
    if data and dispatch_unterminated:
        out.append(WireEvent(data="\n".join(data), name=name, id=id_, retry=retry))
    return out


def split_at(body: bytes, cuts: list[int]) -> list[bytes]:
    offsets = sorted({cut % (len(body) + 1) for cut in cuts})
    edges = [0, *offsets, len(body)]
    return [body[start:end] for start, end in pairwise(edges)]


def fed(body: bytes, reads: list[bytes], *, dispatch_unterminated: bool = False) -> list[WireEvent]:
    decoder = SSEDecoder(dispatch_unterminated=dispatch_unterminated)
    events = [event for chunk in reads for event in decoder.feed(chunk)]
    return events + decoder.close()


# Pieces that reach every branch: the one-line `data: ` shape framed in bulk, and all that breaks it.
SSE_PIECES = [
    b"data: x\n\n", b"data: {\"a\":1}\n\n", b"data: \xc3\xa9\n\n", b"data: ", b"data:", b"data",
    b"event: e", b"id: 1", b"id: \x00", b"retry: 25", b"retry: x", b": c", b":", b"x", b" ", b"\xe2\x82",
    b"\n", b"\r", b"\r\n", b"\n\n", b"\r\n\r\n", b"\xef\xbb\xbf", b"\x00",
]  # fmt: skip
sse_bodies = st.lists(st.sampled_from(SSE_PIECES), max_size=60).map(b"".join)
# Many `data: ` events with something else mixed in: a read holds many events, some not bulk-shaped.
many_events = st.lists(
    st.sampled_from([b"data: x\n\n"] * 6 + SSE_PIECES), min_size=20, max_size=200
).map(b"".join)
reads = st.lists(st.integers(min_value=0, max_value=10_000), max_size=20)
sse_settings = settings(max_examples=300, deadline=None)


@sse_settings
@given(st.binary(max_size=300) | sse_bodies | many_events, reads, st.booleans())
def test_agrees_with_the_line_by_line_reference_in_any_reads(
    body: bytes, at: list[int], dispatch_unterminated: bool
) -> None:
    expected = reference_decode(body, dispatch_unterminated=dispatch_unterminated)
    assert fed(body, [body], dispatch_unterminated=dispatch_unterminated) == expected
    assert fed(body, split_at(body, at), dispatch_unterminated=dispatch_unterminated) == expected


@sse_settings
@given(sse_bodies | many_events, st.integers(min_value=1, max_value=7))
def test_agrees_with_the_reference_in_small_even_reads(body: bytes, size: int) -> None:
    assert fed(body, chunked(body, size)) == reference_decode(body)


def test_bulk_framing_of_a_read_holding_many_events_keeps_each_one() -> None:
    body = b"".join(b"data: %d\n\n" % i for i in range(500)) + b"data: open"
    decoder = SSEDecoder()
    assert decoder.feed(body) == data(*(str(i) for i in range(500)))
    assert decoder.feed(b"\n: between\n\ndata: a\n\ndata:b\n\ndata: c\n\n") == [
        WireEvent(comment=" between"), *data("open", "a", "b", "c")
    ]
    assert decoder.close() == []


def test_reference_agrees_with_the_unit_cases_above() -> None:
    assert reference_decode(b"\xef\xbb\xbfdata: a\r\rdata: b\ndata: c") == data("a")
    assert reference_decode(b"data: a\r\n\r\ndata: b", dispatch_unterminated=True) == data("a", "b")
    assert reference_decode(b"data: a\n\n: bye") == [*data("a"), WireEvent(comment=" bye")]


# Provider-shaped bodies: many one-line `data: ` events (framed in bulk), the `event: ` + `data: `
# shape, blocks without data (`event: ping`, `retry: 10`), comments and multi-line data, each with
# its own line ends (LF, CRLF, CR), read whole, in random reads and one byte at a time.
PROVIDER_BLOCKS = [
    "data: {\"a\":1}", "data: {\"b\":[2,3]}", "data: [DONE]", "data:", "data: é€", "event: ping",
    "retry: 10", "id: 7", "event: message_delta\ndata: {\"d\":1}", ": keep-alive",
    "data: one\ndata: two", "event: x\nid: 1\nretry: 5", "data: a\n: inside\ndata: b",
]  # fmt: skip
provider_bodies = st.lists(
    st.tuples(st.sampled_from(PROVIDER_BLOCKS), st.sampled_from(["\n", "\r\n", "\r"])),
    min_size=1,
    max_size=80,
).map(lambda blocks: "".join(block.replace("\n", nl) + nl + nl for block, nl in blocks).encode())


@sse_settings
@given(provider_bodies, reads, st.booleans(), st.booleans())
def test_provider_shaped_streams_decode_as_the_reference_in_any_reads(
    body: bytes, at: list[int], bom: bool, cut: bool
) -> None:
    body = (b"\xef\xbb\xbf" if bom else b"") + body
    body = body[: len(body) * 2 // 3] if cut else body
    expected = reference_decode(body)
    for reads_ in ([body], split_at(body, at), chunked(body, 1)):
        events = fed(body, reads_)
        assert events == expected
        assert all(type(event) is WireEvent for event in events)
