"""The conformance matrix as tests: parametrized cases, generated items, -k, --lf, xdist, summary."""

from __future__ import annotations

import json

import pytest

from tests._pytester_support import FIRST_CALL_ONLY, copy_cassettes, plugin_args, prepare

pytest_plugins = ["pytester"]

# FirstCallOnly, and WrongFinish: every call right, the finish reason worded its own way (a
# cosmetic difference).
ACCUMULATORS = FIRST_CALL_ONLY + """

class WrongFinish(FirstCallOnly):

    def close(self, error):
        return replace(self.inner.close(error), finish_reason="calls")
"""

SELECT = ["--toolstream-scenarios", "original,parallel-calls-share-index-0", "--toolstream-seeds", "1"]
PARALLEL_ORIGINAL = "corpus/openai-chat/parallel-2::original::s0"


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    prepare(pytester, monkeypatch)
    pytester.makepyfile(accs=ACCUMULATORS)
    copy_cassettes(pytester, "openai-chat/parallel-2", "openai-chat/single-call")
    return pytester


def matrix_args(*extra: str) -> list[str]:
    return [*plugin_args(), "--toolstream-cassette-dir", "corpus", *SELECT, "-p", "no:randomly", *extra]


def test_matrix_from_options_alone_names_failure_signatures(project: pytest.Pytester) -> None:
    result = project.runpytest(*matrix_args("--toolstream-accumulator", "accs:FirstCallOnly", "-rN"))
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*toolstream*",
            "accs:FirstCallOnly: 3 cases: 1 pass, 2 fail",
            "2 failures, all: missing call; tool_calls count",
            "by scenario:",
            "*1  original",
            "*1  parallel-calls-share-index-0",
        ]
    )
    out = result.stdout.str()
    assert f"FAIL {PARALLEL_ORIGINAL} (accumulator accs:FirstCallOnly)" in out
    # The pytest replay line holds the options that rebuild the case (a bare `-k ID` ran nothing).
    assert "pytest --toolstream-accumulator accs:FirstCallOnly --toolstream-cassette-dir " in out
    assert f"-k 'accs:FirstCallOnly[{PARALLEL_ORIGINAL}]'" in out
    result.stdout.fnmatch_lines(
        [
            "*toolstream check --accumulator accs:FirstCallOnly --cassettes */corpus"
            f" --case {PARALLEL_ORIGINAL}"
        ]
    )


@pytest.mark.slow
def test_k_selects_one_case_and_lf_reruns_only_the_failed(project: pytest.Pytester) -> None:
    args = matrix_args("--toolstream-accumulator", "accs:FirstCallOnly")
    project.runpytest(*args, "-k", PARALLEL_ORIGINAL).assert_outcomes(failed=1, deselected=2)
    project.runpytest(*args).assert_outcomes(passed=1, failed=2)
    again = project.runpytest(*args, "--lf", "-v")
    again.assert_outcomes(failed=2, deselected=1)
    again.stdout.fnmatch_lines([f"*{PARALLEL_ORIGINAL}*FAILED*"])


@pytest.mark.slow
def test_written_tests_get_one_item_per_case_and_compare_items(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_acc="""
        import pytest

        @pytest.mark.toolstream_matrix(scenarios=["original"], dialects=["openai-chat"])
        def test_reference(toolstream_case):
            toolstream_case.check("reference")
        """
    )
    written = project.runpytest(*plugin_args(), "--toolstream-cassette-dir", "corpus", "-v", "test_acc.py")
    written.assert_outcomes(passed=2)
    written.stdout.fnmatch_lines(["*test_reference?corpus/openai-chat/single-call::original::s0? PASSED*"])
    compared = project.runpytest(
        *matrix_args(
            "--toolstream-compare",
            "reference",
            "accs:FirstCallOnly",
            "--toolstream-json",
            "cmp.json",
            "--toolstream-html",
            "cmp.html",
        ),
        "test_acc.py",
    )
    compared.assert_outcomes(passed=3, failed=2)  # 2 written + 1 agreeing compare item; 2 differ
    compared.stdout.fnmatch_lines(["reference vs accs:FirstCallOnly: differ on 2 of 3 cases"])
    report = json.loads((project.path / "cmp.json").read_text())
    assert report["summary"]["differences"] == 2
    page = (project.path / "cmp.html").read_text()
    assert page.count('class="cell differ"') == 2 and "A = reference vs B = accs:FirstCallOnly" in page


def test_a_misspelt_matrix_marker_argument_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_acc="""
        import pytest

        @pytest.mark.toolstream_matrix(scenario=["original"])
        def test_reference(toolstream_case):
            pass
        """
    )
    result = project.runpytest(*plugin_args())
    # One usage error before any test runs (a collection error showed it inside a pluggy traceback).
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    out = result.stdout.str() + result.stderr.str()
    assert "unknown argument 'scenario'; did you mean 'scenarios'?" in out and "pluggy/" not in out


@pytest.mark.slow  # a serial session, then one with two xdist workers
def test_xdist_gives_the_serial_outcomes_records_in_parallel_and_the_controller_reports(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_record="""
        import pytest

        from harness.record.fake_provider import FakeProvider, Script

        @pytest.mark.parametrize("n", range(4))
        def test_record(toolstream, n):
            with FakeProvider() as fake:
                fake.route("POST", "/v1/x", Script.of([b"data: %d\\n\\n" % n] * 50))
                client = toolstream.httpx_client(base_url=fake.url)
                assert client.post("/v1/x", json={"n": n}).content.count(b"data") == 50
        """
    )
    args = matrix_args("--toolstream-accumulator", "accs:FirstCallOnly", "--toolstream-json", "report.json")
    serial = project.runpytest_subprocess(*args, "--toolstream-record-mode", "once", "-k", "not test_record")
    serial.assert_outcomes(passed=1, failed=2)
    serial_report = json.loads((project.path / "report.json").read_text())
    cassettes = project.path / "corpus" / "test_record"
    parallel = project.runpytest_subprocess(
        *args, "--toolstream-record-mode", "once", "--junitxml", "j.xml", "-n", "2"
    )
    parallel.assert_outcomes(passed=5, failed=2)
    # The workers leave the summary and the reports to the controller: said once, each verdict kept.
    parallel.stdout.fnmatch_lines(["accs:FirstCallOnly: 3 cases: 1 pass, 2 fail"])
    assert parallel.stdout.str().count("accs:FirstCallOnly: 3 cases") == 1
    _assert_junit_verdicts(project, {"pass": 1, "fail": 2})
    parallel_report = json.loads((project.path / "report.json").read_text())
    assert [(c["id"], c["verdict"]) for c in parallel_report["cases"]] == [
        (c["id"], c["verdict"]) for c in serial_report["cases"]
    ]
    assert sorted(c["verdict"] for c in parallel_report["cases"]) == ["fail", "fail", "pass"]
    recorded = sorted(cassettes.glob("*.yaml"))
    assert len(recorded) == 4
    from harness.cassettes.format import load

    for path in recorded:
        assert len(load(path).interactions[0].response.chunks) >= 1  # each file whole and loadable


def test_runs_beside_pytest_recording_and_syrupy(project: pytest.Pytester) -> None:
    pytest.importorskip("pytest_recording")
    pytest.importorskip("syrupy")
    project.makepyfile(
        test_both="""
        import pytest

        @pytest.mark.vcr
        def test_vcr_marker_still_works(vcr):
            assert vcr is not None

        @pytest.mark.toolstream_matrix(scenarios=["original"], dialects=["openai-chat"])
        def test_snapshots(toolstream_case, snapshot, toolstream_snapshot):
            assert toolstream_case.run("reference") == toolstream_snapshot
        """
    )
    result = project.runpytest(
        *plugin_args(), "--toolstream-cassette-dir", "corpus",
        "--record-mode", "none", "--snapshot-update", "test_both.py",
    )  # fmt: skip
    result.assert_outcomes(passed=3)


@pytest.mark.slow
def test_warnings_pass_and_fail_only_with_toolstream_strict(project: pytest.Pytester) -> None:
    args = matrix_args("--toolstream-accumulator", "accs:WrongFinish")
    lenient = project.runpytest(*args)
    lenient.assert_outcomes(passed=3)
    lenient.stdout.fnmatch_lines(
        [
            "accs:WrongFinish: 3 cases: 3 warn",
            "3 warnings (policy cases or cosmetic differences; --toolstream-strict fails them):",
            "*spec   cosmetic finish_reason differs",
        ]
    )
    strict = project.runpytest(*args, "--toolstream-strict")
    strict.assert_outcomes(failed=3)
    strict.stdout.fnmatch_lines(
        [
            f"WARN {PARALLEL_ORIGINAL} (accumulator accs:WrongFinish) [cosmetic, spec: the recorded stream]",
            "  cosmetic  finish_reason: 'tool_calls' expected, got 'calls'",
        ]
    )
    project.makeini("[pytest]\ntoolstream_strict = true\n")
    project.runpytest(*args).assert_outcomes(failed=3)


def test_a_verdict_taken_in_its_own_process_is_not_parsed_back() -> None:
    from harness.matrix.selection import Selection
    from harness.plugin.items import CaseCatalog, MatrixResults

    selection = Selection(scenarios=("original",), dialects=("openai-chat",))
    catalog = CaseCatalog()
    result = catalog.judge("reference", catalog.case(selection, next(iter(catalog.ids(selection)))))
    serial = MatrixResults()
    carried = serial.carry(result)
    serial.take([carried])
    assert serial.results == [result] and serial.results[0] is result  # the object itself
    controller = MatrixResults()  # an xdist controller: the text came from a worker
    controller.take([carried])
    assert controller.results[0] is not result and controller.results[0].to_dict() == result.to_dict()


def test_junitxml_carries_each_verdict_serial(project: pytest.Pytester) -> None:
    result = project.runpytest(
        *matrix_args("--toolstream-accumulator", "accs:FirstCallOnly", "--junitxml", "j.xml")
    )
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["accs:FirstCallOnly: 3 cases: 1 pass, 2 fail"])
    _assert_junit_verdicts(project, {"pass": 1, "fail": 2})


def _assert_junit_verdicts(project: pytest.Pytester, expected: dict[str, int]) -> None:
    import xml.etree.ElementTree as ET

    found: dict[str, int] = {}
    for prop in ET.parse(project.path / "j.xml").iter("property"):
        if prop.get("name") == "toolstream_result":
            verdict = json.loads(prop.get("value") or "{}")["verdict"]
            found[verdict] = found.get(verdict, 0) + 1
    assert found == expected


def test_the_collector_is_kept_off_the_session_while_items_run_and_gets_it_all_back(
    project: pytest.Pytester,
) -> None:
    """Each of the collector's full passes walks every live object: with the session's long-lived
    ones (modules, items, ids, verdicts so far) out of its way while the matrix items run, a
    plugin item costs about what an empty test does (benchmarks/bench_matrix.py). At the end
    everything is handed back, before pytest's own last collections."""
    import gc

    project.makeconftest(
        """
import gc

SEEN = []


def pytest_runtest_call(item):
    SEEN.append(gc.get_freeze_count())


def pytest_sessionfinish(session):
    session.config.seen_freezes = list(SEEN)
"""
    )
    seen: list[int] = []

    class Spy:
        @pytest.hookimpl(trylast=True)
        def pytest_unconfigure(self, config: pytest.Config) -> None:
            seen.extend(config.seen_freezes)  # type: ignore[attr-defined]
            seen.append(-gc.get_freeze_count())  # after the plugin's own end: thawed

    assert gc.get_freeze_count() == 0
    argv = matrix_args("--toolstream-accumulator", "accs:FirstCallOnly")
    result = project.runpytest(*argv, plugins=[Spy()])
    result.assert_outcomes(passed=1, failed=2)
    *during, after = seen
    assert len(during) == 3 and all(frozen > 0 for frozen in during)
    assert after == 0 and gc.get_freeze_count() == 0
