"""Importing recordings: raw bodies, vcrpy cassettes and chunk logs become valid cassettes."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cassettes import format as cassettes
from harness.errors import CassetteError, CodecError, HarnessError, UsageError
from harness.record import importer
from harness.wire import dialects, synthesis
from harness.wire.codecs import WireEvent

WEATHER = '{"city":"Paris"}'

# Per dialect: (name, payload) events of one stream holding one get_weather call, in wire order.
STREAMS: dict[str, list[tuple[str | None, Any]]] = {
    "openai-chat": [
        (
            None,
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": "get_weather", "arguments": ""},
                                }
                            ],
                        },
                        "finish_reason": None,
                    }
                ],
            },
        ),
        (
            None,
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "choices": [
                    {
                        "index": 0,
                        "delta": {"tool_calls": [{"index": 0, "function": {"arguments": WEATHER}}]},
                        "finish_reason": None,
                    }
                ],
            },
        ),
        (
            None,
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
            },
        ),
        (None, "[DONE]"),
    ],
    "openai-responses": [
        (
            "response.created",
            {
                "type": "response.created",
                "response": {"id": "r1", "status": "in_progress", "output": []},
                "sequence_number": 0,
            },
        ),
        (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {
                    "id": "fc_1",
                    "type": "function_call",
                    "status": "in_progress",
                    "arguments": "",
                    "call_id": "call_1",
                    "name": "get_weather",
                },
                "sequence_number": 1,
            },
        ),
        (
            "response.function_call_arguments.delta",
            {
                "type": "response.function_call_arguments.delta",
                "item_id": "fc_1",
                "output_index": 0,
                "delta": WEATHER,
                "sequence_number": 2,
            },
        ),
        (
            "response.function_call_arguments.done",
            {
                "type": "response.function_call_arguments.done",
                "item_id": "fc_1",
                "output_index": 0,
                "arguments": WEATHER,
                "sequence_number": 3,
            },
        ),
        (
            "response.output_item.done",
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {
                    "id": "fc_1",
                    "type": "function_call",
                    "status": "completed",
                    "arguments": WEATHER,
                    "call_id": "call_1",
                    "name": "get_weather",
                },
                "sequence_number": 4,
            },
        ),
        (
            "response.completed",
            {
                "type": "response.completed",
                "response": {
                    "id": "r1",
                    "status": "completed",
                    "output": [
                        {
                            "id": "fc_1",
                            "type": "function_call",
                            "status": "completed",
                            "arguments": WEATHER,
                            "call_id": "call_1",
                            "name": "get_weather",
                        }
                    ],
                },
                "sequence_number": 5,
            },
        ),
    ],
    "anthropic": [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": WEATHER},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 9},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ],
    "gemini": [
        (
            None,
            {
                "candidates": [
                    {
                        "content": {
                            "role": "model",
                            "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}],
                        },
                        "index": 0,
                    }
                ],
                "modelVersion": "gemini-x",
            },
        ),
        (
            None,
            {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": ""}]},
                        "finishReason": "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 9},
            },
        ),
    ],
    "bedrock-converse": [
        ("messageStart", {"role": "assistant"}),
        (
            "contentBlockStart",
            {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather"}}},
        ),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": WEATHER}}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("messageStop", {"stopReason": "tool_use"}),
        ("metadata", {"usage": {"inputTokens": 5, "outputTokens": 9, "totalTokens": 14}}),
    ],
    "ollama": [
        (
            None,
            {
                "model": "qwen3",
                "created_at": "2025-01-01T00:00:00Z",
                "message": {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
                },
                "done": False,
            },
        ),
        (
            None,
            {
                "model": "qwen3",
                "created_at": "2025-01-01T00:00:01Z",
                "message": {"role": "assistant", "content": ""},
                "done": True,
                "done_reason": "stop",
            },
        ),
    ],
    "cohere": [
        ("message-start", {"type": "message-start", "id": "m1", "delta": {"message": {"role": "assistant"}}}),
        (
            "tool-call-start",
            {
                "type": "tool-call-start",
                "index": 0,
                "delta": {
                    "message": {
                        "tool_calls": {
                            "id": "get_weather_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        }
                    }
                },
            },
        ),
        (
            "tool-call-delta",
            {
                "type": "tool-call-delta",
                "index": 0,
                "delta": {"message": {"tool_calls": {"function": {"arguments": WEATHER}}}},
            },
        ),
        ("tool-call-end", {"type": "tool-call-end", "index": 0}),
        ("message-end", {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}}),
    ],
}
SUFFIX = {"ndjson": ".ndjson", "eventstream": ".bin", "sse": ".sse"}


def synthesized(dialect: str) -> cassettes.Cassette:
    return synthesis.synthesize(
        f"{dialect}-one-call",
        dialect,
        url="https://example.invalid/",
        body={},
        events=STREAMS[dialect],
        provenance="test",
    )


def body_file(tmp_path: Path, dialect: str) -> tuple[Path, cassettes.Cassette]:
    source = synthesized(dialect)
    path = tmp_path / f"stream{SUFFIX[dialects.get(dialect).codec_name]}"
    path.write_bytes(source.interactions[0].response.body)
    return path, source


@pytest.mark.parametrize("dialect", sorted(STREAMS))
def test_raw_body_imports_with_guessed_format_and_dialect(tmp_path: Path, dialect: str) -> None:
    path, source = body_file(tmp_path, dialect)
    imported = importer.import_file(path)
    assert imported.dialect == dialect
    assert imported.source.kind == "recorded"
    assert imported.source.provenance.startswith(
        f"imported from {path.name} ({dialects.get(dialect).codec_name})"
    )
    [item] = imported.interactions
    assert item.response.body == path.read_bytes()
    assert len(item.response.chunks) == len(STREAMS[dialect])  # one chunk per event
    assert item.expected == source.interactions[0].expected
    assert item.expected is not None and item.expected.tool_calls[0].name == "get_weather"
    assert dialects.detect(item.request) == dialect  # the placeholder request speaks the dialect
    saved = cassettes.save(imported, tmp_path / "out.yaml")
    assert cassettes.load(saved).interactions[0].expected == item.expected


def test_whole_split_keeps_one_chunk(tmp_path: Path) -> None:
    path, _ = body_file(tmp_path, "anthropic")
    imported = importer.import_file(path, split="whole")
    assert len(imported.interactions[0].response.chunks) == 1
    assert "one chunk per body" in imported.source.provenance


@pytest.mark.parametrize(
    "body",
    [
        b"data: a\n\ndata: b\n\n",
        b"data: a\r\n\r\n: keepalive\r\n\r\ndata: b\r\n\r\n",
        b"\n\ndata: a\r\rdata: b\r\r\n",
        b"event: x\ndata: a\n\ndata: cut",
    ],
)
def test_split_events_keeps_every_byte(body: bytes) -> None:
    pieces = importer.split_events(body, "sse")
    assert b"".join(pieces) == body
    assert len(pieces) >= 2


def test_split_events_eventstream_frames_and_ndjson_lines(tmp_path: Path) -> None:
    body = synthesized("bedrock-converse").interactions[0].response.body
    pieces = importer.split_events(body, "eventstream")
    assert b"".join(pieces) == body and len(pieces) == 6
    assert importer.split_events(b'{"a":1}\n{"b":2}\n', "ndjson") == [b'{"a":1}\n', b'{"b":2}\n']


@pytest.mark.parametrize("dialect", sorted(STREAMS))
def test_guess_dialect_from_payloads(dialect: str) -> None:
    source = synthesized(dialect)
    events = dialects.events_of(source.interactions[0].response, dialect)
    assert importer.guess_dialect([e.wire for e in events]) == dialect


def test_guess_dialect_unsure() -> None:
    assert importer.guess_dialect([WireEvent(data='{"hello": 1}'), WireEvent(data="[DONE]")]) is None
    tie = [WireEvent(data='{"choices": []}'), WireEvent(data='{"candidates": []}')]
    assert importer.guess_dialect(tie) is None


def test_unknown_dialect_asks_for_dialect(tmp_path: Path) -> None:
    path = tmp_path / "mystery.sse"
    path.write_text('data: {"hello": 1}\n\n')
    with pytest.raises(UsageError, match="give --dialect"):
        importer.import_file(path)


def test_dialect_option_overrides_the_guess(tmp_path: Path) -> None:
    path, _ = body_file(tmp_path, "openai-chat")
    imported = importer.import_file(path, dialect="openai-chat", fmt="sse")
    assert imported.dialect == "openai-chat"
    with pytest.raises(HarnessError):
        importer.import_file(path, dialect="klingon")


@pytest.mark.parametrize("dialect", sorted(STREAMS))
def test_chunk_log_reencodes_payloads(tmp_path: Path, dialect: str) -> None:
    lines = []
    for name, payload in STREAMS[dialect]:
        if dialect == "bedrock-converse":
            lines.append(json.dumps({name: payload}))  # boto3's event dicts
        elif name is not None and dialect != "anthropic":
            lines.append(json.dumps({"event": name, "data": payload}))
        else:
            lines.append(json.dumps(payload))  # Anthropic: bare payloads, named from `type`
    path = tmp_path / "chunks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    imported = importer.import_file(path, fmt=None if dialect != "ollama" else "chunks")
    assert imported.dialect == dialect
    assert imported.interactions[0].expected == synthesized(dialect).interactions[0].expected
    if dialect != "ollama":
        assert "(chunks)" in imported.source.provenance


def test_jsonl_of_ollama_lines_is_an_ndjson_body(tmp_path: Path) -> None:
    body = synthesized("ollama").interactions[0].response.body
    path = tmp_path / "ollama.jsonl"
    path.write_bytes(body)
    assert importer.guess_format(path, body) == "ndjson"
    assert importer.import_file(path).interactions[0].response.body == body


def test_guess_format_from_content_without_extension(tmp_path: Path) -> None:
    for dialect, expected in (("anthropic", "sse"), ("bedrock-converse", "eventstream")):
        body = synthesized(dialect).interactions[0].response.body
        assert importer.guess_format(tmp_path / "noext", body) == expected
    assert importer.guess_format(tmp_path / "log", b'{"choices": []}\n') == "chunks"
    with pytest.raises(UsageError, match="--from"):
        importer.guess_format(tmp_path / "noext", b"hello world")


# ---------------------------------------------------------------------------------------------
# vcrpy cassettes


def vcr_text(*, binary: bool = False, extra: str = "", gzip_body: bool = False) -> str:
    sse = synthesized("openai-chat").interactions[0].response.body
    if gzip_body:
        body = f"      string: !!binary |\n        {base64.b64encode(gzip.compress(sse)).decode()}\n"
        encoding = "      Content-Encoding:\n      - gzip\n"
    elif binary:
        body = f"      string: !!binary |\n        {base64.b64encode(sse).decode()}\n"
        encoding = ""
    else:
        body = f"      string: {json.dumps(sse.decode())}\n"
        encoding = ""
    return f"""interactions:
- request:
    body: '{{"model":"gpt-4.1-mini","stream":true,"messages":[]}}'
    headers:
      Authorization:
      - Bearer sk-canary-vcr-0123456789
      Content-Type:
      - application/json
    method: POST
    uri: https://api.openai.com/v1/chat/completions
  response:
    body:
{body}    headers:
      Content-Type:
      - text/event-stream; charset=utf-8
{encoding}      Set-Cookie:
      - session=abcdefgh12345678
    status:
      code: 200
      message: OK
- request:
    body: null
    headers: {{}}
    method: GET
    uri: https://api.openai.com/v1/models
  response:
    body:
      string: '{{"data": []}}'
    headers:
      Content-Type:
      - application/json
    status:
      code: 200
      message: OK
{extra}version: 1
"""


@pytest.mark.parametrize("variant", ["text", "binary", "gzip"])
def test_vcr_streamed_interactions_are_imported_and_redacted(tmp_path: Path, variant: str) -> None:
    path = tmp_path / "test_chat.yaml"
    path.write_text(vcr_text(binary=variant == "binary", gzip_body=variant == "gzip"))
    imported = importer.import_file(path)
    assert imported.dialect == "openai-chat"
    [item] = imported.interactions  # the GET /models one is not a stream
    assert item.request.url == "https://api.openai.com/v1/chat/completions"
    assert item.request.body == {"model": "gpt-4.1-mini", "stream": True, "messages": []}
    assert item.request.headers["Authorization"] == "REDACTED"
    assert item.response.headers["Set-Cookie"] == "REDACTED"
    assert "Content-Encoding" not in item.response.headers
    assert len(item.response.chunks) == 4
    assert item.expected == synthesized("openai-chat").interactions[0].expected
    text = cassettes.dumps(imported)
    assert "sk-canary-vcr" not in text and "abcdefgh12345678" not in text
    assert imported.source.provenance.startswith("imported from test_chat.yaml (vcr)")


def test_vcr_python_tags_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "evil.yaml"
    extra = "extra: !!python/object/apply:os.system ['echo pwned']\n"
    path.write_text(vcr_text(extra=extra))
    with pytest.raises(CassetteError, match=r"python/object/apply:os.system.*is refused") as info:
        importer.import_file(path)
    assert "\n" not in str(info.value)
    assert info.value.line is not None


def test_load_vcr_accepts_binary_only() -> None:
    assert importer.load_vcr("a: !!binary aGk=\n", "x.yaml") == {"a": b"hi"}
    with pytest.raises(CassetteError, match="refused"):
        importer.load_vcr("a: !!python/name:os.system\n", "x.yaml")
    with pytest.raises(CassetteError, match="broken YAML"):
        importer.load_vcr("a: [\n", "x.yaml")


def test_vcr_without_streams_or_interactions(tmp_path: Path) -> None:
    path = tmp_path / "plain.yaml"
    text = vcr_text()
    path.write_text(
        text[text.index("- request:\n    body: null") :].replace("- request:", "interactions:\n- request:", 1)
    )
    with pytest.raises(UsageError, match="no streamed interaction"):
        importer.import_file(path)
    path.write_text("foo: 1\n")
    with pytest.raises(CassetteError, match="interactions"):
        importer.import_file(path)


# ---------------------------------------------------------------------------------------------
# Bad input


def test_bad_inputs_are_one_line_errors(tmp_path: Path) -> None:
    cases: list[tuple[Path, dict[str, Any], type[Exception], str]] = []
    cases.append((tmp_path / "missing.sse", {}, UsageError, "no such file"))
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 4)
    cases.append((junk, {}, CodecError, "undecodable eventstream"))
    text = tmp_path / "notes.txt"
    text.write_text("just some notes\nnothing streamed\n")
    cases.append((text, {}, CodecError, "no sse events"))
    empty = tmp_path / "empty.sse"
    empty.write_text("")
    cases.append((empty, {}, UsageError, "empty file"))
    log = tmp_path / "log.jsonl"
    log.write_text('{"choices": []}\nnot json\n')
    cases.append((log, {}, CodecError, "log.jsonl:2: not a JSON line"))
    cases.append((text, {"fmt": "xml"}, UsageError, "unknown format"))
    for path, options, error, message in cases:
        with pytest.raises(error, match=message) as info:
            importer.import_file(path, **options)
        assert "\n" not in str(info.value), path


def test_default_output_never_overwrites_the_input() -> None:
    assert importer.default_output("dir/stream.sse") == Path("dir/stream.yaml")
    assert importer.default_output("dir/test_chat.yaml") == Path("dir/test_chat.toolstream.yaml")
    assert importer.default_output("dir/noext") == Path("dir/noext.yaml")


# ---------------------------------------------------------------------------------------------
# Round trips over the bundled corpus: every recorded body imports back to the same outcome

CORPUS = Path(__file__).resolve().parents[2] / "cassettes"
CORPUS_FILES = sorted(CORPUS.rglob("*.yaml")) if CORPUS.is_dir() else []


def corpus_items(path: Path) -> list[tuple[str, cassettes.Interaction]]:
    loaded = cassettes.load(path)
    out = []
    for item in loaded.interactions:
        dialect = loaded.dialect or dialects.detect(item.request)
        if dialect is not None and item.response.status == 200:
            out.append((dialect, item))
    return out


def outcome_of_body(item: cassettes.Interaction, dialect: str) -> Any:
    whole = cassettes.Response(status=200, headers=item.response.headers, chunks=item.response.chunks)
    return dialects.stored_outcome(whole, dialect)


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.relative_to(CORPUS).as_posix())
def test_corpus_bodies_import_back(tmp_path: Path, path: Path) -> None:
    for n, (dialect, item) in enumerate(corpus_items(path)):
        raw = tmp_path / f"body{n}{SUFFIX[dialects.get(dialect).codec_name]}"
        raw.write_bytes(item.response.body)
        imported = importer.import_file(raw)
        assert imported.dialect == dialect
        assert imported.interactions[0].response.body == item.response.body
        assert imported.interactions[0].expected == outcome_of_body(item, dialect)


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.relative_to(CORPUS).as_posix())
def test_corpus_cassettes_import_back_from_vcr(tmp_path: Path, path: Path) -> None:
    items = corpus_items(path)
    if not items:
        pytest.skip("no complete interaction")
    interactions = []
    for _, item in items:
        req, resp = item.request, item.response
        body = json.dumps(req.body) if isinstance(req.body, dict | list) else req.body
        request = {"body": body, "headers": {k: [v] for k, v in req.headers.items()}, "method": req.method}
        response = {"body": {"string": resp.body}, "headers": {k: [v] for k, v in resp.headers.items()}}
        response["status"] = {"code": resp.status, "message": "OK"}
        interactions.append({"request": {**request, "uri": req.url}, "response": response})
    vcr = tmp_path / "vcr.yaml"
    vcr.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}))  # bytes become !!binary
    assert "!!binary" in vcr.read_text()
    imported = importer.import_file(vcr)
    assert len(imported.interactions) == len(items)
    for (dialect, item), got in zip(items, imported.interactions, strict=True):
        assert got.response.body == item.response.body
        assert got.expected == outcome_of_body(item, dialect)
