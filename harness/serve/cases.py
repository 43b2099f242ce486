"""The cases a selection names, built once for the server to hold."""

from __future__ import annotations

from harness.check.runner import Selection, _Matrix, build_selected_case
from harness.mutate.scenario import Case

__all__ = ["cases_of"]


def cases_of(selection: Selection) -> list[Case]:
    """Every case of a selection, in the runner's order (case ids: exactly those)."""
    if selection.cases:
        return [build_selected_case(case_id, selection) for case_id in selection.cases]
    # The runner enumerates selections privately today; its split gives this a public name.
    matrix = _Matrix(selection)
    return [case for unit in matrix.units() for case in matrix.cases(unit)]
