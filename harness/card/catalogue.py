"""The card's client programs: which there are, where each runs, how to install and run it, the
dialect it speaks. The report card and `examples/clients/table.py` (through `harness.client_catalogue`)
both read this catalogue.

The programs ship with the package (package data, `harness/_bundled/clients/`, built from the
checkout's `examples/clients/`), so an installed toolstream has them. They run where their
toolchain can be installed beside them: in a checkout, its `examples/clients/` (with its
`node_modules` and the checkout's side environment); installed from a wheel, a working copy in
the toolstream cache (`clients/`), made from the package data, where `npm ci` installs.
"""

from __future__ import annotations

import filecmp
import shlex
import shutil
import sys
from pathlib import Path

from harness import cache, files

__all__ = ["AGENTS_VENV", "Catalogue", "ClientEntry", "catalogue", "shipped"]

AGENTS_VENV = ".venv-openai-agents"  # the side environment the OpenAI Agents SDK runs in (`.ci/run`)
_PACKAGE = Path(__file__).resolve().parent.parent  # harness/
_SOURCE = Path("examples") / "clients"  # the programs' source, in a checkout

# (folder, program, dialect, extra environment, what it is)
ClientEntry = tuple[str, list[str], str, dict[str, str], str]


def shipped() -> Path | None:
    """The folder of client programs this toolstream ships: a checkout's `examples/clients/`
    (the package data's source) or an installed wheel's package data; None when neither is."""
    for candidate in (_PACKAGE.parent / _SOURCE, _PACKAGE / "_bundled" / "clients"):
        if candidate.is_dir():
            return candidate
    return None


def catalogue(checkout: Path | None = None) -> Catalogue:
    """The client programs where they run: in the checkout `checkout` (the one the command runs
    in, `environments.source_root`), its `examples/clients/`; else a working copy of the shipped
    programs in the toolstream cache."""
    if checkout is not None and (checkout / _SOURCE).is_dir():
        return Catalogue(checkout / _SOURCE, checkout, harness=".")
    work = cache.home() / "clients"
    source = shipped()
    if source is not None and source.resolve() != work.resolve():
        _copy_programs(source, work)
    return Catalogue(work, work, harness="toolstream-harness")


def _copy_programs(source: Path, work: Path) -> None:
    """The programs' own files into `work` (what is installed beside them, `node_modules`, kept);
    a file is rewritten only when it changed, so an install stays valid."""
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if not path.is_file() or "node_modules" in relative.parts or "__pycache__" in relative.parts:
            continue
        target = work / relative
        if target.is_file() and filecmp.cmp(path, target, shallow=False):
            continue
        files.write(target, path.read_bytes())  # the package's own files: small


class Catalogue:
    """The client programs in the folder `here`, by name (the name on the command line);
    `venv_root`: where the Agents SDK's side environment is; `harness`: what its `pip install`
    names for the harness (`.` in a checkout)."""

    def __init__(self, here: Path, venv_root: Path, *, harness: str = ".") -> None:
        self.here = here
        self.root = venv_root
        self.harness = harness
        self.agents_python = venv_root / AGENTS_VENV / "bin" / "python"
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

    def _said(self, path: Path) -> str:
        """`path` as a command line gives it: relative to `venv_root` (a checkout: where commands
        run), else whole."""
        if path.is_relative_to(self.root) and self.harness == ".":
            return shlex.quote(path.relative_to(self.root).as_posix())
        return shlex.quote(str(path))

    def install_command(self, name: str) -> str | None:
        """The command that installs a client's toolchain, or None when it needs none."""
        folder = self.folder(name)
        if (folder / "package-lock.json").exists():
            return f"npm ci --prefix {self._said(folder)}"
        if (folder / "requirements.txt").exists():
            venv = self._said(self.root / AGENTS_VENV)
            requirements = self._said(folder / "requirements.txt")
            return f"python3 -m venv {venv} && {venv}/bin/pip install {self.harness} -r {requirements}"
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
            shlex.quote(program[0]),
            shlex.quote(str(path / program[1])),
        ]
        return " ".join(words)
