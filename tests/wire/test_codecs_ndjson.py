"""NDJSON codec: one event per line, in any chunking."""

from __future__ import annotations

import pytest

from harness.errors import CodecError
from harness.wire.codecs import NDJSONCodec, WireEvent, decode_all, get_codec
from harness.wire.codecs.ndjson import NDJSONDecoder


def decode(chunks: list[bytes]) -> list[WireEvent]:
    return decode_all(NDJSONCodec(), chunks)


def decode_every_split(body: bytes) -> list[WireEvent]:
    whole = decode([body])
    assert decode([body[i : i + 1] for i in range(len(body))]) == whole
    for cut in range(1, len(body)):
        assert decode([body[:cut], body[cut:]]) == whole, f"split at {cut}"
    return whole


def lines(*values: str) -> list[WireEvent]:
    return [WireEvent(data=value) for value in values]


def test_one_event_per_line_in_any_chunking() -> None:
    body = b'{"message":{"content":"hi"}}\n{"done":true}\n'
    assert decode_every_split(body) == lines('{"message":{"content":"hi"}}', '{"done":true}')


def test_lines_come_out_of_the_feed_that_completes_them() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"a"') == []
    assert decoder.feed(b":1}\n{") == lines('{"a":1}')
    assert decoder.feed(b"}\n") == lines("{}")
    assert decoder.close() == []


def test_crlf_line_ends_lose_the_cr() -> None:
    assert decode_every_split(b"{}\r\n[1]\r\n") == lines("{}", "[1]")


def test_blank_and_whitespace_lines_are_skipped() -> None:
    assert decode_every_split(b"\n{}\n\n \t\n\r\n[]\n\n") == lines("{}", "[]")


def test_inner_whitespace_is_kept() -> None:
    assert decode([b' {"a": 1} \n']) == lines(' {"a": 1} ')


def test_an_unterminated_last_line_is_an_event_at_close() -> None:
    assert decode_every_split(b'{"a":1}\n{"done":') == lines('{"a":1}', '{"done":')
    assert decode([b"{}\n  "]) == lines("{}")


def test_a_utf8_character_split_across_reads() -> None:
    assert decode_every_split('{"t":"é𝄞"}\n'.encode()) == lines('{"t":"é𝄞"}')


def test_a_line_that_is_not_utf8_is_a_codec_error_naming_the_line() -> None:
    with pytest.raises(CodecError, match="line 2 is not UTF-8 at byte 5"):
        decode([b"{}\n", b'{"a":\xff}\n'])
    with pytest.raises(CodecError, match="line 2 is not UTF-8 at byte 0"):
        decode([b"{}\n\xc3{"])  # unterminated, but not cut inside the character: broken


def test_a_last_line_cut_inside_a_character_ends_with_a_replacement_character() -> None:
    # What a client's replacing decoder gives at the end of input (httpx's `iter_lines`): the cut
    # stream's last line, not an error that stopped every cut case of a non-ASCII recording.
    assert decode([b"{}\n\xc3"]) == lines("{}", "\ufffd")
    assert decode_every_split('{"t":"天気"}\n{"t":"天'.encode()[:-1]) == lines('{"t":"天気"}', '{"t":"\ufffd')


def test_close_resets_the_decoder() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(b"{}\n[") == lines("{}")
    assert decoder.close() == lines("[")
    assert decoder.feed(b"1\n") == lines("1")
    assert decoder.close() == []


def test_encode_writes_lf_terminated_lines_and_round_trips() -> None:
    events = lines('{"a":1}', "é", " x ")
    body = NDJSONCodec().encode(events)
    assert body == '{"a":1}\né\n x \n'.encode()
    assert decode_every_split(body) == events


@pytest.mark.parametrize("value", ["a\nb", "a\r", "\ud800"])
def test_encode_refuses_what_a_line_cannot_carry(value: str) -> None:
    with pytest.raises(CodecError):
        NDJSONCodec().encode(lines(value))


def test_registry() -> None:
    codec = get_codec("ndjson")
    assert codec.name == "ndjson"
    assert isinstance(codec.decoder(), NDJSONDecoder)
