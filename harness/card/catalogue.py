"""The client programs of `examples/clients/`: where each is, how to install and run it, the
dialect it speaks. The report card and `examples/clients/table.py` both read this catalogue.

The programs themselves are examples of the checkout (with their `node_modules` or side
environment), so a `Catalogue` is bound to a checkout's root; the catalogue is the package's.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

__all__ = ["CLIENTS_FOLDER", "Catalogue", "ClientEntry"]

CLIENTS_FOLDER = Path("examples") / "clients"  # where the programs are, under the checkout
AGENTS_VENV = ".venv-openai-agents"  # the side environment the OpenAI Agents SDK runs in (`.ci/run`)
REALTIME_VENV = ".venv-openai-realtime"  # the openai SDK's Realtime client and `websockets` (`.ci/run`)

# (folder, program, dialect, extra environment, what it is)
ClientEntry = tuple[str, list[str], str, dict[str, str], str]


class Catalogue:
    """The client programs of the checkout at `root`, by name (the name on the command line)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.here = root / CLIENTS_FOLDER
        self.agents_python = root / AGENTS_VENV / "bin" / "python"
        self.realtime_python = root / REALTIME_VENV / "bin" / "python"
        self.clients: dict[str, ClientEntry] = {
            "node-openai": (
                "node-openai", ["node", "agent.mjs"], "openai-chat", {},
                "`openai` (Node), `chat.completions.stream`",
            ),
            "vercel-ai": (
                "vercel-ai", ["node", "agent.mjs"], "openai-chat", {},
                "`ai` + `@ai-sdk/openai`, `generateText`",
            ),
            "vercel-ai-stream": (
                "vercel-ai", ["node", "agent.mjs"], "openai-chat", {"TOOLSTREAM_STREAM": "1"},
                "`ai` + `@ai-sdk/openai`, `streamText`",
            ),
            "ai-sdk-ui": (
                "ai-sdk-ui", ["node", "agent.mjs"], "ai-sdk-ui", {},
                "`ai` (Node), `DefaultChatTransport` + `readUIMessageStream`",
            ),
            "ag-ui": (
                "ag-ui", ["node", "agent.mjs"], "ag-ui", {},
                "`@ag-ui/client` (Node), `HttpAgent.runAgent`",
            ),
            "openai-realtime": (
                "openai-realtime", [str(self.realtime_python), "agent.py"], "openai-realtime", {},
                "`openai` (Python), `client.realtime.connect` over `websockets`",
            ),
            "node-anthropic": (
                "node-anthropic", ["node", "agent.mjs"], "anthropic", {},
                "`@anthropic-ai/sdk` (Node), `messages.stream`",
            ),
            "python-stdlib": (
                "python-stdlib", [sys.executable, "agent.py"], "openai-chat", {},
                "standard library, calls keyed by `index`",
            ),
            "openai-agents": (
                "openai-agents", [str(self.agents_python), "agent.py"], "openai-chat", {},
                "OpenAI Agents SDK (Python), `Runner.run_streamed`",
            ),
        }  # fmt: skip

    def folder(self, name: str) -> Path:
        return self.here / self.clients[name][0]

    def install_command(self, name: str) -> str | None:
        """The command that installs a client's toolchain, or None when it needs none."""
        folder = self.folder(name)
        if (folder / "package-lock.json").exists():
            return f"npm ci --prefix {folder.relative_to(self.root)}"
        if (folder / "requirements.txt").exists():
            requirements = (folder / "requirements.txt").relative_to(self.root)
            venv = REALTIME_VENV if name == "openai-realtime" else AGENTS_VENV
            return f"python3 -m venv {venv} && {venv}/bin/pip install . -r {requirements}"
        return None

    def installed(self, name: str) -> bool:
        program = self.clients[name][1]
        if program[0] == "node":
            return shutil.which("node") is not None and (self.folder(name) / "node_modules").is_dir()
        return Path(program[0]).exists()

    def command(self, name: str, where: Path | None = None) -> str:
        """The shell command `check --client` runs for a client (its environment extras included).
        It `exec`s the program, so the program is the run's own child and its CPU time is counted
        even when it is killed after its follow-up (a shell in between would die first and lose it).
        `where`: a copy of the client's folder to run it from (a test's own `npm ci`)."""
        _, program, _, extra, _ = self.clients[name]
        path = where or self.folder(name)
        words = [
            *(f"{k}={shlex.quote(v)}" for k, v in extra.items()),
            "exec",
            program[0],
            str(path / program[1]),
        ]
        return " ".join(words)
