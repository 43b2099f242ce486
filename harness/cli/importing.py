"""`toolstream import`: turn a raw stream body, a vcrpy cassette or a chunk log into a cassette."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from harness.cassettes import format as cassettes
from harness.cli import arguments, redaction
from harness.errors import UsageError
from harness.record import importer


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="import a raw stream body, a vcrpy cassette or a JSON-lines chunk log as a cassette",
        description=(
            "Turn your own recording into a cassette: an SSE body (.sse/.txt), an NDJSON body "
            "(.ndjson/.jsonl), raw eventstream bytes (.bin), a vcrpy / pytest-recording cassette "
            "(.yaml), or JSON lines of event payloads. The format and dialect are guessed when not given."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="the recording to import")
    parser.add_argument(
        "--from", dest="fmt", metavar="FORMAT", help=f"the input format: {', '.join(importer.FORMATS)}"
    )
    parser.add_argument("--dialect", metavar="D", help="the provider dialect (default: detected)")
    parser.add_argument(
        "-o",
        "--output",
        type=arguments.output_file,
        metavar="OUT.yaml",
        help="cassette to write (default: beside FILE, its suffix replaced by .yaml; a .yaml/.yml "
        "FILE, such as a vcrpy cassette, gives FILE-STEM.toolstream.yaml, the name the pytest "
        "plugin looks for)",
    )
    parser.add_argument(
        "--split",
        metavar="HOW",
        default="events",
        help="events (one chunk per event, the default) or whole (one chunk per body)",
    )
    redaction.add_options(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    source = Path(args.file)
    out = Path(args.output) if args.output else importer.default_output(source)
    if os.path.realpath(out) == os.path.realpath(source):  # never raises: a symlink loop is read below
        raise UsageError(f"{out}: the output would overwrite the input; give another -o")
    cassette = importer.import_file(
        source, fmt=args.fmt, dialect=args.dialect, split=args.split, redact=redaction.from_args(args)
    )
    cassette.name = out.stem
    cassettes.save(cassette, out)
    reads = sum(len(item.response.chunks) for item in cassette.interactions)
    dialect = cassette.dialect or "per request"
    print(f"wrote {out}: {len(cassette.interactions)} interaction(s), dialect {dialect}, {reads} chunks")
    return 0
