"""`toolstream scenarios`: the scenario library (or any scenario files) as a readable table."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from harness import mutate as mutations
from harness.mutate.scenario import load_scenarios
from harness.text.terminal import table
from harness.wire import dialects


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="list scenarios with their descriptions and dialects",
        description="List scenarios (default: the bundled library) or, with --mutations, every mutation.",
    )
    parser.add_argument("paths", nargs="*", metavar="SCENARIO", help="scenario files or folders")
    parser.add_argument("--dialect", help="only scenarios that apply to this dialect")
    parser.add_argument("--mutations", action="store_true", help="list the registered mutations instead")
    parser.add_argument(
        "--quirks",
        action="store_true",
        help="list the real deviations mutations imitate: quirk class, source, invariants broken",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    if args.quirks:
        # A listing, not a table: sources and codes are both long and both worth reading whole.
        for name in mutations.names():
            cls = mutations.get(name)
            if cls.imitates:
                print(f"{name}: breaks {' '.join(cls.breaks) or 'nothing'}")
                print("".join(f"  {quirk.id}  {quirk.source}\n" for quirk in cls.imitates), end="")
        return 0
    if args.mutations:
        listing: list[tuple[object, ...]] = []
        for name in mutations.names():
            cls = mutations.get(name)
            doc = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
            listing.append((name, cls.level, cls.meaning, _quirk_ids(cls.imitates), doc))
        print(table(("MUTATION", "LEVEL", "MEANING", "QUIRKS", "IMITATES"), listing))
        return 0
    found = load_scenarios(args.paths or None)
    if args.dialect:
        found = [s for s in found if s.applies_to(args.dialect)]
    rows = [
        (
            s.name,
            _dialects(s.dialects),
            len(s.seeds),
            s.meaning,
            _quirk_ids(quirk for step in s.steps for quirk in step.imitates),
            s.description,
        )
        for s in found
    ]
    print(table(("SCENARIO", "DIALECTS", "SEEDS", "MEANING", "QUIRKS", "DESCRIPTION"), rows))
    return 0


def _quirk_ids(quirks: Iterable[mutations.Quirk]) -> str:
    """The quirk classes imitated, each once (`-`: every stream stays one the provider could send)."""
    return ",".join(dict.fromkeys(quirk.id for quirk in quirks)) or "-"


def _dialects(chosen: tuple[str, ...] | None) -> str:
    """`all`, a short list, or `all but X` when only one or two are left out."""
    if chosen is None:
        return "all"
    left_out = [name for name in dialects.names() if name not in chosen]
    if len(chosen) > 2 and len(left_out) <= 2:
        return "all but " + ",".join(left_out)
    return ",".join(chosen)
