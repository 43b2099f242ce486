"""`toolstream cassettes`: where the bundled corpus lives, and what it holds per dialect."""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

from harness.cassettes import corpus
from harness.cassettes import format as cassettes
from harness.text.terminal import table


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="list and locate the bundled cassettes (path, dialect, counts)",
        description="Print where the bundled corpus is installed and its cassettes per dialect. "
        "Case ids name a cassette by its path below this folder (openai-chat/parallel-2).",
    )
    parser.add_argument("--path", action="store_true", help="print only the corpus folder")
    parser.add_argument("--list", action="store_true", help="one line per cassette: its name and dialect")
    return parser


def run(args: argparse.Namespace) -> int:
    root = corpus.bundled("cassettes")
    if args.path:
        print(root)
        return 0
    found = []
    for path in corpus.cassette_paths([root]):
        cassette = cassettes.load(path)
        name = path.relative_to(root).with_suffix("").as_posix()
        found.append((name, cassette.dialect or "?", len(cassette.interactions)))
    if args.list:
        print(table(["cassette", "dialect", "interactions"], found))
        return 0
    per_dialect = Counter(dialect for _, dialect, _ in found)
    streams: Counter[str] = Counter()
    for _, dialect, n in found:
        streams[dialect] += n
    print(f"bundled corpus: {root}")
    print(f"(each dialect's cassettes are in its folder: {root / 'DIALECT'})")  # whole, never clipped
    rows = [(d, per_dialect[d], streams[d]) for d in sorted(per_dialect)]
    print(table(["dialect", "cassettes", "interactions"], rows))
    print(f"\n{len(found)} cassettes: `--list` names each; `toolstream show NAME` shows one")
    return 0
