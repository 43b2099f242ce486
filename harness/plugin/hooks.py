"""The pytest plugin `toolstream` (entry point `pytest11`): hooks and fixtures only.

It wires pytest to `harness.plugin.items`, `harness.plugin.options`, `harness.plugin.snapshot` and the
report writers. Without a `--toolstream-*` option (or ini key) and without a test asking for its
fixtures or markers, it changes nothing in a run, and costs nothing: every pytest session of a
project with the package installed loads it, so this module and the ones loaded with it import
only what registering options, hooks and fixtures needs; the matrix (`items`, `harness.matrix`) and
the report writers are imported by the hook or fixture that first needs them.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from harness.errors import HarnessError, UsageError
from harness.plugin.names import COMPARE_KEY, RESULT_KEY
from harness.plugin.options import MatrixOptions, Settings, add_options, check_ini_keys, check_option_names

if TYPE_CHECKING:
    from harness.gateway.runner import GatewayRun
    from harness.matrix.longlived import LongLived
    from harness.matrix.selection import Selection
    from harness.plugin.items import CaseCatalog, MatrixCase, MatrixResults
    from harness.plugin.served import ServedCase
    from harness.serve.server import ReplayServer

_SETTINGS = pytest.StashKey[Settings]()
_CATALOG = pytest.StashKey["CaseCatalog"]()  # made by `_catalog` when first needed
_RESULTS = pytest.StashKey["MatrixResults"]()  # made by `_results` when first needed
_USAGE = pytest.StashKey[list[str]]()  # marker errors found while collecting, said once after it
_SERVED = pytest.StashKey["ServedCase"]()  # on an item: its served case, judged after its call
_SERVED_TESTS = pytest.StashKey[list["ServedCase"]]()  # every served case of the session (late requests)
_SCOPING = pytest.StashKey["Scoping"]()  # the dialect each unscoped served test speaks
# The served tests whose threads still ran when the server stopped: what they sent later went unheard.
_UNHEARD = pytest.StashKey[list["ServedCase"]]()
_WORKERS = pytest.StashKey[list[dict[str, Any]]]()  # what each ended xdist worker said (the controller)
# By test (node id without parameters): its selection and the case ids it was parametrized over.
_MATRICES = pytest.StashKey[dict[str, tuple["Selection | None", "list[str] | None"]]]()
# The fixtures a test is parametrized over the matrix by, one case each.
_CASE_FIXTURES = ("toolstream_case", "toolstream_served_case")
_FROZEN: pytest.StashKey[LongLived] = pytest.StashKey()  # the collector kept off what lives on
_GATEWAY = pytest.StashKey["GatewayRun"]()  # --toolstream-gateway's, made by `_gateway`

KEEP_EVERY = 500  # verdicts taken between two moves of what lives on out of the collector's way

pytest_plugins = (
    "harness.plugin.record",  # the `toolstream` fixture: recording in a test suite
    "harness.plugin.client",  # --toolstream-client: client:CMD accumulators
)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> None:
    try:
        check_option_names(args, parser)
    except HarnessError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "toolstream_matrix(cassettes=None, scenarios=None, dialects=None, seeds=None): "
        "the cases a test asking for `toolstream_case` or `toolstream_served_case` runs over",
    )
    try:
        check_ini_keys(config)
        config.stash[_SETTINGS] = Settings.from_config(config)
    except HarnessError as exc:
        raise pytest.UsageError(str(exc)) from None
    if config.getoption("toolstream_no_case_cache", False):
        from harness.matrix import casecache

        casecache.turn_off()  # in the environment, so xdist workers started after this agree
    config.stash[_USAGE] = []
    config.stash[_SERVED_TESTS] = []
    config.stash[_SCOPING] = Scoping()
    config.stash[_WORKERS] = []
    config.stash[_MATRICES] = {}
    if not _xdist_worker(config):  # an xdist worker's verdicts are taken by the controller
        config.pluginmanager.register(_Listener(config), "toolstream-results")


def _catalog(config: pytest.Config) -> CaseCatalog:
    """The session's case catalog, made (and the matrix imported) when a hook first needs it."""
    if _CATALOG not in config.stash:
        from harness.plugin.items import CaseCatalog

        config.stash[_CATALOG] = CaseCatalog(getattr(config, "cache", None))
    return config.stash[_CATALOG]


def _results(config: pytest.Config) -> MatrixResults:
    """The session's verdicts, made when the first one arrives or a report is written."""
    if _RESULTS not in config.stash:
        from harness.plugin.items import MatrixResults

        config.stash[_RESULTS] = MatrixResults(config.stash[_SETTINGS].strict)
    return config.stash[_RESULTS]


def _gateway(config: pytest.Config) -> GatewayRun:
    """The session's gateway (`--toolstream-gateway`), started when its first item runs."""
    if _GATEWAY not in config.stash:
        from harness.gateway.runner import GATEWAY_MODEL, GatewayRun

        command, source, target, model = config.stash[_SETTINGS].gateway or ("", "", "", None)
        config.stash[_GATEWAY] = GatewayRun(
            command, source=source, target=target, model=model or GATEWAY_MODEL
        )
    return config.stash[_GATEWAY]


def _xdist_worker(config: pytest.Config) -> bool:
    """Whether this process is an xdist worker (its controller takes the verdicts and reports)."""
    return hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)  # before pytest's own end, which walks every live object twice
def pytest_unconfigure(config: pytest.Config) -> None:
    # The session's cases and verdicts are let go of here (the summary and reports are written):
    # pytest's last garbage collections (unraisableexception) would otherwise walk them all, a
    # cost per item that an empty test does not pay.
    if _CATALOG in config.stash:
        config.stash[_CATALOG].shutdown()
    if _GATEWAY in config.stash:
        config.stash[_GATEWAY].close()  # the gateway process and all it started end here
    if _RESULTS in config.stash:
        config.stash[_RESULTS].clear()
    if _FROZEN in config.stash:
        config.stash[_FROZEN].close()  # pytest's last collections walk everything, as without us


def _selection(settings: Settings, marked: MatrixOptions | None = None) -> Selection:
    """Marker > command line > ini; the cassette dir is the matrix's cassettes when given. The
    marker's cassettes go by path or by the name case ids use (`openai-chat/parallel-2`)."""
    from harness.cassettes.corpus import located
    from harness.matrix.selection import Selection

    marked = marked or MatrixOptions()
    if marked.cassettes is not None:
        cassettes = tuple(str(located(c).resolve()) for c in marked.cassettes)
    else:
        cassettes = (str(settings.cassette_dir),) if settings.cassette_dir is not None else ()
    return Selection(
        cassettes=cassettes,
        scenarios=marked.scenarios if marked.scenarios is not None else settings.scenarios,
        dialects=marked.dialects if marked.dialects is not None else settings.dialects,
        seeds=marked.seeds if marked.seeds is not None else settings.seeds,
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    asked = [name for name in _CASE_FIXTURES if name in metafunc.fixturenames]
    if not asked:
        return
    config = metafunc.config
    marker = metafunc.definition.get_closest_marker("toolstream_matrix")
    try:
        if len(asked) > 1:
            raise UsageError(f"asks for both {' and '.join(asked)}: one case fixture per test")
        marked = MatrixOptions.from_marker(marker.kwargs) if marker is not None else None
        selection = _selection(config.stash[_SETTINGS], marked)
        ids = list(_catalog(config).ids(selection))
    except HarnessError as exc:
        # Raised here, pytest would show it as a collection error inside a pluggy traceback.
        config.stash[_USAGE].append(f"{metafunc.definition.nodeid}: {exc}")
        metafunc.parametrize(asked[0], list[Any](), indirect=True)
        return
    metafunc.parametrize(asked[0], [(selection, case_id) for case_id in ids], ids=ids, indirect=True)
    # What a whole session reports for this test, for `report merge` to check its shards against.
    config.stash[_MATRICES][metafunc.definition.nodeid] = (selection, sorted(ids))


@pytest.hookimpl(tryfirst=True)  # before -k, --lf and xdist look at the items
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[Any]) -> None:
    found: list[str] = config.stash[_USAGE]
    if found:
        raise pytest.UsageError("\n".join(found))
    settings = config.stash[_SETTINGS]
    if not settings.runs_matrix:
        return
    from harness.matrix.longlived import LongLived
    from harness.plugin.items import CaseItem, CompareItem, MatrixCollector, item_name

    catalog = _catalog(config)
    selection = _selection(settings)
    try:
        for spec in (*settings.accumulators, *(settings.compare or ())):
            catalog.resolved(spec)  # a spec that cannot load is one usage error, not an error per case
        dialects = catalog.ids(selection)
    except HarnessError as exc:
        raise pytest.UsageError(str(exc)) from None
    ids = list(dialects)
    parent = MatrixCollector.from_parent(session, name="toolstream", nodeid="toolstream")
    # On an xdist worker the controller takes the verdicts: the items make the property text only.
    results = None if _xdist_worker(config) else _results(config)
    common: dict[str, Any] = {
        "parent": parent, "selection": selection, "catalog": catalog, "strict": settings.strict,
        "results": results,
    }  # fmt: skip
    for spec in settings.accumulators:
        name = item_name(spec)
        for i in ids:
            item = CaseItem.from_parent(
                name=f"{name}[{i}]", nodeid=f"toolstream::{name}[{i}]", spec=spec, case_id=i, **common
            )
            _skip_unless_declared(item, catalog, (spec,), dialects[i])
            items.append(item)
    if settings.gateway is not None:
        from harness.plugin.items import GatewayItem

        run = _gateway(config)
        for i in ids:
            if dialects[i] != run.source:
                continue
            name = f"gateway[{i}]"
            items.append(
                GatewayItem.from_parent(name=name, nodeid=f"toolstream::{name}", run=run, case_id=i, **common)
            )
    if settings.compare is not None:
        for i in ids:
            pair = CompareItem.from_parent(
                name=f"compare[{i}]", nodeid=f"toolstream::compare[{i}]", specs=settings.compare, case_id=i,
                **common,
            )  # fmt: skip
            _skip_unless_declared(pair, catalog, settings.compare, dialects[i])
            items.append(pair)
    if settings.only_matrix:
        own = [item for item in items if not isinstance(item, CaseItem | CompareItem)]
        if own:
            config.hook.pytest_deselected(items=own)
            items[:] = [item for item in items if isinstance(item, CaseItem | CompareItem)]
    # What lives to the session's end (modules, items, ids) is kept out of the collector's full
    # passes while the items run, and the verdicts as they arrive (`_Listener`): each pass would
    # walk them all again, a cost per item that grows with the matrix.
    config.stash[_FROZEN] = LongLived()


def _skip_unless_declared(
    item: pytest.Item, catalog: CaseCatalog, specs: Sequence[str], dialect: str
) -> None:
    """Skip a case of a dialect an accumulator declares it does not read (its `dialects`)."""
    reason = catalog.not_for(specs, dialect)
    if reason is not None:
        item.add_marker(pytest.mark.skip(reason=reason))


class _Listener:
    """Collects verdicts carried by reports (on the xdist controller they come from the workers)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" or not report.user_properties:
            return
        if any(key in (RESULT_KEY, COMPARE_KEY) for key, _ in report.user_properties):
            results = _results(self.config)
            results.take(report.user_properties)
            if len(results.results) % KEEP_EVERY == 0 and _FROZEN in self.config.stash:
                self.config.stash[_FROZEN].keep()


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if _xdist_worker(config):
        if _SETTINGS in config.stash:  # what the controller's summary says of this worker's tests
            config.workeroutput[_WORKER_SUMMARY] = _summary_data(config)  # type: ignore[attr-defined]
        return  # an xdist worker: the controller writes the reports
    settings = config.stash[_SETTINGS]
    if settings.json is None and settings.html is None:
        return
    results = _results(config)
    comparison = results.comparison()
    matrix = _matrix_ids(config, settings)
    reports = results.reports()
    if matrix is not None and not reports:  # a shard given none of the cases: still its report
        from harness.oracle.verdict import Report

        reports = [Report(settings.accumulators[0], strict=settings.strict)]
    try:
        if settings.json is not None:
            from harness.report.results import session_to_dict, write_json

            matrices = config.stash[_MATRICES].copy()
            if len(settings.accumulators) > 1 and settings.compare is None:
                for spec in settings.accumulators:
                    matrices[spec] = (_selection(settings), _matrix_ids(config, settings, spec))
            document = session_to_dict(
                reports, comparison, _selection(settings), matrix=matrix, matrices=matrices
            )
            write_json(document, settings.json)
        if settings.html is not None:
            from harness.report.html import write_html

            write_html(settings.html, reports=reports, comparison=comparison, selection=_selection(settings))
    except HarnessError as exc:  # a report path that is a FIFO, a link, a read-only folder: one line
        print(f"toolstream: {exc}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.USAGE_ERROR


def _matrix_ids(config: pytest.Config, settings: Settings, spec: str | None = None) -> list[str] | None:
    """The case ids a whole session reports, sorted as its report is (the JSON report's `matrix`,
    which `toolstream report merge` checks shards against): the generated items of one
    accumulator, but those of a dialect it declares it does not read. None when that is not
    known: a compare, several accumulators, or only `toolstream_case` tests."""
    if spec is None and (len(settings.accumulators) != 1 or settings.compare is not None):
        return None
    catalog, spec = _catalog(config), spec or settings.accumulators[0]
    try:
        ids = catalog.ids(_selection(settings))
        return sorted(i for i, dialect in ids.items() if catalog.not_for((spec,), dialect) is None)
    except HarnessError:
        return None  # said at collection already


@pytest.hookimpl(optionalhook=True)  # an xdist hook: pytest without xdist has no such hook
def pytest_testnodedown(node: Any, error: Any) -> None:
    """An xdist worker ended: keep what it said of its served tests for the controller's summary."""
    data = getattr(node, "workeroutput", {}).get(_WORKER_SUMMARY)
    if data is not None and _SETTINGS in node.config.stash:
        node.config.stash[_WORKERS].append(data)


_WORKER_SUMMARY = "toolstream_summary"


def _summary_data(config: pytest.Config) -> dict[str, Any]:
    """This process's scoping counts, late requests and baseline changes, as plain data."""
    served = config.stash[_SERVED_TESTS]
    return {
        "skipped": config.stash[_SCOPING].to_data(),
        "late": [
            [s.node.nodeid if s.node is not None else s.label, str(r)] for s in served for r in s.log.late
        ],
        "unheard": [s.node.nodeid if s.node is not None else s.label for s in config.stash.get(_UNHEARD, [])],
        "baseline": [
            [s.node.nodeid if s.node is not None else s.id, str(s.change)]
            for s in served
            if s.change is not None
        ],
    }


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if _SETTINGS not in config.stash or _xdist_worker(config):
        return  # an xdist worker's terminal is /dev/null; the controller says the summary
    lines = config.stash[_RESULTS].summary_lines() if _RESULTS in config.stash else []
    # This process's served tests, and each xdist worker's (the controller runs none of them).
    parts = [_summary_data(config), *config.stash[_WORKERS]]
    scoping = Scoping()
    for part in parts:
        scoping.merge(part["skipped"])
    lines += scoping.summary_lines()
    lines += _late_lines([tuple(entry) for part in parts for entry in part["late"]])
    lines += _unheard_lines([where for part in parts for where in part.get("unheard", ())])
    lines += _baseline_lines([tuple(entry) for part in parts for entry in part["baseline"]])
    settings = config.stash[_SETTINGS]
    if not lines and not (settings.json or settings.html):
        return
    terminalreporter.section("toolstream")
    for line in lines:
        terminalreporter.write_line(line)
    for kind, path in (("JSON", settings.json), ("HTML", settings.html)):
        if path is not None:
            terminalreporter.write_line(f"{kind} report: {path}")


def _late_lines(late: list[tuple[str, ...]]) -> list[str]:
    """Each request a served test sent after it ended (its test, the request), on that test
    (never judged as another's)."""
    if not late:
        return []
    lines = [f"late requests: {len(late)} sent after their test ended (judged on no test):"]
    for where, request in late[:20]:
        lines.append(f"  {where}: {request}")
    if len(late) > 20:
        lines.append(f"  ... and {len(late) - 20} more")
    return lines


def _unheard_lines(tests: list[str]) -> list[str]:
    """The tests that left threads running past the session's end, whose later requests (if
    any) reached no server."""
    if not tests:
        return []
    lines = [f"threads of {len(tests)} tests still ran at the session's end (later requests unheard):"]
    lines += [f"  {where}" for where in tests[:20]]
    if len(tests) > 20:
        lines.append(f"  ... and {len(tests) - 20} more")
    return lines


def _baseline_lines(changes: list[tuple[str, ...]]) -> list[str]:
    """How the cases of tests with a baseline compared with it (each test and its change); the
    ones that got better, named."""
    if not changes:
        return []
    counts: dict[str, int] = {}
    for _, change in changes:
        counts[change] = counts.get(change, 0) + 1
    lines = ["baseline: " + ", ".join(f"{n} {change}" for change, n in sorted(counts.items()))]
    better = sorted(where for where, change in changes if change == "better")
    for where in better[:20]:
        lines.append(f"  better: {where}")
    if better:
        lines.append("  tighten the baseline: run these tests again with --snapshot-update")
    return lines


class Scoping:
    """Which dialect each test served cases without a dialect chosen speaks (by its node id without
    parameters): learnt from its first request; its cases of other dialects are skipped, and
    counted once in the summary. A test whose first case got no request it could be told by
    fails once, saying which marker to add."""

    def __init__(self) -> None:
        self.speaks: dict[str, str | None] = {}  # None: could not be told
        self.skipped: dict[str, int] = {}

    def before(self, label: str, dialect: str) -> None:
        """Skip this case now when the test is known to speak another dialect."""
        if label not in self.speaks:
            return
        spoken = self.speaks[label]
        if spoken != dialect:
            self.skipped[label] = self.skipped.get(label, 0) + 1
            pytest.skip(self._reason(label, spoken))

    def after(self, served: ServedCase) -> None:
        """Learn the dialect from what the test's request spoke; skip, or fail once."""
        label, dialect, log = served.label, served.case.dialect, served.log
        if label in self.speaks:
            return
        if log.spoken and dialect not in log.spoken:
            self.speaks[label] = log.spoken[0]
            self.skipped[label] = self.skipped.get(label, 0) + 1
            pytest.skip(self._reason(label, log.spoken[0]))
        if log.attempts or log.followups or log.reports:
            self.speaks[label] = dialect
            return
        self.speaks[label] = None
        pytest.fail(
            f"{label}: no request reached its case ({served.id}), so the dialect it speaks is not known: "
            "add @pytest.mark.toolstream_matrix(dialects=[...]) naming it (or --toolstream-dialect)",
            pytrace=False,
        )

    def _reason(self, label: str, spoken: str | None) -> str:
        if spoken is None:
            return f"{label}: the dialect it speaks is not known (see its first case's failure)"
        return f"{label} speaks {spoken}: add @pytest.mark.toolstream_matrix(dialects=[{spoken!r}])"

    def to_data(self) -> dict[str, list[Any]]:
        """Each test's skipped count and the dialect it speaks, as plain data (an xdist worker's)."""
        return {label: [n, self.speaks.get(label)] for label, n in self.skipped.items()}

    def merge(self, data: dict[str, list[Any]]) -> None:
        """Add the counts another process (an xdist worker) kept."""
        for label, (n, spoken) in data.items():
            self.skipped[label] = self.skipped.get(label, 0) + n
            self.speaks.setdefault(label, spoken)

    def summary_lines(self) -> list[str]:
        lines = []
        for label, n in self.skipped.items():
            spoken = self.speaks.get(label)
            what = "cases of other dialects" if spoken is not None else "more cases"
            lines.append(f"{label}: {n} {what} skipped ({self._reason(label, spoken)})")
        return lines


# ---------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture
def toolstream_case(request: pytest.FixtureRequest) -> MatrixCase:
    """One case of the conformance matrix (the test is parametrized over all selected cases)."""
    from harness.plugin.items import MatrixCase

    selection, case_id = request.param
    catalog = _catalog(request.config)
    settings = request.config.stash[_SETTINGS]
    return MatrixCase(
        catalog.case(selection, case_id), selection, catalog, node=request.node, strict=settings.strict,
        replay_selection=_selection(settings),
    )  # fmt: skip


@pytest.fixture(scope="session")
def _toolstream_replay_server(request: pytest.FixtureRequest) -> Iterator[ReplayServer]:
    """This process's replay server (each xdist worker has its own), started by the first test
    that is served a case, on 127.0.0.1 and a thread of its own; at the session's end it stops
    once the threads tests left running ended (within `LINGER`: what they post is late, on them)."""
    from harness.plugin.served import replay_server, wait_for_threads_left

    config = request.config
    with replay_server() as running:
        yield running
        config.stash[_UNHEARD] = wait_for_threads_left(config.stash[_SERVED_TESTS])


@pytest.fixture
def toolstream_served_case(
    request: pytest.FixtureRequest, _toolstream_replay_server: ReplayServer
) -> ServedCase:
    """One case of the matrix served on 127.0.0.1 to code the test runs itself: point a client
    at its `base_url` (or its `env`); after the test, the follow-up request that code sent is
    judged as `toolstream check --client` judges a program (the test is parametrized over all
    selected cases)."""
    from harness.plugin.served import ServedCase, label_of

    selection, case_id = request.param
    config = request.config
    catalog = _catalog(config)
    settings = config.stash[_SETTINGS]
    label = label_of(request.node)
    scoping = config.stash[_SCOPING]
    dialect = catalog.ids(selection)[case_id]
    if not selection.dialects:  # no dialect chosen: the test's first request says which it speaks
        scoping.before(label, dialect)
    case = catalog.case(selection, case_id)
    marker = request.node.get_closest_marker("toolstream_matrix")
    marked = MatrixOptions.from_marker(marker.kwargs) if marker is not None else MatrixOptions()
    retargeting, mapping = marked.retargeting(settings)
    served = ServedCase(
        case, _toolstream_replay_server, label, catalog.scenario(case.scenario), selection,
        replay_selection=_selection(settings), strict=settings.strict, node=request.node,
        retargeting=retargeting, mapping=mapping, baseline=_baseline(request, settings, marked),
    )  # fmt: skip
    request.node.stash[_SERVED] = served
    config.stash[_SERVED_TESTS].append(served)
    return served


def _baseline(request: pytest.FixtureRequest, settings: Settings, marked: MatrixOptions) -> Any:
    """The test's baseline kept by syrupy (`--toolstream-baseline` or the marker's `baseline=True`;
    the marker's `baseline=False` turns it off), or None."""
    if not (settings.baseline if marked.baseline is None else marked.baseline):
        return None
    try:
        snapshot = request.getfixturevalue("snapshot")
    except pytest.FixtureLookupError:
        snapshot = None
    if snapshot is None:
        pytest.fail("a toolstream baseline is kept by syrupy: pip install syrupy", pytrace=False)
    from harness.plugin.snapshot import Baseline

    return Baseline(snapshot)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """A served case is judged here, right after the test body, so a failing verdict is the
    test's failure (not an error in its teardown) and a raise can be weighed as evidence."""
    served = item.stash.get(_SERVED, None)
    if served is None:
        return (yield)
    try:
        returned = yield
    except BaseException as exc:
        _scoped(item, served)
        served.settle(exc)  # re-raises it unless it was the agent surfacing a cut (a pass)
        return None
    _scoped(item, served)
    served.settle(None)
    return returned


def _scoped(item: pytest.Item, served: ServedCase) -> None:
    """An unscoped test (no dialect chosen) that spoke another dialect than its case's is skipped,
    and its dialect learnt for the rest of its cases (see `Scoping`)."""
    if served.selection is not None and not served.selection.dialects:
        item.config.stash[_SCOPING].after(served)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    served = item.stash.get(_SERVED, None)
    if served is not None:
        served.close()  # what it sends from now on is late, said on this test


@pytest.fixture
def toolstream_snapshot(request: pytest.FixtureRequest) -> Any:
    """syrupy's `snapshot` with the toolstream YAML extension; keyed by the case when the test
    asks for `toolstream_case` (meaning-preserving scenarios share their cassette's snapshot)."""
    try:
        snapshot = request.getfixturevalue("snapshot")
    except pytest.FixtureLookupError:
        pytest.fail("toolstream_snapshot needs syrupy: pip install syrupy", pytrace=False)
    from harness.plugin.items import snapshot_key
    from harness.plugin.snapshot import ToolstreamSnapshotExtension

    chosen = snapshot.use_extension(ToolstreamSnapshotExtension)
    if "toolstream_case" in request.fixturenames:
        case: MatrixCase = request.getfixturevalue("toolstream_case")
        meaning = _catalog(request.config).meaning(case.case.scenario)
        return chosen(name=snapshot_key(case.case, meaning))
    return chosen
