"""The card's client programs on the report card: each a real program run unchanged against the
replay server (`check --client`'s machinery, `harness.accumulators.program.run_clients`), graded
like a library, one row per client (library = the package it exercises, npm or PyPI; version =
the one installed beside the program: its `node_modules`, or the side environment it runs in).

The clients, where they run and how to run them are the catalogue's (`harness.card.catalogue`,
which `examples/clients/table.py` reads too); the programs ship with the package. A client whose
toolchain is missing (no `node`, no `node_modules`, no side environment) is a row naming the
command that installs it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.card import environments
from harness.card.catalogue import Catalogue, catalogue
from harness.card.environments import EnvironmentProblem
from harness.card.verdicts import files_digest
from harness.processes import warm
from harness.text.terminal import Progress

__all__ = ["CLIENTS", "Client", "client_table", "contents", "installed_version", "run_cases"]


@dataclass(frozen=True)
class Client:
    """A client program as the card grades it."""

    name: str  # the name in the catalogue (`harness.card.catalogue`), also the one on the command line
    package: str  # the package graded (its installed version is the row's version)
    also: tuple[str, ...] = ()  # other packages it needs, named with their versions in the row
    registry: str = "npm"  # where `package` comes from: npm (a Node program) or PyPI (a Python one)

    @property
    def library(self) -> str:
        """The row's library: the package, said where it is from (`openai` is both)."""
        return f"{self.package} ({self.registry})"

    @property
    def node(self) -> bool:
        return self.registry == "npm"


CLIENTS: dict[str, Client] = {
    c.name: c
    for c in (
        Client("node-openai", "openai"),
        Client("node-anthropic", "@anthropic-ai/sdk"),
        Client("vercel-ai", "ai", also=("@ai-sdk/openai",)),
        # The frontends' readers: the AI SDK UI message stream read by `readUIMessageStream` (the
        # same `ai` package, another surface of it), and AG-UI events applied by `@ag-ui/client`.
        Client("ai-sdk-ui", "ai"),
        Client("ag-ui", "@ag-ui/client", also=("@ag-ui/core",)),
        # The openai SDK's Realtime client over a WebSocket session, on the `websockets` it connects with.
        Client("openai-realtime", "openai", also=("websockets",), registry="PyPI"),
        # The Agents SDK's own loop over the whole openai-chat matrix: each case starts a Python
        # with the SDK (about 3 s of imports), the card's costliest row by far.
        Client("openai-agents", "openai-agents", also=("openai",), registry="PyPI"),
    )
}


def client_table(checkout: Path | None) -> Catalogue:
    """The client programs where they run: in the checkout `checkout` (None: not in one), its
    `examples/clients/`; else a working copy of the ones the package ships."""
    return catalogue(checkout)


def installed_version(table: Catalogue, client: Client, package: str | None = None) -> str:
    """The version of `package` (default: the graded one) installed for the client; a problem
    naming the install command when its toolchain is missing."""
    if (client.node and shutil.which("node") is None) or not table.installed(client.name):
        how = table.install_command(client.name) or "install node"
        node = "" if not client.node or shutil.which("node") else "node is not on PATH; "
        raise EnvironmentProblem(f"not installed ({node}run `{how}`)")
    if not client.node:
        python = table.clients[client.name][1][0]
        found = environments.installed_version(python, package or client.package)
        if found is None:
            raise EnvironmentProblem(f"{python}: {package or client.package} is not installed there")
        return found
    manifest = table.folder(client.name) / "node_modules" / (package or client.package) / "package.json"
    try:
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError) as exc:
        raise EnvironmentProblem(f"{manifest}: version: cannot read it ({exc})") from None


def contents(table: Catalogue, client: Client) -> dict[str, Any]:
    """What the client's verdicts depend on besides the harness (`harness.card.verdicts`): the
    program's own files, its lock file, whether it starts warm or cold (`TOOLSTREAM_WARM`), the
    runtime's version and, for a Python program, every distribution of its environment."""
    folder = table.folder(client.name)
    files = []
    for where, folders, names in os.walk(folder):
        folders[:] = [f for f in folders if f not in ("node_modules", "__pycache__")]  # not walked
        files += [Path(where) / name for name in names]
    # Warm or cold: a warm start can change what a program does (issue 37), so its verdicts are its own.
    out: dict[str, Any] = {"program": files_digest(files, folder), "warm": warm.enabled()}
    for package in (client.package, *client.also):
        try:
            out[package] = installed_version(table, client, package)
        except EnvironmentProblem:
            out[package] = None
    if client.node:
        out["node"] = _node_version()
    else:
        out["environment"] = environments.contents(table.clients[client.name][1][0])
    return out


def _node_version() -> str:
    try:
        done = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return done.stdout.strip()


def dialect(table: Catalogue, client: Client) -> str:
    return str(table.clients[client.name][2])


def adapter(table: Catalogue, client: Client) -> str:
    """The row's adapter: `client:NAME`, with the other packages it runs on."""
    others = []
    for package in client.also:
        try:
            others.append(f"{package} {installed_version(table, client, package)}")
        except EnvironmentProblem:
            others.append(package)
    return f"client:{client.name}" + (f" ({', '.join(others)})" if others else "")


def run_cases(
    table: Catalogue,
    client: Client,
    cases: Sequence[Any],
    scenarios: dict[str, Any],
    *,
    jobs: int,
    timeout: float,
    progress: Progress,
    hold: Callable[[], AbstractContextManager[object]] = nullcontext,
    say: Callable[[str], None] | None = None,
) -> tuple[str, list[Any]]:
    """Each case through the client on one replay server, at most `jobs` at once, each while it
    holds what `hold()` gives (a slot of the card's: `harness.card.schedule`), told to `progress`
    after each (named by its id); `say`: told when the program turns out to need cold starts. The
    spec the results carry and the results, in case order: `check --client`'s `run_clients`, warm
    starts included."""
    from harness.accumulators.program import run_clients  # the server is loaded only when asked for

    told = say or (lambda line: print(line, file=sys.stderr))

    report = run_clients(
        cases, table.command(client.name), jobs=max(jobs, 1), timeout=timeout, scenarios=scenarios,
        hold=hold, each=lambda result: progress.advance(note=result.id),
        say=lambda line: told(f"{client.name}: {line}"),
    )  # fmt: skip
    return report.accumulator, list(report.results)
