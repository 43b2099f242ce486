"""`toolstream explain CASE_ID`: why a case expects what it expects (`harness.report.explanation`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Final

from harness import bounded
from harness.errors import UsageError
from harness.matrix.case_id import find_in_selection
from harness.mutate.case import Case
from harness.mutate.retarget import offered_tools, retarget
from harness.report.explanation import explain
from harness.text.escape import terminal
from harness.text.terminal import output_width

_MAX_REQUEST: Final = 16 << 20  # a request body with its tools and conversation


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="why a case expects what it expects: streams side by side, steps, class and oracle rule",
        description="Explain a case, named by its id as check prints it "
        "(<cassette>::<scenario>::s<seed>[::point]): the recorded and the mutated stream side by side "
        "with the changed events marked, what each mutation did, the case's class (spec, quirk, "
        "policy) and the rule of docs/oracle.md that gives the expected state and calls.",
    )
    parser.add_argument(
        "case_id", metavar="CASE_ID", help="a case id, e.g. openai-chat/parallel-2::original::s0"
    )
    parser.add_argument(
        "--cassettes", nargs="+", default=[], metavar="PATH",
        help="the cassette files or folders the case comes from (default: the bundled corpus)",
    )  # fmt: skip
    parser.add_argument(
        "--tools", type=Path, metavar="FILE",
        help="a request body (JSON) whose tools the case is moved onto, as the replay server retargets it:"
        " the mapping, the arguments drawn for each tool and the expected outcome that follows",
    )  # fmt: skip
    return parser


def run(args: argparse.Namespace) -> int:
    found = find_in_selection(args.case_id, args.cassettes)
    print(terminal(explain(found, width=output_width())))  # piped: no event cut to a width
    if args.tools is not None:
        print(terminal(_retargeted(found.case, args.tools)))
    return 0


def _retargeted(case: Case, path: Path) -> str:
    """What retargeting makes of `case` for the request body in `path`: the mapping (or why the
    recording is served) and the expected calls that follow."""
    try:
        body = bounded.loads(bounded.read(path, _MAX_REQUEST))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (OSError, ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: not a JSON request body ({str(exc).splitlines()[0][:200]})") from None
    if not isinstance(body, dict):
        raise UsageError(f"{path}: not a JSON request body (an object with the request's tools)")
    moved = retarget(case, offered_tools(case.dialect, body))
    lines = ["", f"Retargeted onto {path.name}'s tools: {moved.describe()}"]
    for call in moved.case.expected.tool_calls:
        lines.append(f"  expected call {call.name} {json.dumps(call.arguments, sort_keys=True)}")
    return "\n".join(lines)
