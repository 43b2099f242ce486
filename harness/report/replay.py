"""The commands that run one case again, as printed under a failure, in the HTML panel and by
the pytest plugin. Each holds every option the case depends on (accumulator, cassettes,
scenario files, seeds, dialects, strict), so it reproduces when pasted as printed.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from harness.matrix.selection import Selection
from harness.mutate.scenario import is_scenario_path

__all__ = ["k_expression", "pytest_command", "pytest_item_name", "pytest_options", "replay_command"]

GATEWAY: Final = "gateway:"  # a gateway's label: `gateway:A->B:CMD` (harness.gateway.runner)
# What pytest's `-k` grammar takes as one identifier (`_pytest/mark/expression.py`).
_K_IDENT: Final = re.compile(r"[\w:+\-.\[\]\\/]+")
_K_RESERVED: Final = frozenset({"and", "or", "not", "True", "False", "None"})


def _quoted(argv: Sequence[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


def replay_command(
    spec: str, case_id: str, selection: Selection | None = None, *, strict: bool = False
) -> str:
    """`toolstream check` on just this case (a gateway's label, `gateway:A->B:CMD`, as its options)."""
    options = selection.replay_options() if selection is not None else []
    judged = ["--accumulator", spec]
    if spec.startswith(GATEWAY):
        command, source, target = _gateway(spec)
        judged = ["--gateway", command, "--from", source, "--to", target]
    argv = ["toolstream", "check", *judged, *options, "--case", case_id]
    return _quoted(argv + (["--strict"] if strict else []))


def _gateway(spec: str) -> tuple[str, str, str]:
    """A gateway's label `gateway:A->B:CMD` as (CMD, A, B)."""
    hop, _, command = spec[len(GATEWAY) :].partition(":")
    source, _, target = hop.partition("->")
    return command, source, target


def pytest_item_name(spec: str) -> str:
    """An accumulator spec as a pytest node name: no spaces, no `::`, no brackets."""
    cleaned = "".join(c if c.isalnum() or c in "._-:" else "-" for c in spec).replace("::", "-")
    return cleaned.strip("-") or "accumulator"


def k_expression(name: str) -> str:
    """A `-k` expression that selects the item called `name` (a substring match): the name itself
    when pytest's grammar takes it whole, else its pieces joined by `and`."""
    pieces = [p for p in _K_IDENT.findall(name) if p not in _K_RESERVED]
    return " and ".join(pieces) if pieces else name


def pytest_options(selection: Selection | None, *, strict: bool = False) -> list[str] | None:
    """The `--toolstream-*` options that rebuild a selection's matrix in pytest; None when the
    plugin has no option for it (several cassette roots, a scenarios folder, an explicit case list)."""
    selection = selection or Selection()
    if len(selection.cassettes) > 1 or selection.scenarios_dir is not None:
        return None
    out: list[str] = []
    for item in selection.cassettes:
        out += ["--toolstream-cassette-dir", str(Path(item).resolve())]
    if selection.scenarios:
        named = [str(Path(s).resolve()) if is_scenario_path(s) else s for s in selection.scenarios]
        out += ["--toolstream-scenarios", ",".join(named)]
    for dialect in selection.dialects:
        out += ["--toolstream-dialect", dialect]
    if selection.seeds is not None:
        out += ["--toolstream-seeds", str(selection.seeds)]
    if strict:
        out.append("--toolstream-strict")
    return out


def pytest_command(
    selection: Selection | None,
    case_id: str,
    *,
    strict: bool = False,
    spec: str | None = None,
    compare: tuple[str, str] | None = None,
    test: tuple[str, str] | None = None,
) -> str | None:
    """`pytest ... -k ...` running just this case: the item `--toolstream-accumulator spec` (or
    `--toolstream-compare A B`) makes for it, or `test` = (file, test name) of a `toolstream_case`
    test. None when the selection cannot be said in pytest options."""
    options = pytest_options(selection, strict=strict)
    if options is None:
        return None
    argv = ["pytest"]
    if test is not None:
        argv.append(test[0])
        name = test[1]
    elif compare is not None:
        argv += ["--toolstream-compare", *compare]
        name = f"compare[{case_id}]"
    elif spec is not None and spec.startswith(GATEWAY):
        command, source, target = _gateway(spec)
        argv += ["--toolstream-gateway", command, "--toolstream-gateway-from", source]
        argv += ["--toolstream-gateway-to", target]
        name = f"gateway[{case_id}]"
    else:
        assert spec is not None
        argv += ["--toolstream-accumulator", spec]
        name = f"{pytest_item_name(spec)}[{case_id}]"
    return _quoted([*argv, *options, "-k", k_expression(name)])
