"""The Node clients of `examples/clients/` on the report card: each a real program run unchanged
against the replay server (`toolstream serve`'s machinery, `harness.serve.run_client`), graded
like a library, one row per client (library = its npm package, version = the one installed in
its `node_modules`).

The clients and how to run them are `examples/clients/table.py`'s `CLIENTS` (read, not copied);
a client whose toolchain is missing (no `node`, no `node_modules`) is a row naming the command
that installs it.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from harness.card.environments import EnvironmentProblem

__all__ = ["NODE_CLIENTS", "NodeClient", "client_table", "installed_version", "run_cases"]

TABLE = Path("examples") / "clients" / "table.py"


@dataclass(frozen=True)
class NodeClient:
    """A Node client as the card grades it."""

    name: str  # the key in examples/clients/table.py CLIENTS, also the name on the command line
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


def client_table(root: Path | None) -> ModuleType:
    """`examples/clients/table.py` of this checkout, loaded (it is an example, not a package)."""
    path = None if root is None else root / TABLE
    if path is None or not path.is_file():
        raise EnvironmentProblem(f"no {TABLE} here: run in the toolstream-harness checkout")
    spec = importlib.util.spec_from_file_location("toolstream_examples_clients_table", path)
    assert spec is not None and spec.loader is not None
    module = sys.modules.get(spec.name)
    if module is None or getattr(module, "__file__", None) != str(path):
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses and the like look their module up by name
        spec.loader.exec_module(module)
    return module


def folder(table: ModuleType, client: NodeClient) -> Path:
    return Path(table.HERE) / table.CLIENTS[client.name][0]


def installed_version(table: ModuleType, client: NodeClient, package: str | None = None) -> str:
    """The version of `package` (default: the graded one) in the client's node_modules; a
    problem naming the install command when node or the modules are missing."""
    if shutil.which("node") is None or not table.installed(client.name):
        how = table.install_command(client.name) or "install node"
        node = "" if shutil.which("node") else "node is not on PATH; "
        raise EnvironmentProblem(f"not installed ({node}run `{how}`)")
    manifest = folder(table, client) / "node_modules" / (package or client.package) / "package.json"
    try:
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError) as exc:
        raise EnvironmentProblem(f"{manifest}: version: cannot read it ({exc})") from None


def dialect(table: ModuleType, client: NodeClient) -> str:
    return str(table.CLIENTS[client.name][2])


def adapter(table: ModuleType, client: NodeClient) -> str:
    """The row's adapter: `client:NAME`, with the other packages it runs on."""
    others = []
    for package in client.also:
        try:
            others.append(f"{package} {installed_version(table, client, package)}")
        except EnvironmentProblem:
            others.append(package)
    return f"client:{client.name}" + (f" ({', '.join(others)})" if others else "")


def run_cases(
    table: ModuleType,
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
    from harness.serve import ReplayServer, run_client  # the server is loaded only when asked for
    from harness.serve.clients import PREFIX

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
