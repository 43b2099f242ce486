"""`toolstream report-card`: the matrix over released libraries, one side environment per version,
summed up as report-card.md, .html and .json (and, with `--readme`, the README's two blocks)."""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.card import environments, grading, render
from harness.card.environments import EnvironmentProblem, SideEnvironment
from harness.card.libraries import LIBRARIES, Library, library
from harness.check.accumulators import builtin_names
from harness.check.runner import run_matrix
from harness.check.selection import Selection, build_case
from harness.cli import arguments
from harness.cli.check import add_selection_options, selection_of, timeout_of
from harness.errors import UsageError
from harness.report.results import report_to_dict, selection_dict, write_json
from harness.report.terminal import Progress

DEFAULT_VERSIONS = ("oldest", "newest")


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
        help=f"libraries to grade (known: {', '.join(LIBRARIES)}; default: those with an adapter here)",
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
        "--readme",
        type=Path,
        metavar="FILE",
        help="also rewrite this README's generated blocks (built-in adapters, report card)",
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
    write_json(card, out / "report-card.json")
    (out / "report-card.md").write_text(render.markdown(card), encoding="utf-8")
    (out / "report-card.html").write_text(render.page(card), encoding="utf-8")
    if args.readme is not None:
        render.update_readme(args.readme, card)
    print(render.card_block(card))
    print(
        f"\nwrote {out / 'report-card.md'}, .html and .json"
        + (f"; updated {args.readme}" if args.readme else "")
    )
    return 0


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
    names = sorted(LIBRARIES, key=len, reverse=True)  # `langchain-core-1.2.13` is langchain-core's
    for path in sorted(folder.glob("*.json")):
        name = next((n for n in names if path.stem.startswith(n + "-")), None)
        if name is None:
            raise UsageError(f"{path}: not named LIBRARY-VERSION.json (libraries: {', '.join(LIBRARIES)})")
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise UsageError(f"{path}: not JSON ({exc})") from None
        if not isinstance(report, dict) or not isinstance(report.get("cases"), list):
            raise UsageError(f"{path}: cases: not a report of `toolstream check --json`")
        lib = LIBRARIES[name]
        graded.append(grading.Graded(lib.name, path.stem[len(name) + 1 :], lib.adapter, report=report))
    if not graded:
        raise UsageError(f"{folder}: no LIBRARY-VERSION.json report in it")
    selections = [g.report.get("selection") or {} for g in graded if g.report is not None]
    said = {k: v for k, v in selections[0].items() if v and k != "dialects"}
    return grading.card(graded, date=datetime.date.today().isoformat(), selection=said)


def _libraries(args: argparse.Namespace) -> list[Library]:
    if args.libraries:
        return [library(name) for name in dict.fromkeys(args.libraries)]
    return [lib for lib in LIBRARIES.values() if lib.adapter in builtin_names()]


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
            versions = environments.pick_versions(lib.name, _versions(args, lib))
        except EnvironmentProblem as exc:
            targets.append(grading.Graded(lib.name, "?", lib.adapter, problem=str(exc)))
            continue
        for version in versions:
            try:
                targets.append(environments.build(lib, version, say=_say))
            except EnvironmentProblem as exc:
                targets.append(grading.Graded(lib.name, version, lib.adapter, problem=str(exc)))
    return targets


def _grade(args: argparse.Namespace) -> dict[str, Any]:
    selection = selection_of(args)
    timeout = timeout_of(args)
    libraries = _libraries(args)
    targets = _targets(args, libraries)
    reports = args.out / "reports"
    graded: list[grading.Graded] = []
    for n, target in enumerate(targets, start=1):
        if isinstance(target, grading.Graded):
            _say(f"[{n}/{len(targets)}] {target.library} {target.version}: {target.problem}")
            graded.append(target)
            continue
        lib = target.library
        _say(f"[{n}/{len(targets)}] {lib.name} {target.version}: {lib.adapter} in {target.python}")
        graded.append(_grade_one(target, selection, timeout, args.jobs, reports))
    return grading.card(graded, date=datetime.date.today().isoformat(), selection=_said(selection))


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
    env: SideEnvironment, selection: Selection, timeout: float | None, jobs: int, reports: Path
) -> grading.Graded:
    lib = env.library
    dialects = [d for d in lib.dialects if not selection.dialects or d in selection.dialects]
    if not dialects:
        return grading.Graded(
            lib.name, env.version, lib.adapter, problem="no selected dialect is one it reads"
        )
    try:
        environments.check_adapter(env)
    except EnvironmentProblem as exc:
        return grading.Graded(lib.name, env.version, lib.adapter, problem=str(exc))
    mine = replace(selection, dialects=tuple(dialects), cases=_cases_read(selection, dialects))
    if selection.cases and not mine.cases:
        return grading.Graded(lib.name, env.version, lib.adapter, problem="no selected case is one it reads")
    progress = Progress(0, label=f"{lib.name} {env.version}")
    try:
        report = run_matrix(env.spec(), mine, timeout=timeout, jobs=jobs, progress=progress)
    except UsageError as exc:
        return grading.Graded(lib.name, env.version, lib.adapter, problem=str(exc))
    finally:
        progress.close()
    document = report_to_dict(report, mine)
    write_json(document, reports / f"{lib.name}-{env.version}.json")
    return grading.Graded(lib.name, env.version, lib.adapter, report=document)
