"""`toolstream report-card`: the matrix over released libraries, one side environment per version,
summed up as report-card.md, .html and .json (and, with `--page`, the two generated blocks of
docs/report-card.md)."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from harness.accumulators import builtin_names
from harness.card import clients, environments, grading, render
from harness.card.clients import NODE_CLIENTS, NodeClient
from harness.card.environments import EnvironmentProblem, SideEnvironment
from harness.card.libraries import LIBRARIES, Library, library
from harness.cli import arguments
from harness.cli.check import add_selection_options, selection_of, timeout_of
from harness.errors import UsageError
from harness.matrix.runner import run_matrix
from harness.matrix.selection import Matrix, Selection, build_case
from harness.oracle.verdict import Report, Verdict
from harness.report.results import report_to_dict, selection_dict, write_json
from harness.text.shared import shared_values
from harness.text.terminal import Progress

DEFAULT_VERSIONS = ("oldest", "newest")
CLIENT_TIMEOUT = 30.0  # seconds per case for a Node client when --timeout is 0 (a client needs one)


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="grade released libraries (one side environment per version) and write a report card",
        description=(
            "Build one virtualenv per library and version (cached under $TOOLSTREAM_CACHE, default "
            "~/.cache/toolstream), run the matrix there through `serve-accumulator`, and write "
            "report-card.md, .html and .json: per library and version pass / fail by class and "
            "severity, each failure signature once with its worst case and what we know of it, and "
            "what changed between versions. A library that fails to install or import is a row "
            "saying so. Exit 0 when the card is written, 2 on a usage error."
        ),
    )
    parser.add_argument(
        "--libraries", type=_names, metavar="A,B",
        help=f"libraries to grade (known: {', '.join(LIBRARIES)}) and Node clients run through the replay "
        f"server ({', '.join(NODE_CLIENTS)}; each graded at the version in its node_modules); default: "
        "every library with an adapter here and every Node client",
    )  # fmt: skip
    parser.add_argument(
        "--no-clients", action="store_true",
        help="leave the Node clients out (their rows take minutes: each case starts a node process)",
    )  # fmt: skip
    parser.add_argument(
        "--versions", type=_names, metavar="V,...",
        help="versions to build: `1.2.13`, `newest`, `oldest` (first release of the newest major line) "
        "for every library, or `LIBRARY=VERSION` for one (default: oldest,newest)",
    )  # fmt: skip
    parser.add_argument(
        "--env", action="append", default=[], metavar="PATH",
        help="also grade the libraries installed in this existing virtualenv (it needs the harness)",
    )  # fmt: skip
    parser.add_argument(
        "--use-current-env", action="store_true",
        help="grade the libraries installed in this Python (no building; with --versions, also build those)",
    )  # fmt: skip
    parser.add_argument(
        "--out",
        type=arguments.output_folder,
        default=Path("report-card"),
        metavar="DIR",
        help="where report-card.md, .html, .json and each version's report go (default ./report-card)",
    )
    parser.add_argument(
        "--page",
        "--readme",
        dest="page",
        type=Path,
        metavar="FILE",
        help="also rewrite the generated blocks (built-in adapters, report card) of this Markdown page: "
        "docs/report-card.md (`--readme`: the same option, its old name)",
    )
    parser.add_argument(
        "--from-json",
        type=Path,
        metavar="FILE",
        help="render a stored report-card.json again instead of running anything",
    )
    parser.add_argument(
        "--from-reports",
        type=Path,
        metavar="DIR",
        help="grade stored reports instead of running (DIR/LIBRARY-VERSION.json, as in OUT/reports)",
    )
    add_selection_options(parser)
    return parser


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    if args.from_json is not None:
        card = _load_card(args.from_json)
    elif args.from_reports is not None:
        card = _regrade(args.from_reports)
    else:
        card = _grade(args)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    write_json(shared_values(card), out / "report-card.json")
    base = _base(out)
    (out / "report-card.md").write_text(render.markdown(card, base), encoding="utf-8")
    (out / "report-card.html").write_text(render.page(card, base), encoding="utf-8")
    if args.page is not None:
        render.update_page(args.page, card, _base(args.page.parent))
    print(render.card_block(card))
    print(
        f"\nwrote {out / 'report-card.md'}, .html and .json"
        + (f"; updated {args.page}" if args.page else "")
    )
    return 0


def _base(out: Path) -> str:
    """The checkout as a relative link from OUT (for the links to examples/repros/), or ''."""
    root = environments.source_root()
    if root is None:
        return ""
    return Path(os.path.relpath(root, out.resolve())).as_posix() + "/"


def _load_card(path: Path) -> dict[str, Any]:
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UsageError(f"{path}: not JSON ({exc})") from None
    if not isinstance(card, dict) or card.get("version") != grading.CARD_VERSION or "rows" not in card:
        raise UsageError(f"{path}: version: not a report-card.json of version {grading.CARD_VERSION}")
    return card


def _regrade(folder: Path) -> dict[str, Any]:
    """A card from stored reports named `LIBRARY-VERSION.json` (what `--out DIR/reports` holds)."""
    graded = []
    known = [*LIBRARIES, *NODE_CLIENTS]
    names = sorted(known, key=len, reverse=True)  # `langchain-core-1.2.13` is langchain-core's
    for path in sorted(folder.glob("*.json")):
        name = next((n for n in names if path.stem.startswith(n + "-")), None)
        if name is None:
            raise UsageError(f"{path}: not named LIBRARY-VERSION.json (libraries: {', '.join(known)})")
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise UsageError(f"{path}: not JSON ({exc})") from None
        if not isinstance(report, dict) or not isinstance(report.get("cases"), list):
            raise UsageError(f"{path}: cases: not a report of `toolstream check --json`")
        release = path.stem[len(name) + 1 :]
        if name in NODE_CLIENTS:
            adapter = str(report.get("card_adapter") or f"client:{name}")
            graded.append(grading.Graded(NODE_CLIENTS[name].library, release, adapter, report=report))
            continue
        lib = LIBRARIES[name]
        one = grading.Graded(lib.name, release, lib.adapter, report=report, note=report.get("card_note"))
        # The release's library lines are read again where its environment is still cached.
        python = environments.cache_root() / f"{lib.name}-{release}" / "bin" / "python"
        one.site_packages = environments.site_packages(str(python)) if python.exists() else None
        graded.append(one)
    if not graded:
        raise UsageError(f"{folder}: no LIBRARY-VERSION.json report in it")
    selections = [g.report.get("selection") or {} for g in graded if g.report is not None]
    said = {k: v for k, v in selections[0].items() if v and k != "dialects"}
    return grading.card(graded, date=datetime.date.today().isoformat(), selection=said)


def _libraries(args: argparse.Namespace) -> list[Library]:
    if args.libraries:
        return [library(name) for name in dict.fromkeys(args.libraries) if name not in NODE_CLIENTS]
    return [lib for lib in LIBRARIES.values() if lib.adapter in builtin_names()]


def _clients(args: argparse.Namespace) -> list[NodeClient]:
    """The Node clients to grade: those named in --libraries, else all (none with --no-clients)."""
    if args.no_clients:
        return []
    if args.libraries:
        return [NODE_CLIENTS[name] for name in dict.fromkeys(args.libraries) if name in NODE_CLIENTS]
    return list(NODE_CLIENTS.values())


def _versions(args: argparse.Namespace, lib: Library) -> list[str]:
    given = args.versions or []
    mine = [v.split("=", 1)[1] for v in given if "=" in v and v.split("=", 1)[0] == lib.name]
    shared = [v for v in given if "=" not in v]
    return mine + shared if given else list(DEFAULT_VERSIONS)


def _targets(args: argparse.Namespace, libraries: list[Library]) -> list[SideEnvironment | grading.Graded]:
    """What to grade: existing environments first, then built ones; a problem found while
    choosing (no such env, no release list) is already a graded row."""
    for given in args.versions or []:
        if "=" in given and given.split("=", 1)[0] not in LIBRARIES:
            raise UsageError(f"--versions: unknown library in {given!r} (known: {', '.join(LIBRARIES)})")
    pythons = [sys.executable] if args.use_current_env else []
    for env in args.env:
        if not (Path(env) / "bin" / "python").exists():
            raise UsageError(f"--env: {env}: no bin/python (not a virtualenv)")
        pythons.append(str(Path(env) / "bin" / "python"))
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
    if pythons and not args.versions:
        return targets
    for lib in libraries:
        try:
            wanted = environments.resolve_versions(lib.distribution, _versions(args, lib))
        except EnvironmentProblem as exc:
            targets.append(grading.Graded(lib.name, "?", lib.adapter, problem=str(exc)))
            continue
        built: set[str] = set()
        for candidates in wanted:
            try:
                env = environments.build_first(lib, candidates, say=_say)
            except EnvironmentProblem as exc:
                targets.append(grading.Graded(lib.name, candidates[0], lib.adapter, problem=str(exc)))
                continue
            if env.version not in built:  # `newest` walked back to `oldest`: graded once
                built.add(env.version)
                targets.append(env)
    return targets


def _grade(args: argparse.Namespace) -> dict[str, Any]:
    selection = selection_of(args)
    timeout = timeout_of(args)
    libraries = _libraries(args)
    node = _clients(args)
    targets: list[SideEnvironment | grading.Graded | NodeClient] = [*_targets(args, libraries), *node]
    reports = args.out / "reports"
    graded: list[grading.Graded] = []
    for n, target in enumerate(targets, start=1):
        step = f"[{n}/{len(targets)}]"
        if isinstance(target, grading.Graded):
            _say(f"{step} {target.library} {target.version}: {target.problem}")
            graded.append(target)
            continue
        if isinstance(target, NodeClient):
            graded.append(_grade_client(target, selection, args, reports, step))
            continue
        lib = target.library
        _say(f"{step} {lib.name} {target.version}: {lib.adapter} in {target.python}")
        one = _grade_one(target, selection, timeout, args.jobs, reports, step)
        one.note = target.note
        one.site_packages = environments.site_packages(target.python)
        graded.append(one)
    return grading.card(graded, date=datetime.date.today().isoformat(), selection=_said(selection))


class CaseProgress(Progress):
    """A bar counting cases. `run_matrix` advances its progress once per unit of work (one
    cassette x scenario x seed, which holds any number of cases, often none) and sets `total` to
    the number of units: this bar knows each unit's cases and counts those instead."""

    def __init__(self, per_unit: Mapping[str, int], label: str, stream: TextIO | None = None) -> None:
        self.cases = sum(per_unit.values())
        self._per_unit = dict(per_unit)
        self._lock = threading.Lock()  # a Node client's cases finish on several threads
        super().__init__(self.cases, label=label, stream=stream or sys.stderr)

    @property
    def total(self) -> int:
        return max(self.cases, 1)

    @total.setter
    def total(self, units: int) -> None:
        """Ignored: the total is the number of cases, known from the start."""

    def advance(self, n: int = 1, note: str = "") -> None:
        with self._lock:
            super().advance(self._per_unit.get(note, n), note)


def _case_counts(selection: Selection) -> dict[str, int]:
    """Each unit of work's number of cases, by `Unit.describe()` (what the runner's note says)."""
    matrix = Matrix(selection)
    return {unit.describe(): len(matrix.cases(unit)) for unit in matrix.units()}


def _finished(step: str, name: str, report: Report) -> None:
    """One line per environment when it is done (what a log keeps; the bar is for terminals)."""
    counts = ", ".join(f"{v} {n:,}" for v in Verdict if (n := report.count(v)))
    n = len(report.results)
    _say(f"{step} {name}: {n:,} case{'' if n == 1 else 's'} in {report.seconds:.0f} s ({counts or 'none'})")


def _cases_read(selection: Selection, dialects: list[str]) -> tuple[str, ...]:
    """The given case ids of these dialects (an id does not always say its dialect: build it)."""
    return tuple(
        c for c in selection.cases if build_case(c, replace(selection, cases=())).dialect in dialects
    )


def _said(selection: Selection) -> dict[str, Any]:
    """The options that narrowed the matrix (none: the whole bundled matrix)."""
    fields = selection_dict(selection)
    return {key: value for key, value in fields.items() if value}


def _grade_one(
    env: SideEnvironment,
    selection: Selection,
    timeout: float | None,
    jobs: int,
    reports: Path,
    step: str = "",
) -> grading.Graded:
    lib = env.library
    dialects = [d for d in lib.dialects if not selection.dialects or d in selection.dialects]
    if not dialects:
        return grading.Graded(
            lib.name, env.version, lib.adapter, problem="no selected dialect is one it reads"
        )
    mine = replace(selection, dialects=tuple(dialects), cases=_cases_read(selection, dialects))
    if selection.cases and not mine.cases:
        return grading.Graded(lib.name, env.version, lib.adapter, problem="no selected case is one it reads")
    name = f"{lib.name} {env.version}"
    try:
        progress = CaseProgress(_case_counts(mine), label=f"{step} {name}".strip())
        try:
            report = run_matrix(env.spec(), mine, timeout=timeout, jobs=jobs, progress=progress)
        finally:
            progress.close()
    except UsageError as exc:
        return grading.Graded(lib.name, env.version, lib.adapter, problem=str(exc))
    # Its process started by the run, not by a check of its own (which imported the library
    # once more): one that cannot start fails every case at once, and the row says why.
    problem = environments.adapter_problem(env, (result.error for result in report.results))
    if problem is not None:
        return grading.Graded(lib.name, env.version, lib.adapter, problem=problem)
    _finished(step, name, report)
    document = {**report_to_dict(report, mine), **({"card_note": env.note} if env.note else {})}
    write_json(shared_values(document), reports / f"{lib.name}-{env.version}.json")
    return grading.Graded(lib.name, env.version, lib.adapter, report=document)


def _grade_client(
    client: NodeClient, selection: Selection, args: argparse.Namespace, reports: Path, step: str
) -> grading.Graded:
    """One Node client through the replay server: the selected cases of its dialect, each a run
    of the program judged by its follow-up request (what `check --client` does)."""
    library_name = client.library
    try:
        table = clients.client_table(environments.source_root())
        version = clients.installed_version(table, client)
        adapter = clients.adapter(table, client)
        dialect = clients.dialect(table, client)
    except EnvironmentProblem as exc:
        _say(f"{step} {client.name}: {exc}")
        return grading.Graded(library_name, "-", f"client:{client.name}", problem=str(exc))
    if selection.dialects and dialect not in selection.dialects:
        return grading.Graded(library_name, version, adapter, problem="no selected dialect is one it reads")
    mine = replace(selection, dialects=(dialect,), cases=_cases_read(selection, [dialect]))
    if selection.cases and not mine.cases:
        return grading.Graded(library_name, version, adapter, problem="no selected case is one it reads")
    timeout = args.timeout if args.timeout > 0 else CLIENT_TIMEOUT
    name = f"{library_name} {version}"
    _say(f"{step} {name}: {client.name} through the replay server")
    matrix = Matrix(mine)
    cases = list(matrix.all())
    progress = CaseProgress({case.id: 1 for case in cases}, label=f"{step} {name}")
    start = time.perf_counter()
    try:
        label, results = clients.run_cases(
            table, client, cases, matrix.by_name, jobs=args.jobs or 1, timeout=timeout,
            advance=lambda case_id: progress.advance(note=case_id),
        )  # fmt: skip
    except (OSError, UsageError) as exc:
        return grading.Graded(library_name, version, adapter, problem=f"the replay server failed: {exc}")
    finally:
        progress.close()
    report = Report(label, results, seconds=time.perf_counter() - start)
    _finished(step, name, report)
    document = {**report_to_dict(report, mine), "card_adapter": adapter}
    write_json(shared_values(document), reports / f"{client.name}-{version}.json")
    return grading.Graded(library_name, version, adapter, report=document)
