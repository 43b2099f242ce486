"""What each real client in examples/clients/ gets wrong, as the table of docs/clients.md, by one
command.

    python examples/clients/table.py --run     # run every installed client, store, write the table
    python examples/clients/table.py           # write the table from the stored results
    python examples/clients/table.py --rerun-errors   # re-judge only the stored `error` cases
    python examples/clients/table.py --cases-of NAME ...   # run (again) the cases of these cassettes
    python examples/clients/table.py --missing  # run the cases added to the matrix since the stored run

`--run` runs each client with `toolstream check --client` (one replay server, `-j` programs at
once, 8 by default) over its dialect's whole matrix (every bundled
cassette of that dialect under every shipped scenario: 1859 openai-chat cases, 1598 anthropic),
stores the verdicts and what the run cost (wall and CPU seconds) in `results.json` beside this
file, and writes the table between the markers in docs/clients.md. A client whose toolchain is
not installed keeps its stored results.

`--cases-of anthropic/thinking-parallel ...` runs each installed client of those cassettes' dialect
on every case made from them, puts the rows in the stored results in the matrix's order (new cases
added, stored ones replaced), and keeps the row's recorded cost with a note (after a cassette is
added, or the oracle starts judging something those cassettes carry: the reasoning state a
follow-up sends back).

`--rerun-errors` runs again only the cases of each stored row whose verdict is `error` (after a
change to the oracle that can only move those, such as the raise rule of `harness.oracle.evidence`),
replaces their entries, and keeps the row's recorded cost (its run is still the one measured): the
row says how many cases were re-judged and when (`rejudged`, shown in the cost column). A row whose
installed versions are not the stored ones is left as it is (re-judge it with `--run`).

Where the time goes: each case starts the program afresh, so a run costs the program's start-up
(Node and its SDK, or Python and its framework) once per case, which is CPU; on top of that, wall
time the program spends waiting (an SDK's retry backoff, a deadline) costs no CPU, so running
`-j` programs at once fills it. The cost column says both, as measured on the machine that ran it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from harness import Selection, cases, client_catalogue, signature

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RESULTS = HERE / "results.json"
PAGE = ROOT / "docs" / "clients.md"
BEGIN, END = "<!-- clients-table:begin -->", "<!-- clients-table:end -->"

# `--selection`: one seed of these scenarios per dialect, for a client whose whole matrix costs
# too much on the machine at hand (the stored entry says so, and the table shows it).
SELECTION = {
    "openai-chat": (
        "original", "parallel-calls-share-index-0", "A2-index-restarts-per-chunk", "A5-id-on-every-chunk",
        "B3-name-repeated-in-full", "D6-missing-finish-reason", "D7-truncated-mid-args",
        "D8-mid-stream-error", "F3-one-byte-reads", "idless-continuation-after-empty-args",
    ),
    "anthropic": (
        "original", "interleaved-tool-blocks", "B7-empty-args-fragment", "D10-duplicate-start-events",
        "D7-truncated-mid-args", "D8-mid-stream-error", "F3-one-byte-reads", "C5-text-blocks-without-start",
    ),
}  # fmt: skip

# The client programs beside this file: the catalogue is the harness's (the report card runs them too).
CATALOGUE = client_catalogue(ROOT)
CLIENTS = CATALOGUE.clients
install_command = CATALOGUE.install_command
installed = CATALOGUE.installed
command = CATALOGUE.command


def run(
    name: str,
    jobs: int = 8,
    timeout: float = 30.0,
    scenarios: tuple[str, ...] | None = None,
    seeds: int | None = None,
    cases: tuple[str, ...] = (),
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run one client over its dialect's whole matrix (or these scenarios' cases, `seeds`: their
    first N seeds; or exactly these cases) with `toolstream check --client`: one plain row per
    case, and what the run cost (`wall_s`; `cpu_s`, the CPU time of the command and its programs)."""
    import resource

    def cpu() -> float:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return children.ru_utime + children.ru_stime

    argv = [sys.executable, "-m", "harness", "check", "--client", command(name)]
    argv += ["--dialect", CLIENTS[name][2], "-j", str(jobs), "--timeout", f"{timeout:g}"]
    argv += [*(["--scenarios", *scenarios] if scenarios else []), *(["--seeds", str(seeds)] if seeds else [])]
    argv += [word for case in cases for word in ("--case", case)]
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "report.json"
        cpu_start, start = cpu(), time.perf_counter()
        done = subprocess.run([*argv, "--json", str(out)], stdout=subprocess.DEVNULL, check=False)
        wall, spent = time.perf_counter() - start, cpu() - cpu_start
        if done.returncode not in (0, 1):  # 1: a case failed, what the table is about
            raise SystemExit(f"{name}: toolstream check exited {done.returncode}")
        report = json.loads(out.read_text(encoding="utf-8"))
    cost = {"jobs": jobs, "wall_s": round(wall, 1), "cpu_s": round(spent, 1)}
    rows = [
        {
            "id": r["id"],
            "scenario": r["scenario"],
            "verdict": r["verdict"],
            "severity": r["severity"],
            "signature": signature(r),
        }
        for r in report["cases"]
    ]
    return rows, cost


def rerun_errors(name: str, entry: dict[str, Any], jobs: int, timeout: float, today: str) -> int:
    """Run the client again on the cases of its stored row whose verdict is `error`, replacing their
    entries in `entry` (its cost kept, a `rejudged` note added); how many were re-judged."""
    ids = tuple(row["id"] for row in entry["cases"] if row["verdict"] == "error")
    if not ids:
        return 0
    rows, cost = run(name, jobs=jobs, timeout=timeout, cases=ids)
    fresh = {row["id"]: row for row in rows}
    entry["cases"] = [fresh.get(row["id"], row) for row in entry["cases"]]
    note = {"cases": len(ids), "on": today, "wall_s": cost["wall_s"], "cpu_s": cost["cpu_s"], "jobs": jobs}
    entry["rejudged"] = [*entry.get("rejudged", []), note]
    return len(ids)


def rerun_cassettes(
    name: str, entry: dict[str, Any], cassettes: tuple[str, ...], jobs: int, timeout: float, today: str
) -> int:
    """Run the client on every case of these cassettes (ids `dialect/name`) in its matrix, and put
    the rows in `entry` in the matrix's order (its cost kept, a `rejudged` note added); how many ran."""
    what = "cases of " + ", ".join(cassettes)
    return _judge_some(name, entry, lambda i, _: i.split("::", 1)[0] in cassettes, what, jobs, timeout, today)


def add_missing(name: str, entry: dict[str, Any], jobs: int, timeout: float, today: str) -> int:
    """Run the client on the cases of its matrix its stored row lacks (a cassette or a scenario
    added since), drop the rows of cases the matrix no longer has, keep the row's recorded cost with
    a note; how many ran."""
    return _judge_some(name, entry, lambda i, known: i not in known, "new cases", jobs, timeout, today)


def _judge_some(
    name: str,
    entry: dict[str, Any],
    pick: Any,
    what: str,
    jobs: int,
    timeout: float,
    today: str,
) -> int:
    chosen = entry.get("selection") or {}
    dialect = CLIENTS[name][2]
    chosen_scenarios = tuple(chosen.get("scenarios", ()))
    selection = Selection(dialects=(dialect,), scenarios=chosen_scenarios, seeds=chosen.get("seeds"))
    order = [case.id for case in cases(selection)]
    stored = {row["id"]: row for row in entry["cases"]}
    ids = tuple(i for i in order if pick(i, stored))
    rows, cost = run(name, jobs=jobs, timeout=timeout, cases=ids) if ids else ([], None)
    known = stored | {row["id"]: row for row in rows}
    entry["cases"] = [known[i] for i in order if i in known]
    if cost is not None:
        note = {
            "cases": len(ids),
            "on": today,
            "wall_s": cost["wall_s"],
            "cpu_s": cost["cpu_s"],
            "jobs": jobs,
        }
        entry["rejudged"] = [*entry.get("rejudged", []), {**note, "what": what}]
    return len(ids)


# A warning that says what the program sends back (the reasoning state, the order of parts) is
# shown with the failures: the API may take it, but it is what the program gets wrong there.
SENDS_BACK = ("parts order", "reasoning", "call part")


def versions(name: str) -> str:
    folder = HERE / CLIENTS[name][0]
    lock = folder / "package-lock.json"
    if lock.exists():
        packages = json.loads(lock.read_text())["packages"]
        wanted = packages[""].get("dependencies", {})
        return ", ".join(f"{p} {packages[f'node_modules/{p}']['version']}" for p in wanted if p != "zod")
    python = CLIENTS[name][1][0]
    if (folder / "requirements.txt").exists():
        import subprocess

        pins = (folder / "requirements.txt").read_text().splitlines()
        wanted = tuple(line.split("==")[0] for line in pins if "==" in line and not line.startswith("#"))
        wanted = wanted if wanted != ("openai-agents",) else ("openai-agents", "openai")
        script = "import importlib.metadata as m, sys; print(', '.join(p + ' ' + m.version(p) for p in sys.argv[1:]))"  # noqa: E501
        return subprocess.run(
            [python, "-c", script, *wanted], capture_output=True, text=True, check=True
        ).stdout.strip()
    return "Python " + ".".join(map(str, sys.version_info[:2]))


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def table(stored: dict[str, Any]) -> str:
    """The table of docs/clients.md from stored results."""
    lines = [
        "| client | dialect | cases | pass | fail | error | timeout "
        "| what it gets wrong (cases, scenarios) | wall / CPU |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, entry in stored.items():
        rows = entry["cases"]
        verdicts = Counter(row["verdict"] for row in rows)
        wrong: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            sends_back = row["verdict"] == "warn" and any(word in row["signature"] for word in SENDS_BACK)
            if row["verdict"] in ("fail", "error", "timeout") or sends_back:
                wrong.setdefault(row["signature"], []).append(row)
        kinds = sorted(wrong.items(), key=lambda kv: -len(kv[1]))
        said = []
        for sig, found in kinds[:4]:
            scenarios = sorted({row["scenario"] for row in found})
            shown = ", ".join(scenarios[:3]) + (f" +{len(scenarios) - 3}" if len(scenarios) > 3 else "")
            severity = found[0]["severity"]
            said.append(
                f"{sig.replace('|', '/')}{f' ({severity})' if severity else ''}: {len(found)} ({shown})"
            )
        if len(kinds) > 4:
            said.append(f"{len(kinds) - 4} more kinds")
        counts = " | ".join(str(verdicts[v]) for v in ("pass", "fail", "error", "timeout"))
        client = f"{name}: {entry['what']}; {entry['versions']}"
        if entry.get("selection"):
            chosen = entry["selection"]
            client += f" (not the whole matrix: {len(chosen['scenarios'])} scenarios, {chosen['seeds']} seed)"
        wrong_text = "<br>".join(said) or "nothing"
        cost = entry.get("cost")
        spent = f"{minutes(cost['wall_s'])} / {minutes(cost['cpu_s'])} (-j {cost['jobs']})" if cost else "?"
        for note in entry.get("rejudged", []):
            spent += f"; {note['cases']} {note.get('what', '`error` cases')} re-judged {note['on']}"
        lines.append(f"| {client} | {entry['dialect']} | {len(rows)} | {counts} | {wrong_text} | {spent} |")
    return "\n".join(lines)


def dump(stored: dict[str, Any]) -> str:
    """`results.json`'s text: one line per case row, so a rerun's diff is one line per changed case."""
    parts = []
    for name, entry in stored.items():
        head = json.dumps({k: v for k, v in entry.items() if k != "cases"}, ensure_ascii=False)[:-1]
        rows = ",\n".join("  " + json.dumps(row, ensure_ascii=False) for row in entry["cases"])
        parts.append(f'{json.dumps(name)}: {head}, "cases": [\n{rows}\n]}}')
    return "{\n" + ",\n".join(parts) + "\n}\n"


def write_page(stored: dict[str, Any]) -> None:
    text = PAGE.read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    PAGE.write_text(f"{head}{BEGIN}\n{table(stored)}\n{END}{tail}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="store_true", help="run the installed clients first")
    parser.add_argument("--only", nargs="+", choices=list(CLIENTS), help="run only these clients")
    parser.add_argument("-j", "--jobs", type=int, default=8, help="programs at once (default 8)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per case (default 30)")
    parser.add_argument(
        "--selection", action="store_true", help="one seed of a few scenarios instead of the whole matrix"
    )
    parser.add_argument(
        "--rerun-errors",
        action="store_true",
        help="run again only each stored row's `error` cases, keeping the row's recorded cost",
    )
    parser.add_argument(
        "--missing",
        action="store_true",
        help="run each client on the cases of its matrix its stored row lacks (and drop the ones gone)",
    )
    parser.add_argument(
        "--cases-of",
        nargs="+",
        metavar="CASSETTE",
        help="run each client again on every case of these cassettes (dialect/name), stored in place",
    )
    args = parser.parse_args()
    if sum(map(bool, (args.run, args.rerun_errors, args.cases_of, args.missing))) > 1:
        parser.error("--run, --rerun-errors, --cases-of and --missing: choose one")
    stored: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    if args.rerun_errors or args.missing or args.cases_of:
        import datetime

        today = datetime.datetime.now(datetime.UTC).date().isoformat()
        for name in args.only or CLIENTS:
            entry = stored.get(name)
            mine = tuple(c for c in args.cases_of or () if c.split("/", 1)[0] == CLIENTS[name][2])
            if entry is None or (args.cases_of and not mine):
                continue
            if not installed(name):
                print(
                    f"{name}: not installed ({install_command(name)}); stored results kept", file=sys.stderr
                )
                continue
            if args.rerun_errors and versions(name) != entry["versions"]:
                print(
                    f"{name}: installed {versions(name)}, stored {entry['versions']}: left as it is "
                    "(run it again with --run)",
                    file=sys.stderr,
                )
                continue
            if args.rerun_errors:
                done, said = (
                    rerun_errors(name, entry, args.jobs, args.timeout, today),
                    "`error` cases re-judged",
                )
            elif args.missing:
                done, said = add_missing(name, entry, args.jobs, args.timeout, today), "new cases run"
            else:
                done = rerun_cassettes(name, entry, mine, args.jobs, args.timeout, today)
                said = f"cases of {', '.join(mine)} run"
            RESULTS.write_text(dump(stored))
            print(f"{name}: {done} {said}", file=sys.stderr)
    if args.run:
        for name in args.only or CLIENTS:
            if not installed(name):
                print(
                    f"{name}: not installed ({install_command(name)}); stored results kept", file=sys.stderr
                )
                continue
            dialect = CLIENTS[name][2]
            scenarios = SELECTION[dialect] if args.selection else None
            rows, cost = run(
                name,
                jobs=args.jobs,
                timeout=args.timeout,
                scenarios=scenarios,
                seeds=1 if scenarios else None,
            )
            stored[name] = {
                "what": CLIENTS[name][4],
                "versions": versions(name),
                "dialect": dialect,
                "cost": cost,
                **({"selection": {"scenarios": list(scenarios), "seeds": 1}} if scenarios else {}),
                "cases": rows,
            }
            RESULTS.write_text(dump(stored))
            print(
                f"{name}: {len(rows)} cases, {cost['wall_s']:.0f} s wall, {cost['cpu_s']:.0f} s CPU "
                f"(-j {cost['jobs']})",
                file=sys.stderr,
            )
    stored = {name: stored[name] for name in CLIENTS if name in stored}
    write_page(stored)
    return 0


if __name__ == "__main__":
    sys.exit(main())
