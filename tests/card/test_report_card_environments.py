"""Each release graded in the environment of its day (`harness.card.environments`): the release's
upload time read from the index's JSON simple page, its dependencies installed as they stood then
(pip's `--uploaded-prior-to`), the cutoff recorded in the row; and a row whose unmutated
recordings raise is "does not run here" with the reason. Every index here is a local one served on
127.0.0.1, with wheels written in the test."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.accumulators.client import REFUSED
from harness.card import environments, grading, render
from harness.card.environments import EnvironmentProblem, install_argv, published
from harness.card.libraries import Library

# name -> version -> (upload time, requirements)
RELEASES: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {
    "ts-dep": {"1.0": ("2025-01-01T10:00:00.123456Z", ()), "2.0": ("2025-06-01T10:00:00Z", ())},
    "ts-lib": {
        "1.0": ("2025-03-01T12:00:00.5Z", ("ts-dep",)),
        "1.0a1": ("2025-02-01T12:00:00Z", ("ts-dep",)),
        "2.0": ("2025-07-01T12:00:00Z", ("ts-dep",)),
    },
}


def _wheel(folder: Path, name: str, version: str, requires: tuple[str, ...]) -> Path:
    """A minimal pure-Python wheel of one empty module."""
    module = name.replace("-", "_")
    dist = f"{module}-{version}.dist-info"
    files = {
        f"{module}.py": b"",
        f"{dist}/METADATA": "\n".join(
            ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
            + [f"Requires-Dist: {r}" for r in requires]
        ).encode()
        + b"\n",
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [
        f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
        for path, data in files.items()
    ]
    files[f"{dist}/RECORD"] = ("\n".join([*record, f"{dist}/RECORD,,"]) + "\n").encode()
    path = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as whl:
        for name_in, data in files.items():
            whl.writestr(name_in, data)
    return path


@pytest.fixture
def index(tmp_path: Path) -> Iterator[str]:
    """A PEP 691 JSON simple index with PEP 700 upload times, on 127.0.0.1: its URL."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    pages: dict[str, dict[str, Any]] = {}
    for name, versions in RELEASES.items():
        files = []
        for version, (uploaded, requires) in versions.items():
            whl = _wheel(wheels, name, version, requires)
            digest = hashlib.sha256(whl.read_bytes()).hexdigest()
            files.append(
                {"filename": whl.name, "url": f"/files/{whl.name}", "hashes": {"sha256": digest},
                 "upload-time": uploaded}
            )  # fmt: skip
        pages[name] = {"meta": {"api-version": "1.1"}, "name": name, "files": files}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = self.path.strip("/").split("/")
            if parts[0] == "simple" and len(parts) == 2 and parts[1] in pages:
                body, kind = json.dumps(pages[parts[1]]).encode(), "application/vnd.pypi.simple.v1+json"
            elif parts[0] == "files" and len(parts) == 2 and (wheels / parts[1]).is_file():
                body, kind = (wheels / parts[1]).read_bytes(), "application/octet-stream"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_release_is_dated_by_the_newest_upload_of_its_files(index: str) -> None:
    # A second past the newest file (fractions dropped), so a cutoff at it still takes the release.
    assert published("ts-lib", "1.0", index) == "2025-03-01T12:00:01Z"
    assert published("TS_Lib", "2.0", index) == "2025-07-01T12:00:01Z"  # the name normalized
    assert published("ts-dep", "1.0", index) == "2025-01-01T10:00:01Z"


def test_a_release_the_index_does_not_date_is_a_problem_in_one_line(index: str) -> None:
    with pytest.raises(EnvironmentProblem, match=r"gives no upload time for ts-lib 3\.0"):
        published("ts-lib", "3.0", index)
    with pytest.raises(EnvironmentProblem, match=r"cannot read when nosuch 1\.0 was published") as raised:
        published("nosuch", "1.0", index)
    assert "\n" not in str(raised.value)


def test_the_install_is_dated_only_when_a_cutoff_is_given() -> None:
    pip = ["python", "-m", "pip"]
    dated = install_argv(pip, "ts-lib==1.0", "2025-03-01T12:00:01Z")
    assert dated[-2:] == ["--uploaded-prior-to=2025-03-01T12:00:01Z", "ts-lib==1.0"]
    assert not any("uploaded-prior-to" in a for a in install_argv(pip, "ts-lib==1.0", None))


@pytest.mark.slow  # makes a virtualenv and installs into it from the local index
def test_a_release_gets_the_dependencies_of_its_day(
    index: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not environments._takes_cutoff((sys.executable, "-m", "pip")):
        pytest.skip("this interpreter's pip has no --uploaded-prior-to (pip 26.0 and later)")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # the machine's own indexes and links left out
    monkeypatch.setenv("PIP_INDEX_URL", index)
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX", "PIP_CONSTRAINT"):
        monkeypatch.delenv(name, raising=False)
    lib = Library("ts-lib", "openai-sdk", ("openai-chat",))
    where = tmp_path / "env"
    python = str(where / "bin" / "python")
    said: list[str] = []
    dated = environments._of_its_day(lib, "1.0", where, python, said.append)
    assert dated == {"cutoff": "2025-03-01T12:00:01Z", "undated": None}
    assert environments.installed_version(python, "ts-lib") == "1.0"
    assert environments.installed_version(python, "ts-dep") == "1.0"  # 2.0 came later
    assert said == ["ts-lib 1.0: its dependencies as uploaded before 2025-03-01T12:00:01Z"]


def _case(
    dialect: str, scenario: str, verdict: str, state: str = "complete", error: str | None = None
) -> dict[str, Any]:
    return {
        "id": f"{dialect}/x::{scenario}::s0",
        "dialect": dialect,
        "scenario": scenario,
        "accumulator": "mine",
        "verdict": verdict,
        "actual": {"state": state, "error": error},
        "error": None,
        "diff": [f"state complete expected, got {state}"] if verdict != "pass" else [],
        "severity": "lost" if verdict != "pass" else None,
        "class": "spec",
    }


def test_a_dialect_whose_recordings_all_raise_does_not_run_here() -> None:
    union = "TypeError: Cannot instantiate typing.Union"
    cases = [
        _case("anthropic", "original", "fail", "error", union),
        _case("anthropic", "original", "fail", "error", "TypeError: other"),
        _case("anthropic", "D7-truncated-mid-args", "fail", "error", union),
        _case("openai-chat", "original", "pass"),
        _case("openai-chat", "original", "fail", "error", "ValueError: a real bug"),  # one reads: runs
        _case("openai-chat", "A1-parallel-same-index", "fail", "cut"),
    ]
    assert grading.does_not_run(cases) == {"anthropic": union}
    graded = grading.Graded("mine", "2.0.0", "mine", report={"cases": cases}, cutoff="2025-03-01T12:00:01Z")
    row = grading.row(graded, known=lambda *_: None, repros={})
    assert row["does_not_run"] == {"anthropic": union}
    assert row["cases"] == 3 and row["verdicts"] == {"pass": 1, "fail": 2}  # openai-chat's only
    assert row["dependencies_before"] == "2025-03-01T12:00:01Z"
    page = render.markdown({"date": "2026-11-28", "rows": [row], "changes": []})
    assert "Graded with its dependencies as uploaded before 2025-03-01T12:00:01Z." in page
    assert f"Does not run here on anthropic streams (not graded): {union}" in page
    assert "| 2.0.0, as of 2025-03-01 |" in page


def test_a_row_whose_every_dialect_raises_on_its_recordings_says_so_with_the_reason() -> None:
    cases = [_case("anthropic", "original", "fail", "error", "TypeError: Cannot instantiate typing.Union")]
    cases.append(_case("anthropic", "original", "error") | {"error": "mine: case x: ImportError: no"})
    graded = grading.Graded("mine", "2.0.0", "mine", report={"cases": cases}, undated="no pip here")
    row = grading.row(graded, known=lambda *_: None, repros={})
    said = "does not run here (anthropic streams: TypeError: Cannot instantiate typing.Union)"
    assert row["problem"] == said and "cases" not in row
    assert row["dependencies_undated"] == "no pip here"
    page = render.markdown({"date": "2026-11-28", "rows": [row], "changes": []})
    assert f"not graded: {said}" in page and "Graded with today's dependencies: no pip here." in page


def test_a_dialect_that_does_not_run_is_no_change_between_versions() -> None:
    union = "TypeError: Cannot instantiate typing.Union"
    old = [_case("anthropic", "original", "fail", "error", union)]
    old.append(_case("openai-chat", "original", "fail", "cut"))
    new = [_case("anthropic", "original", "pass"), _case("openai-chat", "original", "pass")]
    graded = [grading.Graded("mine", v, "mine", report={"cases": c}) for v, c in (("1.0", old), ("2.0", new))]
    [change] = grading.changes(graded)
    assert change["cases"] == 1  # the anthropic case, not graded in 1.0, is no change
    assert [f["examples"] for f in change["fixed"]] == [["openai-chat/x::original::s0"]]


def test_a_dated_install_leaves_out_local_sources_which_pip_would_not_date() -> None:
    config = "\n".join(
        [
            "global.extra-index-url='file:///srv/simple https://mirror.example.test/simple'",
            "global.find-links='/srv/wheels'",
            "global.cert='/etc/ssl/certs/ca.crt'",
            ":env:.find-links='/srv/wheels'",
        ]
    )
    environ = {"PATH": "/bin", "PIP_FIND_LINKS": "/srv/wheels", "PIP_DEFAULT_TIMEOUT": "180"}
    env = environments.dated_environment(config, environ)
    assert env["PIP_EXTRA_INDEX_URL"] == "https://mirror.example.test/simple"
    assert "PIP_FIND_LINKS" not in env and "PIP_INDEX_URL" not in env
    assert env["PIP_CERT"] == "/etc/ssl/certs/ca.crt" and env["PIP_DEFAULT_TIMEOUT"] == "180"
    assert env["PIP_CONFIG_FILE"] == os.devnull and env["PATH"] == "/bin"


def test_a_dialect_whose_recordings_the_library_all_refuses_does_not_run_here() -> None:
    typo = "TypeError: AsyncMessages.create() got an unexpected keyword argument 'temperature'"
    refusal = f"pydantic-ai: {REFUSED}: {typo}"
    cases = [_case("anthropic", "original", "skipped") | {"error": refusal} for _ in range(2)]
    cases.append(_case("anthropic", "D7-truncated-mid-args", "skipped") | {"error": refusal})
    assert grading.does_not_run(cases) == {"anthropic": typo}
    cases.append(_case("anthropic", "original", "skipped") | {"error": "mine reads openai-chat streams"})
    assert grading.does_not_run(cases) == {"anthropic": typo}  # a skip of another kind is no evidence
    cases.append(_case("anthropic", "original", "pass"))
    assert grading.does_not_run(cases) == {}  # one recording it reads: it runs


def test_two_client_programs_on_one_package_are_no_change_between_versions() -> None:
    ui = grading.Graded(
        "ai (npm)", "6.0.326", "client:ai-sdk-ui", report={"cases": [_case("ai-sdk-ui", "original", "pass")]}
    )
    text = grading.Graded(
        "ai (npm)", "6.0.326", "client:vercel-ai (@ai-sdk/openai 3.0.141)", report={"cases": []}
    )
    older = grading.Graded(
        "ai (npm)",
        "6.0.1",
        "client:ai-sdk-ui",
        report={"cases": [_case("ai-sdk-ui", "original", "fail", "cut")]},
    )
    [change] = grading.changes([ui, text, older])
    assert (change["from"], change["to"], change["cases"]) == ("6.0.1", "6.0.326", 1)
