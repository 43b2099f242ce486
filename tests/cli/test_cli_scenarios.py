from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from harness.cassettes.corpus import bundled
from harness.cassettes.format import load
from harness.cassettes.outcome import diff
from harness.cli import main
from harness.transports.replay import ReplayTransport
from harness.wire.dialects import reference_outcome

CASSETTE = bundled("cassettes") / "openai-chat" / "parallel-2.yaml"


def test_scenarios_lists_names_dialects_and_descriptions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenarios"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:3] == ["SCENARIO", "DIALECTS", "SEEDS"]
    assert "parallel-calls-share-index-0" in out and "openai-chat" in out and "Seed 000" in out


def test_scenarios_filters_by_dialect_and_lists_mutations(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenarios", "--dialect", "bedrock-converse"]) == 0
    out = capsys.readouterr().out
    assert "F9-eventstream-frames-packed" in out and "A5-id-on-every-chunk" not in out
    assert main(["scenarios", "--mutations"]) == 0
    assert "rechunk" in capsys.readouterr().out


def test_mutate_writes_a_replayable_cassette(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mutated.yaml"
    code = main(
        [
            "mutate",
            str(CASSETTE),
            "--scenario",
            "profile-gateway-index-0-rechunked",
            "--seed",
            "1",
            "-o",
            str(out),
        ]
    )
    assert code == 0 and "expected calls" in capsys.readouterr().out
    cassette = load(out)
    interaction = cassette.interactions[0]
    assert cassette.source.kind == "synthesized" and interaction.expected is not None
    assert diff(interaction.expected, reference_outcome(interaction.response, "openai-chat")) == []
    # Replays through the transport read for read.
    client = httpx.Client(transport=ReplayTransport(out))
    request = interaction.request
    with client.stream(request.method, request.url, headers=request.headers, json=request.body) as response:
        reads = list(response.iter_raw())
    assert reads == [chunk.data for chunk in interaction.response.chunks]


def test_mutate_a_sweep_point(tmp_path: Path) -> None:
    out = tmp_path / "cut.yaml"
    assert (
        main(["mutate", str(CASSETTE), "--scenario", "cut-at-every-event", "--point", "e3", "-o", str(out)])
        == 0
    )
    assert "point e3" in load(out).source.provenance


def test_mutate_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mutate", str(CASSETTE), "--scenario", "nope", "-o", str(tmp_path / "x.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown scenario 'nope'" in err
    single = bundled("cassettes") / "openai-chat" / "single-call.yaml"
    assert (
        main(["mutate", str(single), "--scenario", "interleaved-tool-blocks", "-o", str(tmp_path / "y.yaml")])
        == 2
    )
    assert "does not apply" in capsys.readouterr().err


def test_explore_command_reports_and_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(Path(__file__).parents[1] / "search"))
    try:
        code = main([
            "explore", "--accumulator", "test_explore:IndexOnlyMerge",
            "--cassettes", str(bundled("cassettes") / "openai-chat"),
            "--max-examples", "100", "--out", str(tmp_path),
        ])  # fmt: skip
    finally:
        sys.path.remove(str(Path(__file__).parents[1] / "search"))
    out = capsys.readouterr().out
    assert code == 1 and "shrunk from" in out
    assert (
        len(list(tmp_path.glob("*.cassette.yaml"))) == 1 and len(list(tmp_path.glob("*.scenario.yaml"))) == 1
    )


def test_a_subcommand_that_cannot_import_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness import cli

    monkeypatch.setitem(cli.COMMANDS, "broken", "no_such_command_module")
    with pytest.raises(ModuleNotFoundError, match="no_such_command_module"):
        cli.build_parser()
