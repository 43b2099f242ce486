"""`toolstream record` against a local FakeProvider and `toolstream import` of every input format,
run the way a user runs them (in-process through `harness.cli.main`, and once as a subprocess)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from harness.cassettes import corpus
from harness.cassettes import format as cassettes
from harness.cli import main
from harness.record import providers
from harness.record.fake_provider import FakeProvider, Script
from harness.wire import dialects
from tests.record.test_importer import STREAMS, synthesized, vcr_text

ROOT = Path(__file__).resolve().parents[2]
CANARY = "tscanary-7f3a9c1e5b"

# provider -> the environment variables that carry its credentials in these tests
KEY_VARS = {
    "openai": ("OPENAI_API_KEY",),
    "openai-responses": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY",),
    "bedrock": ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"),
    "ollama": (),
    "openai-compatible": ("OPENAI_API_KEY",),
    "cohere": ("CO_API_KEY",),
}
ALL_KEY_VARS = {
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "CO_API_KEY",
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION",
}  # fmt: skip


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ALL_KEY_VARS:
        monkeypatch.delenv(name, raising=False)


def served(dialect: str) -> cassettes.Cassette:
    """A provider-shaped response: the corpus' single-call cassette when there is one, else our own."""
    path = ROOT / "cassettes" / dialect / "single-call.yaml"
    if path.is_file():
        loaded = cassettes.load(path)
        if loaded.interactions and loaded.interactions[0].response.status == 200:
            return loaded
    return synthesized(dialect)


def serve_at(cassette: cassettes.Cassette, path: str) -> FakeProvider:
    """A FakeProvider serving the cassette's first response at `path` (where the recipe sends)."""
    item = cassette.interactions[0]
    moved = replace(
        cassette, interactions=[replace(item, request=replace(item.request, url=f"http://x{path}"))]
    )
    return FakeProvider.from_cassette(moved)


def record_args(provider: str, base: str, out: Path) -> list[str]:
    args = ["record", provider, "--base-url", base, "-o", str(out)]
    return [*args, "--model", "test-model"] if provider == "openai-compatible" else args


@pytest.mark.parametrize("provider", list(providers.providers()))
def test_record_against_fake_provider_writes_a_redacted_corpus_cassette(
    provider: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = providers.provider(provider)
    for n, name in enumerate(KEY_VARS[provider]):
        monkeypatch.setenv(name, f"{CANARY}{n}")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    source = served(spec.dialect)
    api_root = "/v1" if spec.dialect in ("openai-chat", "openai-responses") else ""
    model = "test-model" if provider == "openai-compatible" else None
    path = urlsplit(providers.build_request(provider, model=model, base_url="http://h" + api_root).url).path
    out = tmp_path / "rec.yaml"
    with serve_at(source, path) as fake:
        assert main(record_args(provider, fake.url + api_root, out)) == 0
        sent = fake.requests[0]
    assert f"recorded {out}" in capsys.readouterr().out

    text = out.read_text()
    recorded = cassettes.load(out)
    assert recorded.source.kind == "recorded"
    assert recorded.source.provenance.startswith(f"toolstream record {provider} --recipe single --model ")
    assert recorded.dialect == spec.dialect
    [item] = recorded.interactions
    assert item.response.body == source.interactions[0].response.body
    # A cassette stores the reference's outcome without its parts (stored_outcome); they return on load.
    assert item.expected == dialects.stored_outcome(source.interactions[0].response, spec.dialect)
    assert item.expected is not None and item.expected.tool_calls
    # Redacted: the canary keys were sent, and appear nowhere in the file.
    sent_headers = " ".join(sent.headers.values())
    for n, name in enumerate(KEY_VARS[provider]):
        if name != "AWS_SECRET_ACCESS_KEY":  # the secret only signs; it is never sent
            assert f"{CANARY}{n}" in sent_headers, name
    assert CANARY not in text
    assert json.loads(sent.body) == item.request.body

    assert main(["show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert item.expected.tool_calls[0].name in shown


def test_record_default_output_and_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    with serve_at(served("anthropic"), "/v1/messages") as fake:
        code = main(
            ["record", "anthropic", "--recipe", "parallel", "--model", "claude-x", "--base-url", fake.url]
        )
        sent = fake.requests[0].json()
    assert code == 0
    out = tmp_path / "cassettes" / "anthropic" / "anthropic-parallel-claude-x.yaml"
    assert cassettes.load(out).source.provenance.startswith(
        "toolstream record anthropic --recipe parallel --model claude-x on "
    )
    assert [t["name"] for t in sent["tools"]] == ["get_weather", "get_time"]


def test_record_missing_key_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The provider's own endpoint needs its key: refused before anything is sent.
    out = tmp_path / "never.yaml"
    assert main(["record", "anthropic", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ANTHROPIC_API_KEY" in err
    assert not out.exists()
    # A key variable named with --api-key-env is required wherever the request goes.
    argv = ["record", "openai", "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "MY_GATEWAY_KEY"]
    assert main([*argv, "-o", str(out)]) == 2
    assert "MY_GATEWAY_KEY" in capsys.readouterr().err


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "anthropic", "gemini", "cohere"])
def test_record_to_a_base_url_needs_no_key(
    provider: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 32: `record openai --base-url http://127.0.0.1:8900/v1` demanded OPENAI_API_KEY.
    spec = providers.provider(provider)
    api_root = "/v1" if spec.dialect in ("openai-chat", "openai-responses") else ""
    path = urlsplit(providers.build_request(provider, base_url="http://h" + api_root, env={}).url).path
    out = tmp_path / "rec.yaml"
    with serve_at(served(spec.dialect), path) as fake:
        assert main(record_args(provider, fake.url + api_root, out)) == 0, capsys.readouterr().err
        sent = fake.requests[0]
    assert not {"authorization", "x-api-key", "x-goog-api-key"} & {h.lower() for h in sent.headers}
    assert cassettes.load(out).interactions[0].expected is not None


def test_record_to_a_gateway_passes_the_key_through_and_redacts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    out = tmp_path / "rec.yaml"
    with serve_at(served("openai-chat"), "/v1/chat/completions") as fake:
        assert main(record_args("openai", fake.url + "/v1", out)) == 0
        sent = fake.requests[0]
    assert sent.header("authorization") == f"Bearer {CANARY}" and CANARY not in out.read_text()


def test_record_refused_for_want_of_a_key_says_none_was_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    error = Script.of([b'{"error": "no key"}'], status=401, headers={"content-type": "application/json"})
    with FakeProvider().route("POST", "/v1/chat/completions", error) as fake:
        assert main(["record", "openai", "--base-url", fake.url + "/v1", "-o", str(tmp_path / "x.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "HTTP 401" in err and "no key was sent: set OPENAI_API_KEY" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["record", "openai", "--recipe", "thinking-then-tool"], "needs reasoning"),
        (["record", "mistral"], "unknown provider"),
        (["record", "openai", "--recipe", "sequential"], "unknown recipe"),
        (["record", "openai-compatible", "--model", "m"], "--base-url"),
    ],
)
def test_record_usage_errors_are_one_line(
    argv: list[str], message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_record_http_error_is_reported_and_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    out = tmp_path / "err.yaml"
    error = Script.of(
        [b'{"error": {"message": "Incorrect API key"}}'],
        status=401,
        headers={"content-type": "application/json"},
    )
    with FakeProvider().route("POST", "/v1/chat/completions", error) as fake:
        assert main(["record", "openai", "--base-url", fake.url + "/v1", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "HTTP 401" in err and "Incorrect API key" in err
    assert not out.exists()


def test_record_unreachable_server_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeProvider() as fake:
        url = fake.url  # a port that was free a moment ago and is closed now
    assert (
        main(["record", "ollama", "--base-url", url, "-o", str(tmp_path / "x.yaml"), "--timeout", "5"]) == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ConnectError" in err


# ---------------------------------------------------------------------------------------------
# import


def raw_body(tmp_path: Path, dialect: str, suffix: str) -> Path:
    path = tmp_path / f"body{suffix}"
    path.write_bytes(served(dialect).interactions[0].response.body)
    return path


def chunk_log(tmp_path: Path) -> Path:
    path = tmp_path / "chunks.jsonl"
    path.write_text("".join(json.dumps(payload) + "\n" for _, payload in STREAMS["openai-chat"]))
    return path


def vcr_file(tmp_path: Path) -> Path:
    path = tmp_path / "test_tools.yaml"
    path.write_text(vcr_text(binary=True))
    return path


INPUTS = {
    "sse": lambda tmp: raw_body(tmp, "anthropic", ".sse"),
    "ndjson": lambda tmp: raw_body(tmp, "ollama", ".ndjson"),
    "eventstream": lambda tmp: raw_body(tmp, "bedrock-converse", ".bin"),
    "vcr": vcr_file,
    "chunks": chunk_log,
}
DIALECT_OF = {"sse": "anthropic", "ndjson": "ollama", "eventstream": "bedrock-converse", "vcr": "openai-chat",
              "chunks": "openai-chat"}  # fmt: skip


@pytest.mark.parametrize("fmt", list(INPUTS))
def test_import_then_show(fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = INPUTS[fmt](tmp_path)
    assert main(["import", str(source)]) == 0
    out = source.with_name(source.stem + (".toolstream.yaml" if fmt == "vcr" else ".yaml"))
    assert f"wrote {out}" in capsys.readouterr().out
    imported = cassettes.load(out)
    assert imported.dialect == DIALECT_OF[fmt]
    assert imported.source.kind == "recorded"
    assert imported.source.provenance.startswith(f"imported from {source.name} ({fmt})")
    assert all(item.expected is not None and item.expected.tool_calls for item in imported.interactions)
    assert main(["show", str(out)]) == 0
    assert imported.interactions[0].expected.tool_calls[0].name in capsys.readouterr().out  # type: ignore[union-attr]


def test_import_with_explicit_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = raw_body(tmp_path, "openai-chat", ".txt")
    out = tmp_path / "sub" / "explicit.yaml"
    argv = [
        "import",
        str(source),
        "--from",
        "sse",
        "--dialect",
        "openai-chat",
        "-o",
        str(out),
        "--split",
        "whole",
    ]
    assert main(argv) == 0
    imported = cassettes.load(out)
    assert imported.name == "explicit"
    assert len(imported.interactions[0].response.chunks) == 1


def test_import_as_a_subprocess(tmp_path: Path) -> None:
    source = raw_body(tmp_path, "gemini", ".sse")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "import", str(source), "-o", str(tmp_path / "g.yaml")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert cassettes.load(tmp_path / "g.yaml").dialect == "gemini"
    shown = subprocess.run(
        [sys.executable, "-m", "harness.cli", "show", str(tmp_path / "g.yaml")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "harness.cli", "import", str(tmp_path / "missing.sse")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False,
    )  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no such file" in bad.stderr


def bad_inputs(tmp: Path) -> dict[str, tuple[list[str], str]]:
    junk = tmp / "junk.bin"
    junk.write_bytes(os.urandom(64) + b"\x00" * 64)
    mystery = tmp / "mystery"
    mystery.write_text("hello, not a stream\n")
    evil = tmp / "evil.yaml"
    evil.write_text(vcr_text(extra="x: !!python/object:os.system {}\n"))
    unknown = tmp / "unknown.sse"
    unknown.write_text('data: {"hello": 1}\n\n')
    body = raw_body(tmp, "anthropic", ".sse")
    return {
        "missing file": (["import", str(tmp / "nope.sse")], "no such file"),
        "unknown format": (["import", str(mystery)], "--from"),
        "unknown --from": (["import", str(body), "--from", "xml"], "unknown format"),
        "undecodable body": (["import", str(junk)], "undecodable eventstream"),
        "python tag": (["import", str(evil)], "is refused"),
        "unknown dialect": (["import", str(unknown)], "--dialect"),
        "bad --dialect": (["import", str(body), "--dialect", "klingon"], "unknown dialect"),
        "overwrite input": (["import", str(body), "-o", str(body)], "overwrite the input"),
    }


BAD_CASES = ["missing file", "unknown format", "unknown --from", "undecodable body", "python tag",
             "unknown dialect", "bad --dialect", "overwrite input"]  # fmt: skip


@pytest.mark.parametrize("case", BAD_CASES)
def test_import_bad_input_is_one_line_exit_2(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, message = bad_inputs(tmp_path)[case]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert message in err


def test_imported_vcr_binary_body_matches_the_original(tmp_path: Path) -> None:
    source = vcr_file(tmp_path)
    assert main(["import", str(source), "-o", str(tmp_path / "v.yaml")]) == 0
    imported = cassettes.load(tmp_path / "v.yaml")
    original = synthesized("openai-chat").interactions[0].response.body
    assert imported.interactions[0].response.body == original
    assert base64.b64encode(original).decode()[:20] in source.read_text()  # it really was !!binary
    assert corpus.cassette_paths([tmp_path / "v.yaml"])


def test_record_mode_once_with_an_existing_cassette_records_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    out = tmp_path / "once.yaml"
    with serve_at(served("anthropic"), "/v1/messages") as fake:
        assert main(["record", "anthropic", "--base-url", fake.url, "-o", str(out), "--mode", "once"]) == 0
        first = out.read_text()
        assert main(["record", "anthropic", "--base-url", fake.url, "-o", str(out), "--mode", "once"]) == 2
        assert len(fake.requests) == 1  # the second run replayed instead of asking the server
    assert "nothing was recorded" in capsys.readouterr().err
    assert out.read_text() == first
    assert main(["record", "anthropic", "-o", str(out), "--mode", "sometimes"]) == 2
    assert "unknown record mode" in capsys.readouterr().err
