"""From a case id as `check` prints it (`<cassette>/<name>::<scenario>::s<seed>[::point]`) to the
case, for `show`, `mutate` and `explain`: in the bundled corpus, under given cassette folders,
or in a cassette file named by its path (`my/cassettes/chat.yaml::original::s0`).

Kept apart from `selection.py`: this is about finding one case a user typed, with the messages
that help when it is misspelt, not about building a matrix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Final

from harness.cassettes import corpus
from harness.errors import HarnessError, UsageError, did_you_mean
from harness.matrix.selection import ORIGINAL, Matrix, Selection
from harness.mutate import Mutation
from harness.mutate.scenario import (
    SEPARATOR,
    Case,
    RecordedStream,
    Scenario,
    cases_for,
    cassette_id,
    find_scenario,
    load_scenarios,
    step_rng,
)
from harness.wire.dialects.base import Event

__all__ = ["FoundCase", "StepEffect", "find_case", "find_in_selection", "is_case_id", "step_effects"]

_SEED: Final = re.compile(r"s\d+")


def is_case_id(text: str) -> bool:
    """Whether `text` reads as a case id (and not as a file path)."""
    parts = text.split(SEPARATOR)
    return len(parts) in (3, 4) and bool(_SEED.fullmatch(parts[2]))


@dataclass(frozen=True)
class FoundCase:
    """A case, the recorded stream it was made from and the scenario that made it."""

    case: Case
    source: RecordedStream
    scenario: Scenario


def find_case(case_id: str, cassettes: Sequence[str] = ()) -> FoundCase:
    """The case `case_id` names, from `cassettes` (files or folders; default: the bundled corpus,
    or the file the id's cassette part names). A `UsageError` says what is wrong and the closest
    cassette or scenario name."""
    if not is_case_id(case_id):
        raise UsageError(f"{case_id!r} is not a case id: expected <cassette>::<scenario>::s<seed>[::point]")
    name, scenario_name, seed_text, *rest = case_id.split(SEPARATOR)
    roots = tuple(cassettes)
    base, hash_, number = name.partition("#")
    as_file = next((Path(p) for p in (base, base + ".yaml", base + ".yml") if Path(p).is_file()), None)
    if not roots and as_file is not None:
        roots = (str(as_file),)
        name = as_file.with_suffix("").name + hash_ + number
    matrix = Matrix(Selection(cassettes=roots))
    scenario = _scenario(scenario_name)
    wanted = name.partition("#")[0]
    known: list[str] = []
    streams: list[str] = []  # the recorded streams of the file the id names, when not the one it names
    for path in matrix.cassette_files():
        ident = cassette_id(path, matrix.roots)
        known.append(ident)
        if wanted not in (ident, path.with_suffix("").name):
            continue
        for source in matrix.sources(path):
            if source.id.partition("#")[2] != name.partition("#")[2]:
                streams.append(source.id)
                continue
            found = cases_for(source, scenario, int(seed_text[1:]), rest[0] if rest else None)
            if not found:
                raise UsageError(
                    f"case id {case_id!r}: scenario {scenario.name} does not apply to {source.id} "
                    f"({source.dialect.name}{', no such point' if rest else ''})"
                )
            return FoundCase(found[0], source, scenario)
    if streams:  # a conversation's turns are `name#N`, a file of one source is `name`
        listed = ", ".join(streams)
        raise UsageError(f"case id {case_id!r}: no recorded stream {name!r}; that file's are {listed}")
    where = ", ".join(roots) if roots else "the bundled corpus (toolstream cassettes lists it)"
    hint = did_you_mean(wanted, known)
    raise UsageError(f"case id {case_id!r}: no cassette {wanted!r} in {where}{hint}")


def _scenario(name: str) -> Scenario:
    if name == ORIGINAL.name:
        return ORIGINAL
    try:
        return find_scenario(name, load_scenarios())
    except HarnessError as exc:
        raise UsageError(str(exc)) from None


@dataclass(frozen=True)
class StepEffect:
    """What one step of a scenario did to the stream: the events before and after it."""

    step: Mutation
    before: tuple[Event, ...]
    after: tuple[Event, ...]


def step_effects(found: FoundCase) -> list[StepEffect]:
    """The scenario's steps replayed one by one on the recorded stream, as `run_pipeline` does
    (same RNG per step and seed; a sweep step takes the case's point)."""
    source, case = found.source, found.case
    stream = source.stream
    out = []
    for position, step in enumerate(found.scenario.steps):
        rng = step_rng(case.seed, position, step)
        points = step.sweep(stream, rng)
        if points is None:
            after = step.apply(stream, rng)
        else:
            chosen = [m for p, m in points if case.point is None or p == case.point][:1]
            if not chosen:
                break
            after = chosen[0].apply(stream, step_rng(case.seed, position, step))
        out.append(StepEffect(step, stream.events, after.events))
        stream = after
    return out


def find_in_selection(case_id: str, roots: Sequence[str]) -> FoundCase:
    """The case, read only from the selection: the `--cassettes` files and folders, else the bundled
    corpus or a cassette file below the current folder. An id whose cassette part climbs out
    (`..`, an absolute path, a symlink out) is a `UsageError`, its file never read."""
    name = case_id.split(SEPARATOR)[0].partition("#")[0]
    given = PurePath(name)
    if given.is_absolute() or ".." in given.parts or ".." in name.split("\\"):
        raise UsageError(f"case id {case_id!r}: {_OUTSIDE}")
    if roots:
        allowed = [corpus.located(root).resolve() for root in roots]
    else:
        allowed = [corpus.bundled("cassettes").resolve(), Path.cwd().resolve()]
        named = next((Path(name + ext) for ext in ("", ".yaml", ".yml") if Path(name + ext).is_file()), None)
        if named is not None and not _within(named, allowed):
            raise UsageError(f"case id {case_id!r}: {_OUTSIDE}")
    found = find_case(case_id, roots)
    if not _within(found.source.path, allowed):
        raise UsageError(f"case id {case_id!r}: {_OUTSIDE}")
    return found


_OUTSIDE = (
    "names a file outside the cassettes shown (the --cassettes paths, the bundled corpus, "
    "the current folder): give its folder with --cassettes"
)


def _within(path: Path, roots: Sequence[Path]) -> bool:
    """Whether `path`, its symlinks followed, is one of `roots` or below one."""
    resolved = path.resolve()
    return any(resolved == root or resolved.is_relative_to(root) for root in roots)
