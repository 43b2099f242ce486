"""`toolstream probe`: which catalogued stream shapes a running server produces, whether each is
within its protocol, and which graded library releases fail on them; exit 1 when the server
breaks the protocol."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli import arguments
from harness.errors import UsageError
from harness.record import recipes
from harness.text.escape import terminal_line
from harness.text.terminal import table

if TYPE_CHECKING:
    from harness.wire.dialects import Shape


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="probe a running server: the stream shapes it produces and which libraries break on them",
        description=(
            "Send the probe recipes (one call, parallel calls, parallel calls to one function, a call "
            "without arguments, one without then one with, many calls, a call after text) to a running "
            "server, record each answer as a cassette (redacted), and report the catalogue classes its "
            "streams show, whether each is within the protocol, and the graded library releases that "
            "fail on each (the report card's stored verdicts). Exit 0 when every stream keeps its "
            "protocol, 1 when one breaks it, 2 on bad input (a server that cannot be reached)."
        ),
    )
    parser.add_argument(
        "--base-url", required=True, metavar="URL", help="the server's API root (OpenAI: …/v1)"
    )
    parser.add_argument("--dialect", required=True, metavar="D", help="the API it speaks (openai-chat, ...)")
    parser.add_argument("--model", default="default", metavar="M", help="the model to ask for")
    parser.add_argument(
        "--recipes",
        nargs="+",
        default=list(recipes.PROBE_RECIPES),
        metavar="NAME",
        help=f"the recipes to send (default: {' '.join(recipes.PROBE_RECIPES)})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("toolstream-probe"),
        metavar="DIR",
        help="where the cassettes go, one per recipe (default: toolstream-probe/)",
    )
    parser.add_argument(
        "--timeout", type=arguments.seconds, default=120.0, metavar="S", help="HTTP timeout per recipe"
    )
    parser.add_argument("--json", type=arguments.output_file, metavar="FILE", help="findings as JSON")
    return parser


def run(args: argparse.Namespace) -> int:
    from harness.card.exposure import failing_releases
    from harness.gateway.probe import probe
    from harness.report.results import write_json
    from harness.wire import dialects

    if args.dialect not in dialects.names():
        raise UsageError(f"--dialect: unknown dialect {args.dialect!r}; known: {', '.join(dialects.names())}")
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out}: not a folder")
    args.out.mkdir(parents=True, exist_ok=True)
    found = probe(
        args.base_url,
        args.dialect,
        model=args.model,
        out=args.out,
        recipes=args.recipes,
        timeout=args.timeout,
    )
    codes = dialects.get(args.dialect).shape_codes
    seen: dict[str, list[str]] = {}
    for one in found:
        for code in one.shapes:
            seen.setdefault(code, []).append(one.recipe)
    releases = failing_releases(seen)
    where = terminal_line(args.base_url)
    print(f"probe {args.dialect} at {where}: {len(found)} recipes, cassettes in {args.out}")
    rows = [
        [
            one.recipe,
            "whole" if one.complete else f"cut ({terminal_line(one.error or '')})",
            " ".join(one.shapes) or "-",
            len(one.violations),
        ]
        for one in found
    ]
    print(table(["recipe", "stream", "classes", "protocol breaks"], rows))
    if not codes:
        print(f"(the {args.dialect} dialect has no class detectors yet: only its protocol rules are checked)")
    if seen:
        print("\nclasses seen:")
        class_rows = [
            [
                code,
                codes[code].what,
                "within" if codes[code].within else "OUTSIDE",
                ", ".join(seen[code]),
                ", ".join(releases[code]) or "-",
            ]
            for code in sorted(seen)
        ]
        print(table(["class", "what", "protocol", "recipes", "graded releases that fail on it"], class_rows))
    broken = [(one.recipe, str(v)) for one in found for v in one.violations]
    outside = [code for code in seen if not codes[code].within]
    for code in outside:
        broken.append((", ".join(seen[code]), f"class {code} is outside the protocol: {codes[code].what}"))
    broken += [(one.recipe, one.error) for one in found if one.error and one.complete]
    if broken:
        print("\nthe server breaks the protocol:")
        for recipe, said in broken:
            print(f"  {recipe}: {terminal_line(said or '')}")
    if args.json:
        write_json(_as_json(found, seen, codes, releases), args.json)
    return 1 if broken else 0


def _as_json(
    found: Any, seen: dict[str, list[str]], codes: Mapping[str, Shape], releases: dict[str, list[str]]
) -> dict[str, Any]:
    return {
        "recipes": [
            {
                "recipe": one.recipe,
                "cassette": one.cassette.name,
                "complete": one.complete,
                "error": one.error,
                "classes": one.shapes,
                "violations": [str(v) for v in one.violations],
            }
            for one in found
        ],
        "classes": {
            code: {
                "what": codes[code].what,
                "within_protocol": codes[code].within,
                "recipes": seen[code],
                "failing_releases": releases[code],
            }
            for code in sorted(seen)
        },
    }
