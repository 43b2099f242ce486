"""`toolstream report-card`: the matrix over released libraries, one side environment per version,
summed up as report-card.md, .html and .json (and, with `--page`, the two generated blocks of
docs/report-card.md). A shell over `harness.card.run`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.card import render
from harness.card.clients import CLIENTS
from harness.card.gateways import GATEWAYS
from harness.card.libraries import LIBRARIES
from harness.card.run import Wanted, grade, load_card, regrade, write_card
from harness.cli import arguments
from harness.cli.check import add_selection_options, selection_of, timeout_of
from harness.errors import UsageError


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
        help=f"libraries to grade (known: {', '.join(LIBRARIES)}), clients run through the replay "
        f"server ({', '.join(CLIENTS)}; each graded at the version installed beside it) and gateways "
        f"judged as translators ({', '.join(GATEWAYS)}; at the release in their side environment); "
        "default: every library with an adapter here, every client and every gateway",
    )  # fmt: skip
    parser.add_argument(
        "--no-clients", action="store_true",
        help="leave the Node clients out (their rows take minutes: each case starts a node process)",
    )  # fmt: skip
    parser.add_argument(
        "--no-gateways", action="store_true",
        help="leave the gateways out (each row starts the gateway and asks it every case of its dialect)",
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
        type=Path,
        metavar="FILE",
        help="also rewrite the generated blocks (built-in adapters, report card) of this Markdown page: "
        "docs/report-card.md",
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
    parser.add_argument(
        "--no-cache", "--fresh", dest="no_cache", action="store_true",
        help="grade every row again: stored verdicts are not read (and are written anew); by default "
        "a row whose library, environment, harness code and selection are unchanged reuses them",
    )  # fmt: skip
    add_selection_options(parser)
    return parser


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def run(args: argparse.Namespace) -> int:
    if args.from_json is not None:
        card = load_card(args.from_json)
    elif args.from_reports is not None:
        card = regrade(args.from_reports)
    else:
        card = grade(
            _wanted(args), selection_of(args), timeout=timeout_of(args), reports=args.out / "reports",
            slots=args.jobs, read=not args.no_cache,
        )  # fmt: skip
    write_card(card, args.out, page=args.page)
    print(render.card_block(card))
    updated = f"; updated {args.page}" if args.page else ""
    print(f"\nwrote {args.out / 'report-card.md'}, .html and .json{updated}")
    return 0


def _wanted(args: argparse.Namespace) -> Wanted:
    pythons = [sys.executable] if args.use_current_env else []
    for env in args.env:
        if not (Path(env) / "bin" / "python").exists():
            raise UsageError(f"--env: {env}: no bin/python (not a virtualenv)")
        pythons.append(str(Path(env) / "bin" / "python"))
    return Wanted(
        names=tuple(args.libraries or ()), clients=not args.no_clients, gateways=not args.no_gateways,
        versions=tuple(args.versions or ()), pythons=tuple(pythons),
    )  # fmt: skip
