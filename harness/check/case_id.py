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
from pathlib import Path
from typing import Final

from harness.check.selection import ORIGINAL, Matrix, Selection
from harness.errors import HarnessError, UsageError, did_you_mean
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

__all__ = ["FoundCase", "StepEffect", "find_case", "is_case_id", "step_effects"]

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
    for path in matrix.cassette_files():
        ident = cassette_id(path, matrix.roots)
        known.append(ident)
        if wanted not in (ident, path.with_suffix("").name):
            continue
        for source in matrix.sources(path):
            if source.id.partition("#")[2] != name.partition("#")[2]:
                continue
            found = cases_for(source, scenario, int(seed_text[1:]), rest[0] if rest else None)
            if not found:
                raise UsageError(
                    f"case id {case_id!r}: scenario {scenario.name} does not apply to {source.id} "
                    f"({source.dialect.name}{', no such point' if rest else ''})"
                )
            return FoundCase(found[0], source, scenario)
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
