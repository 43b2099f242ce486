"""The Node clients of `examples/clients/` on the report card: each a real program run unchanged
against the replay server (`toolstream serve`'s machinery, `harness.accumulators.program.run_client`), graded
like a library, one row per client (library = its npm package, version = the one installed in
its `node_modules`).

The clients and how to run them are the catalogue's (`harness.card.catalogue`, which
`examples/clients/table.py` reads too); the programs are in the checkout's `examples/clients/`.
A client whose toolchain is missing (no `node`, no `node_modules`) is a row naming the command
that installs it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.card.catalogue import CLIENTS_FOLDER, Catalogue
from harness.card.environments import EnvironmentProblem

__all__ = ["NODE_CLIENTS", "NodeClient", "client_table", "installed_version", "run_cases"]


@dataclass(frozen=True)
class NodeClient:
    """A Node client as the card grades it."""

    name: str  # the name in the catalogue (`harness.card.catalogue`), also the one on the command line
    package: str  # the npm package graded (its installed version is the row's version)
    also: tuple[str, ...] = ()  # other packages it needs, named with their versions in the row

    @property
    def library(self) -> str:
        """The row's library: the npm package, said to be one (`openai` is also a PyPI name)."""
        return f"{self.package} (npm)"


NODE_CLIENTS: dict[str, NodeClient] = {
    c.name: c
    for c in (
        NodeClient("node-openai", "openai"),
        NodeClient("node-anthropic", "@anthropic-ai/sdk"),
        NodeClient("vercel-ai", "ai", also=("@ai-sdk/openai",)),
    )
}


def client_table(root: Path | None) -> Catalogue:
    """The client programs of the checkout at `root`; a problem when there is none (the programs
    are the checkout's examples, with their `node_modules`)."""
    if root is None or not (root / CLIENTS_FOLDER).is_dir():
        raise EnvironmentProblem(f"no {CLIENTS_FOLDER} here: run in the toolstream-harness checkout")
    return Catalogue(root)


def installed_version(table: Catalogue, client: NodeClient, package: str | None = None) -> str:
    """The version of `package` (default: the graded one) in the client's node_modules; a
    problem naming the install command when node or the modules are missing."""
    if shutil.which("node") is None or not table.installed(client.name):
        how = table.install_command(client.name) or "install node"
        node = "" if shutil.which("node") else "node is not on PATH; "
        raise EnvironmentProblem(f"not installed ({node}run `{how}`)")
    manifest = table.folder(client.name) / "node_modules" / (package or client.package) / "package.json"
    try:
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError) as exc:
        raise EnvironmentProblem(f"{manifest}: version: cannot read it ({exc})") from None


def dialect(table: Catalogue, client: NodeClient) -> str:
    return str(table.clients[client.name][2])


def adapter(table: Catalogue, client: NodeClient) -> str:
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
    client: NodeClient,
    cases: Sequence[Any],
    scenarios: dict[str, Any],
    *,
    jobs: int,
    timeout: float,
    advance: Callable[[str], None],
) -> tuple[str, list[Any]]:
    """Each case through the client on one replay server, `jobs` at once; `advance(case_id)`
    after each. The spec the results carry and the results, in case order."""
    from harness.accumulators.program import (
        PREFIX,
        run_client,  # the server is loaded only when asked for
    )
    from harness.serve import ReplayServer

    command = table.command(client.name)
    label = PREFIX + command

    with ReplayServer(list(cases), pace=False).running() as server:

        def one(case: Any) -> Any:
            result = run_client(
                server, case, command, timeout=timeout, label=label, scenario=scenarios.get(case.scenario)
            )
            advance(case.id)
            return result

        with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
            results = list(pool.map(one, cases))
    return label, results
