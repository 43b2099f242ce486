"""`toolstream report-card`: the Node clients of examples/clients/ graded through the replay server,
and the per-case progress bar each environment shows on a terminal.

The client rows run the real programs (skipped where `node` or their node_modules are missing);
the progress bar is read from a real run written to a stream that says it is a terminal.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ROOT / "examples" / "clients"

# node-openai over one recorded stream (passes) and one whose unmutated bytes the Node SDK errors
# on (a choice with a null index, examples/clients/results.json).
OPENAI_CASES = [
    "openai-chat/parallel-2::original::s0",
    "openai-chat/glm5-openrouter-idless-continuation::original::s0",
]


def _card(out: Path) -> dict[str, Any]:
    return json.loads((out / "report-card.json").read_text(encoding="utf-8"))


def _installed(folder: str) -> Path:
    modules = CLIENTS / folder / "node_modules"
    if shutil.which("node") is None or not modules.is_dir():
        pytest.skip(f"node or {modules.relative_to(ROOT)} missing: npm ci --prefix examples/clients/{folder}")
    return modules


class Terminal(io.StringIO):
    """What the CLI writes to stderr, kept; it says it is a terminal, so the bar is drawn."""

    def isatty(self) -> bool:
        return True


@pytest.mark.slow  # each case starts a node process
def test_a_node_client_is_a_row_at_its_installed_version(tmp_path: Path) -> None:
    modules = _installed("node-openai")
    cases = [arg for case_id in OPENAI_CASES for arg in ("--case", case_id)]
    argv = ["report-card", "--libraries", "node-openai", "--timeout", "30", "-j", "2", *cases]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    (row,) = _card(tmp_path)["rows"]
    installed = json.loads((modules / "openai" / "package.json").read_text(encoding="utf-8"))["version"]
    assert (row["library"], row["version"], row["adapter"]) == (
        "openai (npm)",
        installed,
        "client:node-openai",
    )
    assert row["problem"] is None and row["cases"] == 2
    assert row["verdicts"] == {"pass": 1, "fail": 1}  # the SDK raises on the idless continuation
    report = json.loads((tmp_path / "reports" / f"node-openai-{installed}.json").read_text(encoding="utf-8"))
    assert {c["id"] for c in report["cases"]} == set(OPENAI_CASES)
    assert all(c["accumulator"].startswith("client:") for c in report["cases"])


@pytest.mark.slow
def test_clients_come_after_the_python_libraries_and_read_only_their_dialect(tmp_path: Path) -> None:
    _installed("node-anthropic")
    argv = ["report-card", "--libraries", "anthropic,node-anthropic,node-openai", "--use-current-env"]
    case = "anthropic/single-call::original::s0"
    assert main([*argv, "--timeout", "30", "--case", case, "--out", str(tmp_path)]) == 0
    rows = _card(tmp_path)["rows"]
    assert [r["library"] for r in rows] == ["anthropic", "@anthropic-ai/sdk (npm)", "openai (npm)"]
    assert rows[1]["adapter"] == "client:node-anthropic" and rows[1]["verdicts"] == {"pass": 1}
    assert rows[2]["problem"] == "no selected case is one it reads"


def test_a_client_without_node_is_a_row_naming_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no node on it
    argv = ["report-card", "--libraries", "vercel-ai", "--case", OPENAI_CASES[0]]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
    (row,) = _card(tmp_path / "out")["rows"]
    assert row["library"] == "ai (npm)" and row["version"] == "-"
    assert "node is not on PATH" in row["problem"]
    assert "npm ci --prefix examples/clients/vercel-ai" in row["problem"]


@pytest.mark.slow  # grades anthropic in a serve-accumulator process
def test_no_clients_leaves_them_out(tmp_path: Path) -> None:
    argv = ["report-card", "--libraries", "anthropic,node-anthropic", "--no-clients", "--use-current-env"]
    assert main([*argv, "--case", "anthropic/single-call::original::s0", "--out", str(tmp_path)]) == 0
    assert [r["library"] for r in _card(tmp_path)["rows"]] == ["anthropic"]


@pytest.mark.slow  # grades openai in a serve-accumulator process
def test_progress_counts_cases_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.delenv("TERM", raising=False)
    cassette = ROOT / "cassettes" / "openai-chat" / "parallel-2.yaml"
    argv = ["report-card", "--libraries", "openai", "--use-current-env", "--timeout", "0"]
    selection = ["--cassettes", str(cassette), "--scenarios", "original", "A5-id-on-every-chunk"]
    assert main([*argv, *selection, "--seeds", "2", "--out", str(tmp_path)]) == 0
    (row,) = _card(tmp_path)["rows"]
    cases = row["cases"]
    assert cases >= 2
    frames = [f for f in terminal.getvalue().split("\r") if "report card [" in f and "#" in f]
    # The bar counts cases, not units of work (a cassette x scenario x seed): it ends at the count.
    assert frames and f"] {cases}/{cases} " in frames[-1]
    assert f"[1/1] openai {row['version']}: {cases} cases in" in terminal.getvalue()


@pytest.mark.slow  # grades openai in a serve-accumulator process
def test_no_bar_when_stderr_is_not_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["report-card", "--libraries", "openai", "--use-current-env", "--timeout", "0"]
    assert main([*argv, "--case", OPENAI_CASES[0], "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "#" not in err and "\r" not in err
    assert ": 1 case in " in err


def test_the_card_reads_its_client_catalogue_from_the_package_not_from_an_example(tmp_path: Path) -> None:
    """The catalogue is `harness.card.catalogue`: a checkout whose `examples/clients/` holds only
    the programs (no `table.py`) still lists the clients, their dialect and how to run them."""
    from harness.card import clients

    (tmp_path / "examples" / "clients" / "node-openai").mkdir(parents=True)
    table = clients.client_table(tmp_path)
    client = clients.CLIENTS["node-openai"]
    assert clients.dialect(table, client) == "openai-chat"
    program = tmp_path / "examples" / "clients" / "node-openai" / "agent.mjs"
    assert table.command("node-openai") == f"exec node {program}"
    assert "spec_from_file_location" not in Path(clients.__file__).read_text(encoding="utf-8")
    # Not in a checkout: the shipped programs, from a working copy (tests/test_card_catalogue.py).
    assert clients.client_table(None).folder("node-openai").name == "node-openai"


# The frontends' readers and the Realtime client: a case each passes and one it fails
# (examples/clients/results.json), each row at the version installed beside its program.
FRONTEND_ROWS = [
    (
        "ai-sdk-ui",
        ("ai (npm)", "ai", "client:ai-sdk-ui"),
        [
            "ai-sdk-ui/from-anthropic-single-call::original::s0",
            "ai-sdk-ui/from-anthropic-single-call::resume-into-tool-part::s0",
        ],
    ),
    (
        "ag-ui",
        ("@ag-ui/client (npm)", "@ag-ui/client", "client:ag-ui (@ag-ui/core {core})"),
        [
            "ag-ui/from-anthropic-single-call::original::s0",
            "ag-ui/from-anthropic-parallel-calls::D8-mid-stream-error::s0",
        ],
    ),
    (
        "openai-realtime",
        ("openai (PyPI)", "openai", "client:openai-realtime (websockets {websockets})"),
        [
            "openai-realtime/parallel-calls::original::s0",
            "openai-realtime/done-output-null::B10-truncated-args::s0",
        ],
    ),
]


def _version_installed(name: str, package: str) -> str:
    if name == "openai-realtime":
        python = ROOT / ".venv-openai-realtime" / "bin" / "python"
        if not python.exists():
            pytest.skip("no .venv-openai-realtime: see examples/clients/openai-realtime/requirements.txt")
        from harness.card import environments

        return str(environments.installed_version(str(python), package))
    modules = _installed(name)
    return str(json.loads((modules / package / "package.json").read_text(encoding="utf-8"))["version"])


@pytest.mark.slow  # each case starts the client program
@pytest.mark.parametrize(("name", "row_names", "cases"), FRONTEND_ROWS, ids=[r[0] for r in FRONTEND_ROWS])
def test_the_frontend_and_realtime_clients_are_rows_at_their_installed_versions(
    tmp_path: Path, name: str, row_names: tuple[str, str, str], cases: list[str]
) -> None:
    library, package, adapter = row_names
    version = _version_installed(name, package)
    others = {"core": _version_installed(name, "@ag-ui/core")} if name == "ag-ui" else {}
    if name == "openai-realtime":
        others["websockets"] = _version_installed(name, "websockets")
    argv = ["report-card", "--libraries", name, "--timeout", "30", "-j", "2"]
    argv += [arg for case_id in cases for arg in ("--case", case_id)]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    (row,) = _card(tmp_path)["rows"]
    assert (row["library"], row["version"], row["adapter"]) == (library, version, adapter.format(**others))
    assert row["problem"] is None and row["cases"] == 2
    assert row["verdicts"] == {"pass": 1, "fail": 1}
