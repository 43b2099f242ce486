"""What each real client in examples/clients/ gets wrong, as a README table, by one command.

    python examples/clients/table.py --run     # run every installed client, store, write the table
    python examples/clients/table.py           # write the table from the stored results

`--run` runs each client with `toolstream check --client`'s machinery (`run_clients`, one replay
server, `-j` programs at once) over its dialect's representative selection below, stores the
verdicts in `results.json` beside this file, and writes the table between the markers in
README.md. A client whose toolchain is not installed keeps its stored results.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RESULTS = HERE / "results.json"
README = ROOT / "README.md"
BEGIN, END = "<!-- clients-table:begin -->", "<!-- clients-table:end -->"

# A representative selection per dialect: the recorded streams, then the quirks that break loops
# (one seed each; the whole openai-chat matrix is 1685 cases, about 25 minutes per Node client).
SCENARIOS = {
    "openai-chat": (
        "original", "parallel-calls-share-index-0", "A2-index-restarts-per-chunk", "A5-id-on-every-chunk",
        "B3-name-repeated-in-full", "D6-missing-finish-reason", "D7-truncated-mid-args",
        "D8-mid-stream-error",
        "F3-one-byte-reads", "idless-continuation-after-empty-args",
    ),
    "anthropic": (
        "original", "interleaved-tool-blocks", "B7-empty-args-fragment", "D10-duplicate-start-events",
        "D7-truncated-mid-args", "D8-mid-stream-error", "F3-one-byte-reads", "C5-text-blocks-without-start",
    ),
}  # fmt: skip

# name -> (folder, program, dialect, extra environment, what it is)
CLIENTS: dict[str, tuple[str, list[str], str, dict[str, str], str]] = {
    "node-openai": (
        "node-openai", ["node", "agent.mjs"], "openai-chat", {}, "`openai` (Node), `chat.completions.stream`",
    ),
    "vercel-ai": (
        "vercel-ai", ["node", "agent.mjs"], "openai-chat", {}, "`ai` + `@ai-sdk/openai`, `generateText`",
    ),
    "vercel-ai-stream": (
        "vercel-ai", ["node", "agent.mjs"], "openai-chat", {"TOOLSTREAM_STREAM": "1"},
        "`ai` + `@ai-sdk/openai`, `streamText`",
    ),
    "node-anthropic": (
        "node-anthropic", ["node", "agent.mjs"], "anthropic", {},
        "`@anthropic-ai/sdk` (Node), `messages.stream`",
    ),
    "python-stdlib": (
        "python-stdlib", [sys.executable, "agent.py"], "openai-chat", {},
        "standard library, calls keyed by `index`",
    ),
}  # fmt: skip


def install_command(name: str) -> str | None:
    """The command that installs a client's toolchain, or None when it needs none."""
    folder = HERE / CLIENTS[name][0]
    return f"npm ci --prefix {folder.relative_to(ROOT)}" if (folder / "package-lock.json").exists() else None


def installed(name: str) -> bool:
    folder, program, *_ = CLIENTS[name]
    if program[0] == "node":
        return shutil.which("node") is not None and (HERE / folder / "node_modules").is_dir()
    return True


def command(name: str) -> str:
    """The shell command `check --client` runs for a client (its environment extras included)."""
    import shlex

    folder, program, _, extra, _ = CLIENTS[name]
    path = HERE / folder
    words = [*(f"{k}={shlex.quote(v)}" for k, v in extra.items()), program[0], str(path / program[1])]
    return " ".join(words)


def run(
    name: str, jobs: int = 2, timeout: float = 30.0, scenarios: tuple[str, ...] | None = None
) -> list[dict[str, Any]]:
    """Run one client over its selection; one plain row per case."""
    from harness.check.selection import Matrix, Selection
    from harness.check.verdict import signature
    from harness.serve import run_clients

    dialect = CLIENTS[name][2]
    matrix = Matrix(Selection(dialects=(dialect,), scenarios=scenarios or SCENARIOS[dialect], seeds=1))
    report = run_clients(
        list(matrix.all()), command(name), jobs=jobs, timeout=timeout, scenarios=matrix.by_name
    )
    return [
        {
            "id": r.id,
            "scenario": r.scenario,
            "verdict": str(r.verdict),
            "severity": None if r.severity is None else str(r.severity),
            "signature": signature(r),
        }
        for r in report.results
    ]


def versions(name: str) -> str:
    folder = HERE / CLIENTS[name][0]
    lock = folder / "package-lock.json"
    if not lock.exists():
        return "Python " + ".".join(map(str, sys.version_info[:2]))
    packages = json.loads(lock.read_text())["packages"]
    wanted = packages[""].get("dependencies", {})
    return ", ".join(f"{p} {packages[f'node_modules/{p}']['version']}" for p in wanted if p != "zod")


def table(stored: dict[str, Any]) -> str:
    """The README table from stored results."""
    lines = [
        "| client | dialect | cases | pass | fail | error | timeout "
        "| what it gets wrong (cases, scenarios) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, entry in stored.items():
        rows = entry["cases"]
        verdicts = Counter(row["verdict"] for row in rows)
        wrong: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            if row["verdict"] in ("fail", "error", "timeout"):
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
        wrong_text = "<br>".join(said) or "nothing"
        lines.append(f"| {client} | {entry['dialect']} | {len(rows)} | {counts} | {wrong_text} |")
    return "\n".join(lines)


def write_readme(stored: dict[str, Any]) -> None:
    text = README.read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    README.write_text(f"{head}{BEGIN}\n{table(stored)}\n{END}{tail}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="store_true", help="run the installed clients first")
    parser.add_argument("--only", nargs="+", choices=list(CLIENTS), help="run only these clients")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    args = parser.parse_args()
    stored: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    if args.run:
        for name in args.only or CLIENTS:
            if not installed(name):
                print(
                    f"{name}: not installed ({install_command(name)}); stored results kept", file=sys.stderr
                )
                continue
            rows = run(name, jobs=args.jobs)
            stored[name] = {
                "what": CLIENTS[name][4],
                "versions": versions(name),
                "dialect": CLIENTS[name][2],
                "cases": rows,
            }
            RESULTS.write_text(json.dumps(stored, indent=1) + "\n")
            print(f"{name}: {len(rows)} cases", file=sys.stderr)
    stored = {name: stored[name] for name in CLIENTS if name in stored}
    write_readme(stored)
    return 0


if __name__ == "__main__":
    sys.exit(main())
