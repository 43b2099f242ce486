"""Each `toolstream` subcommand imports what it uses: `--version` and `serve-accumulator` children
start without hypothesis or the other subcommands' modules (checked in a fresh interpreter), and a
`serve-accumulator reference` child answers a case without the YAML reader, entry points, argparse
or another dialect's module (issue 12: its start-up is what every `cmd:` check waits for)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from harness.accumulators.stdio import case_messages
from harness.accumulators.warmup import warmup_cases
from harness.cli import COMMANDS, build_parser, direct, main, wanted

PROBE = """
import contextlib, io, json, sys
from harness.cli import main
sys.stdin = io.StringIO("")
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main({argv!r})
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def probe(code: str) -> Any:
    """What a fresh interpreter running `code` prints as JSON on its last line of stderr."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(done.stderr.strip().splitlines()[-1])


def modules_after(argv: list[str]) -> set[str]:
    return set(probe(PROBE.format(argv=argv)))


def command_modules(modules: set[str]) -> set[str]:
    # `harness.cli.parser` is argparse, which every command but `serve-accumulator SPEC` needs.
    return {name for name in modules if name.startswith("harness.cli.") and name != "harness.cli.parser"}


def test_version_imports_no_subcommand_and_no_hypothesis() -> None:
    modules = modules_after(["--version"])
    assert "hypothesis" not in modules
    assert command_modules(modules) == set()
    assert "yaml" not in modules
    assert "argparse" not in modules and "harness.cli.parser" not in modules


def test_version_without_the_parser_prints_what_the_parser_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    printed = []
    for run in (lambda: main(["--version"]), lambda: build_parser(()).parse_args(["--version"])):
        with pytest.raises(SystemExit) as exit_info:
            run()
        printed.append((exit_info.value.code, capsys.readouterr()))
    assert printed[0] == printed[1]
    assert printed[0][0] == 0 and printed[0][1].out.startswith("toolstream ")


def test_serve_accumulator_imports_only_its_own_subcommand() -> None:
    modules = modules_after(["serve-accumulator", "reference"])
    assert "hypothesis" not in modules
    assert command_modules(modules) == {"harness.cli.serve_accumulator"}


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["--version"], ()),
        (["check", "--accumulator", "reference"], ("check",)),
        (["serve-accumulator", "reference"], ("serve-accumulator",)),
        (["--help"], None),
        ([], None),
        (["no-such-command"], None),
    ],
)
def test_only_the_named_subcommand_is_wanted(argv: list[str], names: tuple[str, ...] | None) -> None:
    assert wanted(argv) == names
    assert names is None or set(names) <= set(COMMANDS)


ANSWER_PROBE = """
import contextlib, io, json, sys
from harness.cli import main
sys.stdin = io.StringIO({case!r})
answers = io.StringIO()
with contextlib.redirect_stdout(answers):
    code = main(["serve-accumulator", "reference"])
print(json.dumps([code, answers.getvalue(), sorted(sys.modules)]), file=sys.stderr)
"""

# What answering an OpenAI chat case has no use for: the cassette YAML reader and writer, entry
# points (importlib.metadata, and email through it), the argument parser, the harness's side of the
# stdio protocol (processes, threads, the subreaper), the other dialects, and the recording side.
NOT_FOR_ANSWERING = (
    "yaml",
    "importlib.metadata",
    "email",
    "secrets",
    "hmac",
    "argparse",
    "harness.cli.parser",
    "subprocess",
    "threading",
    "ctypes",
    "shutil",
    "harness.cassettes.format",
    "harness.accumulators.stdio_process",
    "harness.accumulators.client",
    "harness.record.recipes",
    "harness.wire.dialects.anthropic_messages",
    "harness.wire.dialects.blocks",
    "harness.wire.codecs.eventstream",
    "hypothesis",
)


def test_serve_accumulator_reference_answers_a_case_without_what_it_does_not_use() -> None:
    (case,) = warmup_cases(["openai-chat"])
    lines = "".join(json.dumps(m) + "\n" for m in case_messages(case, "events"))
    code, answers, modules = probe(ANSWER_PROBE.format(case=lines))
    (answer,) = [json.loads(line) for line in answers.splitlines()]
    assert code == 0
    assert answer["case"] == case.id and [c["name"] for c in answer["tool_calls"]] == ["get_weather"]
    assert sorted(set(NOT_FOR_ANSWERING) & set(modules)) == []
    assert "harness.wire.dialects.openai_chat" in modules  # the case's own dialect, loaded for it


@pytest.mark.parametrize(
    ("argv", "skips_the_parser"),
    [
        (["serve-accumulator", "reference"], True),
        (["serve-accumulator", "cmd:node acc.js --flag"], True),
        (["serve-accumulator"], False),
        (["serve-accumulator", "--help"], False),
        (["serve-accumulator", "-h"], False),
        (["serve-accumulator", "reference", "extra"], False),
        (["serve-accumulator", "--", "reference"], False),
        (["--version"], True),
        (["--version", "serve-accumulator", "reference"], False),
        (["--version", "--help"], False),
        (["check", "reference"], False),
    ],
)
def test_only_serve_accumulator_spec_exactly_skips_the_parser(
    argv: list[str], skips_the_parser: bool
) -> None:
    assert (direct(argv) is not None) is skips_the_parser


def test_serve_accumulator_usage_errors_are_the_parsers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve-accumulator"]) == 2
    assert capsys.readouterr().err.strip() == (
        "toolstream serve-accumulator: the following arguments are required: SPEC "
        "(see toolstream serve-accumulator --help)"
    )
    assert main(["serve-accumulator", "reference", "extra"]) == 2
    assert "unrecognized arguments: extra" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["serve-accumulator", "--help"])
    assert exit_info.value.code == 0
    assert "usage: toolstream serve-accumulator [-h] SPEC" in capsys.readouterr().out


def test_serve_accumulator_without_the_parser_reports_errors_as_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["serve-accumulator", "refrence"]) == 2
    assert capsys.readouterr().err == (
        "toolstream serve-accumulator: unknown accumulator 'refrence'; did you mean 'reference'?\n"
    )
