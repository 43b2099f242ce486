"""`toolstream report-card`: gateways graded as translators, one row per hop, judged as
`check --gateway` judges. The fast tests put the example translator (examples/gateways/) on the
card as a gateway; the slow one grades LiteLLM's proxy at its pinned release across its three
hops, its findings matched to the known list."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness.card import gateways
from harness.card.gateways import GATEWAYS, Gateway
from harness.card.known import known_issues
from harness.cli import main
from tests._side_venvs import side_python

ROOT = Path(__file__).resolve().parents[2]


def translator(name: str, *fault: str) -> Gateway:
    """The example translator as a card gateway, run by this Python (its package: this harness)."""
    hop = "{config} --from openai-chat --to anthropic --upstream {upstream} --port {port}"
    return Gateway(
        name, " ".join(["example translator", *fault]), "toolstream-harness", "toolstream-harness",
        "openai-chat", "anthropic", "toolstream-upstream", venv=os.path.relpath(sys.prefix, ROOT),
        extra="test", config="examples/gateways/translator.py", executable="python",
        arguments=" ".join([hop, *fault]),
    )  # fmt: skip


CASES = ["openai-chat/single-call::original::s0", "openai-chat/text-then-call::original::s0"]


def card(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, names: list[str], cases: list[str], *extra: str
) -> dict[str, Any]:
    monkeypatch.setenv("TOOLSTREAM_CACHE", str(tmp_path / "cache"))  # no stored verdicts
    argv = ["report-card", "--libraries", ",".join(names), "--timeout", "60", "--out", str(tmp_path / "out")]
    assert main([*argv, *(a for c in cases for a in ("--case", c)), *extra]) == 0
    found: dict[str, Any] = json.loads((tmp_path / "out" / "report-card.json").read_text(encoding="utf-8"))
    return found


def test_a_gateway_is_a_row_per_hop_judged_as_check_gateway_judges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(GATEWAYS, "faithful", translator("faithful"))
    monkeypatch.setitem(GATEWAYS, "drops-switch", translator("drops-switch", "--fault", "drop-switch"))
    names = ["drops-switch", "faithful", "anthropic"]
    rows = card(tmp_path, monkeypatch, names, CASES, "--use-current-env")["rows"]
    assert [(r["library"], r["adapter"]) for r in rows] == [
        ("anthropic", "anthropic-sdk"),  # a library first, its cases of its own dialect: none here
        ("example translator --fault drop-switch, openai-chat to anthropic", "gateway:drops-switch"),
        ("example translator, openai-chat to anthropic", "gateway:faithful"),
    ]
    broken, faithful = rows[1], rows[2]
    assert faithful["verdicts"] == {"pass": 2} and faithful["problem"] is None
    assert broken["verdicts"] == {"pass": 1, "fail": 1}
    (sig,) = broken["signatures"]
    assert sig["worst"] == "openai-chat/text-then-call::original::s0"
    # signed by the rules it breaks, the hop and event numbers left out
    assert sig["signature"].startswith("anthropic.delta-outside-block; anthropic.finish-contradicts-calls;")
    version = gateways.installed_version(translator("x"))
    stored = (tmp_path / "out" / "reports" / f"faithful-{version}.json").read_text(encoding="utf-8")
    assert {c["accumulator"] for c in json.loads(stored)["cases"]} == {
        "gateway:openai-chat->anthropic:faithful"
    }
    assert str(ROOT) not in stored
    md = (tmp_path / "out" / "report-card.md").read_text(encoding="utf-8")
    assert "## example translator, openai-chat to anthropic" in md and "`gateway:drops-switch`" in md
    assert "changes" not in md.lower()  # two gateways, not two releases of one
    html = (tmp_path / "out" / "report-card.html").read_text(encoding="utf-8")
    assert "gateway:faithful" in html and "anthropic.delta-outside-block" in html
    # the card read back from the stored reports has the same gateway rows
    again_argv = ["--from-reports", str(tmp_path / "out" / "reports"), "--out", str(tmp_path / "again")]
    assert main(["report-card", *again_argv]) == 0
    again = json.loads((tmp_path / "again" / "report-card.json").read_text(encoding="utf-8"))["rows"]
    assert [(r["library"], r["adapter"], r["verdicts"]) for r in again] == [
        (r["library"], r["adapter"], r["verdicts"]) for r in rows[1:]
    ]


def test_a_gateway_without_its_side_environment_is_a_row_naming_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = translator("missing")
    monkeypatch.setitem(GATEWAYS, "missing", replace(missing, venv=".venv-nowhere", extra="x"))
    (row,) = card(tmp_path, monkeypatch, ["missing"], CASES[:1])["rows"]
    install = "python3 -m venv .venv-nowhere && .venv-nowhere/bin/pip install '.[x]'"
    assert row["problem"] == f"not installed (run `{install}`)"


def test_a_gateway_reads_only_its_upstream_dialect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(GATEWAYS, "faithful", translator("faithful"))
    (row,) = card(tmp_path, monkeypatch, ["faithful"], ["anthropic/single-call::original::s0"])["rows"]
    assert row["problem"] == "no selected case is one it reads"


def test_litellm_proxy_hops_are_on_the_card_by_default() -> None:
    hops = {(g.source, g.target) for g in GATEWAYS.values() if g.package == "litellm"}
    assert hops == {
        ("openai-chat", "anthropic"),
        ("anthropic", "openai-chat"),
        ("openai-responses", "openai-chat"),
    }
    pinned = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    litellm = [g for g in GATEWAYS.values() if g.package == "litellm"]
    assert all(f'{g.extra} = ["litellm[proxy]==' in pinned for g in litellm)


@pytest.mark.slow  # the proxy takes seconds to start, once per hop
def test_litellm_proxy_rows_at_its_pinned_release_with_its_findings_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each hop on a recording it passes and on every recording of its known findings: each
    failing signature is one of the known list's (matched on its evidence), and each entry of
    the list is found (a release that fixes one drops its entry here first)."""
    side_python("litellm-proxy")
    names = [
        "litellm-proxy-chat-to-messages",
        "litellm-proxy-messages-to-chat",
        "litellm-proxy-responses-to-chat",
    ]
    libraries = {GATEWAYS[name].library: name for name in names}
    entries = [issue for key, issue in known_issues().items() if key[0] in libraries]
    cassettes = {cassette for issue in entries for cassette in issue.cassettes}
    passing = ["openai-chat/single-call", "anthropic/single-call", "openai-responses/single-call"]
    cases = [f"{cassette}::original::s0" for cassette in sorted({*cassettes, *passing})]
    rows = card(tmp_path, monkeypatch, names, cases)["rows"]
    assert [r["adapter"] for r in rows] == [f"gateway:{libraries[r['library']]}" for r in rows]
    assert sorted(r["library"] for r in rows) == sorted(libraries)
    found = set()
    for r in rows:
        assert r["version"] == "1.102.4" and r["problem"] is None, r
        assert r["verdicts"].get("pass", 0) >= 1, r  # its single-call recording
        for sig in r["signatures"]:
            if sig["verdict"] == "fail":
                assert sig["known"] is not None, (r["library"], sig["signature"], sig["worst"])
                found.add((r["library"], sig["signature"]))
    assert sorted((issue.library, issue.signature) for issue in entries) == sorted(found)


def test_a_gateway_row_links_the_scripts_written_for_it() -> None:
    from harness.card.repros import repro_scripts

    scripts = repro_scripts(ROOT)
    chat_to_messages = GATEWAYS["litellm-proxy-chat-to-messages"].library
    found = scripts[(chat_to_messages, "openai-chat/text-then-call::original::s0")]
    assert found == "examples/repros/gateways/litellm-proxy-messages-block-overlap.py"
    library = scripts[("openai", "openai-chat/litellm-bridge-parallel-index0::original::s0")]
    assert library == "examples/repros/openai-parallel-calls-share-index-0.py"


def test_an_unknown_name_is_one_line_naming_the_gateways_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report-card", "--libraries", "litellm-proxy-chat-to-mesages", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown library 'litellm-proxy-chat-to-mesages'" in err
    assert "gateways litellm-proxy-chat-to-messages" in err and "node-openai" in err
