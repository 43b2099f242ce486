"""The `toolstream` fixture and marker: record against a local server, replay, CI, mistakes."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import UsageError
from harness.plugin.options import RecordOptions, Settings, cassette_path, file_safe
from harness.transports.modes import RecordMode
from tests._pytester_support import plugin_args, prepare

pytest_plugins = ["pytester"]

TESTS = """
import asyncio
import os

import pytest

from harness.record.fake_provider import FakeProvider, Script

BODY = [
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function",'
    b'"function":{"name":"get_weather","arguments":""}}]}}]}\\n\\n',
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":'
    b'"{\\\\"city\\\\": \\\\"Paris\\\\"}"}}]},"finish_reason":"tool_calls"}]}\\n\\n',
    b"data: [DONE]\\n\\n",
]


@pytest.fixture(scope="module")
def base_url():
    if os.environ.get("NO_SERVER"):
        yield "http://127.0.0.1:9"  # nothing listens there: a request that is not replayed fails
        return
    with FakeProvider() as fake:
        fake.route("POST", "/v1/chat/completions", Script.of(BODY))
        yield fake.url


@pytest.mark.toolstream(match_on=["method", "body"])
def test_sync_httpx(toolstream, base_url):
    client = toolstream.httpx_client(base_url=base_url)
    with client.stream("POST", "/v1/chat/completions", json={"model": "m", "stream": True}) as response:
        body = b"".join(response.iter_bytes())
    assert b"get_weather" in body


@pytest.mark.toolstream(match_on=["method", "body"])
@pytest.mark.parametrize("city", ["Paris/France"])
def test_async_httpx2(toolstream, base_url, city):
    async def go():
        async with toolstream.async_httpx2_client(base_url=base_url) as client:
            response = await client.post("/v1/chat/completions", json={"model": "m", "city": city})
            return response.content

    assert b"Paris" in asyncio.run(go())


@pytest.mark.toolstream(match_on=["method", "body"])
def test_openai_sdk(toolstream, base_url):
    client = toolstream.openai_client(base_url=base_url + "/v1")
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "weather?"}], stream=True
    )
    calls = [c for chunk in stream for c in chunk.choices[0].delta.tool_calls or []]
    names = [c.function.name for c in calls if c.function.name]
    assert names == ["get_weather"]
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    prepare(pytester, monkeypatch)
    pytester.makepyfile(test_weather=TESTS)
    return pytester


def test_record_once_then_replay_in_none_mode(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = project.runpytest(*plugin_args(), "--toolstream-record-mode", "once")
    recorded.assert_outcomes(passed=3)
    folder = project.path / "cassettes" / "test_weather"
    names = sorted(p.name for p in folder.iterdir())
    assert names == [
        "test_async_httpx2-Paris-France.toolstream.yaml",
        "test_openai_sdk.toolstream.yaml",
        "test_sync_httpx.toolstream.yaml",
    ]
    assert "REDACTED" in (folder / "test_openai_sdk.toolstream.yaml").read_text()  # the api key never lands
    monkeypatch.setenv("NO_SERVER", "1")
    replayed = project.runpytest(*plugin_args())  # default mode: none
    replayed.assert_outcomes(passed=3)


@pytest.mark.slow
def test_ci_refuses_to_record_unless_asked_on_the_command_line(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "1")
    project.makeini("[pytest]\ntoolstream_record_mode = once\n")
    refused = project.runpytest(*plugin_args(), "-k", "test_sync_httpx")
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(["*no cassette at*record it with --toolstream-record-mode once*CI is set*"])
    assert not (project.path / "cassettes").exists()
    asked = project.runpytest(*plugin_args(), "-k", "test_sync_httpx", "--toolstream-record-mode", "once")
    asked.assert_outcomes(passed=1)
    assert (project.path / "cassettes" / "test_weather" / "test_sync_httpx.toolstream.yaml").is_file()


@pytest.mark.slow
def test_unused_interaction_and_unmatched_request_fail_the_test(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.runpytest(
        *plugin_args(), "--toolstream-record-mode", "once", "-k", "test_sync_httpx"
    ).assert_outcomes(passed=1)
    monkeypatch.setenv("NO_SERVER", "1")
    project.makepyfile(
        test_weather="""
        import pytest

        @pytest.mark.toolstream(match_on=["method", "body"])
        def test_sync_httpx(toolstream):
            pass  # asks for nothing: the recorded interaction goes unused

        @pytest.mark.toolstream(
            match_on=["method", "body"], cassette="test_weather/test_sync_httpx.toolstream.yaml"
        )
        def test_other_body(toolstream):
            client = toolstream.httpx_client(base_url="http://127.0.0.1:9")
            try:
                client.post("/v1/chat/completions", json={"model": "other"})
            except Exception:
                pass  # code under test may swallow the error: the plugin still fails the test
        """
    )
    result = project.runpytest(*plugin_args())
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*1 recorded interaction(s) of *test_sync_httpx.toolstream.yaml never requested: "
            "#1 POST http://127.0.0.1/v1/chat/completions; re-record with --toolstream-record-mode rewrite*",
            "*unmatched request:*test_sync_httpx.toolstream.yaml*",
        ]
    )


def test_a_misspelt_marker_argument_fails_with_its_name(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_typo="""
        import pytest

        @pytest.mark.toolstream(recordmode="once")
        def test_typo(toolstream):
            pass
        """
    )
    result = project.runpytest(*plugin_args(), "test_typo.py")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*unknown argument 'recordmode'; did you mean 'record_mode'?*"])


def test_no_option_no_change(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    prepare(pytester, monkeypatch)
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest(*plugin_args())
    result.assert_outcomes(passed=1)
    # Only pytest's own "plugins:" header may name it (when installed): no items, notes or summary.
    lines = [line for line in result.outlines if not line.startswith("plugins:")]
    assert not any("toolstream" in line for line in lines), lines


# -- the options objects, directly ------------------------------------------------------------


def test_record_options_from_marker_kwargs() -> None:
    options = RecordOptions.from_marker(
        {"record_mode": "ONCE", "redact_headers": "x-tenant", "match_on": ["url"]}
    )
    assert options.record_mode is RecordMode.ONCE
    assert options.redact_headers == ("x-tenant",)
    assert "x-tenant" in options.redaction().headers
    with pytest.raises(UsageError, match="unknown record mode"):
        RecordOptions.from_marker({"record_mode": "sometimes"})
    with pytest.raises(UsageError, match="match_on= must be a string or a list"):
        RecordOptions.from_marker({"match_on": 3})


def test_precedence_command_line_then_marker_then_ini_and_ci() -> None:
    ini_only = Settings(record_mode=RecordMode.ALL)
    assert ini_only.record_mode_for(None) == (RecordMode.ALL, None)
    assert ini_only.record_mode_for(RecordMode.ONCE) == (RecordMode.ONCE, None)
    cli = Settings(record_mode=RecordMode.REWRITE, record_mode_given=True)
    assert cli.record_mode_for(RecordMode.ONCE) == (RecordMode.REWRITE, None)
    on_ci = Settings(record_mode=RecordMode.ALL, ci=True)
    mode, note = on_ci.record_mode_for(RecordMode.ONCE)
    assert mode is RecordMode.NONE and note is not None and "CI is set" in note
    assert Settings(record_mode=RecordMode.ALL, record_mode_given=True, ci=True).record_mode_for(None)[0] is (
        RecordMode.ALL
    )


def test_cassette_paths_are_file_safe_and_long_names_hashed(tmp_path: Path) -> None:
    settings = Settings(cassette_dir=tmp_path)
    path = cassette_path(tmp_path / "test_mod.py", "test_x[a/b c]", settings, RecordOptions())
    assert path == tmp_path / "test_mod" / "test_x-a-b-c.toolstream.yaml"
    long_one, long_two = file_safe("t[" + "x" * 300 + "1]"), file_safe("t[" + "x" * 300 + "2]")
    assert len(long_one) == 100 and long_one != long_two
    given = cassette_path(tmp_path / "test_mod.py", "t", settings, RecordOptions(cassette="shared.yaml"))
    assert given == tmp_path / "shared.yaml"
