"""Every input error a user can make is one line on stderr and exit 2 (issue 11, point 5): values
that cannot be built, non-finite or absurd numbers, files that are not UTF-8, and output paths
that are folders, empty, unwritable, full or read-only."""

from __future__ import annotations

import os
import resource
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cassettes import format as cassettes
from harness.cli import main
from harness.errors import CassetteError, ScenarioError, UsageError
from harness.matrix.runner import run_matrix
from harness.matrix.selection import Selection
from harness.mutate.scenario import load_scenario
from harness.transports.replay import ReplayTransport

ROOT = Path(__file__).resolve().parents[2]
SINGLE = str(ROOT / "cassettes/openai-chat/single-call.yaml")
ONE_CASE = ["--accumulator", "reference", "--cassettes", SINGLE, "--scenarios", "original"]
ROOTED = os.geteuid() == 0


def one_line(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err[:2000]
    assert "Traceback" not in err
    for word in words:
        assert word in err, err
    return err


def edited(tmp_path: Path, old: str, new: str) -> Path:
    path = tmp_path / "edited.yaml"
    text = Path(SINGLE).read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.fixture
def unwritable(tmp_path: Path) -> Iterator[Path]:
    """A file path whose folder cannot be written: a chmod'ed folder, or under /proc for root
    (who writes through any mode bits)."""
    if ROOTED:
        yield Path("/proc/toolstream-test/out.yaml")
        return
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        yield folder / "out.yaml"
    finally:
        folder.chmod(stat.S_IRWXU)


@pytest.fixture
def full(tmp_path: Path) -> Path:
    """A file that is always full: /dev/full, or for root a private copy of it (so a writer that
    wrongly renamed over its target could not replace the system's)."""
    if not ROOTED:
        return Path("/dev/full")
    path = tmp_path / "full"
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    return path


# ---------------------------------------------------------------------------------------------
# Cassette and scenario files


def test_a_tagged_version_that_is_no_integer_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = edited(tmp_path, "version: 1", "version: !!int x")
    assert main(["show", str(path)]) == 2
    one_line(capsys, f"{path}:1: version: cannot read value")


@pytest.mark.parametrize("value", ["!!float x", "!!timestamp x"])
def test_other_tagged_values_that_cannot_be_built_name_the_field(tmp_path: Path, value: str) -> None:
    path = edited(tmp_path, "status: 200", f"status: {value}")
    with pytest.raises(CassetteError, match=r"status: cannot read value"):
        cassettes.load(path)


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "-1", "1.0e+300"])
def test_an_infinite_or_absurd_offset_is_refused_before_replay_waits_on_it(
    tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = Path(SINGLE).read_text(encoding="utf-8")
    assert "offset_ms:" in text
    path = tmp_path / "paced.yaml"
    head, _, tail = text.partition("offset_ms: ")
    path.write_text(head + f"offset_ms: {value}\n" + tail.split("\n", 1)[1], encoding="utf-8")
    with pytest.raises(CassetteError, match=r"offset_ms: must be from 0 to 86,400,000 ms"):
        ReplayTransport(str(path), speed=1)
    assert main(["show", str(path)]) == 2
    one_line(capsys, "offset_ms")


def test_a_scenario_file_that_is_not_utf8_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "latin.yaml"
    path.write_bytes(b"name: caf\xe9\nsteps: [rechunk]\n")
    with pytest.raises(ScenarioError, match="not a UTF-8 text file"):
        load_scenario(path)
    assert main(["scenarios", str(path)]) == 2
    one_line(capsys, str(path), "UTF-8")
    assert main(["check", "--accumulator", "reference", "--cassettes", SINGLE, "--scenarios", str(path)]) == 2
    one_line(capsys, "UTF-8")


def test_a_scenario_path_that_is_a_folder_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "dir.yaml")


@pytest.mark.parametrize("seeds", ["1000000000000", "[1, 2, 9223372036854775808]", "[true]", "0"])
def test_absurd_scenario_seeds_are_one_line_and_quick(
    tmp_path: Path, seeds: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "many.yaml"
    path.write_text(f"name: many\nsteps: [rechunk]\nseeds: {seeds}\n", encoding="utf-8")
    start = time.monotonic()
    assert main(["scenarios", str(path)]) == 2
    assert time.monotonic() - start < 5
    one_line(capsys, "seeds: must be a count from 1 to 10000")


def test_a_scenario_with_the_most_seeds_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "most.yaml"
    path.write_text("name: most\nsteps: [rechunk]\nseeds: 10000\n", encoding="utf-8")
    assert len(load_scenario(path).seeds) == 10_000


# ---------------------------------------------------------------------------------------------
# Numbers on the command line


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["check", *ONE_CASE, "--timeout", "nan"], ["--timeout", "finite"]),
        (["check", *ONE_CASE, "--timeout", "inf"], ["--timeout", "finite"]),
        (["check", *ONE_CASE, "--timeout", "1e-9"], ["--timeout", "0 (no limit) or between 0.01"]),
        (["check", *ONE_CASE, "--timeout", "-1"], ["--timeout"]),
        (["check", *ONE_CASE, "--timeout", "soon"], ["--timeout", "'soon'"]),
        (["check", *ONE_CASE, "--seeds", "100000000000"], ["--seeds", "from 1 to 10000"]),
        (["check", *ONE_CASE, "--seeds", "0"], ["--seeds"]),
        (["check", *ONE_CASE, "--jobs", "0"], ["--jobs"]),
        (["check", *ONE_CASE, "--max-failures", "-1"], ["--max-failures"]),
        (["compare", "reference", "reference", "--timeout", "inf"], ["--timeout"]),
        (["compare", "reference", "reference", "--max-differences", "-5"], ["--max-differences"]),
        (["explore", "--accumulator", "reference", "--max-examples", "-1"], ["--max-examples"]),
        (["explore", "--accumulator", "reference", "--max-examples", "0"], ["--max-examples"]),
        (["mutate", SINGLE, "--scenario", "original", "--seed", "-3", "-o", "x.yaml"], ["--seed"]),
        (["record", "openai", "--timeout", "nan"], ["--timeout", "finite"]),
        (["record", "openai", "--timeout", "0"], ["--timeout", "more than 0"]),
        (["serve", "--port", "70000"], ["--port"]),
        (["check", "--accumulator"], ["--accumulator"]),
        (["check"], ["required", "--accumulator"]),
    ],
)
def test_bad_numbers_and_arguments_are_one_line_exit_2(
    argv: list[str], words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    start = time.monotonic()
    assert main(argv) == 2
    assert time.monotonic() - start < 10
    err = one_line(capsys, f"toolstream {argv[0]}: ", *words)
    assert err.rstrip().endswith(f"(see toolstream {argv[0]} --help)")


def test_the_smallest_timeout_ends(tmp_path: Path) -> None:
    """A deadline that passes before the worker says it is done with its unit blames no case."""
    selection = Selection(cassettes=(SINGLE,), scenarios=("original", "F3-single-read"))
    start = time.monotonic()
    report = run_matrix("reference", selection, timeout=1e-9)
    assert time.monotonic() - start < 60
    assert len(report.results) == 2


def test_the_library_refuses_a_nan_timeout_and_absurd_seeds() -> None:
    with pytest.raises(UsageError, match="timeout"):
        run_matrix("reference", Selection(cassettes=(SINGLE,)), timeout=float("nan"))
    with pytest.raises(UsageError, match="seeds: must be from 1 to 10000"):
        run_matrix("reference", Selection(cassettes=(SINGLE,), seeds=100_000_000_000))


def test_an_infinite_timeout_in_the_library_means_no_limit() -> None:
    report = run_matrix(
        "reference", Selection(cassettes=(SINGLE,), scenarios=("original",)), timeout=float("inf")
    )
    assert report.ok and len(report.results) == 1


# ---------------------------------------------------------------------------------------------
# Output paths


def writers(out: str, tmp_path: Path) -> list[list[str]]:
    """Every command that writes a file the user names, pointed at `out`."""
    body = tmp_path / "body.sse"
    body.write_text(
        'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
        encoding="utf-8",
    )
    return [
        ["mutate", SINGLE, "--scenario", "F3-single-read", "-o", out],
        ["import", str(body), "--dialect", "openai-chat", "-o", out],
        ["check", *ONE_CASE, "--json", out],
        ["check", *ONE_CASE, "--html", out],
    ]


@pytest.mark.parametrize("n", range(4))
def test_an_output_path_that_is_a_folder_or_empty_is_one_line(
    n: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for out, words in [(str(tmp_path), ["is a folder"]), ("", ["empty"])]:
        argv = writers(out, tmp_path)[n]
        assert main(argv) == 2, argv
        one_line(capsys, f"toolstream {argv[0]}: ", *words)


@pytest.mark.parametrize("n", range(4))
def test_an_unwritable_output_is_one_line_naming_it(
    n: int, tmp_path: Path, unwritable: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = writers(str(unwritable), tmp_path)[n]
    assert main(argv) == 2, argv
    one_line(capsys, f"toolstream {argv[0]}: {unwritable}: cannot write")
    assert not unwritable.exists()


@pytest.mark.parametrize("n", range(4))
def test_a_device_output_is_one_line_and_stays_what_it_was(
    n: int, tmp_path: Path, full: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = writers(str(full), tmp_path)[n]
    assert main(argv) == 2, argv
    one_line(capsys, f"{full}: is a device, not a regular file; give a file path, or - for standard output")
    assert stat.S_ISCHR(full.stat().st_mode)  # neither written through nor renamed over


def _fill_disk_at(limit: int) -> None:
    # In the child: files may not grow past `limit` bytes, and writing past it fails (EFBIG).
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.parametrize("n", [0, 1, 2])
def test_a_disk_that_fills_during_the_save_is_one_line_and_leaves_no_temp_file(
    n: int, tmp_path: Path
) -> None:
    out = tmp_path / "out" / "result.out"
    argv = writers(str(out), tmp_path)[n]
    done = subprocess.run(
        [sys.executable, "-m", "harness", *argv],
        capture_output=True,
        text=True,
        preexec_fn=lambda: _fill_disk_at(200),
        cwd=tmp_path,
        # Nor bytecode: a .pyc cut at the limit would be written whole-looking and break later imports.
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and f"{out}: cannot write: File too large" in done.stderr
    assert not out.exists() and os.listdir(out.parent) == []


def test_recording_into_a_full_or_unwritable_destination_is_one_line(
    tmp_path: Path,
    full: Path,
    unwritable: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from test_cli_record_import import serve_at, served

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    for out in (full, unwritable):
        with serve_at(served("anthropic"), "/v1/messages") as fake:
            assert main(["record", "anthropic", "--base-url", fake.url, "-o", str(out)]) == 2
        # A device is read first (a recording merges into what is there): a bounded read says so.
        one_line(capsys, f"toolstream record: {out}: ")
        assert stat.S_ISCHR(full.stat().st_mode) and not unwritable.exists()


def test_compare_and_explore_refuse_a_file_where_a_folder_belongs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    afile = tmp_path / "taken"
    afile.write_text("", encoding="utf-8")
    assert main(["compare", "reference", "reference", "--out", str(afile)]) == 2
    one_line(capsys, "--out", "is a file")
    assert main(["explore", "--accumulator", "reference", "--out", str(afile)]) == 2
    one_line(capsys, "--out", "is a file")


def test_an_oserror_naming_a_file_reaches_the_user_as_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The safety net in `main`: any OSError on a path the user gave, not only ours."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", "/some/where.yaml")

    monkeypatch.setattr("harness.cli.show.run", refuse)
    assert main(["show", SINGLE]) == 2
    one_line(capsys, "toolstream show: /some/where.yaml: Permission denied")


@pytest.mark.parametrize(
    "command",
    [
        ["check", "--accumulator", "reference", "--scenarios", "original", "--cassettes"],
        ["show"],
        ["mutate", "--scenario", "F3-single-read", "-o", "out.yaml"],
    ],
    ids=["check", "show", "mutate"],
)
def test_a_stream_its_dialect_cannot_decode_names_the_cassette(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # An OpenAI chat recording labelled Bedrock: its bytes are no eventstream. The error said only
    # "eventstream frame 1: prelude CRC mismatch", whichever of a folder's files it was.
    monkeypatch.chdir(tmp_path)
    path = edited(tmp_path, "dialect: openai-chat", "dialect: bedrock-converse")
    assert main([*command, str(path)]) == 2
    field = "" if command[0] == "show" else "interactions[0].response: "
    one_line(capsys, f"{path}: {field}eventstream frame 1: prelude CRC mismatch")
    assert not (tmp_path / "out.yaml").exists()


# ---------------------------------------------------------------------------------------------
# Fields of the wrong JSON type (issue 29): one line naming the file, the event and the field


WRONG_TYPES = {
    "anthropic-stop-reason": (
        "anthropic/single-call",
        '"stop_reason":"tool_use"',
        '"stop_reason":[1]',
        "event 12: delta.stop_reason: must be a string or null, not an array",
    ),
    "anthropic-delta-type": (
        "anthropic/single-call",
        '"delta":{"type":"input_json_delta","partial_json":""}',
        '"delta":{"type":{},"partial_json":""}',
        "event 3: delta.type: must be a string, not an object",
    ),
    "anthropic-start-not-json": (
        "anthropic/single-call",
        'data: {"type":"content_block_start"',
        'data: xx{"type":"content_block_start"',
        "event 1: data: must be a JSON object, not a string",
    ),
    "gemini-finish-reason": (
        "gemini/code-execution-then-call",
        '"finishReason": "STOP"',
        '"finishReason": {}',
        "finishReason: must be a string or null, not an object",
    ),
    "responses-item-status": (
        "openai-responses/single-call",
        '"type":"function_call","status":"in_progress"',
        '"type":"function_call","status":{}',
        "item.status: must be a string, not an object",
    ),
    "chat-tool-calls": (
        "openai-chat/single-call",
        '"tool_calls":[',
        '"tool_calls":7,"x":[',
        "delta.tool_calls: must be an array or null, not an integer",
    ),
}


WITH = [["show"], ["check", *ONE_CASE[:2], "--cassettes"]]


@pytest.mark.parametrize("command", WITH, ids=["show", "check"])
@pytest.mark.parametrize("case", sorted(WRONG_TYPES))
def test_a_field_of_the_wrong_json_type_is_one_line_naming_event_and_field(
    case: str, command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name, old, new, said = WRONG_TYPES[case]
    path = tmp_path / "wrong.yaml"
    text = (ROOT / "cassettes" / f"{name}.yaml").read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    assert main([*command, str(path)]) == 2
    one_line(capsys, str(path), said)


def test_a_lone_surrogate_in_an_expected_outcome_is_one_line_when_saved(tmp_path: Path) -> None:
    from harness.cassettes.outcome import Outcome, ToolCall

    cassette = cassettes.load(SINGLE)
    cassette.interactions[0].expected = Outcome(tool_calls=(ToolCall("f", {"a": "\ud800"}),))
    with pytest.raises(CassetteError, match="lone surrogate"):
        cassettes.save(cassette, tmp_path / "out.yaml")
