"""One run of the report card (`toolstream report-card` is a shell over it): what to grade
(`Wanted`: libraries and their releases, client programs, gateways, existing environments), each row graded
as a scheduler job with its share of one progress bar (`CardRun`), the rows summed up as a card
(`grade`), a card from stored reports (`regrade`) or a stored card read back (`load_card`), and
the card written as report-card.json, .md and .html (`write_card`)."""

from __future__ import annotations

import datetime
import os
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, TextIO, TypeVar

from harness import bounded, files
from harness.accumulators import builtin_names
from harness.card import clients, environments, gateways, grading, render, verdicts
from harness.card.clients import CLIENTS, Client
from harness.card.environments import EnvironmentProblem, SideEnvironment
from harness.card.gateways import GATEWAYS, Gateway
from harness.card.libraries import LIBRARIES, Library, library
from harness.card.schedule import RowJob, RowSlots, run_rows
from harness.card.verdicts import VerdictCache
from harness.errors import UsageError
from harness.gateway.runner import GatewayRun
from harness.matrix.runner import run_matrix
from harness.matrix.selection import Matrix, Selection, build_case
from harness.oracle.verdict import Report, Verdict
from harness.report.results import report_to_dict, selection_dict, write_json
from harness.text.shared import shared_values
from harness.text.terminal import ProgressBar

__all__ = ["CardRun", "Wanted", "grade", "load_card", "regrade", "write_card"]

MAX_REPORT_BYTES = 1 << 30  # a report of the whole bundled matrix is tens of MB

DEFAULT_VERSIONS = ("oldest", "newest")
CLIENT_TIMEOUT = 30.0  # seconds per case for a client when --timeout is 0 (a client needs one)
# What a case takes, at a guess, until a row has been graded once (then its own time orders it):
LIBRARY_CASE_SECONDS = 0.02  # one message to a `serve-accumulator` process
CLIENT_CASE_SECONDS = 0.5  # a program started for it
GATEWAY_CASE_SECONDS = 0.25  # a request through a gateway (LiteLLM's proxy: 0.1 to 0.3 s)
NO_DIALECT = "no selected dialect is one it reads"
NO_CASE = "no selected case is one it reads"
T = TypeVar("T")


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def write_card(card: Mapping[str, Any], out: Path, page: Path | None = None) -> None:
    """report-card.json, .md and .html in OUT (made if missing), with no path of this machine;
    with `page`, that Markdown page's generated blocks rewritten too."""
    out.mkdir(parents=True, exist_ok=True)
    write_json(shared_values(dict(card)), out / "report-card.json")
    base = _base(out)
    files.write(out / "report-card.md", render.markdown(card, base).encode("utf-8"))
    files.write(out / "report-card.html", render.page(card, base).encode("utf-8"))
    if page is not None:
        render.update_page(page, card, _base(page.parent))


@dataclass(frozen=True)
class Wanted:
    """What a card grades. `names`: libraries, client programs and gateways (empty: every library
    with an adapter here, every client and every gateway; `clients`, `gateways`: False leaves
    those out); `versions`: `1.2.13`, `newest`, `oldest` for every library or
    `LIBRARY=VERSION` for one (empty: oldest and newest, or only what `pythons` hold when given);
    `pythons`: interpreters of existing environments whose installed releases are graded too."""

    names: tuple[str, ...] = ()
    clients: bool = True
    gateways: bool = True
    versions: tuple[str, ...] = ()
    pythons: tuple[str, ...] = ()


def _base(out: Path) -> str:
    """The checkout as a relative link from OUT (for the links to examples/repros/), or ''."""
    root = environments.source_root()
    if root is None:
        return ""
    return Path(os.path.relpath(root, out.resolve())).as_posix() + "/"


def load_card(path: Path) -> dict[str, Any]:
    """A stored report-card.json, checked to be one of this card version."""
    card = bounded.read_json(path, MAX_REPORT_BYTES, "a report-card.json")
    if not isinstance(card, dict) or card.get("version") != grading.CARD_VERSION or "rows" not in card:
        raise UsageError(f"{path}: version: not a report-card.json of version {grading.CARD_VERSION}")
    return card


def regrade(folder: Path) -> dict[str, Any]:
    """A card from stored reports named `LIBRARY-VERSION.json` (what `--out DIR/reports` holds)."""
    graded = []
    known = [*LIBRARIES, *CLIENTS, *GATEWAYS]
    names = sorted(known, key=len, reverse=True)  # `langchain-core-1.2.13` is langchain-core's
    for path in sorted(folder.glob("*.json")):
        name = next((n for n in names if path.stem.startswith(n + "-")), None)
        if name is None:
            raise UsageError(f"{path}: not named LIBRARY-VERSION.json (libraries: {', '.join(known)})")
        report = bounded.read_json(path, MAX_REPORT_BYTES, "a JSON report")
        if not isinstance(report, dict) or not isinstance(report.get("cases"), list):
            raise UsageError(f"{path}: cases: not a report of `toolstream check --json`")
        release = path.stem[len(name) + 1 :]
        if name in GATEWAYS:
            gateway = GATEWAYS[name]
            graded.append(grading.Graded(gateway.library, release, gateway.adapter, report=report))
            continue
        if name in CLIENTS:
            adapter = str(report.get("card_adapter") or f"client:{name}")
            graded.append(grading.Graded(CLIENTS[name].library, release, adapter, report=report))
            continue
        lib = LIBRARIES[name]
        one = grading.Graded(lib.name, release, lib.adapter, report=report, note=report.get("card_note"))
        one.cutoff, one.undated = report.get("card_cutoff"), report.get("card_undated")
        # The release's library lines are read again where its environment is still cached.
        python = environments.cache_root() / f"{lib.name}-{release}" / "bin" / "python"
        one.site_packages = environments.site_packages(str(python)) if python.exists() else None
        graded.append(one)
    if not graded:
        raise UsageError(f"{folder}: no LIBRARY-VERSION.json report in it")
    selections = [g.report.get("selection") or {} for g in graded if g.report is not None]
    said = {k: v for k, v in selections[0].items() if v and k != "dialects"}
    return grading.card(graded, date=datetime.date.today().isoformat(), selection=said)


def _libraries(wanted: Wanted) -> list[Library]:
    if wanted.names:
        others = {*CLIENTS, *GATEWAYS}
        unknown = [name for name in wanted.names if name not in {*LIBRARIES, *others}]
        if unknown:
            known = [", ".join(LIBRARIES), "clients " + ", ".join(CLIENTS), "gateways " + ", ".join(GATEWAYS)]
            raise UsageError(f"--libraries: unknown library {unknown[0]!r} (known: {'; '.join(known)})")
        return [library(name) for name in dict.fromkeys(wanted.names) if name not in others]
    return [lib for lib in LIBRARIES.values() if lib.adapter in builtin_names()]


def _clients(wanted: Wanted) -> list[Client]:
    """The client programs to grade: those named, else all (none when `clients` is off)."""
    if not wanted.clients:
        return []
    if wanted.names:
        return [CLIENTS[name] for name in dict.fromkeys(wanted.names) if name in CLIENTS]
    return list(CLIENTS.values())


def _gateways(wanted: Wanted) -> list[Gateway]:
    """The gateways to grade: those named, else all (none when `gateways` is off)."""
    if not wanted.gateways:
        return []
    if wanted.names:
        return [GATEWAYS[name] for name in dict.fromkeys(wanted.names) if name in GATEWAYS]
    return list(GATEWAYS.values())


def _versions(wanted: Wanted, lib: Library) -> list[str]:
    given = wanted.versions
    mine = [v.split("=", 1)[1] for v in given if "=" in v and v.split("=", 1)[0] == lib.name]
    shared = [v for v in given if "=" not in v]
    return mine + shared if given else list(DEFAULT_VERSIONS)


def _targets(wanted: Wanted, libraries: list[Library]) -> list[SideEnvironment | grading.Graded]:
    """What to grade: existing environments first, then built ones; a problem found while
    choosing (no such env, no release list) is already a graded row."""
    for given in wanted.versions:
        if "=" in given and given.split("=", 1)[0] not in LIBRARIES:
            raise UsageError(f"--versions: unknown library in {given!r} (known: {', '.join(LIBRARIES)})")
    pythons = list(wanted.pythons)
    targets: list[SideEnvironment | grading.Graded] = []
    for lib in libraries:
        graded: set[str] = set()  # a release found in several environments is graded once, in the first
        for python in pythons:
            found = (environments.installed_version(python, d) for d in lib.distributions)
            version = next((v for v in found if v is not None), None)
            if version is not None and version not in graded:
                graded.add(version)
                targets.append(SideEnvironment(lib, version, python))
        if pythons and not graded:
            where = ", ".join(pythons)
            targets.append(grading.Graded(lib.name, "-", lib.adapter, problem=f"not installed in {where}"))
    if pythons and not wanted.versions:
        return targets
    for lib in libraries:
        try:
            releases = environments.resolve_versions(lib.distribution, _versions(wanted, lib))
        except EnvironmentProblem as exc:
            targets.append(grading.Graded(lib.name, "?", lib.adapter, problem=str(exc)))
            continue
        built: set[str] = set()
        for candidates in releases:
            try:
                env = environments.build_first(lib, candidates, say=_say, builder=_built)
            except EnvironmentProblem as exc:
                targets.append(grading.Graded(lib.name, candidates[0], lib.adapter, problem=str(exc)))
                continue
            if env.version not in built:  # `newest` walked back to `oldest`: graded once
                built.add(env.version)
                targets.append(env)
    return targets


def _built(library: Library, version: str, say: Any = _say) -> SideEnvironment:
    """A release's environment, built if it is not there yet; one already built keeps the harness
    it has until its row is graded (a row whose verdicts are stored needs no refresh)."""
    return environments.build(library, version, say=say, refresh=False)


def grade(
    wanted: Wanted,
    selection: Selection,
    *,
    timeout: float | None,
    reports: Path,
    slots: int | None = None,
    read: bool = True,
) -> dict[str, Any]:
    """The card of the `wanted` rows over `selection`: each row graded (as many at once as `slots`,
    default the cores) unless its stored verdicts still hold (`read` False: graded anew), its
    report written into `reports` as LIBRARY-VERSION.json."""
    libraries = _libraries(wanted)
    chosen: list[Client | Gateway] = [*_clients(wanted), *_gateways(wanted)]
    targets: list[SideEnvironment | grading.Graded | Client | Gateway] = [*_targets(wanted, libraries)]
    targets += chosen
    cache = VerdictCache(environments.cache_root() / "verdicts")
    card = CardRun(selection, timeout, reports, cache, len(targets), read=read)
    slots = slots or os.cpu_count() or 1
    planned: list[grading.Graded | PlannedRow[grading.Graded]] = []
    for n, target in enumerate(targets, start=1):
        step = f"[{n}/{len(targets)}]"
        if isinstance(target, grading.Graded):
            _say(f"{step} {target.library} {target.version}: {target.problem}")
            planned.append(target)
        elif isinstance(target, Client):
            planned.append(card.client_row(target, step))
        elif isinstance(target, Gateway):
            planned.append(card.gateway_row(target, step))
        else:
            planned.append(card.library_row(target, step))
    jobs = [job for job in planned if isinstance(job, PlannedRow)]
    card.start(sum(job.cases for job in jobs))
    try:
        done = iter(run_rows([job.job for job in jobs], slots))
    finally:
        card.close()
    graded = [next(done) if isinstance(job, PlannedRow) else job for job in planned]
    card.summary()
    return grading.card(graded, date=datetime.date.today().isoformat(), selection=_said(selection))


@dataclass(frozen=True)
class PlannedRow(Generic[T]):
    """A row to grade: its scheduler job and how many cases it counts on the card's bar."""

    job: RowJob[T]
    cases: int


class CardProgress(ProgressBar):
    """One bar over the whole card, counting cases (rows report from several threads). Lines said
    while it is drawn (`say`) clear it first, then it is drawn again."""

    def __init__(self, total: int = 0, stream: TextIO | None = None) -> None:
        super().__init__(total, label="report card", stream=stream or sys.stderr)
        self._lock = threading.RLock()
        self._note = ""

    def advance(self, n: int = 1, note: str = "") -> None:
        with self._lock:
            self._note = note or self._note
            super().advance(n, self._note)

    def say(self, message: str) -> None:
        with self._lock:
            if self.enabled:
                self.stream.write("\r" + " " * 120 + "\r")
            print(message, file=self.stream, flush=True)
            if self.enabled and self.done:
                self._last = 0.0
                super().advance(0, self._note)


class RowProgress:
    """A row's share of the card's bar (a `Progress`), counted in cases. The runner reports a
    unit of work at a time (a cassette x scenario x seed, holding any number of cases, often
    none), named as `per_unit` knows it; a client row reports each case, which counts one."""

    def __init__(self, bar: CardProgress, name: str, per_unit: Mapping[str, int] | None = None) -> None:
        self._bar = bar
        self._per_unit = dict(per_unit or {})
        self._name = name

    def start(self, total: int) -> None:
        """Nothing: the card's bar was started with every row's cases."""

    def advance(self, n: int = 1, note: str = "") -> None:
        self._bar.advance(self._per_unit.get(note, n), f"{self._name}: {note}")

    def close(self) -> None:
        """Nothing: the card's bar is closed once, by the card."""


class CardRun:
    """What the card's rows share while they run: the selection, the verdict cache, the bar, where
    the reports go. `library_row`, `client_row` and `gateway_row` plan one row each (a scheduler
    job)."""

    def __init__(
        self,
        selection: Selection,
        timeout: float | None,
        reports: Path,
        cache: VerdictCache | None,
        rows: int,
        *,
        read: bool = True,
    ) -> None:
        self.selection = selection
        self.read = read  # stored verdicts are used (else only written, anew)
        self.timeout = timeout
        self.reports = reports
        self.cache = cache
        self.bar = CardProgress()
        self.stored = 0  # rows whose verdicts came from the cache
        self.rows = rows
        self._counts: dict[Selection, dict[str, int]] = {}
        self._cases: dict[Selection, Matrix] = {}
        self._lock = threading.Lock()
        self._inputs: dict[str, str] = {}
        self.started = time.perf_counter()
        self.seconds: dict[str, float] = {}  # row -> what it took, graded in this run
        self._durations = cache.durations() if cache is not None else {}

    def start(self, cases: int) -> None:
        self.bar.start(cases)
        self.started = time.perf_counter()

    def close(self) -> None:
        self.bar.close()
        if self.cache is not None:
            self.cache.record_durations(self.seconds)

    def say(self, message: str) -> None:
        self.bar.say(message)

    def summary(self) -> None:
        if self.cache is None or not self.read:
            return
        seconds = time.perf_counter() - self.started
        if self.stored:
            _say(
                f"{self.stored} of {self.rows} rows from stored verdicts ({self.cache.folder}; "
                f"--no-cache grades them again); the card took {seconds:.0f} s"
            )

    # -- what a row depends on ---------------------------------------------------------------

    def key(self, row: str, versions: Mapping[str, Any], mine: Selection) -> dict[str, Any]:
        """The row's cache key: what ran it, the harness, the selection (with the contents of every
        cassette and scenario given by path, file or folder, which the harness's fingerprint does
        not cover: `--cassettes`, `--scenarios FILE`, `--scenarios-dir`)."""
        chosen = {**selection_dict(mine), "inputs": self._input_digest(mine)}
        return verdicts.row_key(row, versions, chosen, self.timeout)

    def _input_digest(self, selection: Selection) -> str:
        scenario_files = [name for name in selection.scenarios if os.path.lexists(name)]  # else a name
        folder = [selection.scenarios_dir] if selection.scenarios_dir else []
        paths = [*selection.cassettes, *scenario_files, *folder]
        if not paths:
            return ""
        named = "\0".join(map(str, paths))
        with self._lock:
            if named not in self._inputs:
                files: list[Path] = []
                for given in map(Path, paths):
                    found = [p for p in given.rglob("*") if p.is_file()] if given.is_dir() else [given]
                    files += [Path(os.path.realpath(f)) for f in found if f.exists()]  # no loop raises
                self._inputs[named] = verdicts.files_digest(files, Path("/"))
            return self._inputs[named]

    def case_counts(self, selection: Selection) -> dict[str, int]:
        """Each unit of work's number of cases, by `Unit.describe()` (what the runner's note says)."""
        if selection not in self._counts:
            matrix = Matrix(selection)
            self._counts[selection] = {unit.describe(): len(matrix.cases(unit)) for unit in matrix.units()}
        return self._counts[selection]

    def matrix(self, selection: Selection) -> Matrix:
        if selection not in self._cases:
            self._cases[selection] = Matrix(selection)
        return self._cases[selection]

    def stored_report(
        self, key: Mapping[str, Any], name: str, step: str, cases: int
    ) -> dict[str, Any] | None:
        """The row's stored report, said so and counted on the bar; None: it is graded."""
        if self.cache is None or not self.read or not key:
            return None
        report = self.cache.get(key)
        if report is None:
            return None
        with self._lock:
            self.stored += 1
        self.bar.advance(cases, f"{name}: stored")
        n = len(report["cases"])
        self.say(f"{step} {name}: {n:,} case{'' if n == 1 else 's'} from stored verdicts (unchanged)")
        return report

    def graded(self, row: str, seconds: float) -> None:
        with self._lock:
            self.seconds[row] = round(seconds, 1)

    def cost(self, row: str, cases: int, per_case: float) -> float:
        """What a row is expected to take: its last grading's seconds, else its cases at a guess."""
        return self._durations.get(row, cases * per_case)

    def finished(self, step: str, name: str, report: Report) -> None:
        """One line per row when it is done (what a log keeps; the bar is for terminals)."""
        counts = ", ".join(f"{v} {n:,}" for v in Verdict if (n := report.count(v)))
        n = len(report.results)
        plural = "" if n == 1 else "s"
        self.say(f"{step} {name}: {n:,} case{plural} in {report.seconds:.0f} s ({counts or 'none'})")

    # -- the rows ------------------------------------------------------------------------------

    def library_row(self, env: SideEnvironment, step: str) -> grading.Graded | PlannedRow[grading.Graded]:
        """A library's row: the selected cases of its dialects through its adapter over stdio,
        in one `serve-accumulator` process (one slot for the whole row)."""
        lib = env.library
        selection = self.selection
        dialects = [d for d in lib.dialects if not selection.dialects or d in selection.dialects]
        if not dialects:
            return grading.Graded(lib.name, env.version, lib.adapter, problem=NO_DIALECT)
        mine = replace(selection, dialects=tuple(dialects), cases=_cases_read(selection, dialects))
        if selection.cases and not mine.cases:
            return grading.Graded(lib.name, env.version, lib.adapter, problem=NO_CASE)
        per_unit = self.case_counts(mine)
        cases = sum(per_unit.values())
        name = f"{lib.name} {env.version}"

        def run(slots: RowSlots) -> grading.Graded:
            one = self._grade_library(env, mine, per_unit, name, step, slots)
            one.note = env.note
            return one

        cost = self.cost(f"library {lib.name} {env.version}", cases, LIBRARY_CASE_SECONDS)
        return PlannedRow(RowJob(name, cost, run), cases)

    def _grade_library(
        self,
        env: SideEnvironment,
        mine: Selection,
        per_unit: Mapping[str, int],
        name: str,
        step: str,
        slots: RowSlots,
    ) -> grading.Graded:
        lib = env.library
        found = environments.contents(env.python)
        site = found.get("purelib")
        # An environment that cannot say what it holds is graded and not stored.
        row = f"library {lib.name} {env.version}"
        key = self.key(row, _environment_versions(env, found), mine) if found else {}
        stored = self.stored_report(key, name, step, sum(per_unit.values()))
        if stored is not None:
            return self._graded_library(env, stored, site)
        with slots.held():
            if env.built:  # its harness made current for this run (left as it was when stored)
                try:
                    env = environments.build(lib, env.version, say=self.say)
                except EnvironmentProblem as exc:
                    return grading.Graded(lib.name, env.version, lib.adapter, problem=str(exc))
            self.say(f"{step} {name}: {lib.adapter} in {env.python}")
            progress = RowProgress(self.bar, name, per_unit)
            try:
                report = run_matrix(env.spec(), mine, timeout=self.timeout, jobs=1, progress=progress)
            except UsageError as exc:
                return grading.Graded(lib.name, env.version, lib.adapter, problem=str(exc))
        # Its process started by the run, not by a check of its own (which imported the library
        # once more): one that cannot start fails every case at once, and the row says why.
        problem = environments.adapter_problem(env, (result.error for result in report.results))
        if problem is not None:
            return grading.Graded(lib.name, env.version, lib.adapter, problem=problem)
        self.finished(step, name, report)
        document = report_to_dict(report, mine)
        self.graded(row, report.seconds)
        if self.cache is not None and key:
            self.cache.put(key, document)
        return self._graded_library(env, document, site)

    def _graded_library(
        self, env: SideEnvironment, document: dict[str, Any], site: str | None
    ) -> grading.Graded:
        lib = env.library
        said = {"card_note": env.note, "card_cutoff": env.cutoff, "card_undated": env.undated}
        document = {**document, **{k: v for k, v in said.items() if v}}
        write_json(shared_values(document), self.reports / f"{lib.name}-{env.version}.json")
        one = grading.Graded(lib.name, env.version, lib.adapter, report=document)
        one.cutoff, one.undated = document.get("card_cutoff"), document.get("card_undated")
        one.site_packages = site
        return one

    def client_row(self, client: Client, step: str) -> grading.Graded | PlannedRow[grading.Graded]:
        """A client's row through the replay server: the selected cases of its dialect, each a
        run of the program judged by its follow-up request (what `check --client` does), as many
        at once as the card has slots."""
        library_name = client.library
        try:
            table = clients.client_table(environments.source_root())
            version = clients.installed_version(table, client)
            adapter = clients.adapter(table, client)
            dialect = clients.dialect(table, client)
        except EnvironmentProblem as exc:
            _say(f"{step} {client.name}: {exc}")
            return grading.Graded(library_name, "-", f"client:{client.name}", problem=str(exc))
        selection = self.selection
        if selection.dialects and dialect not in selection.dialects:
            return grading.Graded(library_name, version, adapter, problem=NO_DIALECT)
        mine = replace(selection, dialects=(dialect,), cases=_cases_read(selection, [dialect]))
        if selection.cases and not mine.cases:
            return grading.Graded(library_name, version, adapter, problem=NO_CASE)
        matrix = self.matrix(mine)
        cases = list(matrix.all())
        name = f"{library_name} {version}"
        timeout = self.timeout if self.timeout else CLIENT_TIMEOUT

        def run(slots: RowSlots) -> grading.Graded:
            key = self.key(f"client {client.name}", clients.contents(table, client), mine)
            stored = self.stored_report(key, name, step, len(cases))
            if stored is None:
                self.say(f"{step} {name}: {client.name} through the replay server")
                start = time.perf_counter()
                try:
                    label, results = clients.run_cases(
                        table, client, cases, matrix.by_name, jobs=slots.size, timeout=timeout,
                        progress=RowProgress(self.bar, name), hold=slots.held, say=self.say,
                    )  # fmt: skip
                except (OSError, UsageError) as exc:
                    problem = f"the replay server failed: {exc}"
                    return grading.Graded(library_name, version, adapter, problem=problem)
                report = Report(label, results, seconds=time.perf_counter() - start)
                self.finished(step, name, report)
                stored = report_to_dict(report, mine)
                self.graded(f"client {client.name}", report.seconds)
                if self.cache is not None:
                    self.cache.put(key, stored)
            document = {**stored, "card_adapter": adapter}
            write_json(shared_values(document), self.reports / f"{client.name}-{version}.json")
            return grading.Graded(library_name, version, adapter, report=document)

        cost = self.cost(f"client {client.name}", len(cases), CLIENT_CASE_SECONDS)
        return PlannedRow(RowJob(name, cost, run, divisible=True), len(cases))

    def gateway_row(self, gateway: Gateway, step: str) -> grading.Graded | PlannedRow[grading.Graded]:
        """A gateway's row: the selected cases of its upstream dialect, each served as its upstream
        and asked in its downstream dialect, judged as `check --gateway` judges (`GatewayRun`),
        one gateway started for the whole row (one slot)."""
        try:
            version = gateways.installed_version(gateway)
            command = gateways.command(gateway)
        except EnvironmentProblem as exc:
            _say(f"{step} {gateway.name}: {exc}")
            return grading.Graded(gateway.library, "-", gateway.adapter, problem=str(exc))
        selection = self.selection
        if selection.dialects and gateway.source not in selection.dialects:
            return grading.Graded(gateway.library, version, gateway.adapter, problem=NO_DIALECT)
        mine = replace(selection, dialects=(gateway.source,), cases=_cases_read(selection, [gateway.source]))
        if selection.cases and not mine.cases:
            return grading.Graded(gateway.library, version, gateway.adapter, problem=NO_CASE)
        matrix = self.matrix(mine)
        cases = list(matrix.all())
        name = f"{gateway.library} {version}"
        row = f"gateway {gateway.name}"
        timeout = self.timeout if self.timeout else CLIENT_TIMEOUT

        def run(slots: RowSlots) -> grading.Graded:
            key = self.key(row, gateways.contents(gateway), mine)
            stored = self.stored_report(key, name, step, len(cases))
            if stored is None:
                progress = RowProgress(self.bar, name)
                start = time.perf_counter()
                try:
                    with slots.held():
                        self.say(f"{step} {name}: {gateway.adapter} through the replay server")
                        with GatewayRun(
                            command, source=gateway.source, target=gateway.target, timeout=timeout,
                            model=gateway.model, name=gateway.name,
                        ) as hop:  # fmt: skip
                            results = []
                            for case in cases:
                                results.append(hop.judge(case, matrix.by_name.get(case.scenario)))
                                progress.advance(note=case.id)
                except (OSError, UsageError) as exc:
                    return grading.Graded(gateway.library, version, gateway.adapter, problem=str(exc))
                report = Report(hop.label, results, seconds=time.perf_counter() - start)
                self.finished(step, name, report)
                stored = report_to_dict(report, mine)
                self.graded(row, report.seconds)
                if self.cache is not None:
                    self.cache.put(key, stored)
            write_json(shared_values(stored), self.reports / f"{gateway.name}-{version}.json")
            return grading.Graded(gateway.library, version, gateway.adapter, report=stored)

        cost = self.cost(row, len(cases), GATEWAY_CASE_SECONDS)
        return PlannedRow(RowJob(name, cost, run), len(cases))


def _environment_versions(env: SideEnvironment, found: Mapping[str, Any]) -> dict[str, Any]:
    """What a library row's environment holds that its verdicts depend on. The harness copy the
    adapter runs from counts by its code: a built environment's is made this checkout's before
    its row is graded (so the fingerprint covers it); another one's is hashed where it is."""
    out = {"python": found.get("python"), "distributions": found.get("distributions")}
    here = str(Path(verdicts.__file__).resolve().parent.parent)
    copies = [str(Path(p).resolve()) for p in found.get("harness") or []]
    if not env.built and copies and copies[0] != here:
        out["harness"] = verdicts.fingerprint(Path(copies[0]))
    return out


def _cases_read(selection: Selection, dialects: list[str]) -> tuple[str, ...]:
    """The given case ids of these dialects (an id does not always say its dialect: build it)."""
    return tuple(
        c for c in selection.cases if build_case(c, replace(selection, cases=())).dialect in dialects
    )


def _said(selection: Selection) -> dict[str, Any]:
    """The options that narrowed the matrix (none: the whole bundled matrix)."""
    fields = selection_dict(selection)
    return {key: value for key, value in fields.items() if value}
