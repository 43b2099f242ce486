"""What `show` reads, and what is written to be shared, stay within the selection (issue 29).

`show CASE_ID` reads only cassettes of the selection (its `--cassettes`, the bundled corpus, a
file below the current folder): an id climbing out is a usage error. Reproductions, shrunk
cassettes, HTML reports and the report card name a bundled cassette by its corpus name and a
user's by its path from where the command ran: no file holds this machine's folders.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from harness.cassettes.corpus import bundled
from harness.cassettes.format import load
from harness.cli import main
from harness.text.shared import shared_name, without_machine_paths

ROOT = Path(__file__).resolve().parents[2]
CORPUS = bundled("cassettes")
INDEX0 = "openai-chat/litellm-bridge-parallel-index0"  # the openai SDK merges its two calls


def test_shared_name_and_text() -> None:
    assert shared_name(CORPUS / f"{INDEX0}.yaml") == f"{INDEX0}.yaml"
    assert shared_name(Path.cwd() / "mine" / "a.yaml") == "mine/a.yaml"
    assert shared_name("/somewhere/else/deep/a.yaml") == "deep/a.yaml"
    text = f"{Path.home()}/x {ROOT}/harness {CORPUS}/{INDEX0}.yaml {Path.home()}x"
    assert without_machine_paths(text).split()[-1] == f"{Path.home()}x"  # not a folder of its own
    assert str(ROOT) not in without_machine_paths(text)


def test_report_card_names_no_environment_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 30's part in the renderer: a row's problem names its environment's python and the
    cache folder; the Markdown, the HTML and the blocks of docs/report-card.md say neither."""
    from harness import cache
    from harness.card import render

    monkeypatch.setenv("TOOLSTREAM_CACHE", str(tmp_path / "cache"))
    card = json.loads((ROOT / "harness" / "card" / "report-card.json").read_text())
    python = cache.home() / "envs" / "openai-1.0" / "bin" / "python"
    card["rows"][0] = {**card["rows"][0], "problem": f"{python} -m pip failed; {sys.executable} {ROOT}"}
    card["selection"] = {"cassettes": [str(tmp_path / "mine")]}
    markdown = render.markdown(card)
    for text in (markdown, render.page(card), render.adapters_block(card), render.card_block(card)):
        for machine in (*_machine_paths(tmp_path), str(cache.home()), sys.prefix):
            assert machine not in text
    assert "&lt;toolstream cache&gt;/envs/openai-1.0/bin/python" in markdown


@pytest.fixture
def inside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current folder `work/` holding `fn/plain.yaml`; `outside.yaml` next to it, and
    `work/link.yaml` and `work/fn/link.yaml` symlinks out to it."""
    work = tmp_path / "work"
    (work / "fn").mkdir(parents=True)
    shutil.copy(CORPUS / "openai-chat" / "single-call.yaml", work / "fn" / "plain.yaml")
    shutil.copy(CORPUS / "openai-chat" / "single-call.yaml", tmp_path / "outside.yaml")
    (work / "link.yaml").symlink_to(tmp_path / "outside.yaml")
    (work / "fn" / "link.yaml").symlink_to(tmp_path / "outside.yaml")
    monkeypatch.chdir(work)
    return tmp_path


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "../outside::original::s0"],
        ["show", "../outside.yaml::original::s0"],
        ["show", "fn/../../outside::original::s0"],
        ["show", "ABSOLUTE::original::s0"],
        ["show", "/etc/passwd::original::s0"],
        ["show", "link::original::s0"],
        ["show", "link::original::s0", "--cassettes", "fn"],
        ["explain", "../outside::original::s0"],
        ["explain", "link::original::s0", "--cassettes", "fn"],
        ["mutate", "../outside::original::s0", "-o", "out.yaml"],
        ["mutate", "/etc/passwd::original::s0", "-o", "out.yaml"],
    ],
)
def test_show_reads_only_the_selection(
    inside: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [a.replace("ABSOLUTE", str(inside / "outside")) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "outside the cassettes shown" in err and err.count("\n") == 1


def test_show_still_reads_the_selection(inside: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["show", "fn/plain::original::s0", "--cassettes", "fn"],
        ["show", "fn/plain.yaml::original::s0"],
        ["show", "openai-chat/single-call::original::s0"],
    ):
        assert main([*argv, "--no-events"]) == 0, argv
    assert "case fn/plain::original::s0" in capsys.readouterr().out


def _machine_paths(tmp_path: Path) -> list[str]:
    return [str(tmp_path), str(tmp_path.resolve()), str(ROOT), str(Path.home())]


@pytest.mark.slow  # an explore search, a compare with shrinking, a check with the openai SDK
def test_nothing_written_for_sharing_holds_this_machines_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    shutil.copy(CORPUS / f"{INDEX0}.yaml", mine / "index0.yaml")
    out = tmp_path / "out"
    user = ["--cassettes", str(mine), "--scenarios", "original"]
    runs = [
        (["repro", f"{INDEX0}::original::s0", "--accumulator", "openai-sdk", "-o", str(out / "r1.py")], 0),
        (["repro", "mine/index0::original::s0", "--accumulator", "openai-sdk", "--cassettes", str(mine),
          "-o", str(out / "r2.py")], 0),
        (["check", "--accumulator", "openai-sdk", *user, "--html", str(out / "check.html")], 1),
        (["compare", "reference", "openai-sdk", *user, "--out", str(out / "compare"),
          "--html", str(out / "compare.html")], 1),
        (["explore", "--accumulator", "openai-sdk", "--cassettes", str(CORPUS / f"{INDEX0}.yaml"),
          "--max-examples", "5", "--out", str(out / "explore-bundled")], 1),
        (["explore", "--accumulator", "openai-sdk", "--cassettes", str(mine / "index0.yaml"),
          "--max-examples", "5", "--out", str(out / "explore-mine")], 1),
    ]  # fmt: skip
    for argv, code in runs:
        assert main(argv) == code, argv
    card = json.loads((ROOT / "harness" / "card" / "report-card.json").read_text())
    card["selection"] = {"cassettes": [str(mine), str(CORPUS / "openai-chat")]}
    problem = f"{Path.home()}/.cache/toolstream/env/bin/python: {mine}"
    card["rows"][0] = {**card["rows"][0], "problem": problem}
    (tmp_path / "card.json").write_text(json.dumps(card))
    assert main(["report-card", "--from-json", str(tmp_path / "card.json"), "--out", str(out / "card")]) == 0

    written = sorted(p for p in out.rglob("*") if p.is_file() and p.suffix != ".json")
    kinds = {p.suffix for p in written}
    assert {".py", ".html", ".yaml", ".md"} <= kinds
    assert len(list((out / "compare").glob("*.yaml"))) >= 1
    assert len(list((out / "explore-mine").glob("*.cassette.yaml"))) == 1
    for path in written:
        text = path.read_text(encoding="utf-8")
        for machine in _machine_paths(tmp_path):
            assert machine not in text, f"{path.relative_to(out)} holds {machine}"
    bundled_finding = next((out / "explore-bundled").glob("*.cassette.yaml"))
    assert f"from {INDEX0}.yaml " in load(bundled_finding).source.provenance
    user_finding = next((out / "explore-mine").glob("*.cassette.yaml"))
    assert "from mine/index0.yaml " in load(user_finding).source.provenance
