"""Recording in an app's test suite: migrating from pytest-recording, foreign and broken cassettes,
project-wide settings, random local ports, stale interactions, re-records that diff clean."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import httpx
import pytest

from harness.cassettes.format import Cassette, Chunk, Interaction, Request, Response, Source, save
from harness.cli import main
from harness.errors import NoMatchError
from harness.record.fake_provider import FakeProvider, Script
from harness.transports.recording import RecordingTransport
from harness.transports.replay import ReplayTransport
from harness.transports.volatile import is_volatile, stable_url
from tests._pytester_support import plugin_args, prepare

pytest_plugins = ["pytester"]

BODY = [
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function",'
    b'"function":{"name":"get_weather","arguments":""}}]}}]}\n\n',
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":'
    b'"{\\"city\\": \\"Paris\\"}"}}]},"finish_reason":"tool_calls"}]}\n\n',
    b"data: [DONE]\n\n",
]
PATH = "/v1/chat/completions"

SERVER = f"""
import os

import pytest

from harness.record.fake_provider import FakeProvider, Script

BODY = {BODY!r}


@pytest.fixture(scope="module")
def base_url():
    if os.environ.get("NO_SERVER"):
        yield "http://127.0.0.1:9"  # nothing listens there: a request that is not replayed fails
        return
    with FakeProvider() as fake:
        fake.route("POST", "/v1/chat/completions", Script.of(BODY))
        yield fake.url
"""

# The suite as it was, on pytest-recording (vcrpy patches httpx).
VCR_SUITE = """
import asyncio

import httpx
import pytest


@pytest.mark.vcr
def test_chat(base_url):
    with httpx.Client(base_url=base_url) as client:
        with client.stream("POST", "/v1/chat/completions", json={"model": "m", "stream": True}) as r:
            assert b"get_weather" in r.read()


@pytest.mark.vcr
def test_chat_async(base_url):
    async def go():
        async with httpx.AsyncClient(base_url=base_url) as client:
            r = await client.post("/v1/chat/completions", json={"model": "m", "user": "u1"})
            return r.content

    assert b"Paris" in asyncio.run(go())
"""

# The same suite on the toolstream fixture: only the client changes; the vcrpy cassettes stay.
TOOLSTREAM_SUITE = """
import asyncio

import pytest


def test_chat(toolstream, base_url):
    client = toolstream.httpx_client(base_url=base_url)
    with client.stream("POST", "/v1/chat/completions", json={"model": "m", "stream": True}) as r:
        assert b"get_weather" in r.read()


def test_chat_async(toolstream, base_url):
    async def go():
        async with toolstream.async_httpx_client(base_url=base_url) as client:
            r = await client.post("/v1/chat/completions", json={"model": "m", "user": "u1"})
            return r.content

    assert b"Paris" in asyncio.run(go())


def test_without_cassette():
    assert True  # other tests still run
"""

BROKEN = """
import pytest


@pytest.mark.toolstream(cassette="broken.yaml")
def test_broken(toolstream):
    pass
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    prepare(pytester, monkeypatch)
    pytester.makeconftest(SERVER)
    return pytester


def test_migrating_a_pytest_recording_suite(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 1. The original suite records its vcrpy cassettes with the real pytest-recording.
    project.makepyfile(test_app=VCR_SUITE)
    project.runpytest("--record-mode=once", "-p", "no:toolstream").assert_outcomes(passed=2)
    folder = project.path / "cassettes" / "test_app"
    assert sorted(p.name for p in folder.iterdir()) == ["test_chat.yaml", "test_chat_async.yaml"]

    # 2. Moved to the toolstream fixture, cassettes left in place: each test fails on its own, in
    # one line naming the import command; a broken cassette too; no INTERNALERROR.
    monkeypatch.setenv("NO_SERVER", "1")
    project.makepyfile(test_app=TOOLSTREAM_SUITE, test_broken=BROKEN)
    (project.path / "cassettes" / "broken.yaml").write_text("name: [unclosed\n")
    result = project.runpytest(*plugin_args(), "-p", "no:recording")
    result.assert_outcomes(passed=1, errors=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "INTERNALERROR" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*test_broken.py::test_broken: cannot read the cassette: *broken.yaml*broken YAML*"]
    )
    commands = re.findall(r"convert it: (toolstream import \S+ -o \S+)", result.stdout.str())
    assert sorted(set(commands)) == [
        "toolstream import cassettes/test_app/test_chat.yaml -o cassettes/test_app/test_chat.toolstream.yaml",
        "toolstream import cassettes/test_app/test_chat_async.yaml"
        " -o cassettes/test_app/test_chat_async.toolstream.yaml",
    ]
    for name in ("test_chat", "test_chat_async", "test_broken"):
        assert len(_error_section(result.outlines, name)) == 1, "\n".join(result.outlines)  # no traceback

    # 3. `toolstream show` on the folder lists what it can read and names what it skips.
    assert main(["show", "cassettes"]) == 0

    # 4. Run the printed commands as printed: the suite is green, replaying without a server.
    for command in sorted(set(commands)):
        assert main(shlex.split(command)[1:]) == 0
    (project.path / "test_broken.py").unlink()
    project.runpytest(*plugin_args(), "-p", "no:recording").assert_outcomes(passed=3)


def test_show_folder_skips_foreign_files(
    project: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = project.path / "mixed"
    folder.mkdir()
    (folder / "vcr.yaml").write_text("interactions: []\nversion: 1\n")
    (folder / "broken.yaml").write_text("name: [unclosed\n")
    save(_cassette(["m"]), folder / "ours.yaml")
    capsys.readouterr()
    assert main(["show", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "ours" in out
    assert f"skipped {folder / 'vcr.yaml'}: a vcrpy / pytest-recording cassette (toolstream import" in out
    assert f"skipped {folder / 'broken.yaml'}:2: broken YAML" in out  # the file and line, once


@pytest.mark.slow
def test_re_recording_unchanged_content_changes_nothing(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_app="""
        def test_sdk(toolstream, base_url):
            client = toolstream.openai_client(base_url=base_url + "/v1", max_retries=0)
            stream = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "weather?"}], stream=True
            )
            assert [c for chunk in stream for c in chunk.choices[0].delta.tool_calls or []]
        """
    )
    cassette = project.path / "cassettes" / "test_app" / "test_sdk.toolstream.yaml"
    project.runpytest(*plugin_args(), "--toolstream-record-mode", "rewrite").assert_outcomes(passed=1)
    first = cassette.read_text()
    project.runpytest(*plugin_args(), "--toolstream-record-mode", "rewrite").assert_outcomes(passed=1)
    second = cassette.read_text()  # a new server, on a new random port, a new date header
    assert first == second
    assert "x-stainless" not in first and "offset_ms" not in first and "127.0.0.1:" not in first
    assert "content-length" not in first.lower() and "date:" not in first

    # Timing only when asked for.
    project.makeini("[pytest]\ntoolstream_record_timing = true\n")
    project.runpytest(*plugin_args(), "--toolstream-record-mode", "rewrite").assert_outcomes(passed=1)
    assert "offset_ms" in cassette.read_text()

    # A toolstream cassette at pytest-recording's place (`<test>.yaml`) is not ours to read: the
    # test fails saying where its own cassette goes, and no warning of ours is printed.
    cassette.rename(cassette.with_name("test_sdk.yaml"))
    replayed = project.runpytest(*plugin_args(), "-p", "no:recording")
    replayed.assert_outcomes(failed=1)
    replayed.stdout.fnmatch_lines(["*no cassette at *test_sdk.toolstream.yaml*"])
    replayed.stdout.no_fnmatch_line("*DeprecationWarning*")


@pytest.mark.slow
def test_configuration_precedence_marker_fixture_ini(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_SERVER", "1")
    old = _cassette(["m"], url="http://127.0.0.1:42795/v1/chat/completions", user="u1")
    for name in ("test_fixture", "test_marker"):
        save(old, project.path / "cassettes" / "test_app" / f"{name}.toolstream.yaml")
    project.makepyfile(
        test_app="""
        import pytest

        def send(toolstream):
            client = toolstream.httpx_client(base_url="http://127.0.0.1:44691")
            client.post("/v1/chat/completions", json={"model": "m", "user": "u2"}).read()

        def test_fixture(toolstream):
            send(toolstream)

        @pytest.mark.toolstream(ignore_fields=["url.port"])
        def test_marker(toolstream):
            send(toolstream)
        """
    )
    project.makeini("[pytest]\ntoolstream_ignore_fields = url.port\n")
    # ini only: the port is ignored, the user differs.
    result = project.runpytest(*plugin_args(), "-p", "no:recording")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*which differs in body.user: 'u1' recorded, 'u2' sent*"])
    assert "url.port:" not in result.stdout.str()
    # A conftest's toolstream_config beats the ini; a marker beats the fixture.
    project.makeconftest(
        SERVER
        + """

@pytest.fixture
def toolstream_config():
    return {"ignore_fields": ["url.port", "body.user"]}
"""
    )
    result = project.runpytest(*plugin_args(), "-p", "no:recording")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_marker*body.user: 'u1' recorded, 'u2' sent*"])
    # Names are checked: a misspelt one is one line naming it, at setup or at start-up.
    project.makeini("[pytest]\ntoolstream_ignore_fields = url.prot\n")
    result = project.runpytest(*plugin_args(), "-p", "no:recording")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*ini key toolstream_ignore_fields: ignore_fields: no such field 'url.prot'; "
            "did you mean 'url.port'?*"
        ]
    )
    project.makeini("[pytest]\n")
    project.makeconftest(SERVER)
    project.makepyfile(
        test_app="""
        import pytest

        @pytest.mark.toolstream(cassette="test_app/test_fixture.toolstream.yaml", ignore_fields=["body.usr"])
        def test_typo(toolstream):
            pass
        """
    )
    result = project.runpytest(*plugin_args(), "-p", "no:recording")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*'body.usr' is in no recorded request body of *did you mean 'body.user'?"])


def test_new_episodes_names_its_stale_interactions(project: pytest.Pytester) -> None:
    save(_cassette(["old", "m"]), project.path / "cassettes" / "test_app" / "test_chat.toolstream.yaml")
    project.makepyfile(
        test_app="""
        def test_chat(toolstream, base_url):
            client = toolstream.httpx_client(base_url=base_url)
            client.post("/v1/chat/completions", json={"model": "m", "user": "u1"}).read()
        """
    )
    result = project.runpytest(
        *plugin_args(), "-p", "no:recording", "--toolstream-record-mode", "new_episodes"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*new_episodes only appends: 1 stale interaction(s) of *test_chat.toolstream.yaml kept, never "
            "requested: #1 POST http://127.0.0.1/v1/chat/completions (closest request sent differs in "
            "body.model: 'old' recorded, 'm' sent); new_episodes never removes one: re-record with "
            "--toolstream-record-mode rewrite to drop them",
            "*toolstream: unused interactions*",
            "test_app.py::test_chat: 1 unused in cassettes/test_app/test_chat.toolstream.yaml "
            "(new_episodes);*",
        ]
    )
    project.runpytest(
        *plugin_args(), "-p", "no:recording", "--toolstream-record-mode", "rewrite"
    ).assert_outcomes(passed=1)
    project.runpytest(*plugin_args(), "-p", "no:recording").assert_outcomes(passed=1)


def test_the_readme_configuration_examples_work(project: pytest.Pytester) -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "pytest.md").read_text(encoding="utf-8")
    section = text[text.index("\n## Recording in your test suite\n") :]
    section = section[: section.index("\n## ", 1)]
    (ini,) = re.findall(r"```ini\n(.*?)```", section, re.S)
    (conftest,) = re.findall(r"```python\n(.*?)```", section, re.S)
    project.makeini(ini)
    project.makeconftest(SERVER + "\n" + conftest)
    project.makepyfile(
        test_app="""
        def test_chat(toolstream, base_url):
            client = toolstream.httpx_client(base_url=base_url)
            body = {"model": "m", "user": USER, "metadata": {"request_id": USER}}
            assert b"get_weather" in client.post("/v1/chat/completions", json=body).read()
        """
    )
    project.path.joinpath("test_app.py").write_text(
        "USER = 'u1'\n" + project.path.joinpath("test_app.py").read_text()
    )
    project.runpytest(
        *plugin_args(), "-p", "no:recording", "--toolstream-record-mode", "once"
    ).assert_outcomes(passed=1)
    assert (project.path / "cassettes" / "test_app" / "test_chat.toolstream.yaml").is_file()
    # Another user and request id, another server port: the ini's match_on and the fixture's
    # ignore_fields still find the recording.
    source = project.path.joinpath("test_app.py").read_text().replace("USER = 'u1'", "USER = 'u2'")
    project.path.joinpath("test_app.py").write_text(source)
    project.runpytest(*plugin_args(), "-p", "no:recording").assert_outcomes(passed=1)


# -- transports, directly --------------------------------------------------------------------------


def test_a_recording_on_one_local_port_replays_on_another(tmp_path: Path) -> None:
    with FakeProvider() as first, FakeProvider() as second:
        for fake in (first, second):
            fake.route("POST", PATH, Script.of(BODY))
        assert first.url != second.url
        # As older releases wrote it: the port in the URL.
        kept = tmp_path / "with-port.yaml"
        with httpx.Client(transport=RecordingTransport(path=kept, mode="once", stable=False)) as client:
            client.post(first.url + PATH, json={"model": "m"}).read()
        assert f"{first.url}{PATH}" in kept.read_text()
        with (
            httpx.Client(transport=ReplayTransport(kept)) as client,
            pytest.raises(NoMatchError, match=r"url\.port: \d+ recorded, \d+ sent"),
        ):
            client.post(second.url + PATH, json={"model": "m"})
        for options in ({"match_on": ["method", "path", "body"]}, {"ignore_fields": ["url.port"]}):
            with httpx.Client(transport=ReplayTransport(kept, **options)) as client:  # type: ignore[arg-type]
                assert b"get_weather" in client.post(second.url + PATH, json={"model": "m"}).content
        # Now: a loopback port is not written, and a port-less loopback URL matches any port.
        stable = tmp_path / "stable.yaml"
        with httpx.Client(transport=RecordingTransport(path=stable, mode="once")) as client:
            client.post(first.url + PATH, json={"model": "m"}).read()
        assert f"http://127.0.0.1{PATH}" in stable.read_text()
        with httpx.Client(transport=ReplayTransport(stable)) as client:
            assert b"get_weather" in client.post(second.url + PATH, json={"model": "m"}).content
        # FakeProvider.from_cassette takes the path as well as a cassette.
        with FakeProvider.from_cassette(stable) as replayed, httpx.Client() as client:
            assert b"get_weather" in client.post(replayed.url + PATH, json={"model": "m"}).content


def test_volatile_names_and_loopback_urls() -> None:
    for name in (
        "X-Stainless-OS",
        "content-length",
        "Date",
        "x-request-id",
        "cf-ray",
        "openai-processing-ms",
    ):
        assert is_volatile(name), name
    assert not is_volatile("content-type") and not is_volatile("openai-model")
    assert stable_url("http://127.0.0.1:4242/v1?a=1") == "http://127.0.0.1/v1?a=1"
    assert stable_url("http://[::1]:4242/v1") == "http://[::1]/v1"
    assert stable_url("https://api.openai.com:443/v1") == "https://api.openai.com:443/v1"


def _error_section(lines: list[str], test: str) -> list[str]:
    """The non-blank lines under `ERROR at setup of TEST` in a pytest run's output."""
    start = next(i for i, line in enumerate(lines) if f"ERROR at setup of {test} " in line)
    out = []
    for line in lines[start + 1 :]:
        if line.startswith(("___", "===")):
            break
        if line.strip():
            out.append(line)
    return out


def _cassette(models: list[str], *, url: str = f"http://127.0.0.1{PATH}", user: str = "u1") -> Cassette:
    return Cassette(
        name="hand-made",
        source=Source("recorded", "written by the test"),
        interactions=[
            Interaction(
                Request("POST", url, {"content-type": "application/json"}, {"model": model, "user": user}),
                Response(200, {"content-type": "text/event-stream"}, [Chunk(chunk) for chunk in BODY]),
            )
            for model in models
        ],
        dialect="openai-chat",
    )


def test_import_help_names_the_output_the_plugin_looks_for(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["import", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "FILE-STEM.toolstream.yaml, the name the pytest plugin looks for" in help_text
