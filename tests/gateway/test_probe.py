"""`toolstream probe`: the fake provider scripted to emit one catalogue class at a time (an OpenAI
chat stream shaped as that class and nothing else); the probe names that class and no other, says
whether it is within the protocol, and exits 1 when the server breaks it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.gateway.probe import probe
from harness.record.fake_provider import FakeProvider, Script
from harness.wire import dialects

ARGS = ['{"city":', '"Paris"}']


def call(index: Any = 0, id: Any = "call_a", name: str = "get_weather", args: str = "") -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": args}}
    if index is not None:
        entry["index"] = index
    if id is not None:
        entry["id"] = id
    return entry


def part(args: str, index: Any = 0, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"function": {"arguments": args, **extra.pop("function", {})}, **extra}
    if index is not None:
        entry["index"] = index
    return entry


def chunk(*entries: dict[str, Any], finish: str | None = None, text: str | None = None) -> bytes:
    delta: dict[str, Any] = {"tool_calls": list(entries)} if entries else {}
    if text is not None:
        delta["content"] = text
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip
    return b"data: " + json.dumps(body).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"
FINISH = chunk(finish="tool_calls")


def one_call(*middle: bytes, finish: bytes = FINISH, done: bytes = DONE) -> list[bytes]:
    return [chunk(call()), *middle, finish, done]


PLAIN = one_call(chunk(part(ARGS[0])), chunk(part(ARGS[1])))
STREAMS: dict[str, list[bytes]] = {
    "A1": [chunk(call()), chunk(part('{"city":"Paris"}')), chunk(call(id="call_b")),
           chunk(part('{"city":"Lima"}')), FINISH, DONE],
    "A3": [chunk(call(index=None)), chunk(part(ARGS[0], index=None)), chunk(part(ARGS[1], index=None)),
           FINISH, DONE],
    "A5": one_call(chunk(part(ARGS[0], id="call_a")), chunk(part(ARGS[1], id="call_a"))),
    "A6": one_call(chunk(part(ARGS[0], id="")), chunk(part(ARGS[1]))),
    "B1": [chunk(call(), part(ARGS[0])), chunk(part(ARGS[1])), FINISH, DONE],
    "B3": one_call(chunk(part(ARGS[0], function={"name": "get_weather"})), chunk(part(ARGS[1]))),
    "B5": [chunk(call(args='{"city":"Paris"}')), FINISH, DONE],
    "B6": [chunk(call(args="{}")), chunk(part('{"city":"Paris"}')), FINISH, DONE],
    "B7": one_call(chunk(part("")), chunk(part('{"city":"Paris"}'))),
    "C2": [chunk(call(), call(1, "call_b")), chunk(part('{"city":"Paris"}')),
           chunk(part('{"city":"Lima"}', 1)), FINISH, DONE],
    "D1": one_call(chunk(part('{"city":"Paris"}')), finish=chunk(finish="stop")),
    "D6": one_call(chunk(part('{"city":"Paris"}')), done=b""),
    "D9": [chunk(text="No tool needed."), FINISH, DONE],
}  # fmt: skip


def served(stream: list[bytes]) -> FakeProvider:
    fake = FakeProvider()
    fake.route("POST", "/v1/chat/completions", Script.of([c for c in stream if c]))
    return fake


def test_every_class_the_chat_dialect_detects_has_a_scripted_stream() -> None:
    assert set(STREAMS) == set(dialects.get("openai-chat").shape_codes)


@pytest.mark.parametrize("code", sorted(STREAMS))
def test_the_probe_names_every_class_it_is_shown_and_no_other(code: str, tmp_path: Path) -> None:
    with served(STREAMS[code]) as fake:
        found = probe(
            fake.url + "/v1", "openai-chat", model="m", out=tmp_path, recipes=["single", "parallel"]
        )
    assert [set(one.shapes) for one in found] == [{code}, {code}]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["parallel.yaml", "single.yaml"]


def command(fake: FakeProvider, out: Path, *extra: str) -> list[str]:
    return ["probe", "--base-url", fake.url + "/v1", "--dialect", "openai-chat", "--out", str(out), *extra]


def test_a_stream_of_no_catalogued_class_shows_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the recipes that offer get_weather: a call to a tool the request did not offer breaks a rule
    with served(PLAIN) as fake:
        assert main(command(fake, tmp_path, "--recipes", "single", "parallel", "text-then-tool")) == 0
    out = capsys.readouterr().out
    assert "breaks the protocol" not in out and "classes seen" not in out


def test_a_class_within_the_protocol_passes_and_one_outside_it_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with served(STREAMS["C2"]) as fake:
        assert main(command(fake, tmp_path / "c2", "--recipes", "parallel")) == 0
    assert re.search(r"\nC2 +several calls in one delta +within +parallel", capsys.readouterr().out)
    with served(STREAMS["A1"]) as fake:
        assert (
            main(command(fake, tmp_path / "a1", "--recipes", "parallel", "--json", str(tmp_path / "a1.json")))
            == 1
        )
    out = capsys.readouterr().out
    assert "parallel: class A1 is outside the protocol: parallel calls start at one index" in out
    found = json.loads((tmp_path / "a1.json").read_text())["classes"]["A1"]
    assert found["within_protocol"] is False
    assert "openai 3.0.0" in found["failing_releases"]  # the card's verdicts on the A1 recording


def test_the_probe_redacts_what_it_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-probe-key-123456")
    with served(PLAIN) as fake:
        probe(fake.url + "/v1", "openai-chat", model="m", out=tmp_path, recipes=["single"])
        assert fake.requests[0].header("authorization") == "Bearer sk-secret-probe-key-123456"
    assert "sk-secret-probe-key" not in (tmp_path / "single.yaml").read_text()


def test_an_unreachable_server_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "probe",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--dialect",
        "openai-chat",
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_the_docs_list_every_class_a_dialect_detects() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "gateways.md").read_text(encoding="utf-8")
    for name in dialects.names():
        for code, shape in dialects.get(name).shape_codes.items():
            assert f"| {code} | {shape.what} | {'yes' if shape.within else 'no'} |" in page, (
                f"docs/gateways.md lacks {code}"
            )
